--! Previous: sha1:8d14d1a4b942c33ba4bdf2d556f3914eb87e8991
--! Hash: sha1:6886a4beb75aa55bb353b66bf82919cb2e9c35e1
--! Message: An event's actor is read from the transaction settings

--! split: 001-the-authentication-returns-the-impersonator-and-oauth2-client.sql
-- The actor an event records names the impersonator of a web session and the client of
-- an OAuth2 token. The authentication already reads the session or token: it now
-- returns them, and the authentication statement keeps them with the transaction's
-- other settings, so writing an event looks nothing up. The function's result gains
-- two columns, which needs it dropped and made again; the statement of the release
-- before names its columns, so it reads the new result as before.
drop function rowgate_private.authenticate(text, bytea, inet);
create function rowgate_private.authenticate(p_kind text, p_token_hash bytea, p_client_address inet DEFAULT NULL::inet)
  returns table(credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean, expires_at timestamp with time zone, impersonator_id uuid, oauth2_client_id text)
  language plpgsql
  volatile
  security definer
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_id uuid;
  v_subject_id uuid;
  v_scopes text[];
  v_expires_at timestamptz;
  v_allowed_ips cidr[];
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation, s.expires_at, s.impersonator_id, null::text
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    select t.id, t.user_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'user'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at, null::uuid, null::text;
  elsif p_kind = 'organization_access_token' then
    select t.id, t.organization_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'organization'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at, null::uuid, null::text;
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at, null::uuid, t.client_id
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at, null::uuid, t.client_id
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at, null::uuid, null::text
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at, null::uuid, null::text
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;
comment on function rowgate_private.authenticate(text, bytea, inet) is
  'The credential''s subject, scopes and expiry when it is good (none otherwise), with the impersonator of a web session and the client of an OAuth2 token, which events record.';
grant execute on function rowgate_private.authenticate(text, bytea, inet) to rowgate_authenticator;

--! split: 002-an-event-s-actor-is-read-from-the-transaction-settings.sql
-- An event's actor is read from the transaction's settings, trusted only under the
-- API's login as every subject setting is: an expression PostgreSQL inlines where it
-- is read, with no table to look in. The authentication statement sets each of the two
-- to the credential's id, a colon and the value, so a setting counts only beside the
-- credential it was read with; a transaction without them (authenticated by a server of
-- the release before, or with settings made by hand) has them looked up as before, by
-- its own credential.
create function rowgate_hidden.credential_impersonator_id()
  returns uuid
  language sql
  stable
  security definer
  set search_path to pg_catalog, pg_temp
as $$
  select s.impersonator_id from rowgate_private.sessions s where s.id = rowgate_hidden.current_credential_id();
$$;
comment on function rowgate_hidden.credential_impersonator_id() is
  'The user impersonating through this transaction''s web session, looked up by its id, or null.';

create function rowgate_hidden.credential_oauth2_client_id()
  returns text
  language sql
  stable
  security definer
  set search_path to pg_catalog, pg_temp
as $$
  select t.client_id from rowgate_private.oauth2_access_tokens t where t.id = rowgate_hidden.current_credential_id();
$$;
comment on function rowgate_hidden.credential_oauth2_client_id() is
  'The OAuth2 client of this transaction''s access token, looked up by its id, or null.';

create function rowgate_hidden.current_impersonator_id()
  returns uuid
  language sql
  stable
as $$
  select case when session_user = 'rowgate_authenticator' and rowgate_hidden.current_credential_kind() = 'web_session' then
    case when left(current_setting('rowgate.credential_impersonator', true), 37) = current_setting('rowgate.credential_id', true) || ':'
      then nullif(substr(current_setting('rowgate.credential_impersonator', true), 38), '')::uuid
      else rowgate_hidden.credential_impersonator_id() end end;
$$;
comment on function rowgate_hidden.current_impersonator_id() is
  'The user impersonating through this transaction''s web session, or null.';

create function rowgate_hidden.current_oauth2_client_id()
  returns text
  language sql
  stable
as $$
  select case when session_user = 'rowgate_authenticator'
      and rowgate_hidden.current_credential_kind() in ('oauth2_user_token', 'oauth2_organization_token') then
    case when left(current_setting('rowgate.credential_client', true), 37) = current_setting('rowgate.credential_id', true) || ':'
      then nullif(substr(current_setting('rowgate.credential_client', true), 38), '')
      else rowgate_hidden.credential_oauth2_client_id() end end;
$$;
comment on function rowgate_hidden.current_oauth2_client_id() is
  'The OAuth2 client whose token authenticated this transaction, or null.';

create or replace function rowgate_hidden.current_actor()
  returns jsonb
  language sql
  stable
  security invoker
as $$
  select case when rowgate_hidden.current_subject_kind() is null then
      '{"kind": "system", "id": null, "credential_kind": null, "credential_id": null, "impersonator_id": null, "oauth2_client_id": null, "ip": null, "user_agent": null}'::jsonb
    else jsonb_build_object('kind', rowgate_hidden.current_subject_kind(), 'id', rowgate_hidden.current_subject_id(),
      'credential_kind', case when rowgate_hidden.current_credential_kind() in ('oauth2_user_token', 'oauth2_organization_token')
        then 'oauth2_token' else rowgate_hidden.current_credential_kind() end,
      'credential_id', rowgate_hidden.current_credential_id(),
      'impersonator_id', rowgate_hidden.current_impersonator_id(),
      'oauth2_client_id', rowgate_hidden.current_oauth2_client_id(),
      'ip', null, 'user_agent', null) end;
$$;
grant execute on function rowgate_hidden.current_impersonator_id(), rowgate_hidden.current_oauth2_client_id(),
    rowgate_hidden.credential_impersonator_id(), rowgate_hidden.credential_oauth2_client_id(),
    rowgate_hidden.current_credential_id()
  to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

--! split: 003-the-events-trigger-reads-the-actor-before-it-writes.sql
-- The events trigger reads the actor and the user into variables before it writes:
-- each is an expression of the transaction's settings, cheap on its own, and the
-- statement that writes the events keeps a plan of its own.
create or replace function rowgate_private.tg__events()
  returns trigger
  language plpgsql
  volatile
  security definer
  set search_path to pg_catalog, pg_temp
as $$
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
$$;
comment on function rowgate_private.tg__events() is
  'Writes the events of a change (SPEC §17) with their client address and User-Agent (SPEC §21). Arguments: the resource, the audience, the columns the data shows, the columns it leaves out, and optionally the column whose new value names the event.';
