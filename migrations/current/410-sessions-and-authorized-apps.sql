-- A user sees where it is signed in and which apps it authorized, and ends either (SPEC §25,
-- "Sessions", "Authorized apps"); an organization's token managers see and revoke its OAuth2
-- grants. Authentication records a session's latest address and agent and an OAuth2 token's
-- last use, at most once a minute per credential (or when the address or agent changes), so
-- a request does not write a row each time. Every instance asks the database on every
-- request, so an ended session or grant is refused at its next request wherever it lands.
alter table rowgate_private.sessions add column if not exists last_used_at timestamptz;
alter table rowgate_private.sessions add column if not exists client_ip inet;
alter table rowgate_private.sessions add column if not exists user_agent text;
alter table rowgate_private.oauth2_access_tokens add column if not exists last_used_at timestamptz;
create index if not exists oauth2_token_families_user_id on rowgate_private.oauth2_token_families (user_id) where revoked_at is null;
create index if not exists oauth2_token_families_organization_id on rowgate_private.oauth2_token_families (organization_id)
  where revoked_at is null and organization_id is not null;

create or replace function rowgate_private.record_session_use(p_token_hash bytea, p_client_address inet, p_user_agent text)
  returns void language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  -- a standby records nothing: the next request served by the primary does
  if pg_is_in_recovery() then
    return;
  end if;
  update rowgate_private.sessions set last_used_at = now(), client_ip = p_client_address, user_agent = left(p_user_agent, 256)
    where id = (select s.id from rowgate_private.sessions s
      where s.token_hash = p_token_hash
        and (s.last_used_at is null or s.last_used_at < now() - interval '1 minute'
          or s.client_ip is distinct from p_client_address or s.user_agent is distinct from left(p_user_agent, 256))
      for no key update skip locked);
end;
$$;

create or replace function rowgate_private.record_oauth2_token_use(p_token_hash bytea)
  returns void language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  if pg_is_in_recovery() then
    return;
  end if;
  update rowgate_private.oauth2_access_tokens set last_used_at = now()
    where id = (select t.id from rowgate_private.oauth2_access_tokens t
      where t.token_hash = p_token_hash and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
      for no key update skip locked);
end;
$$;

