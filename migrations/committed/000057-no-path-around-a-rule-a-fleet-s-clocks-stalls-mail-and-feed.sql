--! Previous: sha1:6886a4beb75aa55bb353b66bf82919cb2e9c35e1
--! Hash: sha1:cd7c75de8389f55fe35664c267f14b9e7e8e0b6e
--! Message: No path around a rule; a fleet's clocks, stalls, mail and feed

--! split: 001-every-lock-is-waited-for-at-most-two-seconds.sql
-- Every lock this migration takes is waited for at most two seconds: a migration queued
-- behind a long reader would otherwise hold every request that queues behind it. A
-- migration that times out is rolled back whole and run again (`npx rowgate db migrate`).
set local lock_timeout = '2s';

--! split: 100-tokens-never-exceed-their-maker.sql
-- No escalation through credentials (SPEC §3, §21): a user mints an organization
-- token only with scopes each of whose operations open to that kind of token it
-- may itself perform in the organization with a web session. The answer comes
-- from the operations table and rowgate_hidden.policy_denial, the data
-- GET /v1/organizations/{id}/permissions answers from (SPEC §20), asked for the
-- current user: a web session carries every scope and every organization
-- operation accepts it, so only the policy step can refuse, and the policies
-- depend on the user and its role, never on the credential that asks.
-- An operation is open to the token when it accepts the token's kind and its
-- policy admits the organization itself (members-management and access-token
-- management admit users only): members_read opens the member list to a token,
-- not the invitations. A scope's own operations are those its implied read
-- scope does not open; a scope none of whose own operations is open to the
-- token gives it nothing of its own, and is minted only by a user who may
-- perform those operations itself (a token manager does not hand out
-- members_write, an admin does). One rule, read by the organization access
-- token's creation and by the OAuth2 consent.
create function rowgate_private.token_scope_denials(p_organization_id uuid, p_scopes text[], p_credential_kind text)
returns table (n bigint, scope text, operation text, policy text, permission text, reason text, message text)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_user_only text[];
begin
  -- the policies that refuse the organization itself, asked as the token would be
  perform rowgate_hidden.restore_subject(array['organization', p_organization_id::text, p_credential_kind, '']);
  select coalesce(array_agg(k.policy_key), '{}') into v_user_only
    from (select distinct o.policy_key from rowgate_hidden.operations o where o.policy_key is not null) k
    where rowgate_hidden.policy_denial(p_organization_id, k.policy_key) is not null;
  perform rowgate_hidden.restore_subject(v_saved);
  return query
    with operations as (
      select o.operation, o.scopes, o.policy, o.policy_key,
        p_credential_kind = any (o.credentials) and not (o.policy_key = any (v_user_only)) as open_to_token,
        -- the policies that require a permission name it (members-management: members:manage)
        coalesce(o.permission, case o.policy when 'members_management' then 'members:manage'
          when 'access_token_management' then 'access_tokens:manage' end) as permission
      from rowgate_hidden.operations o
      where 'web_session' = any (o.credentials) and o.policy_key is not null
    ), scoped as (
      select s.n, s.scope, o.*, (sc.implies is null or not (sc.implies = any (o.scopes))) as own
      from unnest(p_scopes) with ordinality s(scope, n)
        left join rowgate_private.scopes sc on sc.name = s.scope
        join operations o on s.scope = any (o.scopes)
    ), asked as (
      -- the scope's operations open to the token; its own ones too when none of them is
      select x.* from scoped x
      where x.open_to_token
        or (x.own and not exists (select from scoped y where y.n = x.n and y.own and y.open_to_token))
    ), policies as materialized (
      -- each policy asked once, for the current user
      select k.policy_key, rowgate_hidden.policy_denial(p_organization_id, k.policy_key) as reason
      from (select distinct a.policy_key from asked a) k
    )
    select distinct on (a.n) a.n, a.scope, a.operation, a.policy, a.permission, p.reason,
      format('A token cannot hold %s: its operation %s needs %s, which you lack in this organization (%s)',
        a.scope, a.operation,
        case when a.permission is not null then format('the permission %s (policy %s)', a.permission, a.policy)
          else format('the policy %s', a.policy) end,
        p.reason)
    from asked a join policies p on p.policy_key = a.policy_key
    where p.reason is not null
    order by a.n, a.operation;
end;
$$;
comment on function rowgate_private.token_scope_denials(uuid, text[], text) is
'The scopes of p_scopes (by their 1-based place) a token of p_credential_kind minted by the current user in the organization may not hold (SPEC §21): for each, the first operation open to such a token that the user could not perform there with a web session, its policy and permission, the denial reason and the message the API shows. No row: every scope may be minted.';

-- Restated from 000042 to refuse, at the offending scope's place in the
-- request (body.scopes.<i>), a scope whose operations the minting user could
-- not perform itself. Tokens minted before keep their scopes.
create or replace function rowgate.create_organization_access_token(p_organization_id uuid, p_comment text, p_scopes text[],
  p_expires_at timestamp with time zone, p_token_hash bytea, p_allowed_ips text[] default null::text[])
returns rowgate.organization_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
  v_max_days integer;
  v_escalation record;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if exists (select 1 from unnest(p_scopes) s where s in ('user:read', 'user:write', 'payouts:read', 'payouts:write')) then
    raise exception 'Organization tokens carry organization scopes only' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  select d.n, d.message into v_escalation
    from rowgate_private.token_scope_denials(p_organization_id, p_scopes, 'organization_access_token') d
    order by d.n limit 1;
  if found then
    raise exception '%', v_escalation.message using errcode = 'RG422', detail = 'body.scopes.' || (v_escalation.n - 1);
  end if;
  select o.max_token_lifetime_days into v_max_days from rowgate.organizations o where o.id = p_organization_id;
  if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
    raise exception 'The organization''s tokens live at most % days: expires_in is required, at most % seconds',
      v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
  end if;
  insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at, created_by, allowed_ips)
    values (p_organization_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at,
      rowgate_hidden.current_user_id(), rowgate_private.allowed_ips(p_allowed_ips))
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (p_token_hash, v_token.id);
  return v_token;
end;
$$;

-- The read schema names created_by (SPEC §21), so the token's events carry it
-- too: an event's data is the resource as REST renders it.
drop trigger _400_events on rowgate.organization_access_tokens;
create trigger _400_events after insert or update on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__events('organization_access_token', 'access_tokens',
    'id,organization_id,comment,scopes,expires_at,last_used_at,allowed_ips,created_by,created_at,updated_at', 'deleted_at');

--! split: 110-organization-grants-never-exceed-their-user.sql
-- Restated from its last definition so an organization grant (sub_type=organization)
-- offers only the scopes its user could use itself (SPEC §21, the rule of
-- rowgate_private.token_scope_denials): a scope the user may not grant is left out
-- of the grant, which the consent page shows and the token answer's `scope`
-- names (RFC 6749 §3.3: the server may issue fewer scopes than asked for); a
-- request left with none is invalid_scope naming what is missing. For an `ok`
-- answer, description says what was left out (null: nothing).
create or replace function rowgate.check_oauth2_authorization(p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid, p_code_challenge text, p_code_challenge_method text)
returns table(status text, description text, client_name text, scopes text[], organization_name text)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients;
  v_scopes text[];
  v_unknown text;
  v_denial text;
  v_organization_name text;
  v_withheld text[];
  v_first_denial text;
  v_note text;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Unknown client_id'::text, null::text, null::text[], null::text;
    return;
  elsif p_redirect_uri is null or not (p_redirect_uri = any (v_client.redirect_uris)) then
    return query select 'invalid_redirect_uri'::text, 'The redirect_uri is not one the client registered'::text,
      null::text, null::text[], null::text;
    return;
  end if;
  if rowgate_hidden.current_user_id() is null then
    return query select 'access_denied'::text, 'Only users can authorize clients'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- PKCE (RFC 7636): S256 only; required of public clients
  if p_code_challenge is null and (p_code_challenge_method is not null or v_client.token_endpoint_auth_method = 'none') then
    return query select 'invalid_request'::text,
      'PKCE is required: send code_challenge with code_challenge_method=S256'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge_method is distinct from 'S256' then
    return query select 'invalid_request'::text, 'Only code_challenge_method=S256 is supported'::text,
      v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge !~ '^[A-Za-z0-9_-]{43}$' then
    return query select 'invalid_request'::text,
      'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- scopes: those asked for (the client's own when none are named), within the client's
  v_scopes := (select array_agg(distinct s order by s) from unnest(coalesce(p_scopes, v_client.scopes)) s);
  v_unknown := rowgate_private.unknown_scope(v_scopes);
  if v_scopes is null then
    return query select 'invalid_scope'::text, 'No scope was requested'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif v_unknown is not null then
    return query select 'invalid_scope'::text, format('Unknown scope: %s', v_unknown), v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ v_client.scopes) then
    return query select 'invalid_scope'::text,
      format('The client did not register the scope %s', (select s from unnest(v_scopes) s where not (s = any (v_client.scopes)) limit 1)),
      v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ rowgate_hidden.current_scopes()) then
    return query select 'invalid_scope'::text, 'A grant cannot hold a scope its user does not hold'::text,
      v_client.client_name, null::text[], null::text;
    return;
  end if;
  if p_organization_id is not null then
    select o.name into v_organization_name from rowgate.organizations o
      where o.id = p_organization_id and o.id = any (rowgate_hidden.current_organization_ids());
    if v_organization_name is null then
      return query select 'invalid_request'::text, 'Unknown organization_id'::text, v_client.client_name, null::text[], null::text;
      return;
    end if;
    v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
    if v_denial is not null then
      return query select 'access_denied'::text, v_denial, v_client.client_name, null::text[], null::text;
      return;
    end if;
    if v_scopes && array['user:read', 'user:write', 'payouts:read', 'payouts:write'] then
      return query select 'invalid_scope'::text, 'Organization tokens carry organization scopes only'::text,
        v_client.client_name, null::text[], null::text;
      return;
    end if;
    select array_agg(d.scope order by d.n), (array_agg(d.message order by d.n))[1] into v_withheld, v_first_denial
      from rowgate_private.token_scope_denials(p_organization_id, v_scopes, 'oauth2_organization_token') d;
    if v_withheld is not null then
      v_scopes := array(select s from unnest(v_scopes) s where not (s = any (v_withheld)) order by s);
      if cardinality(v_scopes) = 0 then
        return query select 'invalid_scope'::text, v_first_denial, v_client.client_name, null::text[], null::text;
        return;
      end if;
      v_note := format('%s of the requested scopes %s left out: your role in this organization does not let you use %s yourself',
        cardinality(v_withheld), case when cardinality(v_withheld) = 1 then 'is' else 'are' end,
        case when cardinality(v_withheld) = 1 then 'it' else 'them' end);
    end if;
  end if;
  return query select 'ok'::text, v_note, v_client.client_name, v_scopes, v_organization_name;
