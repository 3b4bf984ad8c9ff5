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