-- Replaced (a new parameter, the request's User-Agent): a web session's use is recorded with
-- its address and agent, an OAuth2 token's use with its time.
drop function if exists rowgate_private.authenticate(text, bytea, inet);
create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea, p_client_address inet default null, p_user_agent text default null)
 RETURNS TABLE(credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean, expires_at timestamp with time zone, impersonator_id uuid, oauth2_client_id text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
    if found then
      perform rowgate_private.record_session_use(p_token_hash, p_client_address, p_user_agent);
    end if;
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
    if found then
      perform rowgate_private.record_oauth2_token_use(p_token_hash);
    end if;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at, null::uuid, t.client_id
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
    if found then
      perform rowgate_private.record_oauth2_token_use(p_token_hash);
    end if;
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
$function$;
comment on function rowgate_private.authenticate(text, bytea, inet, text) is 'The credential''s subject, scopes and expiry when it is good (none otherwise), with the impersonator of a web session and the client of an OAuth2 token, which events record; records the use of a session (its address and agent) and of a token, to the minute.';
grant execute on function rowgate_private.authenticate(text, bytea, inet, text) to rowgate_authenticator;

-- The signed-in user's live web sessions, its impersonation sessions included. Only a web
-- session reads them (SPEC §4, web user read).
create or replace function rowgate.current_user_sessions()
  returns table (id uuid, created_at timestamptz, last_used_at timestamptz, client_ip text, user_agent text,
    current boolean, impersonated_by uuid)
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select s.id, s.created_at, date_trunc('minute', s.last_used_at), host(s.client_ip), s.user_agent,
    s.id::text = current_setting('rowgate.credential_id', true), s.impersonator_id
  from rowgate_private.sessions s
  where s.user_id = rowgate_hidden.current_user_id() and s.kind = 'user' and s.revoked_at is null and s.expires_at > now()
    and rowgate_hidden.current_credential_kind() = 'web_session' and rowgate_hidden.has_scope('user:read');
$$;
comment on function rowgate.current_user_sessions() is '@behavior -*
The signed-in user''s live web sessions.';
grant execute on function rowgate.current_user_sessions() to rowgate_user;

-- Ends one of the signed-in user's live sessions (false: no such session of its own).
create or replace function rowgate.end_session(p_id uuid) returns boolean
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session ends sessions' using errcode = 'RG403';
  end if;
  update rowgate_private.sessions set revoked_at = now()
    where id = p_id and kind = 'user' and user_id = rowgate_hidden.current_user_id()
      and revoked_at is null and expires_at > now();
  return found;
end;
$$;
comment on function rowgate.end_session(uuid) is '@behavior -*';
grant execute on function rowgate.end_session(uuid) to rowgate_user;

-- Ends every live session of the signed-in user but the one of this request.
create or replace function rowgate.end_other_sessions() returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session ends sessions' using errcode = 'RG403';
  end if;
  update rowgate_private.sessions set revoked_at = now()
    where user_id = rowgate_hidden.current_user_id() and kind = 'user' and revoked_at is null
      and id::text is distinct from current_setting('rowgate.credential_id', true);
end;
$$;
comment on function rowgate.end_other_sessions() is '@behavior -*';
grant execute on function rowgate.end_other_sessions() to rowgate_user;

-- A user's live OAuth2 grants: token families with a live access or refresh token, and
-- access tokens issued outside a family.
create or replace function rowgate_private.live_oauth2_grants(p_user_id uuid, p_organization_id uuid)
  returns table (id uuid, client_id text, user_id uuid, organization_id uuid, scopes text[], created_at timestamptz,
    last_used_at timestamptz, is_family boolean)
  language sql stable set search_path = pg_catalog, pg_temp as $$
  select f.id, f.client_id, f.user_id, f.organization_id, f.scopes, f.created_at,
    (select max(t.last_used_at) from rowgate_private.oauth2_access_tokens t where t.family_id = f.id), true
  from rowgate_private.oauth2_token_families f
  where f.revoked_at is null
    and (p_user_id is null or f.user_id = p_user_id)
    and (p_organization_id is null or f.organization_id = p_organization_id)
    and (exists (select 1 from rowgate_private.oauth2_access_tokens t
          where t.family_id = f.id and t.revoked_at is null and t.expires_at > now())
      or exists (select 1 from rowgate_private.oauth2_refresh_tokens r
          where r.family_id = f.id and r.used_at is null and r.expires_at > now()))
  union all
  select t.id, t.client_id, t.user_id, t.organization_id, t.scopes, t.created_at, t.last_used_at, false
  from rowgate_private.oauth2_access_tokens t
  where t.family_id is null and t.revoked_at is null and t.expires_at > now()
    and (p_user_id is null or t.user_id = p_user_id)
    and (p_organization_id is null or t.organization_id = p_organization_id);
$$;

-- The apps the signed-in user authorized: one row per client, kind of subject and organization.
create or replace function rowgate.current_user_authorized_apps()
  returns table (app_key text, client_id text, client_name text, scopes text[], sub_type text, organization_id uuid,
    first_authorized_at timestamptz, last_used_at timestamptz)
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select g.client_id || ':' || coalesce(g.organization_id::text, ''), g.client_id, c.client_name,
    array(select distinct s from unnest(array_agg(g.scopes)) s order by s),
    case when g.organization_id is null then 'user' else 'organization' end, g.organization_id,
    min(g.created_at), date_trunc('minute', max(g.last_used_at))
  from rowgate_private.live_oauth2_grants(rowgate_hidden.current_user_id(), null) g
    join rowgate.oauth2_clients c on c.client_id = g.client_id
  where rowgate_hidden.current_credential_kind() = 'web_session' and rowgate_hidden.has_scope('user:read')
  group by g.client_id, c.client_name, g.organization_id;
$$;
comment on function rowgate.current_user_authorized_apps() is '@behavior -*
The OAuth2 clients holding live tokens of the signed-in user.';
grant execute on function rowgate.current_user_authorized_apps() to rowgate_user;

create or replace function rowgate_private.revoke_oauth2_grant(p_id uuid, p_is_family boolean) returns void
  language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  if p_is_family then
    perform rowgate_private.revoke_oauth2_family(p_id);
  else
    update rowgate_private.oauth2_access_tokens set revoked_at = now() where id = p_id and revoked_at is null;
  end if;
end;
$$;

-- Revokes every grant the signed-in user made to a client, organization grants included
-- (false: it holds none).
create or replace function rowgate.revoke_authorized_app(p_client_id text) returns boolean
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_revoked integer := 0;
  v_grant record;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session revokes authorized apps' using errcode = 'RG403';
  end if;
  for v_grant in select g.id, g.is_family from rowgate_private.live_oauth2_grants(rowgate_hidden.current_user_id(), null) g
      where g.client_id = p_client_id loop
    perform rowgate_private.revoke_oauth2_grant(v_grant.id, v_grant.is_family);
    v_revoked := v_revoked + 1;
  end loop;
  return v_revoked > 0;
end;
$$;
comment on function rowgate.revoke_authorized_app(text) is '@behavior -*';
grant execute on function rowgate.revoke_authorized_app(text) to rowgate_user;

-- An organization's live OAuth2 grants, whoever made them, for its token managers: 404 out of
-- reach, 403 without access_tokens:manage (SPEC §5's order).
create or replace function rowgate.organization_oauth2_grants(p_organization_id uuid)
  returns table (id uuid, organization_id uuid, client_id text, client_name text, scopes text[], user_id uuid,
    created_at timestamptz, last_used_at timestamptz)
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_read');
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return query
    select g.id, g.organization_id, g.client_id, c.client_name, g.scopes, g.user_id, g.created_at,
      date_trunc('minute', g.last_used_at)
    from rowgate_private.live_oauth2_grants(null, p_organization_id) g
      join rowgate.oauth2_clients c on c.client_id = g.client_id;
end;
$$;
comment on function rowgate.organization_oauth2_grants(uuid) is '@behavior -*
The live OAuth2 grants on an organization, for its token managers.';
grant execute on function rowgate.organization_oauth2_grants(uuid) to rowgate_user;

-- Revokes one of an organization's grants: 404 out of reach or unknown, 403 without
-- access_tokens:manage (SPEC §5's order).
create or replace function rowgate.revoke_organization_oauth2_grant(p_organization_id uuid, p_grant_id uuid) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_is_family boolean;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  select g.is_family into v_is_family from rowgate_private.live_oauth2_grants(null, p_organization_id) g where g.id = p_grant_id;
  if v_is_family is null then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  perform rowgate_private.revoke_oauth2_grant(p_grant_id, v_is_family);
end;
$$;
comment on function rowgate.revoke_organization_oauth2_grant(uuid, uuid) is '@behavior -*';
grant execute on function rowgate.revoke_organization_oauth2_grant(uuid, uuid) to rowgate_user;