end;
$function$;

--! split: 120-membership-deleted-lists-the-member-s-credentials.sql
-- What a member made in an organization that outlives its membership (SPEC §21):
-- the membership.deleted event lists it so a manager can revoke it. The
-- organization access tokens the user minted there that still authenticate, and
-- its organization OAuth2 grants there that still hold a live access or refresh
-- token (those stop authenticating without the user's access_tokens:manage, but
-- start again if it comes back). Ids only: membership events reach every member,
-- while the tokens themselves are read by holders of access_tokens:manage.
-- Another kind of organization credential a user makes (SQL logins, SPEC §24)
-- is one more key of this object, read from its own table.
create function rowgate_private.member_credentials(p_organization_id uuid, p_user_id uuid) returns jsonb
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select jsonb_build_object(
    'organization_access_tokens', coalesce((
      select jsonb_agg(jsonb_build_object('id', t.id) order by t.created_at, t.id)
      from rowgate.organization_access_tokens t
      where t.organization_id = p_organization_id and t.created_by = p_user_id and t.deleted_at is null
        and (t.expires_at is null or t.expires_at > now())), '[]'),
    'oauth2_grants', coalesce((
      select jsonb_agg(jsonb_build_object('client_id', f.client_id, 'client_name', c.client_name, 'scopes', to_jsonb(f.scopes))
          order by f.created_at, f.id)
      from rowgate_private.oauth2_token_families f join rowgate.oauth2_clients c on c.client_id = f.client_id
      where f.organization_id = p_organization_id and f.user_id = p_user_id and f.revoked_at is null
        and (exists (select from rowgate_private.oauth2_refresh_tokens r
              where r.family_id = f.id and r.used_at is null and r.expires_at > now())
          or exists (select from rowgate_private.oauth2_access_tokens a
              where a.family_id = f.id and a.revoked_at is null and a.expires_at > now()))), '[]'));
$$;
comment on function rowgate_private.member_credentials(uuid, uuid) is
'The live organization credentials a user made in an organization (SPEC §21), as membership.deleted lists them.';

-- Restated from 000056 for one change: a membership.deleted event's data names
-- the credentials the member made in the organization (member_credentials).
create or replace function rowgate_private.tg__events() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $function$
declare
  v_resource text := tg_argv[0];
  v_hidden text[] := string_to_array(tg_argv[3], ',');
  v_status_column text := case when tg_nargs > 4 then tg_argv[4] end;
  -- the data as REST renders it: timestamps in UTC, which the session's time zone usually is already
  v_utc boolean := current_setting('TimeZone') in ('UTC', 'Etc/UTC');
  v_row jsonb := case when v_utc then to_jsonb(case when tg_op = 'DELETE' then old else new end)
    else rowgate_private.json_in_utc(case when tg_op = 'DELETE' then old else new end) end;
  v_old jsonb := case when tg_op <> 'UPDATE' then null when v_utc then to_jsonb(old) else rowgate_private.json_in_utc(old) end;
  v_data jsonb := v_row - v_hidden;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
  -- read into variables: inlined into the statement below, their expressions are planned with it
  v_actor jsonb := rowgate_hidden.current_actor();
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif v_status_column is not null and v_row->v_status_column is distinct from v_old->v_status_column then
    v_types := array[v_resource || '.' || (v_row->>v_status_column)];
  elsif v_data - '{updated_at,last_used_at}'::text[] = (v_old - v_hidden) - '{updated_at,last_used_at}'::text[] then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old - v_hidden) o
      where o.key not in ('updated_at', 'last_used_at') and o.value is distinct from v_row->o.key;
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
    if v_types[1] = 'membership.deleted' then
      v_data := v_data || jsonb_build_object('credentials',
        rowgate_private.member_credentials((v_row->>'organization_id')::uuid, v_resource_id));
    end if;
  elsif v_resource = 'role' then
    v_data := v_data || jsonb_build_object('built_in', false);
  elsif v_resource = 'invitation' then
    select v_data || jsonb_build_object('organization_name', o.name, 'inviter_name', u.name) into v_data
      from rowgate.organizations o left join rowgate.users u on u.id = (v_row->>'invited_by')::uuid
      where o.id = (v_row->>'organization_id')::uuid;
  end if;
  if session_user = 'rowgate_authenticator' then
    v_ip := nullif(current_setting('rowgate.client_address', true), '');
    v_user_agent := left(nullif(current_setting('rowgate.user_agent', true), ''), 256);
  end if;
  with inserted as (
    insert into rowgate.events (organization_id, type, resource_id, data, previous, actor, request_id, audience)
    select coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), t.type, v_resource_id, v_data,
      case when t.type = v_resource || '.updated' then v_previous end,
      actor.value, nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]
    from unnest(v_types) with ordinality as t(type, n)
      cross join (select v_actor as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, v_user_id, left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$function$;

--! split: 200-an-organization-keeps-an-admin-under-concurrency.sql
-- An organization always keeps an admin, whatever requests run at once (SPEC §21). Every
-- change that can take away an admin (a demotion, a removal, leaving, deleting the user;
-- through REST, GraphQL's updateMembership or a function) takes the organization's admin
-- lock, an advisory lock keyed by the organization, and decides whether another admin
-- remains only once it holds it: two admins demoting or removing each other are one after
-- the other, and the second sees the first's committed change (each statement of a
-- volatile function reads a fresh snapshot under READ COMMITTED) and is refused.
--
-- One order: the membership row first, then its organization's admin lock. An UPDATE has
-- locked its row before any row trigger runs, so a lock taken in the trigger comes after
-- the row whatever the path, and every function follows the same order (it locks its
-- membership row, then the organization). A holder of the admin lock waits for no
-- membership row of that organization (each transaction changes one membership per
-- organization), and a change spanning several organizations (deleting a user) takes
-- them in organization id order: no cycle, so no deadlock. Locking the other admins'
-- rows instead would be a cycle: each transaction holds the row the other one wants.
--
-- An admin is a membership with the built-in `admin` role; a custom role holding every
-- permission does not count (docs/teams.md).

create or replace function rowgate_private.lock_organization_admins(p_organization_id uuid)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('rowgate admins ' || p_organization_id::text, 0));
$$;
comment on function rowgate_private.lock_organization_admins(uuid) is
  'The organization''s admin lock: held by whoever decides that another admin remains.';

-- Restated: the check now runs under the organization's admin lock, and a deleted user is no
-- longer exempt (deleting a user who is the last admin of an organization with other members
-- is refused; an organization it is the only member of is deleted first, which exempts it).
create or replace function rowgate_private.tg_memberships__keep_an_admin()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if old.role = 'admin' and old.deleted_at is null and (new.role <> 'admin' or new.deleted_at is not null) then
    perform rowgate_private.lock_organization_admins(old.organization_id);
    if not exists (select 1 from rowgate.memberships m where m.organization_id = old.organization_id
        and m.role = 'admin' and m.deleted_at is null and m.id <> old.id)
      and exists (select 1 from rowgate.organizations o where o.id = old.organization_id and o.deleted_at is null) then
      raise exception 'An organization needs at least one admin' using errcode = 'RG422', detail = 'path.user_id';
    end if;
  end if;
  return new;
end;
$$;

-- Restated: the member's own row, then the organization's admin lock (the order every path
-- keeps), in place of locking the other admins' rows: a leaver holding its own row while
-- waiting for another's is a cycle with that admin leaving at the same moment.
create or replace function rowgate.leave_organization(p_organization_id uuid)
returns void
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Leaving an organization takes a web session' using errcode = 'RG403';
  end if;
  select m.* into v_membership from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.organization_id = p_organization_id and m.user_id = rowgate_hidden.current_user_id()
      and m.deleted_at is null and o.deleted_at is null
    for update of m;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  perform rowgate_private.lock_organization_admins(p_organization_id);
  if v_membership.role = 'admin' and not exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = 'admin' and m.deleted_at is null and m.id <> v_membership.id) then
    raise exception 'The last admin cannot leave the organization: make another member admin first'
      using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.memberships set deleted_at = now() where id = v_membership.id;
end;
$$;

-- The user's memberships, each row locked and then its organization's admin lock taken,
-- organization by organization in id order: what deleting a user holds before it decides.
create or replace function rowgate_private.lock_user_memberships(p_user_id uuid)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_organization_id uuid;
begin
  for v_organization_id in
    select m.organization_id from rowgate.memberships m
      where m.user_id = p_user_id and m.deleted_at is null order by m.organization_id
  loop
    perform 1 from rowgate.memberships m
      where m.user_id = p_user_id and m.organization_id = v_organization_id and m.deleted_at is null
      for update;
    perform rowgate_private.lock_organization_admins(v_organization_id);
  end loop;
end;
$$;
comment on function rowgate_private.lock_user_memberships(uuid) is
  'Locks a user''s memberships and their organizations'' admin locks in the one order (SPEC §21).';

-- Restated: a deleted user's memberships end organization by organization under their
-- admin locks; an organization of which it is the only member is deleted with it, and the
-- last admin of one with other members is refused by the keep-an-admin trigger.
create or replace function rowgate_private.tg_users__leave_organizations()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_private.lock_user_memberships(new.id);
  for v_membership in
    select m.* from rowgate.memberships m where m.user_id = new.id and m.deleted_at is null order by m.organization_id
  loop
    if not exists (select 1 from rowgate.memberships m where m.organization_id = v_membership.organization_id
        and m.deleted_at is null and m.id <> v_membership.id) then
      update rowgate.organizations set deleted_at = new.deleted_at where id = v_membership.organization_id and deleted_at is null;
    end if;
    update rowgate.memberships set deleted_at = new.deleted_at where id = v_membership.id;
  end loop;
  return null;
end;
$$;

-- Restated: before the user is deleted, its memberships and their organizations' admin
-- locks are held, and the organizations it is the last admin of while others are members
-- are named in a 422 (SPEC §21): make another member admin, or delete them, first. A 422
-- rolls the whole request back, the revoked credentials with it.
create or replace function rowgate.delete_current_user()
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_orphaned text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  -- the credentials before the memberships: a request made with one of this user's tokens
  -- holds the token's row (its last use, recorded as it authenticates) before it changes a
  -- membership, and this keeps that order
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  perform rowgate.delete_oauth2_client(c.id) from rowgate.oauth2_clients c where c.user_id = v_user_id and c.deleted_at is null;
  perform rowgate_private.lock_user_memberships(v_user_id);
  select string_agg(format('%s (%s)', o.name, o.id), ', ' order by o.name, o.id) into v_orphaned
    from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.user_id = v_user_id and m.role = 'admin' and m.deleted_at is null and o.deleted_at is null
      and not exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.role = 'admin' and a.deleted_at is null and a.id <> m.id)
      and exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.deleted_at is null and a.id <> m.id);
  if v_orphaned is not null then
    raise exception 'You are the last admin of organizations that have other members: %. Make another member admin, or delete those organizations, first', v_orphaned
      using errcode = 'RG422', detail = 'path';
  end if;
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  return found;
end;
$$;

--! split: 310-an-invitation-is-checked-as-its-invitee-finds-it.sql
-- Accepting or declining an invitation finds it only when it is the caller's (SPEC §21: anyone
-- else gets 404), and a check of either operation must answer the same (SPEC §20). The
-- invitee's predicate is one function that both ask: rowgate_private.invitee_invitation when
-- it locks the row (re-evaluated on the row it waited for, so a concurrent answer is seen) and
-- rowgate_hidden.check_batch through invitee_invitation_found(), a new lookup of the operations.
create or replace function rowgate_hidden.is_invitee_invitation(p_invitation rowgate.invitations)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p_invitation.email = rowgate_hidden.current_user_email()
    and p_invitation.status = 'pending' and p_invitation.expires_at > now()
    and exists (select from rowgate.organizations o where o.id = p_invitation.organization_id and o.deleted_at is null);
$$;
comment on function rowgate_hidden.is_invitee_invitation(rowgate.invitations) is
  'Whether the invitation is the current user''s to answer: to its address, pending, unexpired, of a live organization (SPEC §21).';

create or replace function rowgate_hidden.invitee_invitation_found(p_id uuid)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select exists (select from rowgate.invitations i where i.id = p_id and rowgate_hidden.is_invitee_invitation(i));
$$;
comment on function rowgate_hidden.invitee_invitation_found(uuid) is
  'Whether the invitation p_id is the current user''s to accept or decline: the lookup `invitee` of a check (SPEC §20).';
grant execute on function rowgate_hidden.invitee_invitation_found(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- restated: the invitee's predicate is is_invitee_invitation(), no longer written out here
create or replace function rowgate_private.invitee_invitation(p_id uuid)
  returns rowgate.invitations
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_invitation rowgate.invitations;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  select i.* into v_invitation from rowgate.invitations i
    where i.id = p_id and rowgate_hidden.is_invitee_invitation(i)
    for update of i;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  return v_invitation;
end;
$$;

alter table rowgate_hidden.operations drop constraint operations_lookup_check;
-- squawk-ignore constraint-missing-not-valid -- rowgate_hidden.operations holds one row per API operation: the scan reads about a hundred rows
alter table rowgate_hidden.operations add constraint operations_lookup_check
  check (lookup = any (array['none', 'list', 'target', 'authorize', 'visible', 'invitee']));

--! split: 320-a-check-finds-organizations-and-invitations-as-requests-do.sql
-- A check answers what its request answers (SPEC §20), restated for three of its lookups:
-- - a looked-up organization is its own organization, so a check of `organizations:get` (or of
--   leaving) by a member finds it, names the member's role, and a check about a member asks there;
-- - `invitee`: accepting or declining an invitation is found only when the invitation is the
--   caller's (rowgate_hidden.invitee_invitation_found), as the request finds it (404 otherwise).
create or replace function rowgate_hidden.check_batch(p_checks jsonb, p_as_web_session boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := case when p_as_web_session then 'web_session' else rowgate_hidden.current_credential_kind() end;
  v_scopes text[] := coalesce(case when p_as_web_session then rowgate_hidden.web_session_scopes() else rowgate_hidden.current_scopes() end, '{}');
  v_unknown record;
  v_lookup record;
  v_where text;
  -- the column of a looked-up row that names its organization: an organization is its own
  v_organization_column text;
  v_rows jsonb;
  -- the items a resource lookup found, by their place: the resource's organization (null when it has none)
  v_found jsonb := '{}';
  v_answers jsonb;
  -- an Organization subject's creates are in its own organization
  v_subject_organization_id uuid := case when rowgate_hidden.current_subject_kind() = 'organization'
    then rowgate_hidden.current_subject_id() end;
  v_platform_admin boolean;
begin
  select c.value ->> 'operation' as operation into v_unknown
    from jsonb_array_elements(p_checks) c
    where not exists (select from rowgate_hidden.operations o where o.operation = c.value ->> 'operation')
    limit 1;
  if found then
    raise exception 'Unknown operation: %', v_unknown.operation using errcode = 'RG422', detail = 'operation';
  end if;

  -- 3. the resources found by their columns: one statement per resource for every item past the scope step
  for v_lookup in
    select (i.op).resource, (i.op).match,
        jsonb_agg(jsonb_build_object('n', i.n, 'params', i.params, 'organization_id', i.named)) as items
      from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).lookup = 'visible'
      group by (i.op).resource, (i.op).match
  loop
    select string_agg(format('r.%I = (i.params ->> %L)::%s', m.value, m.key, format_type(a.atttypid, a.atttypmod)), ' and ')
      into v_where
      from jsonb_each_text(v_lookup.match) m
      join pg_attribute a on a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = m.value;
    v_organization_column := case
      when v_lookup.resource = 'organizations' then 'id'
      when exists (select from pg_attribute a
        where a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = 'organization_id' and not a.attisdropped)
        then 'organization_id'
    end;
    execute format(
        'select coalesce(jsonb_object_agg(i.n, x.organization_id), ''{}'')
         from jsonb_to_recordset($1) i(n bigint, params jsonb, organization_id uuid)
           cross join lateral (select %s as organization_id from rowgate.%I r
             where %s and (i.organization_id is null or %s = i.organization_id) limit 1) x',
        coalesce('r.' || quote_ident(v_organization_column), 'null::uuid'), v_lookup.resource, v_where,
        coalesce('r.' || quote_ident(v_organization_column), 'i.organization_id'))
      into v_rows using v_lookup.items;
    v_found := v_found || v_rows;
  end loop;

  -- asked only where an item reaches the policy step: only the User roles may ask it
  if exists (select from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).policy_key = 'platform_admin') then
    v_platform_admin := rowgate_hidden.current_user_is_platform_admin();
  end if;

  with items as materialized (
    select i.*, case when i.step is null and (i.op).lookup = 'authorize'
        then (i.params ->> (select k from jsonb_object_keys((i.op).match) k limit 1))::uuid end as target_id
    from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
  ), authorized as materialized (
    -- the organizations of the resources named by their id, reached by the subject: one statement per resource
    select g.resource, r.id, r.organization_id
    from (select (i.op).resource, array_agg(i.target_id) as ids from items i where i.target_id is not null group by (i.op).resource) g
      cross join lateral rowgate_hidden.reachable_resource_organization_ids(g.resource, g.ids) r
  ), resolved as materialized (
    -- 3. and 4. the resource and its organization, as each operation finds them
    select i.n, i.op, i.params, i.step, i.held, null::boolean as found, null::uuid as organization_id
    from items i
    where i.step is not null
    union all
    select i.n, i.op, i.params, i.step, i.held,
      case (i.op).lookup
        when 'none' then true
        when 'list' then i.named is null or i.named = any ((select rowgate_hidden.current_organization_ids())::uuid[])
        when 'target' then coalesce(coalesce(i.named, v_subject_organization_id) = any ((select rowgate_hidden.current_organization_ids())::uuid[]), false)
        when 'visible' then v_found ? i.n::text
        -- an invitation is found only by its invitee, and concerns no organization the caller reaches
        when 'invitee' then rowgate_hidden.invitee_invitation_found((i.params ->> 'id')::uuid)
      end,
      case (i.op).lookup
        when 'list' then i.named
        when 'target' then coalesce(i.named, v_subject_organization_id)
        when 'visible' then (v_found ->> i.n::text)::uuid
      end
    from items i
    where i.step is null and (i.op).lookup <> 'authorize'
    union all
    select i.n, i.op, i.params, i.step, i.held, a.organization_id is not null, a.organization_id
    from items i
      left join authorized a on a.resource = (i.op).resource and a.id = i.target_id
    where i.step is null and (i.op).lookup = 'authorize'
  ), organizations as materialized (
    -- each organization's role once, and each of its policies once
    select o.organization_id, rowgate_hidden.current_role_in(o.organization_id) as role
    from (select distinct x.organization_id from resolved x where x.found and x.organization_id is not null) o
  ), policies as materialized (
    select p.organization_id, p.policy_key, rowgate_hidden.policy_denial(p.organization_id, p.policy_key) as denial
    from (select distinct x.organization_id, (x.op).policy_key from resolved x
      where x.found and x.organization_id is not null and (x.op).policy_key is not null and (x.op).policy_key <> 'platform_admin') p
  )
  select coalesce(jsonb_agg(
      case
        when x.step is not null then rowgate_hidden.check_answer(x.op, false, case x.step when 'authentication' then 401 else 403 end,
          case x.step when 'authentication' then 'Unauthorized' else 'InsufficientScope' end, x.step, null, v_kind, x.held, null, null)
        when not x.found then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        when d.denial is not null then rowgate_hidden.check_answer(x.op, false, 403, 'NotPermitted', 'policy', d.denial, v_kind, x.held,
          x.organization_id, o.role)
        -- an organization's account is the one resource found after its organization's policy
        when (x.op).operation = 'organizations:get_account' and not rowgate_hidden.organization_account_exists(x.organization_id)
          then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        else rowgate_hidden.check_answer(x.op, true, (x.op).status, null, null, null, v_kind, x.held, x.organization_id, o.role)
      end order by x.n), '[]')
    into v_answers
  from resolved x
    left join organizations o on o.organization_id = x.organization_id
    left join policies p on p.organization_id = x.organization_id and p.policy_key = (x.op).policy_key
    -- 5. the policy; removing another member also depends on that member's role (SPEC §21), not on a body
    cross join lateral (
      select coalesce(
        case
          when x.step is not null or not x.found then null
          when (x.op).policy_key = 'platform_admin' then
            case when not v_platform_admin then 'Only platform admins can impersonate users' end
          else p.denial
        end,
        case when x.step is null and x.found and (x.op).operation = 'members:remove'
          then rowgate_hidden.member_removal_denial(x.organization_id, (x.params ->> 'user_id')::uuid) end) as denial
    ) d;
  return v_answers;
end;
$function$;
comment on function rowgate_hidden.check_batch(jsonb,boolean) is 'What each request of p_checks ([{operation, params, organization_id}]) would answer for the current subject (SPEC §20), in their order, each with the organization it concerns; as for a web session when p_as_web_session.';
grant execute on function rowgate_hidden.check_batch(jsonb,boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

--! split: 330-a-check-about-another-user-asks-nothing-of-other-subjects.sql
-- A check about another user (SPEC §20) is for a User subject whose credential holds
-- `members_read`; with any other credential (an organization token, a customer or member
-- session) each item answers 404, and nothing is looked up for it: its role may read none of
-- what the caller's look reads, so looking was a 5xx.
create or replace function rowgate_hidden.check_operations(p_checks jsonb, p_user_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_may boolean;
  v_first jsonb;
  -- the items asked about another user that the caller may ask (SPEC §20), by their place
  v_asked bigint[];
  v_second jsonb;
  v_saved text[];
begin
  if p_user_id is null then
    return coalesce((select jsonb_agg(a.value - 'organization_id' order by a.n)
      from jsonb_array_elements(rowgate_hidden.check_batch(p_checks)) with ordinality a(value, n)), '[]');
  end if;
  v_may := rowgate_hidden.current_subject_kind() = 'user' and rowgate_hidden.has_scope('members_read');
  -- any other subject may not ask: nothing is looked up for it (its role reads no user's data), every item is a 404
  if v_may then
    v_first := rowgate_hidden.check_batch(p_checks, true);
    select array_agg(a.n order by a.n) into v_asked
      from jsonb_array_elements(v_first) with ordinality a(value, n)
      where a.value ->> 'organization_id' is not null and (a.value ->> 'status')::int <> 404
        and rowgate_hidden.has_permission((a.value ->> 'organization_id')::uuid, 'members:manage')
        and exists (select from rowgate.memberships m
          where m.organization_id = (a.value ->> 'organization_id')::uuid and m.user_id = p_user_id);
  end if;
  if v_asked is not null then
    v_saved := rowgate_hidden.become_web_session(p_user_id);
    -- each item asked in the organization the caller's own look found, and nowhere else: a resource
    -- named by a column unique only within an organization must not be found in another of the user's
    v_second := rowgate_hidden.check_batch((
      select jsonb_agg(jsonb_set(p_checks -> (s.n - 1)::int, '{organization_id}', v_first -> (s.n - 1)::int -> 'organization_id')
        order by s.n)
      from unnest(v_asked) s(n)), true);
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return (
    select jsonb_agg(
        case when s.k is not null
            and (v_second -> (s.k - 1)::int ->> 'organization_id') is not distinct from (v_first -> (c.n - 1)::int ->> 'organization_id')
            and (v_second -> (s.k - 1)::int ->> 'status')::int <> 404
          then (v_second -> (s.k - 1)::int) - 'organization_id'
        -- every 404 alike: the one the user's own look would answer
        else rowgate_hidden.check_answer(o, false, 404, 'ResourceNotFound', 'resource', null, 'web_session',
          array(select x from unnest(o.scopes) x where x = any (rowgate_hidden.web_session_scopes())), null, null) - 'organization_id'
        end order by c.n)
    from jsonb_array_elements(p_checks) with ordinality c(value, n)
      left join unnest(v_asked) with ordinality s(n, k) on s.n = c.n
      left join rowgate_hidden.operations o on o.operation = c.value ->> 'operation');
end;
$function$;
grant execute on function rowgate_hidden.check_operations(jsonb,uuid) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

--! split: 340-a-scope-refusal-is-recorded-where-it-resolves.sql
-- A scope refusal is kept in the denial log too (SPEC §20), so a manager sees a token failing
-- for lack of a scope. The request answers 403 before resolving anything (SPEC §5); the API then
-- hands the refusal here with step `scope`, and its resource or organization_id is resolved as
-- if the credential held the operation's scopes, only to find the organization to record it in:
-- still only one the subject reaches, within the same cap.
create or replace function rowgate_private.record_denial(p_subject_kind text, p_subject_id uuid, p_credential_kind text, p_credential_id uuid, p_scopes text, p_request_id text, p_operation text, p_params jsonb, p_organization_id uuid, p_named_organization_id uuid, p_step text, p_error text, p_reason text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_organization_id uuid := p_organization_id;
  v_reached boolean;
  v_credential_id uuid := coalesce(p_credential_id, p_subject_id);
  v_recorded integer;
  v_overflow_id uuid;
begin
  if p_subject_kind is null or p_subject_id is null or p_credential_kind is null then
    return false;
  end if;
  -- a scope refusal answered before anything was resolved (SPEC §5): its resource is resolved here, only to
  -- record it, as if the credential held the operation's scopes; the reach below is still the subject's
  perform set_config('rowgate.subject_kind', p_subject_kind, true), set_config('rowgate.subject_id', p_subject_id::text, true),
    set_config('rowgate.credential_kind', p_credential_kind, true),
    set_config('rowgate.scopes', concat_ws(' ', nullif(p_scopes, ''), case when p_step = 'scope' then
      (select nullif(array_to_string(o.scopes, ' '), '') from rowgate_hidden.operations o where o.operation = p_operation) end), true);
  if v_organization_id is null and p_operation is not null then
    begin
      v_organization_id := (rowgate_hidden.check_operation(p_operation, coalesce(p_params, '{}'), p_named_organization_id)
        ->> 'organization_id')::uuid;
    exception when others then
      v_organization_id := null;
    end;
  end if;
  v_reached := v_organization_id is not null and v_organization_id = any (rowgate_hidden.current_organization_ids());
  perform rowgate_hidden.restore_subject(v_saved);
  if not v_reached then
    return false;
  end if;

  insert into rowgate_private.denial_counts as c (organization_id, credential_id, hour, recorded)
    values (v_organization_id, v_credential_id, date_trunc('hour', now()), 1)
    on conflict (organization_id, credential_id, hour) do update set recorded = c.recorded + 1
    returning c.recorded, c.overflow_id into v_recorded, v_overflow_id;
  if v_recorded <= 1000 then
    insert into rowgate.denials (organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason)
      values (v_organization_id, nullif(p_request_id, ''), p_operation, p_credential_kind, p_credential_id,
        case when p_subject_kind = 'user' then p_subject_id end, p_step, p_error, p_reason);
  elsif v_overflow_id is null then
    insert into rowgate.denials (organization_id, credential_kind, credential_id, user_id)
      values (v_organization_id, p_credential_kind, p_credential_id, case when p_subject_kind = 'user' then p_subject_id end)
      returning id into v_overflow_id;
    update rowgate_private.denial_counts c set overflow_id = v_overflow_id
      where c.organization_id = v_organization_id and c.credential_id = v_credential_id and c.hour = date_trunc('hour', now());
  else
    update rowgate.denials d set count = d.count + 1 where d.organization_id = v_organization_id and d.id = v_overflow_id;
  end if;
  return true;
end;
$function$;
comment on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) is 'Keeps a 403 answer (SPEC §20) in the organization it concerns (for a scope refusal, the one its resource or organization_id resolves to), if the subject reaches it, within the cap of 1,000 rows per credential, organization and hour; the API calls it after the request rolled back.';
grant execute on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) to rowgate_authenticator;

--! split: 390-operations-are-the-documented-ones-with-their-permissions.sql
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'denials:list', 'events:feed', 'events:get', 'events:list', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:update');
insert into rowgate_hidden.operations (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) values
  ('accounts:create', 'POST', '/v1/accounts/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('accounts:get', 'GET', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('accounts:update', 'PATCH', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_write', 'payouts_write'], 'organization', 'finance_write', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('auth:logout', 'POST', '/v1/auth/logout', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 204, 'none', null, null, null),
  ('authorization:check', 'POST', '/v1/authorization/check', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorization:operations', 'GET', '/v1/authorization/operations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('credentials:revoke', 'POST', '/v1/credentials/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('customer_members:create', 'POST', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:delete', 'DELETE', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:get', 'GET', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'read'),
  ('customer_members:list', 'GET', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'read'),
  ('customer_members:list_all', 'GET', '/v1/members/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customer_members:update', 'PATCH', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_portal:get_order', 'GET', '/v1/customer-portal/orders/{id}', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, null),
  ('customer_portal:list_orders', 'GET', '/v1/customer-portal/orders/', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:me', 'GET', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:update_me', 'PATCH', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_sessions:create', 'POST', '/v1/customer-sessions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customer_sessions_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:create', 'POST', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:delete', 'DELETE', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:delete_external', 'DELETE', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('customers:get', 'GET', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"id":"id"}'::jsonb, 'read'),
  ('customers:get_external', 'GET', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'read'),
  ('customers:list', 'GET', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customers:update', 'PATCH', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:update_external', 'PATCH', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('denials:list', 'GET', '/v1/organizations/{id}/denials', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('events:feed', 'GET', '/v1/events/feed', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('events:get', 'GET', '/v1/events/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', 'read', null, 200, 'visible', 'events', '{"id":"id"}'::jsonb, 'read'),
  ('events:list', 'GET', '/v1/events/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('impersonations:create', 'POST', '/v1/impersonations/', array['web_session'], array['user:write'], 'web_user_write', 'platform_admin', null, 201, 'none', null, null, 'platform_admin'),
  ('invitations:accept', 'POST', '/v1/invitations/{id}/accept', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'invitee', 'invitations', '{"id":"id"}'::jsonb, null),
  ('invitations:create', 'POST', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:decline', 'POST', '/v1/invitations/{id}/decline', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'invitee', 'invitations', '{"id":"id"}'::jsonb, null),
  ('invitations:list', 'GET', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'members_management', 'members:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:mine', 'GET', '/v1/invitations/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('invitations:revoke', 'DELETE', '/v1/organizations/{id}/invitations/{invitation_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('login_code:authenticate', 'POST', '/v1/login-code/authenticate', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('login_code:request', 'POST', '/v1/login-code/request', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('members:add', 'POST', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('members:leave', 'DELETE', '/v1/organizations/{id}/members/me', array['web_session'], array['user:write'], 'web_user_write', 'read', null, 204, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('members:list', 'GET', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('members:remove', 'DELETE', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 204, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('members:update', 'PATCH', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 200, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('oauth2:authorize', 'GET', '/v1/oauth2/authorize', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('oauth2:consent', 'POST', '/v1/oauth2/consent', array['web_session'], array['user:write'], 'web_user_write', null, null, 302, 'none', null, null, null),
  ('oauth2:introspect', 'POST', '/v1/oauth2/introspect', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:register', 'POST', '/v1/oauth2/register', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('oauth2:revoke', 'POST', '/v1/oauth2/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:token', 'POST', '/v1/oauth2/token', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:userinfo', 'GET', '/v1/oauth2/userinfo', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:read', 'user:write'], 'user_read', null, null, 200, 'none', null, null, null),
  ('oauth2_clients:delete', 'DELETE', '/v1/oauth2/clients/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:get', 'GET', '/v1/oauth2/clients/{id}', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:list', 'GET', '/v1/oauth2/clients/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('orders:create', 'POST', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('orders:get', 'GET', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', 'read', null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, 'read'),
  ('orders:list', 'GET', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('orders:update', 'PATCH', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 200, 'authorize', 'order', '{"id":"id"}'::jsonb, 'orders:write'),
  ('organization_access_tokens:create', 'POST', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', 'access_tokens:manage', 201, 'target', null, null, 'access_token_management'),
  ('organization_access_tokens:delete', 'DELETE', '/v1/organization-access-tokens/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', 'access_tokens:manage', 204, 'authorize', 'organization_access_token', '{"id":"id"}'::jsonb, 'access_token_management'),
  ('organization_access_tokens:list', 'GET', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_read', 'organization_access_tokens_write'], 'organization_user', null, null, 200, 'list', null, null, null),
  ('organizations:create', 'POST', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', null, null, 201, 'none', null, null, null),
  ('organizations:delete', 'DELETE', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('organizations:get', 'GET', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:get_account', 'GET', '/v1/organizations/{id}/account', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'finance_read'),
  ('organizations:list', 'GET', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('organizations:permissions', 'GET', '/v1/organizations/{id}/permissions', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:update', 'PATCH', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('payout_accounts:create', 'POST', '/v1/payout-accounts/', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 201, 'target', null, null, 'finance_write'),
  ('payout_accounts:delete', 'DELETE', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 204, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('payout_accounts:get', 'GET', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', 'finance_read', null, 200, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('payout_accounts:list', 'GET', '/v1/payout-accounts/', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', null, null, 200, 'list', null, null, null),
  ('personal_access_tokens:create', 'POST', '/v1/personal-access-tokens/', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('personal_access_tokens:delete', 'DELETE', '/v1/personal-access-tokens/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'personal_access_tokens', '{"id":"id"}'::jsonb, null),
  ('personal_access_tokens:list', 'GET', '/v1/personal-access-tokens/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('products:create', 'POST', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 201, 'target', null, null, 'products:write'),
  ('products:delete', 'DELETE', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 204, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('products:get', 'GET', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', 'read', null, 200, 'visible', 'products', '{"id":"id"}'::jsonb, 'read'),
  ('products:list', 'GET', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('products:update', 'PATCH', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 200, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('refunds:create', 'POST', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('refunds:get', 'GET', '/v1/refunds/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', 'read', null, 200, 'visible', 'refunds', '{"id":"id"}'::jsonb, 'read'),
  ('refunds:list', 'GET', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('roles:create', 'POST', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:delete', 'DELETE', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:list', 'GET', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('roles:update', 'PATCH', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('transactions:get', 'GET', '/v1/transactions/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'read', null, 200, 'visible', 'transactions', '{"id":"id"}'::jsonb, 'read'),
  ('transactions:list', 'GET', '/v1/transactions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('users:delete_me', 'DELETE', '/v1/users/me', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:write'], 'user_write', null, null, 204, 'none', null, null, null),
  ('users:me', 'GET', '/v1/users/me', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('users:update_me', 'PATCH', '/v1/users/me', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('webhook_deliveries:list', 'GET', '/v1/webhook-endpoints/{id}/deliveries', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:create', 'POST', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('webhook_endpoints:delete', 'DELETE', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 204, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:get', 'GET', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:list', 'GET', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('webhook_endpoints:redeliver', 'POST', '/v1/webhook-endpoints/{id}/redeliver', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 202, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:update', 'PATCH', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage')
on conflict (operation) do update set method = excluded.method, path = excluded.path, credentials = excluded.credentials, scopes = excluded.scopes, access_class = excluded.access_class, policy = excluded.policy, permission = excluded.permission, status = excluded.status, lookup = excluded.lookup, resource = excluded.resource, match = excluded.match, policy_key = excluded.policy_key;

--! split: 500-rate-limit-counts-in-time-slices.sql
-- The rate limits' counts live in four unlogged partitions, one per slice of
-- 15 seconds of the database's clock taken in turn, and a slice that is over
-- is emptied whole by TRUNCATE: however many new keys arrive (a flood of IPv6
-- /64s), the store holds only the keys of the last minute, and emptying it
-- costs the same whatever it holds. A window (at most 10 seconds) is always
-- over before the slice its first row went to is emptied, two slices later. A
-- key's points in one window may be split over two slices (written on either
-- side of a slice's end): its count is their sum.
drop function rowgate_private.prune_rate_limit_counts();
-- squawk-ignore ban-drop-table -- the previous release reaches the counts only through the two functions re-created here with their signatures, and a minute of counts is all they hold
drop table rowgate_private.rate_limit_counts;

create table rowgate_private.rate_limit_counts (
  policy text not null,
  key text not null,
  window_number bigint not null,
  points integer not null,
  slice smallint not null,
  primary key (policy, key, window_number, slice)
) partition by list (slice);
comment on table rowgate_private.rate_limit_counts is
  'Requests let through per rate-limit policy, key (a credential''s hash or a client address) and window, summed over every server; in four slices of 15 seconds taken in turn, each emptied whole once its windows are over.';
create unlogged table rowgate_private.rate_limit_counts_0 partition of rowgate_private.rate_limit_counts for values in (0);
create unlogged table rowgate_private.rate_limit_counts_1 partition of rowgate_private.rate_limit_counts for values in (1);
create unlogged table rowgate_private.rate_limit_counts_2 partition of rowgate_private.rate_limit_counts for values in (2);
create unlogged table rowgate_private.rate_limit_counts_3 partition of rowgate_private.rate_limit_counts for values in (3);

create function rowgate_private.rate_limit_slice(p_at timestamptz) returns smallint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (floor(extract(epoch from p_at) / 15)::bigint % 4)::smallint;
$$;
comment on function rowgate_private.rate_limit_slice(timestamptz) is
  'The slice of the rate limits'' counts that is written at a time: 15-second slices of the clock, four taken in turn.';

-- p_expires_in is kept for the servers of the previous release, which still send it: a window's
-- end is now bounded by the slice it was written in.
create or replace function rowgate_private.exchange_rate_limit_counts(
  p_server uuid, p_policies text[], p_keys text[], p_windows bigint[], p_points integer[], p_expires_in integer[]
) returns table (policy text, key text, window_number bigint, points integer, servers integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_servers integer;
begin
  insert into rowgate_private.rate_limit_servers (id, seen_at) values (p_server, now())
    on conflict (id) do update set seen_at = excluded.seen_at;
  select count(*)::integer into v_servers from rowgate_private.rate_limit_servers s
    where s.seen_at > now() - interval '10 seconds';
  insert into rowgate_private.rate_limit_counts as c (policy, key, window_number, points, slice)
    select d.policy, d.key, d.window_number, d.points, rowgate_private.rate_limit_slice(now())
    from unnest(p_policies, p_keys, p_windows, p_points) as d(policy, key, window_number, points)
    where d.points <> 0
    order by d.policy, d.key, d.window_number
    on conflict (policy, key, window_number, slice) do update set points = c.points + excluded.points;
  return query
    select d.policy, d.key, d.window_number,
      coalesce((select sum(c.points)::integer from rowgate_private.rate_limit_counts c
        where c.policy = d.policy and c.key = d.key and c.window_number = d.window_number), 0),
      v_servers
    from unnest(p_policies, p_keys, p_windows) with ordinality as d(policy, key, window_number, n)
    order by d.n;
  return query select null::text, null::text, null::bigint, null::integer, v_servers;
end;
$$;

-- Emptying a slice waits for no one: an exchange holding it only delays the emptying to the next
-- call (of this server or another), never an exchange behind a waiting TRUNCATE.
create function rowgate_private.prune_rate_limit_counts() returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '50ms'
as $$
declare
  v_slice smallint := (rowgate_private.rate_limit_slice(now()) + 2) % 4;
  v_partition text := format('rowgate_private.rate_limit_counts_%s', v_slice);
  v_full boolean;
begin
  delete from rowgate_private.rate_limit_servers s where s.seen_at < now() - interval '1 hour';
  execute format('select exists (select from %s)', v_partition) into v_full;
  if not v_full then
    return 0;
  end if;
  execute format('truncate %s', v_partition);
  return 1;
exception when lock_not_available then
  return 0;
end;
$$;
comment on function rowgate_private.prune_rate_limit_counts() is
  'Empties the slice of the rate limits'' counts whose windows are all over (unless an exchange holds it: then a later call does), and forgets servers gone for an hour; returns the slices emptied.';
grant execute on function rowgate_private.prune_rate_limit_counts() to rowgate_authenticator;

--! split: 600-the-feed-places-committed-events.sql
-- The event feed (SPEC §17) hands out events in the order their transactions become visible,
-- and no other transaction (another database's, an analyst's, a migration's) may hold it back.
-- A position taken at insert time (the transaction's id) can only be handed out once every
-- older transaction has ended, which is the cluster-wide xmin horizon. Instead one sequencer,
-- rowgate_private.place_events(), numbers events after they commit: it runs serialized and
-- sees committed rows only, so positions grow in the order events become visible and a reader
-- never sees a lower position appear after a higher one. An event's position is null until
-- the sequencer has placed it. Positions already given are renumbered once here, in id order
-- (the cursors of the old format answer 410 CursorExpired: src/resources/events.ts).
alter table rowgate.events alter column feed_position drop default;
-- squawk-ignore ban-drop-not-null -- a position is null until the sequencer places its event; the previous release's feed is replaced with this one (docs/operations.md, Upgrading)
alter table rowgate.events alter column feed_position drop not null;
-- squawk-ignore require-concurrent-index-deletion -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
drop index rowgate.events_organization_feed;
drop sequence rowgate_private.event_positions;

-- Not cached: each nextval is greater than every one handed out before, in any session.
create sequence rowgate_private.feed_positions as bigint;
comment on sequence rowgate_private.feed_positions is 'The feed''s positions, handed out by the sequencer (place_events) alone.';

-- squawk-ignore changing-column-type -- positions become the sequencer's numbers once, in id order; the rewrite takes time in proportion to the events kept (docs/operations.md, Upgrading)
alter table rowgate.events alter column feed_position type bigint
  using case when feed_position is null then null else nextval('rowgate_private.feed_positions') end;
comment on column rowgate.events.feed_position is 'The event''s place in the feed (SPEC §17), given once its transaction has committed (null until then, at most about a second). Order by it to read events as the feed hands them out.';

-- The feed reads each organization's placed events in position order; the sequencer finds
-- the unplaced ones (committed or still open: only the committed are visible to it) in id order.
-- squawk-ignore require-concurrent-index-creation -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
create index events_organization_feed on rowgate.events (organization_id, feed_position) where feed_position is not null;
-- squawk-ignore require-concurrent-index-creation -- the events are renumbered in this migration under its exclusive lock anyway (docs/operations.md, Upgrading)
create index events_unplaced on rowgate.events (id) where feed_position is null;

--! split: 610-deliveries-are-taken-in-when-their-event-is-placed.sql
-- A webhook endpoint's first attempts go out in feed order (SPEC §17). A delivery is taken
-- into its endpoint's lane by the sequencer, in the transaction that places its event, and
-- carries that event's position: the lanes no longer wait for the xmin horizon either. A
-- delivery queued for an event placed earlier (redelivered, or resumed with its endpoint)
-- has a null position until the sequencer's next run takes it in.
drop function rowgate_private.take_webhook_deliveries_in(xid8);
-- squawk-ignore ban-drop-table -- the intake is private to the functions this migration replaces; no release reads it directly
drop table rowgate_private.webhook_intake;
-- squawk-ignore require-concurrent-index-deletion -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
drop index rowgate_private.webhook_deliveries_endpoint_pending;
-- squawk-ignore require-concurrent-index-deletion -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
drop index rowgate_private.webhook_deliveries_intake;
-- squawk-ignore ban-drop-column -- only the webhook functions replaced here read it; the previous release's senders call them by the same signatures
alter table rowgate_private.webhook_deliveries drop column xid;
alter table rowgate_private.webhook_deliveries add column feed_position bigint;
comment on column rowgate_private.webhook_deliveries.feed_position is 'Its event''s feed position, set when the sequencer takes the delivery into its endpoint''s lane (null until then); first attempts go out in this order.';
update rowgate_private.webhook_deliveries d set feed_position = e.feed_position
  from rowgate.events e
  where e.organization_id = d.organization_id and e.id = d.event_id and d.status in ('pending', 'paused');
update rowgate_private.webhook_deliveries d set feed_position = 0
  where d.feed_position is null and d.status = 'pending';
-- squawk-ignore require-concurrent-index-creation -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
create index webhook_deliveries_endpoint_pending on rowgate_private.webhook_deliveries (endpoint_id, feed_position, id)
  where status = 'pending' and feed_position is not null;
-- squawk-ignore require-concurrent-index-creation -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
create index webhook_deliveries_waiting on rowgate_private.webhook_deliveries (id)
  where status = 'pending' and feed_position is null;

-- The sequencer: one run at a time across every server (an advisory lock, skipped when
-- another holds it), a bounded batch, one short transaction. It numbers the committed
-- events not yet placed in id order (a transaction's events in the order it wrote them),
-- takes their deliveries and any delivery queued for an event placed earlier into their
-- endpoints' lanes, and makes those lanes due. It returns how many events it placed.
create function rowgate_private.place_events(p_limit integer) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '1s'
as $$
declare
  v_organizations uuid[];
  v_ids uuid[];
begin
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate feed sequencer', 0)) then
    return 0;
  end if;
  with batch as (
    select e.organization_id, e.id from rowgate.events e
    where e.feed_position is null
    order by e.id
    limit greatest(p_limit, 1)
  ), numbered as (
    select b.organization_id, b.id, nextval('rowgate_private.feed_positions') as feed_position
    from (select * from batch order by id) b
  ), placed as (
    update rowgate.events e set feed_position = n.feed_position
      from numbered n
      where e.organization_id = n.organization_id and e.id = n.id
      returning e.organization_id, e.id
  )
  select array_agg(p.organization_id), array_agg(p.id) into v_organizations, v_ids from placed p;
  with taken as (
    update rowgate_private.webhook_deliveries d set feed_position = e.feed_position
      from rowgate.events e
      where d.event_id = any (v_ids) and d.feed_position is null and d.status = 'pending'
        and e.organization_id = d.organization_id and e.id = d.event_id
      returning d.organization_id, d.endpoint_id
  ), earlier as (
    -- a delivery whose event was placed before (or pruned since: the claim drops it)
    update rowgate_private.webhook_deliveries d set feed_position = coalesce(e.feed_position, 0)
      from rowgate_private.webhook_deliveries w
        left join rowgate.events e on e.organization_id = w.organization_id and e.id = w.event_id
      where w.id in (select q.id from rowgate_private.webhook_deliveries q
          where q.status = 'pending' and q.feed_position is null order by q.id limit 1000)
        and (e.id is null or e.feed_position is not null) and not w.event_id = any (coalesce(v_ids, '{}'))
        and d.organization_id = w.organization_id and d.id = w.id
      returning d.organization_id, d.endpoint_id
  )
  insert into rowgate_private.webhook_lanes as l (organization_id, endpoint_id, due_at)
    select distinct t.organization_id, t.endpoint_id, now() from (select * from taken union all select * from earlier) t order by 1, 2
    on conflict (organization_id, endpoint_id) do update set due_at = now()
      where l.delivery_id is null and (l.due_at is null or (l.failures = 0 and l.due_at > now()));
  return coalesce(cardinality(v_ids), 0);
end;
$$;
comment on function rowgate_private.place_events(integer) is 'The feed''s sequencer: gives up to p_limit committed events their feed positions, takes their deliveries (and those queued for events placed earlier) into their endpoints'' lanes; returns the events placed (0 while another run holds the lock).';
revoke all on function rowgate_private.place_events(integer) from public;
grant execute on function rowgate_private.place_events(integer) to rowgate_authenticator;

--! split: 615-deliveries-are-queued-in-event-order.sql
-- Deliveries are queued in the order of their events' ids (the order a transaction wrote
-- them): an event has no feed position while its transaction runs.
CREATE OR REPLACE FUNCTION rowgate_private.tg_events__enqueue_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, i.id
    from inserted i
      join rowgate.webhook_endpoints e on e.organization_id = i.organization_id
    where e.enabled and e.deleted_at is null and i.type = any (e.event_types)
    order by i.id, e.id;
  return null;
end;
$function$;

--! split: 620-first-attempts-follow-feed-positions.sql
-- The claim takes first attempts in the order of their events' feed positions, from the
-- deliveries the sequencer has taken in, instead of those queued below the xmin horizon; it
-- runs the sequencer first, so that a sender running alone sees new deliveries too.
CREATE OR REPLACE FUNCTION rowgate_private.claim_webhook_deliveries(p_limit integer, p_lease interval)
 RETURNS TABLE(delivery_id bigint, lease uuid, attempt integer, failures integer, organization_id uuid, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamp with time zone, previous jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_lane rowgate_private.webhook_lanes;
  v_endpoint record;
  v_secret bytea;
  v_delivery rowgate_private.webhook_deliveries;
  v_event rowgate.events;
  v_lease uuid;
  v_claimed integer := 0;
begin
  if p_lease < interval '1 second' then
    raise exception 'a lease lasts at least a second' using errcode = '22023';
  end if;
  -- a sender running alone (no API server beside it) still sees its deliveries placed; a
  -- sequencer kept waiting on a lane (lock_timeout) leaves the placing to its next run
  begin
    perform rowgate_private.place_events(1000);
  exception when lock_not_available then
    null;
  end;
  for v_lane in
    select l.* from rowgate_private.webhook_lanes l
    where l.due_at <= now()
    order by l.due_at
    limit greatest(p_limit, 1) + 20
    for update skip locked
  loop
    exit when v_claimed >= p_limit;
    begin
      select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
        where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id
        for no key update skip locked;
      continue when not found;
      if v_lane.delivery_id is not null then
        -- the lease ran out: its sender stopped or stalled before it recorded an answer
        perform rowgate_private.end_webhook_attempt(v_lane.organization_id, v_lane.delivery_id, false, null, 0,
          'No outcome was recorded: the sender stopped before its lease ran out', interval '0');
        update rowgate_private.webhook_lanes l set delivery_id = null, lease = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
          where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id;
      end if;
      select s.sealed_secret into v_secret from rowgate_private.webhook_secrets s
        where s.organization_id = v_lane.organization_id and s.endpoint_id = v_lane.endpoint_id;
      if not v_endpoint.enabled or v_endpoint.deleted_at is not null or v_secret is null then
        if v_endpoint.deleted_at is not null or v_secret is null then
          delete from rowgate_private.webhook_deliveries d
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        else
          update rowgate_private.webhook_deliveries d set status = 'paused'
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        end if;
        update rowgate_private.webhook_lanes l set due_at = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      loop
        v_delivery := null;
        select d.* into v_delivery from rowgate_private.webhook_deliveries d
          where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
            and d.status = 'pending' and d.attempts > 0 and d.next_attempt_at <= now()
          order by d.next_attempt_at
          limit 1;
        if v_delivery.id is null then
          select d.* into v_delivery from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts = 0 and d.feed_position is not null
            order by d.feed_position, d.id
            limit 1;
        end if;
        exit when v_delivery.id is null;
        select ev.* into v_event from rowgate.events ev where ev.organization_id = v_delivery.organization_id and ev.id = v_delivery.event_id;
        exit when v_event.id is not null;
        delete from rowgate_private.webhook_deliveries d where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      end loop;
      if v_delivery.id is null then
        -- nothing to send now: the lane falls due at its next retry, or when a delivery is taken in
        update rowgate_private.webhook_lanes l set due_at = (
            select min(d.next_attempt_at) from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts > 0)
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      v_lease := gen_random_uuid();
      update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = now() + p_lease
        where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      update rowgate_private.webhook_lanes l set delivery_id = v_delivery.id, lease = v_lease, due_at = now() + p_lease
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
      v_claimed := v_claimed + 1;
      delivery_id := v_delivery.id;
      lease := v_lease;
      attempt := v_delivery.attempts + 1;
      failures := v_lane.failures;
      organization_id := v_lane.organization_id;
      endpoint_id := v_lane.endpoint_id;
      url := v_endpoint.url;
      sealed_secret := v_secret;
      event_id := v_event.id;
      type := v_event.type;
      resource_id := v_event.resource_id;
      data := v_event.data;
      -- the body is the event as its endpoint's managers read it: the actor's client address and user agent with it
      actor := v_event.actor || coalesce((select jsonb_build_object('ip', c.ip, 'user_agent', c.user_agent)
        from rowgate.event_clients c where c.organization_id = v_event.organization_id and c.event_id = v_event.id),
        jsonb_build_object('ip', null, 'user_agent', null));
      previous := v_event.previous;
      request_id := v_event.request_id;
      created_at := v_event.created_at;
      return next;
    exception when others then
      -- a lane that cannot be claimed (a fault in its rows) is set aside for a minute; the others go on
      raise warning 'webhook lane of endpoint % not claimed: %', v_lane.endpoint_id, sqlerrm;
      update rowgate_private.webhook_lanes l set due_at = now() + interval '1 minute'
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
    end;
  end loop;
end;
$function$;
comment on function rowgate_private.claim_webhook_deliveries(integer,interval) is 'Leases up to p_limit due attempts, one per endpoint, for p_lease; commit before sending. Each answer is recorded with record_webhook_attempt and its lease.';
grant execute on function rowgate_private.claim_webhook_deliveries(integer,interval) to rowgate_authenticator;

--! split: 630-resumed-deliveries-wait-for-the-sequencer.sql
-- An endpoint enabled again has its paused deliveries taken in once more by the sequencer
-- (their position cleared) rather than once its transaction is below the xmin horizon.
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__hold_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_in_flight bigint := (select l.delivery_id from rowgate_private.webhook_lanes l
    where l.organization_id = new.organization_id and l.endpoint_id = new.id);
begin
  if new.deleted_at is not null and old.deleted_at is null then
    delete from rowgate_private.webhook_deliveries d
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status in ('pending', 'paused')
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif old.enabled and not new.enabled then
    update rowgate_private.webhook_deliveries d set status = 'paused'
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status = 'pending'
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif new.enabled and not old.enabled and new.deleted_at is null then
    update rowgate_private.webhook_deliveries d set status = 'pending', next_attempt_at = now(), feed_position = null
      where d.organization_id = new.organization_id and d.endpoint_id = new.id and d.status = 'paused';
  end if;
  return null;
end;
$function$;
comment on function rowgate_private.tg_webhook_endpoints__hold_deliveries() is 'A disabled endpoint''s deliveries are paused, an enabled one''s resumed, a deleted one''s removed; never waiting for an attempt in flight.';

--! split: 640-the-oldest-transaction-is-watched.sql
-- A transaction that holds an xid or a snapshot (in any database of the server, or prepared
-- for two-phase commit) holds back what vacuum may remove everywhere; the feed no longer
-- waits for it, but bloat does. The servers read the oldest such transaction's age every few
-- seconds, export it as a metric and log a warning past a bound (SPEC §14). Seeing other
-- roles' transactions takes pg_read_all_stats, which the owner has (db/roles.sql): so this
-- runs as the owner, and shows no query text, only where the transaction is and who runs it.
create function rowgate_private.oldest_transaction()
  returns table (age_seconds double precision, pid integer, database text, role text, application_name text, state text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select o.age_seconds, o.pid, o.database, o.role, o.application_name, o.state from (
    select extract(epoch from clock_timestamp() - a.xact_start)::double precision as age_seconds, a.pid, a.datname::text as database,
      a.usename::text as role, a.application_name, a.state
    from pg_stat_activity a
    where (a.backend_xid is not null or a.backend_xmin is not null) and a.xact_start is not null and a.pid <> pg_backend_pid()
    union all
    select extract(epoch from clock_timestamp() - p.prepared)::double precision, null, p.database::text, p.owner::text,
      null, 'prepared: ' || p.gid
    from pg_prepared_xacts p
  ) o
  order by o.age_seconds desc
  limit 1;
$$;
comment on function rowgate_private.oldest_transaction() is 'The oldest transaction of the server holding an xid or a snapshot (any database; prepared ones too): its age in seconds, its backend and database, its role and application; no row when none.';
revoke all on function rowgate_private.oldest_transaction() from public;
grant execute on function rowgate_private.oldest_transaction() to rowgate_authenticator;

--! split: 700-mail-leaves-after-commit.sql
-- No mail is sent while a database transaction is open (SPEC §14): a message is a row of the
-- outbox, written in the transaction of the change it tells about, and a sender sends it after
-- that transaction commits, with no transaction open, under a lease (as the webhook senders do:
-- a sender that dies past its lease leaves the message to be claimed again: at least once).
-- The outbox that kept the development server's messages is that queue: a message for a mail
-- server is sealed under the server secret (sealed_body; subject and body stay null) until it is
-- sent, and its seal is erased once sent or given up; a development message (no mail server)
-- keeps its subject and body readable for `npx rowgate mail outbox` and is never sent.
alter table rowgate_private.mail_outbox
  -- squawk-ignore ban-drop-not-null -- the previous release writes the subject, and reads it only in development messages, which keep it
  alter column subject drop not null,
  -- squawk-ignore ban-drop-not-null -- the previous release writes the body, and reads it only in development messages, which keep it
  alter column body drop not null,
  add column sealed_body bytea,
  add column due_at timestamptz not null default now(),
  add column attempts integer not null default 0,
  add column lease uuid,
  add column leased_until timestamptz,
  add column sent_at timestamptz,
  add column failed_at timestamptz,
  add column last_error text;
-- The checks hold for every row written from now on; the rows before have both new columns null,
-- which they accept, so they are not scanned for (a scan would block the outbox's writes).
alter table rowgate_private.mail_outbox
  add constraint mail_outbox_sealed_or_readable check (sealed_body is null or (subject is null and body is null)) not valid,
  add constraint mail_outbox_last_error_check check (length(last_error) <= 500) not valid;
comment on column rowgate_private.mail_outbox.sealed_body is 'The message (recipient, subject, text) sealed under the server secret, bound to the row''s id; null once sent or given up, and for development messages.';
comment on column rowgate_private.mail_outbox.due_at is 'When the message may next be claimed (a failed attempt moves it by the sender''s backoff).';
comment on column rowgate_private.mail_outbox.lease is 'The claim of the sender sending it; its answer is recorded only with that lease.';
comment on column rowgate_private.mail_outbox.leased_until is 'Past this, a claim that was not recorded is void and the message is claimed again.';
comment on column rowgate_private.mail_outbox.sent_at is 'When the mail server accepted it.';
comment on column rowgate_private.mail_outbox.failed_at is 'When its sender gave up after its last attempt failed.';

create function rowgate.record_mail(p_id uuid, p_to text, p_sealed bytea)
returns void
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  -- what was sent or given up a day ago has nothing left to tell
  delete from rowgate_private.mail_outbox m where m.created_at < now() - interval '1 day' and m.sealed_body is null;
  insert into rowgate_private.mail_outbox (id, recipient, sealed_body) values (p_id, lower(p_to), p_sealed);
$$;
comment on function rowgate.record_mail(uuid, text, bytea) is '@behavior -*
Records a sealed message in the writing transaction; a sender sends it after the commit.';
grant execute on function rowgate.record_mail(uuid, text, bytea) to rowgate_anonymous, rowgate_organization, rowgate_user;

create function rowgate_private.claim_mail(p_limit integer, p_lease interval)
returns table (id uuid, lease uuid, attempts integer, sealed_body bytea)
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  with due as (
    select m.id from rowgate_private.mail_outbox m
    where m.sealed_body is not null and m.due_at <= now() and (m.leased_until is null or m.leased_until <= now())
    order by m.due_at
    limit p_limit
    for update skip locked
  )
  update rowgate_private.mail_outbox m
  set lease = gen_random_uuid(), leased_until = now() + p_lease, attempts = m.attempts + 1
  from due
  where m.id = due.id
  returning m.id, m.lease, m.attempts, m.sealed_body;
$$;
comment on function rowgate_private.claim_mail(integer, interval) is 'Leases up to p_limit due messages for p_lease; commit before sending. Each outcome is recorded with record_mail_attempt and its lease.';
grant execute on function rowgate_private.claim_mail(integer, interval) to rowgate_authenticator;

create function rowgate_private.record_mail_attempt(p_id uuid, p_lease uuid, p_sent boolean, p_error text, p_retry_delay interval, p_attempts_allowed integer)
returns boolean
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  with recorded as (
    update rowgate_private.mail_outbox m
    set sent_at = case when p_sent then now() end,
        failed_at = case when not p_sent and m.attempts >= p_attempts_allowed then now() end,
        -- sent or given up: the message is erased, only its envelope stays (a day)
        sealed_body = case when p_sent or m.attempts >= p_attempts_allowed then null else m.sealed_body end,
        due_at = case when p_sent then m.due_at else now() + p_retry_delay end,
        last_error = case when p_sent then null else left(p_error, 500) end,
        lease = null,
        leased_until = null
    where m.id = p_id and m.lease = p_lease
    returning 1
  )
  select exists (select from recorded);
$$;
comment on function rowgate_private.record_mail_attempt(uuid, uuid, boolean, text, interval, integer) is 'Records a leased attempt''s outcome (false: the lease was lost, nothing recorded): sent, due again after p_retry_delay, or given up after p_attempts_allowed attempts.';
grant execute on function rowgate_private.record_mail_attempt(uuid, uuid, boolean, text, interval, integer) to rowgate_authenticator;

--! split: 701-sign-in-codes-per-mailbox.sql
-- One e-mail address receives at most 10 sign-in codes an hour from requests of unknown origin,
-- however many clients ask (SPEC §14); a request past that still answers alike and mails
-- nothing. The owner's own browser (the signed `rowgate_device` cookie set at each sign-in) and
-- each client network that signed in to the account in the last 30 days (IPv4 /24, IPv6 /64)
-- have 10 an hour of their own, which no other request spends: an attacker fills the inbox no
-- faster than that and never stops the owner's codes. Where an account signed in from is kept
-- here, written only by a successful sign-in.
create table rowgate_private.sign_in_devices (
  email text not null,
  device_hash bytea not null,
  signed_in_at timestamptz not null default now(),
  constraint sign_in_devices_pkey primary key (email, device_hash)
);
comment on table rowgate_private.sign_in_devices is 'Browsers that signed in to an address (the keyed hash of their rowgate_device cookie), kept a year after their latest sign-in.';
create index sign_in_devices_signed_in_at on rowgate_private.sign_in_devices (signed_in_at);

create table rowgate_private.sign_in_networks (
  email text not null,
  network cidr not null,
  signed_in_at timestamptz not null default now(),
  constraint sign_in_networks_pkey primary key (email, network)
);
comment on table rowgate_private.sign_in_networks is 'Client networks (IPv4 /24, IPv6 /64) that signed in to an address, kept 30 days after their latest sign-in.';
create index sign_in_networks_signed_in_at on rowgate_private.sign_in_networks (signed_in_at);

alter table rowgate_private.login_codes
  add column origin text not null default 'unknown',
  add column mailed boolean not null default true;
-- Holds for every code written from now on; the codes before have origin 'unknown' (the column's
-- default), so they are not scanned for.
alter table rowgate_private.login_codes add constraint login_codes_origin_check check (length(origin) <= 80) not valid;
comment on column rowgate_private.login_codes.origin is 'Whose mailbox allowance the code spent: unknown, device:<its hash> or network:<cidr>.';
comment on column rowgate_private.login_codes.mailed is 'False when the mailbox allowance of its origin was spent: the code was stored (the client''s allowance paid for it) but never mailed.';

create function rowgate_private.mailbox_codes_per_hour()
returns integer
language sql
immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select 10 $$;
comment on function rowgate_private.mailbox_codes_per_hour() is 'Sign-in codes one address receives an hour from one origin (unknown, one device, one recent network).';

create function rowgate_private.client_network(p_client text)
returns cidr
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_address inet;
begin
  v_address := p_client::inet;
  return network(set_masklen(v_address, case when family(v_address) = 4 then 24 else 64 end))::cidr;
exception when invalid_text_representation then
  -- a client that is no IP address (a socket already closed) is of no network
  return null;
end;
$$;
comment on function rowgate_private.client_network(text) is 'The network a client address belongs to for sign-in origins: its IPv4 /24 or IPv6 /64; null for what is no address.';

-- request_login_code gains the device cookie's hash and decides whose mailbox allowance a code
-- spends (and whether it is mailed); its result gains `mail`
drop function rowgate.request_login_code(text, bytea, bytea, text);
create function rowgate.request_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_client text, p_device_hash bytea)
returns table (status text, expires_in integer, retry_after integer, mail boolean)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_email text := lower(p_email);
  v_lifetime interval := rowgate_private.login_code_lifetime();
  v_network cidr := rowgate_private.client_network(p_client);
  v_for_address timestamptz;
  v_in_all timestamptz;
  v_origin text;
  v_mail boolean;
begin
  -- two requests of one client at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.login_code:' || p_client, 0));
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  -- the fifth newest code for this address and the twentieth newest in all, within the hour
  select c.created_at into v_for_address from rowgate_private.login_codes c
    where c.client = p_client and c.email = v_email and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 4 limit 1;
  select c.created_at into v_in_all from rowgate_private.login_codes c
    where c.client = p_client and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 19 limit 1;
  if v_for_address is not null or v_in_all is not null then
    return query select 'rate_limited'::text, null::integer,
      greatest(1, ceil(extract(epoch from
        greatest(v_for_address, v_in_all) + interval '1 hour' - now())))::integer, false;
    return;
  end if;
  -- whose mailbox allowance: the account's own browser, else a network it signed in from lately, else unknown
  v_origin := case
    when p_device_hash is not null and exists (
      select from rowgate_private.sign_in_devices d
      where d.email = v_email and d.device_hash = p_device_hash and d.signed_in_at > now() - interval '1 year')
      then 'device:' || encode(p_device_hash, 'hex')
    when v_network is not null and exists (
      select from rowgate_private.sign_in_networks n
      where n.email = v_email and n.network = v_network and n.signed_in_at > now() - interval '30 days')
      then 'network:' || v_network::text
    else 'unknown'
  end;
  -- requests of one origin from many clients at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.mailbox:' || v_email || ':' || v_origin, 0));
  v_mail := (select count(*) from rowgate_private.login_codes c
    where c.email = v_email and c.origin = v_origin and c.mailed and c.created_at > now() - interval '1 hour')
    < rowgate_private.mailbox_codes_per_hour();
  insert into rowgate_private.login_codes (email, code_hash, attempt_hash, client, expires_at, origin, mailed)
    values (v_email, p_code_hash, p_attempt_hash, p_client, now() + v_lifetime, v_origin, v_mail);
  return query select 'created'::text, extract(epoch from v_lifetime)::integer, null::integer, v_mail;
end;
$$;
comment on function rowgate.request_login_code(text, bytea, bytea, text, bytea) is '@behavior -*
Stores a login code''s hash for an address and the attempt that asked: created with the seconds it stays valid and whether to mail it (10 an hour per address and origin: unknown, the device cookie''s browser, a network that signed in lately), or rate_limited (5 codes an hour per client and address, 20 per client) with the seconds until the client may ask again.';
grant execute on function rowgate.request_login_code(text, bytea, bytea, text, bytea) to rowgate_anonymous;

-- authenticate_login_code gains the client and the device cookie's hash: a sign-in records the
-- browser and the network it came from, whose requests then have their own mailbox allowance
drop function rowgate.authenticate_login_code(text, bytea, bytea, bytea);
create function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_session_token_hash bytea, p_client text, p_device_hash bytea)
returns table (status text, id uuid, email text, name text, avatar_url text, is_admin boolean, created_at timestamptz, updated_at timestamptz, session_expires_at timestamptz)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code rowgate_private.login_codes;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
  v_network cidr := rowgate_private.client_network(p_client);
begin
  -- the attempt's guesses are counted one after the other, from wherever they come
  select c.* into v_code from rowgate_private.login_codes c where c.attempt_hash = p_attempt_hash for update;
  if v_code.id is null or v_code.used_at is not null or v_code.expires_at <= now()
     or v_code.wrong_codes >= rowgate_private.login_code_wrong_codes_allowed() then
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  if v_code.email <> v_email or v_code.code_hash <> p_code_hash then
    update rowgate_private.login_codes c set wrong_codes = c.wrong_codes + 1 where c.id = v_code.id;
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  -- a code signs in once, and the other codes of the address die with it
  update rowgate_private.login_codes c set used_at = now() where c.email = v_email and c.used_at is null;
  select u.* into v_user from rowgate.users u where u.email = v_email and u.deleted_at is null;
  if v_user.id is null then
    insert into rowgate.users (email) values (v_email) returning * into v_user;
  end if;
  v_session := rowgate_private.issue_web_session(v_user.id, p_session_token_hash);
  -- where the owner signs in from: its later requests from there have their own mailbox allowance
  delete from rowgate_private.sign_in_devices d where d.signed_in_at < now() - interval '1 year';
  delete from rowgate_private.sign_in_networks n where n.signed_in_at < now() - interval '30 days';
  if p_device_hash is not null then
    insert into rowgate_private.sign_in_devices as d (email, device_hash) values (v_email, p_device_hash)
      on conflict (email, device_hash) do update set signed_in_at = now();
  end if;
  if v_network is not null then
    insert into rowgate_private.sign_in_networks as n (email, network) values (v_email, v_network)
      on conflict (email, network) do update set signed_in_at = now();
  end if;
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url,
    exists (select 1 from rowgate_private.platform_admins a where a.user_id = v_user.id),
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
comment on function rowgate.authenticate_login_code(text, bytea, bytea, bytea, text, bytea) is '@behavior -*
Signs in with a login code and the attempt it was issued to: ok with the user and the new session''s expiry (and the browser''s device hash and the client''s network recorded as the account''s), or invalid (a wrong code counts against the attempt; 5 end it).';
grant execute on function rowgate.authenticate_login_code(text, bytea, bytea, bytea, text, bytea) to rowgate_anonymous;
