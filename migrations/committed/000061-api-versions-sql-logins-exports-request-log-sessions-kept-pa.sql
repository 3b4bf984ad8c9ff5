--! Previous: sha1:1971944dea8be041edd4a19039159ff46b701431
--! Hash: sha1:00b2fe2f6a5fad5e38c98872c0d81cff8d4ff95e
--! Message: API versions, SQL logins, exports, request log, sessions, kept PATs

--! split: 100-lock-timeout.sql
-- Every lock this migration takes is waited for at most two seconds: a migration queued
-- behind a long reader would otherwise hold every request that queues behind it. A
-- migration that times out is rolled back whole and run again (`npx rowgate db migrate`).
set local lock_timeout = '2s';

--! split: 200-api-version-pins.sql
-- SPEC §23: tokens, OAuth2 clients, webhook endpoints and customer or member
-- sessions are pinned to the API version a request without Rowgate-Version is
-- answered in. Every row that exists when versions ship is pinned to 2026-11-20
-- (the constant default fills them without rewriting the tables), and so is a
-- row a server of the previous release inserts during a rolling deploy (it names
-- no version). A new row takes the version the request's transaction names (the
-- setting rowgate.api_version), which the API sets to the version the create
-- body asks for, or the newest.
alter table rowgate.personal_access_tokens add column if not exists api_version text default '2026-11-20';
alter table rowgate.organization_access_tokens add column if not exists api_version text default '2026-11-20';
alter table rowgate.oauth2_clients add column if not exists api_version text default '2026-11-20';
alter table rowgate.webhook_endpoints add column if not exists api_version text default '2026-11-20';
alter table rowgate_private.sessions add column if not exists api_version text default '2026-11-20';

alter table rowgate.personal_access_tokens alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-11-20');
alter table rowgate.organization_access_tokens alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-11-20');
alter table rowgate.oauth2_clients alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-11-20');
alter table rowgate.webhook_endpoints alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-11-20');
alter table rowgate_private.sessions alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-11-20');

comment on column rowgate.personal_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23).';
comment on column rowgate.organization_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23).';
comment on column rowgate.oauth2_clients.api_version is 'The API version its tokens use without Rowgate-Version (SPEC §23).';
comment on column rowgate.webhook_endpoints.api_version is 'The API version its webhook bodies are rendered in (SPEC §23).';
comment on column rowgate_private.sessions.api_version is 'Customer and member sessions: the version of the request that created them (SPEC §23); web sessions use the newest.';

-- The version a credential is pinned to, asked by the authentication
-- statement beside rowgate_private.authenticate; null for a web session,
-- which uses the newest version.
create or replace function rowgate_private.credential_api_version(p_kind text, p_credential_id uuid)
returns text
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_kind = 'web_session' then null
    else coalesce(
      case p_kind
        when 'personal_access_token' then (select t.api_version from rowgate.personal_access_tokens t where t.id = p_credential_id)
        when 'organization_access_token' then (select t.api_version from rowgate.organization_access_tokens t where t.id = p_credential_id)
        when 'oauth2_user_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        when 'oauth2_organization_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        else (select s.api_version from rowgate_private.sessions s where s.id = p_credential_id)
      end,
      '2026-11-20')
  end
$$;
comment on function rowgate_private.credential_api_version(text, uuid) is 'The API version a credential is pinned to (SPEC §23); null for a web session (the newest).';
revoke all on function rowgate_private.credential_api_version(text, uuid) from public;
grant execute on function rowgate_private.credential_api_version(text, uuid) to rowgate_authenticator;

-- Read schemas show api_version; a webhook endpoint's PATCH may change it.
grant select (api_version) on rowgate.personal_access_tokens to rowgate_user;
grant select (api_version) on rowgate.organization_access_tokens to rowgate_user, rowgate_analyst;
grant select (api_version) on rowgate.oauth2_clients to rowgate_user;
grant select (api_version) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user, rowgate_analyst;
grant update (api_version) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user;

-- The version each endpoint's webhook bodies are rendered in, for the
-- webhook sender, which runs as the authenticator and reads no endpoint.
create or replace function rowgate_private.webhook_endpoint_versions(p_endpoint_ids uuid[])
returns table (endpoint_id uuid, api_version text)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select e.id, coalesce(e.api_version, '2026-11-20') from rowgate.webhook_endpoints e where e.id = any(p_endpoint_ids)
$$;
comment on function rowgate_private.webhook_endpoint_versions(uuid[]) is 'The API version each webhook endpoint''s bodies are rendered in (SPEC §23).';
revoke all on function rowgate_private.webhook_endpoint_versions(uuid[]) from public;
grant execute on function rowgate_private.webhook_endpoint_versions(uuid[]) to rowgate_authenticator;

-- An organization access token's event data is its read schema, which shows the version it is
-- pinned to: the events trigger names every column of its table, as shown or as hidden.
drop trigger if exists _400_events on rowgate.organization_access_tokens;
create trigger _400_events after insert or update on rowgate.organization_access_tokens for each row
  execute function rowgate_private.tg__events('organization_access_token', 'access_tokens',
    'id,organization_id,comment,scopes,expires_at,last_used_at,allowed_ips,api_version,created_by,created_at,updated_at', 'deleted_at');

--! split: 300-sql-credentials.sql
-- Organization SQL logins (SPEC §24): a credential row per login, which the API lists and
-- revokes and whose liveness decides what the login reads. The login itself is a role
-- made by rowgate.create_sql_credential (part 310); its name is the row's `login`.
-- rowgate_sql_admin keeps these rows (it makes and drops the logins); users with
-- organization:manage read their organizations' live ones.
create table rowgate.sql_credentials (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null references rowgate.organizations (id),
  -- a login is a role name, unique in the whole cluster as PostgreSQL's roles are
  login text not null unique check (login ~ '^rg_sql_[a-z2-7]{20}$'),
  comment text not null check (length(comment) between 1 and 200),
  scopes text[] not null check (cardinality(scopes) >= 1),
  created_by uuid references rowgate.users (id),
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz default now() not null,
  updated_at timestamptz default now() not null,
  deleted_at timestamptz,
  -- when the login's role was dropped (its sessions gone): machinery, shown to nobody
  login_dropped_at timestamptz,
  primary key (organization_id, id)
);
comment on table rowgate.sql_credentials is '@behavior -*
Organizations'' SQL logins (SPEC §24, REST only).';
create index sql_credentials_organization on rowgate.sql_credentials (organization_id, created_at) where deleted_at is null;
alter table rowgate.sql_credentials enable row level security;

grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at)
  on rowgate.sql_credentials to rowgate_user;
-- every column, so that an analyst's `select *` works (the policy shows live rows only)
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at, deleted_at,
    login_dropped_at)
  on rowgate.sql_credentials to rowgate_analyst;
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at,
    deleted_at, login_dropped_at),
  insert (organization_id, login, comment, scopes, created_by, expires_at),
  update (last_used_at, deleted_at, login_dropped_at)
  on rowgate.sql_credentials to rowgate_sql_admin;

create policy select_manage on rowgate.sql_credentials for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.current_subject_kind()) = 'user'
    and (select rowgate_hidden.has_scope('organizations_read')));
-- the maker of the logins keeps their records (it reaches them only through its functions)
create policy all_sql_admin on rowgate.sql_credentials for all to rowgate_sql_admin using (true) with check (true);

create trigger _100_timestamps before insert or update on rowgate.sql_credentials
  for each row execute function rowgate_private.tg__timestamps();

-- The login of the session (session_user alone: a setting names nobody here), when its
-- credential is live at this statement: not revoked, not expired, its organization not
-- deleted. Null otherwise, so every policy then finds no subject and no row.
create function rowgate_hidden.sql_login_organization_id() returns uuid
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select c.organization_id from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$$;
comment on function rowgate_hidden.sql_login_organization_id() is 'The organization of this session''s SQL login (SPEC §24) while its credential is live, else null.';

create function rowgate_hidden.sql_login_scopes() returns text[]
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select c.scopes from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$$;
comment on function rowgate_hidden.sql_login_scopes() is 'The read scopes of this session''s SQL login (SPEC §24) while its credential is live, else null.';
-- the subject helpers call them for every role they serve (part 305)
grant execute on function rowgate_hidden.sql_login_organization_id(), rowgate_hidden.sql_login_scopes()
  to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

--! split: 305-sql-login-subject.sql
-- The subject helpers restated to know SQL logins (SPEC §24): in a session of a member of
-- rowgate_sql_login, the subject is the login's organization, its credential counts as an
-- organization access token and its scopes are the credential's, all looked up by
-- session_user, so the login reads exactly what such a token reads through the same RLS.
-- A login whose credential is not live has no subject, and so reads no rows.
create or replace function rowgate_hidden.current_subject_kind() returns text
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'user'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization' end;
$$;

create or replace function rowgate_hidden.current_subject_id() returns uuid
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_id', true), '')::uuid
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_user_id()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_organization_id() end;
$$;

create or replace function rowgate_hidden.current_credential_kind() returns text
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.credential_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'web_session'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization_access_token' end;
$$;
comment on function rowgate_hidden.current_credential_kind() is 'The kind of the credential of this transaction (web_session, personal_access_token, …); an analyst''s login counts as web_session, an organization''s SQL login as organization_access_token; null without one.';

create or replace function rowgate_hidden.current_scopes() returns text[]
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_scopes()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_scopes() end;
$$;

-- rowgate.check (SPEC §20) answers an analyst as its user's web session, and a SQL login
-- as an organization access token with the login's scopes (SPEC §24).
create or replace function rowgate."check"(operation text, params jsonb default '{}'::jsonb, organization_id uuid default null::uuid)
  returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select rowgate_hidden.check_operation(operation, coalesce(params, '{}'), organization_id,
    not pg_has_role(session_user, 'rowgate_sql_login', 'member')) - 'organization_id';
$$;
comment on function rowgate."check"(text,jsonb,uuid) is '@behavior -*
Why an operation would be allowed or refused (SPEC §20): for an analyst, as its user''s web session; for an organization''s SQL login, as an organization access token with the login''s scopes.';

--! split: 310-sql-login-functions.sql
-- Making, revoking and ending organizations' SQL logins (SPEC §24) without giving the API
-- CREATEROLE: these functions run as rowgate_sql_admin (no login; CREATEROLE reaching only
-- the logins group and the logins it made), only rowgate_user may call the two the API
-- uses, and they check the section's rules themselves: the scope, the organization's
-- reach, organization:manage, read scopes no wider than the caller's (section 21's rule),
-- at most 10 live per organization. They take a name of the fixed pattern and a
-- SCRAM-SHA-256 verifier, never a clear password, so no statement log holds a secret.
-- createrole_self_grant = 'inherit' gives rowgate_sql_admin the privileges of each login
-- it makes, which is what lets it end that login's sessions.

-- What rowgate_sql_admin reads and calls as it checks the rules
grant usage on schema rowgate, rowgate_hidden, rowgate_private to rowgate_sql_admin;
grant execute on function rowgate_hidden.assert_scope(text), rowgate_hidden.has_scope(text),
  rowgate_hidden.current_scopes(), rowgate_hidden.analyst_scopes(), rowgate_hidden.sql_login_scopes(),
  rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), rowgate_hidden.current_user_id(),
  rowgate_hidden.analyst_user_id(), rowgate_hidden.sql_login_organization_id(),
  rowgate_hidden.current_organization_ids(text), rowgate_hidden.has_permission(uuid, text),
  rowgate_hidden.role_permission_denial(uuid, text),
  rowgate_private.assert_known_scopes(text[]), rowgate_private.read_scopes(),
  rowgate_private.token_scope_denials(uuid, text[], text)
  to rowgate_sql_admin;
grant select (name, verb, things) on rowgate.permissions to rowgate_sql_admin;
grant select (name) on rowgate_private.scopes to rowgate_sql_admin;

-- Whether each login this database made is live, and whether its role is gone yet: read
-- past the organizations' row-level security, for rowgate_sql_admin's sweep alone.
create function rowgate_private.sql_login_states()
  returns table (login text, organization_id uuid, live boolean, dropped boolean)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
    select c.login, c.organization_id,
      c.deleted_at is null and o.deleted_at is null and (c.expires_at is null or c.expires_at > statement_timestamp()),
      c.login_dropped_at is not null
    from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login_dropped_at is null;
end;
$$;
comment on function rowgate_private.sql_login_states() is 'The SQL logins (SPEC §24) whose roles exist: each one''s organization and whether its credential is live.';
grant execute on function rowgate_private.sql_login_states() to rowgate_sql_admin;

create function rowgate.create_sql_credential(p_organization_id uuid, p_comment text, p_scopes text[],
    p_expires_at timestamptz, p_login text, p_verifier text)
  returns rowgate.sql_credentials
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set createrole_self_grant = 'inherit'
as $$
declare
  v_denial text;
  v_escalation record;
  v_credential rowgate.sql_credentials;
  v_place bigint;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG404';
  end if;
  v_denial := case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage SQL credentials'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage') end;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  -- the server makes both; anything else is refused before it reaches a statement
  if p_login is null or p_login !~ '^rg_sql_[a-z2-7]{20}$' then
    raise exception 'A SQL login is named rg_sql_ and 20 base32 characters' using errcode = '22023';
  end if;
  if p_verifier is null or p_verifier !~ '^SCRAM-SHA-256\$[0-9]{4,7}:[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$' then
    raise exception 'A SQL login takes a SCRAM-SHA-256 verifier' using errcode = '22023';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  select s.n into v_place from unnest(p_scopes) with ordinality s(scope, n)
    where not (s.scope = any (rowgate_private.read_scopes())) or s.scope in ('user:read', 'payouts:read')
    order by s.n limit 1;
  if found then
    raise exception 'A SQL login carries organization read scopes only' using errcode = 'RG422', detail = 'body.scopes.' || (v_place - 1);
  end if;
  select s.n into v_place from unnest(p_scopes) with ordinality s(scope, n)
    where not (s.scope = any (coalesce(rowgate_hidden.current_scopes(), '{}')))
    order by s.n limit 1;
  if found then
    raise exception 'A credential cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes.' || (v_place - 1);
  end if;
  select d.n, d.message into v_escalation
    from rowgate_private.token_scope_denials(p_organization_id, p_scopes, 'organization_access_token') d
    order by d.n limit 1;
  if found then
    raise exception '%', v_escalation.message using errcode = 'RG422', detail = 'body.scopes.' || (v_escalation.n - 1);
  end if;
  -- one organization's makers one at a time, so two at once cannot both take the tenth place
  perform pg_advisory_xact_lock(hashtextextended('rowgate sql credentials ' || p_organization_id::text, 0));
  if (select count(*) from rowgate.sql_credentials c where c.organization_id = p_organization_id and c.deleted_at is null
      and (c.expires_at is null or c.expires_at > now())) >= 10 then
    raise exception 'An organization has at most 10 live SQL credentials; revoke one to make room' using errcode = 'RG422', detail = 'body';
  end if;
  insert into rowgate.sql_credentials (organization_id, login, comment, scopes, created_by, expires_at)
    values (p_organization_id, p_login, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s),
      rowgate_hidden.current_user_id(), p_expires_at)
    returning * into v_credential;
  execute format('create role %I login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls connection limit 5 valid until %L password %L',
    p_login, coalesce(p_expires_at::text, 'infinity'), p_verifier);
  execute format('grant rowgate_sql_login to %I with inherit true, set false', p_login);
  -- bounded like an analyst (SPEC §15); rowgate_private.end_sql_login_sessions holds it to these whatever it SETs
  execute format('alter role %I set statement_timeout = %L', p_login, '60s');
  execute format('alter role %I set idle_in_transaction_session_timeout = %L', p_login, '60s');
  if current_setting('server_version_num')::int >= 170000 then
    execute format('alter role %I set transaction_timeout = %L', p_login, '15min');
  end if;
  return v_credential;
end;
$$;
comment on function rowgate.create_sql_credential(uuid, text, text[], timestamptz, text, text) is '@behavior -*
Makes an organization''s SQL login (SPEC §24) named p_login with the password whose SCRAM-SHA-256 verifier is p_verifier, and its credential row.';

create function rowgate.delete_sql_credential(p_organization_id uuid, p_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_denial text;
  v_login text;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG404';
  end if;
  v_denial := case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage SQL credentials'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage') end;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.sql_credentials c set deleted_at = now()
    where c.id = p_id and c.organization_id = p_organization_id and c.deleted_at is null
    returning c.login into v_login;
  if v_login is null then
    raise exception 'SQL credential not found' using errcode = 'RG404';
  end if;
  -- from the commit on, it cannot log in again; its sessions read nothing (its identity is
  -- not live) and end within a second (rowgate_private.end_sql_login_sessions)
  execute format('alter role %I nologin', v_login);
  return;
end;
$$;
comment on function rowgate.delete_sql_credential(uuid, uuid) is '@behavior -*
Revokes an organization''s SQL login (SPEC §24): it logs in no more, and its sessions end.';

-- Run about twice a second by every server on each database host that serves logins (the
-- primary and each standby): ends the sessions of logins whose credential is not live, an
-- organization's sessions past the 5 it shares (the newest go), sessions past their
-- statement or idle limits; on the primary it also records when a login was last used
-- (to the minute) and drops the roles of revoked or expired logins once no session is left.
-- Idempotent, so every server may run it.
create function rowgate_private.end_sql_login_sessions()
  returns table (cancelled integer, terminated integer, dropped integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_cancelled integer := 0;
  v_terminated integer := 0;
  v_dropped integer := 0;
  v_login text;
begin
  if not exists (select from rowgate_private.sql_login_states()) then
    return query select 0, 0, 0;
    return;
  end if;
  with states as (
    select * from rowgate_private.sql_login_states()
  ), sessions as (
    select s.pid, s.state, s.query_start, s.state_change, st.live,
      row_number() over (partition by st.organization_id order by s.backend_start, s.pid) as place
    from pg_stat_activity s join states st on st.login = s.usename
    where s.backend_type = 'client backend' and s.pid <> pg_backend_pid()
  ), ended as (
    select pid from sessions
    where not live or place > 5
      or (state like 'idle in transaction%' and state_change < clock_timestamp() - interval '60 seconds')
      or (state = 'active' and query_start < clock_timestamp() - interval '65 seconds')
  )
  select (select count(*) filter (where pg_cancel_backend(s.pid))::integer from sessions s
        where s.state = 'active' and s.pid not in (select pid from ended) and s.query_start < clock_timestamp() - interval '60 seconds'),
      (select count(*) filter (where pg_terminate_backend(e.pid))::integer from ended e)
    into v_cancelled, v_terminated;

  -- the rest writes, so only the primary does it, and one server at a time
  if not pg_is_in_recovery() and pg_try_advisory_xact_lock(hashtextextended('rowgate sql logins sweep', 0)) then
    update rowgate.sql_credentials c set last_used_at = date_trunc('minute', now())
      where c.login in (select s.usename from pg_stat_activity s where s.backend_type = 'client backend')
        and c.login_dropped_at is null and c.deleted_at is null
        and (c.last_used_at is null or c.last_used_at < date_trunc('minute', now()));
    for v_login in
      select st.login from rowgate_private.sql_login_states() st
      where not st.live and not exists (select from pg_stat_activity s where s.usename = st.login)
    loop
      begin
        execute format('drop role if exists %I', v_login);
        update rowgate.sql_credentials c set login_dropped_at = now() where c.login = v_login;
        v_dropped := v_dropped + 1;
      exception when dependent_objects_still_exist or object_in_use then
        -- something a DBA granted it elsewhere holds it: the next sweep tries again
        null;
      end;
    end loop;
  end if;
  return query select v_cancelled, v_terminated, v_dropped;
end;
$$;
comment on function rowgate_private.end_sql_login_sessions() is 'Holds organizations'' SQL logins (SPEC §24) to their credentials and bounds: ends what must end, and on the primary drops the roles of logins no longer live.';

-- Who may call them (an ACL the change of owner keeps), then each belongs to rowgate_sql_admin;
-- CREATE on the schemas only for the change of owner
revoke all on function rowgate.create_sql_credential(uuid, text, text[], timestamptz, text, text),
  rowgate.delete_sql_credential(uuid, uuid), rowgate_private.end_sql_login_sessions() from public;
grant execute on function rowgate.create_sql_credential(uuid, text, text[], timestamptz, text, text),
  rowgate.delete_sql_credential(uuid, uuid) to rowgate_user;
grant execute on function rowgate_private.end_sql_login_sessions() to rowgate_authenticator;
grant create on schema rowgate, rowgate_private to rowgate_sql_admin;
alter function rowgate.create_sql_credential(uuid, text, text[], timestamptz, text, text) owner to rowgate_sql_admin;
alter function rowgate.delete_sql_credential(uuid, uuid) owner to rowgate_sql_admin;
alter function rowgate_private.end_sql_login_sessions() owner to rowgate_sql_admin;
revoke create on schema rowgate, rowgate_private from rowgate_sql_admin;

--! split: 320-sql-login-grants.sql
-- What an organization's SQL login may read and run (SPEC §24): the group holds SELECT on
-- exactly the tables and views an organization access token reads (the analysts' columns
-- of them, so that `select *` works: the columns the token's API leaves out, `deleted_at`
-- and `consecutive_failures`, are of rows the policies hide or say nothing of another
-- tenant), nothing on rowgate.users, CONNECT on the database (which PUBLIC loses), and
-- EXECUTE on an allowlist of STABLE functions: the subject helpers the policies call and
-- the ones rowgate.check answers with, each of which reaches only the login's
-- organization whatever ids it is given (`db lint` keeps this list: src/db/lint.ts).
do $connect$
begin
  execute format('revoke connect on database %I from public', current_database());
  execute format('grant connect on database %I to rowgate_sql_login', current_database());
end
$connect$;
grant usage on schema rowgate, rowgate_hidden to rowgate_sql_login;

grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at, deleted_at) on rowgate.accounts to rowgate_sql_login;
grant select (id, email, name) on rowgate.colleagues to rowgate_sql_login;
grant select (id, organization_id, customer_id, email, name, created_at, updated_at, role, metadata, deleted_at) on rowgate.customer_members to rowgate_sql_login;
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at, metadata, external_id, deleted_at) on rowgate.customers to rowgate_sql_login;
grant select (organization_id, event_id, audience, user_id, ip, user_agent, created_at) on rowgate.event_clients to rowgate_sql_login;
grant select (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position) on rowgate.events to rowgate_sql_login;
grant select (id, user_id, organization_id, role, created_at, updated_at, deleted_at) on rowgate.memberships to rowgate_sql_login;
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at, metadata, refunded_amount) on rowgate.orders to rowgate_sql_login;
grant select (organization_id, day, status, orders, amount) on rowgate.orders_by_day to rowgate_sql_login;
grant select (id, organization_id, name, description, permissions, created_at, updated_at, deleted_at) on rowgate.organization_roles to rowgate_sql_login;
grant select (id, name, slug, account_id, created_at, updated_at, max_token_lifetime_days, deleted_at) on rowgate.organizations to rowgate_sql_login;
grant select (id, organization_id, type, country, currency, created_at, updated_at, deleted_at) on rowgate.payout_accounts to rowgate_sql_login;
grant select (name, verb, things) on rowgate.permissions to rowgate_sql_login;
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at, metadata, deleted_at) on rowgate.products to rowgate_sql_login;
grant select (id, organization_id, order_id, amount, currency, reason, comment, metadata, created_at, updated_at) on rowgate.refunds to rowgate_sql_login;
grant select (organization_id, day, currency, gross_amount, refunded_amount, net_amount, payments) on rowgate.revenue_by_day to rowgate_sql_login;
grant select (role, permission) on rowgate.role_permissions to rowgate_sql_login;
grant select (name, description) on rowgate.roles to rowgate_sql_login;
grant select (id, organization_id, order_id, type, amount, currency, created_at, updated_at) on rowgate.transactions to rowgate_sql_login;
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at) on rowgate.webhook_attempts to rowgate_sql_login;
grant select (id, organization_id, url, event_types, description, enabled, created_at, updated_at, consecutive_failures, deleted_at) on rowgate.webhook_endpoints to rowgate_sql_login;
grant select (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) on rowgate_hidden.operations to rowgate_sql_login;

grant execute on function
  -- the subject helpers and what they call
  rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), rowgate_hidden.current_user_id(),
  rowgate_hidden.current_credential_kind(), rowgate_hidden.current_scopes(), rowgate_hidden.has_scope(text),
  rowgate_hidden.analyst_user_id(), rowgate_hidden.analyst_scopes(),
  rowgate_hidden.sql_login_organization_id(), rowgate_hidden.sql_login_scopes(),
  rowgate_hidden.current_organization_ids(text), rowgate_hidden.current_colleague_ids(),
  rowgate_hidden.has_permission(uuid, text),
  -- the policies' denials
  rowgate_hidden.finance_read_denial(uuid), rowgate_hidden.finance_write_denial(uuid), rowgate_hidden.finance_denial(uuid, boolean),
  rowgate_hidden.role_permission_denial(uuid, text), rowgate_hidden.members_management_denial(uuid),
  rowgate_hidden.access_token_management_denial(uuid), rowgate_hidden.policy_denial(uuid, text),
  -- rowgate.check (SPEC §20)
  rowgate."check"(text, jsonb, uuid), rowgate_hidden.check_operation(text, jsonb, uuid, boolean),
  rowgate_hidden.check_batch(jsonb, boolean), rowgate_hidden.check_items(jsonb, text, text[]),
  rowgate_hidden.check_answer(rowgate_hidden.operations, boolean, integer, text, text, text, text, text[], uuid, text),
  rowgate_hidden.web_session_scopes(), rowgate_hidden.current_role_in(uuid),
  rowgate_hidden.reachable_resource_organization_ids(text, uuid[]), rowgate_hidden.invitee_invitation_found(uuid),
  rowgate_hidden.member_removal_denial(uuid, uuid), rowgate_hidden.organization_account_exists(uuid)
  to rowgate_sql_login;

--! split: 330-sql-credential-events.sql
-- SQL credentials' events (SPEC §24: sql_credential.created|deleted) are read by those who
-- read the credentials: users with organization:manage, through a new audience. The
-- events policy also names the logins' group, so a login reads the events an
-- organization token with its scopes reads.
-- Every existing row passed the narrower check this one replaces, so it is not validated
-- again (that would read every partition): new rows are checked.
alter table rowgate.events drop constraint events_audience_check;
alter table rowgate.events add constraint events_audience_check check (audience in
  ('members', 'finance_permission', 'finance_policy', 'payouts', 'access_tokens', 'organization_managers', 'member_managers',
    'organization_manager_users')) not valid;
drop policy select_audience on rowgate.events;
create policy select_audience on rowgate.events for select to rowgate_user, rowgate_organization, rowgate_analyst, rowgate_sql_login
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('events_read'))
    and case audience
      when 'members' then true
      when 'finance_permission' then organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
      when 'finance_policy' then rowgate_hidden.finance_read_denial(organization_id) is null
      when 'payouts' then rowgate_hidden.finance_read_denial(organization_id) is null
        and (select rowgate_hidden.current_credential_kind()) = 'web_session'
        and (select rowgate_hidden.has_scope('payouts:read'))
      when 'access_tokens' then organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      when 'organization_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
      when 'member_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      when 'organization_manager_users' then organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      else false
    end);

create trigger _400_events after insert or update on rowgate.sql_credentials
  for each row execute function rowgate_private.tg__events('sql_credential', 'organization_manager_users',
    'id,organization_id,login,comment,scopes,created_by,expires_at,last_used_at,created_at,updated_at', 'deleted_at,login_dropped_at');

-- membership.deleted lists the live SQL logins the member made too (SPEC §21), so a manager
-- can revoke them.
create or replace function rowgate_private.member_credentials(p_organization_id uuid, p_user_id uuid)
  returns jsonb
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
    'organization_access_tokens', coalesce((
      select jsonb_agg(jsonb_build_object('id', t.id) order by t.created_at, t.id)
      from rowgate.organization_access_tokens t
      where t.organization_id = p_organization_id and t.created_by = p_user_id and t.deleted_at is null
        and (t.expires_at is null or t.expires_at > now())), '[]'),
    'sql_credentials', coalesce((
      select jsonb_agg(jsonb_build_object('id', c.id, 'login', c.login) order by c.created_at, c.id)
      from rowgate.sql_credentials c
      where c.organization_id = p_organization_id and c.created_by = p_user_id and c.deleted_at is null
        and (c.expires_at is null or c.expires_at > now())), '[]'),
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

--! split: 340-export-leases.sql
-- Streamed exports (SPEC §24) run at most 2 at once per credential, across every server:
-- each running export holds a lease row here, renewed with each chunk it reads, so a
-- server that dies mid-export frees its slot when the lease runs out. Only the functions
-- below touch it, as the credential of the transaction that calls them.
create table rowgate_private.export_leases (
  id uuid default gen_random_uuid() not null primary key,
  credential_id uuid not null,
  expires_at timestamptz not null,
  created_at timestamptz default now() not null
);
create index export_leases_credential on rowgate_private.export_leases (credential_id, expires_at);

create function rowgate_hidden.claim_export(p_per_credential integer, p_lease_seconds integer)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_credential uuid := rowgate_hidden.current_credential_id();
  v_id uuid;
begin
  if v_credential is null then
    raise exception 'An export needs a credential' using errcode = 'RG403';
  end if;
  -- one credential's claims one at a time, so two at once cannot both take the last slot
  perform pg_advisory_xact_lock(hashtextextended('rowgate exports ' || v_credential::text, 0));
  delete from rowgate_private.export_leases l where l.credential_id = v_credential and l.expires_at <= now();
  if (select count(*) from rowgate_private.export_leases l where l.credential_id = v_credential) >= p_per_credential then
    raise exception 'At most % exports run at once per credential', p_per_credential using errcode = 'RG429', detail = '1';
  end if;
  insert into rowgate_private.export_leases (credential_id, expires_at)
    values (v_credential, now() + make_interval(secs => p_lease_seconds))
    returning id into v_id;
  return v_id;
end;
$$;
comment on function rowgate_hidden.claim_export(integer, integer) is 'Takes one of the credential''s export slots (SPEC §24) for p_lease_seconds, or refuses (RG429) when it holds p_per_credential already.';

create function rowgate_hidden.renew_export(p_id uuid, p_lease_seconds integer)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update rowgate_private.export_leases l set expires_at = now() + make_interval(secs => p_lease_seconds)
    where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$$;
comment on function rowgate_hidden.renew_export(uuid, integer) is 'Keeps the credential''s export slot p_id for p_lease_seconds more.';

create function rowgate_hidden.end_export(p_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from rowgate_private.export_leases l where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$$;
comment on function rowgate_hidden.end_export(uuid) is 'Gives the credential''s export slot p_id back.';

grant execute on function rowgate_hidden.claim_export(integer, integer), rowgate_hidden.renew_export(uuid, integer),
  rowgate_hidden.end_export(uuid) to rowgate_user, rowgate_organization;

--! split: 400-pats-kept-to-named-organizations.sql
-- A personal access token may name the organizations it reaches (SPEC §25, "Tokens kept to
-- some organizations"): the reach helpers every policy and function asks intersect the user's
-- organizations with the token's, so REST, GraphQL and the authorization check all answer 404
-- and leave the others out of lists. The set is fixed at creation: nothing updates it.
alter table rowgate.personal_access_tokens add column if not exists organization_ids uuid[]
  constraint personal_access_tokens_organization_ids_check check (organization_ids is null
    or (cardinality(organization_ids) between 1 and 50 and array_position(organization_ids, null) is null));
comment on column rowgate.personal_access_tokens.organization_ids is 'The only organizations the token reaches; null: every organization of its user.';
grant select (organization_ids) on rowgate.personal_access_tokens to rowgate_user;

create or replace function rowgate_hidden.current_token_organization_ids() returns uuid[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  if rowgate_hidden.current_credential_kind() is distinct from 'personal_access_token' then
    return null;
  end if;
  return (select t.organization_ids from rowgate.personal_access_tokens t
    where t.id = nullif(current_setting('rowgate.credential_id', true), '')::uuid);
end;
$$;
comment on function rowgate_hidden.current_token_organization_ids() is 'The organizations the credential of this transaction is kept to (a personal access token naming some); null: no such bound.';
grant execute on function rowgate_hidden.current_token_organization_ids() to rowgate_organization, rowgate_user;

-- Restated: a User's organizations are narrowed to those its token is kept to.
create or replace function rowgate_hidden.current_organization_ids(p_permission text default null) returns uuid[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_user_id uuid;
  v_kept uuid[];
begin
  if v_kind = 'user' then
    v_user_id := rowgate_hidden.current_user_id();
    -- only a personal access token may be kept: other credentials skip the lookup (a setting
    -- read by hand can only narrow what this returns, never widen it)
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    return array(
      select m.organization_id
      from rowgate.memberships m
      where m.user_id = v_user_id and m.deleted_at is null
        and (v_kept is null or m.organization_id = any (v_kept))
        and (select o.deleted_at is null from rowgate.organizations o where o.id = m.organization_id)
        and (p_permission is null
          or exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
          or exists (select 1 from rowgate.organization_roles r
            where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null
              and p_permission = any (r.permissions))));
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$$;

-- Restated: a token kept to some organizations holds no permission outside them.
create or replace function rowgate_hidden.current_permissions(p_organization_id uuid) returns text[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_kept uuid[];
begin
  if v_kind = 'organization' and p_organization_id = rowgate_hidden.current_subject_id() then
    return array(select p.name from rowgate.permissions p order by 1);
  elsif v_kind = 'user' then
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    if v_kept is not null and not p_organization_id = any (v_kept) then
      return '{}';
    end if;
    return coalesce((select rowgate_private.role_permissions(m.organization_id, m.role)
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.organization_id = p_organization_id
        and m.deleted_at is null and o.deleted_at is null), '{}');
  end if;
  return '{}';
end;
$$;

-- Replaced (a new parameter): the organizations a new token is kept to. Each must be one the
-- user reaches now (the same 422 for an unknown id), and the token lives no longer than the
-- shortest `max_token_lifetime_days` among them.
drop function if exists rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[]);
create or replace function rowgate.create_personal_access_token(p_comment text, p_scopes text[], p_expires_at timestamptz,
    p_token_hash bytea, p_allowed_ips text[] default null, p_organization_ids uuid[] default null)
  returns rowgate.personal_access_tokens
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_reached uuid[];
  v_kept uuid[];
  v_max_days integer;
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if p_organization_ids is not null then
    if cardinality(p_organization_ids) not between 1 and 50 then
      raise exception 'From 1 to 50 organizations, or null for all' using errcode = 'RG422', detail = 'body.organization_ids';
    end if;
    v_reached := rowgate_hidden.current_organization_ids();
    for i in 1 .. cardinality(p_organization_ids) loop
      if p_organization_ids[i] is null or not p_organization_ids[i] = any (v_reached) then
        raise exception 'Not an organization you belong to' using errcode = 'RG422',
          detail = 'body.organization_ids.' || (i - 1);
      end if;
    end loop;
    v_kept := array(select k.id from unnest(p_organization_ids) with ordinality k(id, n) group by k.id order by min(k.n));
    select min(o.max_token_lifetime_days) into v_max_days from rowgate.organizations o where o.id = any (v_kept);
    if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
      raise exception 'Tokens of these organizations live at most % days: expires_in is required, at most % seconds',
        v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
    end if;
  end if;
  v_token := rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash,
    rowgate_private.allowed_ips(p_allowed_ips));
  if v_kept is not null then
    update rowgate.personal_access_tokens set organization_ids = v_kept where id = v_token.id returning * into v_token;
  end if;
  return v_token;
end;
$$;
comment on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[], uuid[]) is '@behavior -*';
grant execute on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[], uuid[]) to rowgate_user;

-- Restated: a token kept to some organizations does not make another.
create or replace function rowgate.create_organization(p_name text, p_slug text) returns rowgate.organizations
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create organizations' using errcode = 'RG403';
  end if;
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot create organizations' using errcode = 'RG403';
  end if;
  insert into rowgate.organizations (name, slug) values (p_name, p_slug) returning * into v_organization;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, v_organization.id, 'admin');
  return v_organization;
end;
$$;

-- Restated: a token kept to some organizations cannot delete its user (the user reaches more than it).
create or replace function rowgate.delete_current_user()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_orphaned text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot delete its user' using errcode = 'RG403';
  end if;
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
$function$;

--! split: 410-sessions-and-authorized-apps.sql
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

--! split: 420-webhook-secret-rotation.sql
-- Webhook secrets are rolled without breaking the receiver (SPEC §25, "Webhook secret
-- rotation"): an endpoint holds its current secret and at most one previous one, live until
-- its expiry, and every attempt is signed with the secrets live when it is sent (Standard
-- Webhooks' space-separated signatures). The read schema shows when the secret last changed,
-- so a rotation is a `webhook_endpoint.updated` event. An endpoint its failures disable leaves
-- one notice, which the sender turns into a mail to the organization's managers.
alter table rowgate_private.webhook_secrets add column if not exists previous_sealed_secret bytea;
alter table rowgate_private.webhook_secrets add column if not exists previous_expires_at timestamptz;
comment on column rowgate_private.webhook_secrets.previous_sealed_secret is 'The secret a rotation replaced, still signing until previous_expires_at.';

alter table rowgate.webhook_endpoints add column if not exists secret_rotated_at timestamptz;
comment on column rowgate.webhook_endpoints.secret_rotated_at is 'When the signing secret was last rotated; null: never.';
grant select (secret_rotated_at) on rowgate.webhook_endpoints to rowgate_analyst, rowgate_organization, rowgate_user;

drop trigger if exists _400_events on rowgate.webhook_endpoints;
create trigger _400_events after insert or update on rowgate.webhook_endpoints for each row
  execute function rowgate_private.tg__events('webhook_endpoint', 'organization_managers',
    'id,organization_id,url,event_types,description,enabled,secret_rotated_at,api_version,created_at,updated_at', 'consecutive_failures,deleted_at');

-- Rotates an endpoint's secret: the new one (sealed by the server) signs from now on, the
-- current one keeps signing for p_expire_previous_in seconds, and any older one ends now.
create or replace function rowgate.rotate_webhook_secret(p_id uuid, p_sealed_secret bytea, p_expire_previous_in integer)
  returns rowgate.webhook_endpoints
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid := rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  v_endpoint rowgate.webhook_endpoints;
begin
  if p_expire_previous_in is null or p_expire_previous_in not between 0 and 604800 then
    raise exception 'From 0 to 604800 seconds' using errcode = 'RG422', detail = 'body.expire_previous_in';
  end if;
  update rowgate_private.webhook_secrets s
    set previous_sealed_secret = s.sealed_secret,
      previous_expires_at = now() + make_interval(secs => p_expire_previous_in),
      sealed_secret = p_sealed_secret
    where s.organization_id = v_organization_id and s.endpoint_id = p_id;
  update rowgate.webhook_endpoints e set secret_rotated_at = now()
    where e.organization_id = v_organization_id and e.id = p_id
    returning * into v_endpoint;
  return v_endpoint;
end;
$$;
comment on function rowgate.rotate_webhook_secret(uuid, bytea, integer) is '@behavior -*';
grant execute on function rowgate.rotate_webhook_secret(uuid, bytea, integer) to rowgate_organization, rowgate_user;

-- The previous secret of an endpoint while it is live (null otherwise), read by the sender as
-- it claims an attempt.
create or replace function rowgate_private.webhook_previous_secret(p_organization_id uuid, p_endpoint_id uuid)
  returns table (sealed_secret bytea, expires_at timestamptz)
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select s.previous_sealed_secret, s.previous_expires_at from rowgate_private.webhook_secrets s
  where s.organization_id = p_organization_id and s.endpoint_id = p_endpoint_id
    and s.previous_sealed_secret is not null and s.previous_expires_at > now();
$$;
grant execute on function rowgate_private.webhook_previous_secret(uuid, uuid) to rowgate_authenticator;

create table if not exists rowgate_private.webhook_disabled_notices (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  endpoint_id uuid not null,
  created_at timestamptz default now() not null,
  taken_at timestamptz,
  primary key (organization_id, id),
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id)
);
comment on table rowgate_private.webhook_disabled_notices is 'An endpoint its failures disabled, until the sender has recorded the mail to its organization''s managers.';
create index if not exists webhook_disabled_notices_pending on rowgate_private.webhook_disabled_notices (created_at) where taken_at is null;
create index if not exists webhook_disabled_notices_endpoint on rowgate_private.webhook_disabled_notices (organization_id, endpoint_id);

create or replace function rowgate_private.tg_webhook_endpoints__disabled_notice() returns trigger
  language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  -- disabled by its failures, not by a manager's PATCH
  if old.enabled and not new.enabled and new.consecutive_failures >= 10 and new.deleted_at is null then
    insert into rowgate_private.webhook_disabled_notices (organization_id, endpoint_id) values (new.organization_id, new.id);
  end if;
  return null;
end;
$$;
drop trigger if exists _600_disabled_notice on rowgate.webhook_endpoints;
create trigger _600_disabled_notice after update of enabled on rowgate.webhook_endpoints for each row
  execute function rowgate_private.tg_webhook_endpoints__disabled_notice();

-- Takes the pending notices (each once, whichever sender asks): one row per manager to mail.
create or replace function rowgate_private.take_webhook_disabled_notices(p_limit integer default 20)
  returns table (notice_id uuid, organization_id uuid, organization_name text, endpoint_id uuid, url text, email text)
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_notice rowgate_private.webhook_disabled_notices;
begin
  for v_notice in
    select n.* from rowgate_private.webhook_disabled_notices n
    where n.taken_at is null order by n.created_at limit p_limit
    for update skip locked
  loop
    update rowgate_private.webhook_disabled_notices n set taken_at = now()
      where n.organization_id = v_notice.organization_id and n.id = v_notice.id;
    return query
      select v_notice.id, o.id, o.name, e.id, e.url, u.email
      from rowgate.webhook_endpoints e
        join rowgate.organizations o on o.id = e.organization_id
        join rowgate.memberships m on m.organization_id = o.id and m.deleted_at is null
        join rowgate.users u on u.id = m.user_id and u.deleted_at is null
      where e.organization_id = v_notice.organization_id and e.id = v_notice.endpoint_id and o.deleted_at is null
        and 'organization:manage' = any (rowgate_private.role_permissions(o.id, m.role))
      order by u.email;
  end loop;
end;
$$;
grant execute on function rowgate_private.take_webhook_disabled_notices(integer) to rowgate_authenticator;

--! split: 430-request-log.sql
-- An organization's request log (SPEC §25, "Request log"): the /v1 requests about an
-- organization, for its managers, written after each answer by the server in batches (never in
-- the request's transaction) and kept 30 days in daily partitions dropped whole. A row is
-- written only where its caller reaches the organization, checked as it is written, so no
-- stranger's probe lands in another tenant's log. Its id is made by the server before the
-- request's transaction and carried there as `rowgate.request_log_id`, which links the events
-- the request wrote and its recorded denial to it (never the client's request id).
create table if not exists rowgate.request_log (
  id uuid not null,
  organization_id uuid not null,
  request_id text not null,
  method text not null,
  route text not null,
  path text not null,
  status integer not null,
  error text,
  duration_ms integer not null,
  credential_kind text,
  credential_id uuid,
  user_id uuid,
  client_ip inet,
  user_agent text,
  api_version text,
  idempotent_replayed boolean not null default false,
  created_at timestamptz not null,
  constraint request_log_pkey primary key (organization_id, id),
  constraint request_log_user_agent_check check (length(user_agent) <= 256),
  constraint request_log_path_check check (length(path) <= 2000)
) partition by range (id);
comment on table rowgate.request_log is '@behavior -*
The /v1 requests about an organization of the last 30 days (SPEC §25), for users with organization:manage; written in batches after the answers, so a row appears within seconds or, when writing falls behind, not at all.';
create table if not exists rowgate_partitions.request_log_default partition of rowgate.request_log default;
alter table rowgate.request_log enable row level security;
grant select (id, organization_id, request_id, method, route, path, status, error, duration_ms, credential_kind, credential_id,
  user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at) on rowgate.request_log to rowgate_analyst, rowgate_user;
create index if not exists request_log_organization_created on rowgate.request_log (organization_id, created_at, id);
create index if not exists request_log_user on rowgate.request_log (user_id) where client_ip is not null or user_agent is not null;
drop policy if exists select_manage on rowgate.request_log;
create policy select_manage on rowgate.request_log for select to rowgate_user, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('organizations_read')));

-- The events a request wrote, by its request log id.
create table if not exists rowgate_private.request_log_events (
  request_log_id uuid not null,
  organization_id uuid not null,
  event_id uuid not null,
  created_at timestamptz not null default now()
);
comment on table rowgate_private.request_log_events is 'The events each request wrote, linked by the request log id its transaction carried.';
create index if not exists request_log_events_request on rowgate_private.request_log_events (request_log_id);
create index if not exists request_log_events_created on rowgate_private.request_log_events (created_at);

-- The request log id of this transaction: set only by the API's authentication statement.
create or replace function rowgate_private.current_request_log_id() returns uuid
  language sql stable set search_path = pg_catalog, pg_temp as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.request_log_id', true), '')::uuid end;
$$;

create or replace function rowgate_private.tg_events__link_request() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_log_id uuid := rowgate_private.current_request_log_id();
begin
  if v_log_id is not null then
    insert into rowgate_private.request_log_events (request_log_id, organization_id, event_id)
      select v_log_id, i.organization_id, i.id from inserted i;
  end if;
  return null;
end;
$$;
drop trigger if exists _600_link_request on rowgate.events;
create trigger _600_link_request after insert on rowgate.events referencing new table as inserted
  for each statement execute function rowgate_private.tg_events__link_request();

alter table rowgate.denials add column if not exists request_log_id uuid;
comment on column rowgate.denials.request_log_id is 'The request log row (SPEC §25) of the refused request; null on an overflow row.';
grant select (request_log_id) on rowgate.denials to rowgate_analyst, rowgate_user;

create or replace function rowgate_private.tg_denials__link_request() returns trigger
  language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  if new.operation is not null then
    new.request_log_id := rowgate_private.current_request_log_id();
  end if;
  return new;
end;
$$;
drop trigger if exists _150_link_request on rowgate.denials;
create trigger _150_link_request before insert on rowgate.denials for each row
  execute function rowgate_private.tg_denials__link_request();

-- The events a request wrote, for the organization's managers.
create or replace function rowgate.request_log_event_ids(p_organization_id uuid, p_id uuid) returns uuid[]
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select coalesce(array_agg(l.event_id order by l.event_id), '{}')
  from rowgate_private.request_log_events l
  where l.request_log_id = p_id and l.organization_id = p_organization_id
    and p_organization_id = any (rowgate_hidden.current_organization_ids('organization:manage'))
    and rowgate_hidden.has_scope('organizations_read');
$$;
comment on function rowgate.request_log_event_ids(uuid, uuid) is '@behavior -*';
grant execute on function rowgate.request_log_event_ids(uuid, uuid) to rowgate_user;

-- Writes a batch of requests (a JSON array) as the server saw them; keeps only the rows whose
-- subject reaches the organization now (a user by a live membership, within its token's
-- organizations; an organization subject its own), and none of a deleted user's addresses.
create or replace function rowgate_private.record_requests(p_rows jsonb) returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_written integer;
begin
  insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, error, duration_ms,
      credential_kind, credential_id, user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at)
    select r.id, coalesce(r.organization_id, d.organization_id), left(r.request_id, 128), left(r.method, 10), left(r.route, 200), left(r.path, 2000),
      r.status, left(r.error, 100), greatest(r.duration_ms, 0), r.credential_kind, r.credential_id,
      case when r.subject_kind = 'user' then r.subject_id end,
      case when u.deleted_at is null then r.client_ip end,
      case when u.deleted_at is null then left(r.user_agent, 256) end,
      r.api_version, coalesce(r.idempotent_replayed, false), r.created_at
    from jsonb_to_recordset(p_rows) as r(id uuid, organization_id uuid, subject_kind text, subject_id uuid, request_id text,
        method text, route text, path text, status integer, error text, duration_ms integer, credential_kind text,
        credential_id uuid, client_ip inet, user_agent text, api_version text, idempotent_replayed boolean, created_at timestamptz)
      left join rowgate.users u on r.subject_kind = 'user' and u.id = r.subject_id
      -- a refusal whose organization the server did not learn: the one its denial was recorded in
      left join lateral (select d.organization_id from rowgate.denials d
        where r.organization_id is null and d.request_log_id = r.id limit 1) d on true
    where coalesce(r.organization_id, d.organization_id) is not null and r.id is not null
      and case r.subject_kind
        when 'organization' then coalesce(r.organization_id, d.organization_id) = r.subject_id
        when 'user' then exists (select 1 from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
            where m.user_id = r.subject_id and m.organization_id = coalesce(r.organization_id, d.organization_id)
              and m.deleted_at is null and o.deleted_at is null)
          and (r.credential_kind is distinct from 'personal_access_token' or exists (select 1 from rowgate.personal_access_tokens t
            where t.id = r.credential_id
              and (t.organization_ids is null or coalesce(r.organization_id, d.organization_id) = any (t.organization_ids))))
        else false end
    on conflict do nothing;
  get diagnostics v_written = row_count;
  return v_written;
end;
$$;
grant execute on function rowgate_private.record_requests(jsonb) to rowgate_authenticator;

-- The daily partitions of the request log, made up to a week ahead (as the events' are).
create or replace function rowgate_private.add_request_log_partitions() returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp set lock_timeout = '5s' as $$
declare
  v_day timestamptz;
  v_until timestamptz := now() + interval '7 days';
  v_added integer := 0;
begin
  perform pg_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions'));
  v_day := coalesce(
    rowgate_private.uuidv7_time((select r.upper_id from rowgate_private.partition_ranges('rowgate.request_log') r
      order by r.upper_id desc limit 1)),
    date_trunc('day', now(), 'UTC'));
  while v_day < v_until loop
    perform rowgate_private.add_partition('rowgate.request_log', 'id', 'request_log_' || to_char(v_day at time zone 'UTC', 'YYYYMMDD'),
      rowgate_private.uuidv7_bound(v_day), rowgate_private.uuidv7_bound(v_day + interval '24 hours'));
    v_day := v_day + interval '24 hours';
    v_added := v_added + 1;
  end loop;
  return v_added;
end;
$$;
comment on function rowgate_private.add_request_log_partitions() is 'Makes the daily partitions of the request log up to a week ahead; returns how many it made.';
grant execute on function rowgate_private.add_request_log_partitions() to rowgate_authenticator;

-- Drops the request log's days older than 30 days, whole, and the links of their requests.
create or replace function rowgate_private.prune_request_log() returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp set lock_timeout = '1s' as $$
declare
  v_before uuid := rowgate_private.uuidv7_bound(date_trunc('day', now() - interval '30 days', 'UTC'));
  v_day record;
  v_dropped integer := 0;
begin
  if not pg_try_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions')) then
    return 0;
  end if;
  for v_day in select r.partition from rowgate_private.partition_ranges('rowgate.request_log') r where r.upper_id <= v_before loop
    execute format('drop table %s', v_day.partition);
    v_dropped := v_dropped + 1;
  end loop;
  delete from rowgate.request_log where id < v_before;
  delete from rowgate_private.request_log_events where created_at < now() - interval '31 days';
  return v_dropped;
end;
$$;
comment on function rowgate_private.prune_request_log() is 'Drops the request log''s days older than 30 days; returns how many.';
grant execute on function rowgate_private.prune_request_log() to rowgate_authenticator;

-- A deleted user's addresses leave the request log with it.
create or replace function rowgate_private.tg_users__erase_request_clients() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate.request_log set client_ip = null, user_agent = null
    where user_id = new.id and (client_ip is not null or user_agent is not null);
  update rowgate_private.sessions set client_ip = null, user_agent = null where user_id = new.id;
  return null;
end;
$$;
drop trigger if exists _610_erase_request_clients on rowgate.users;
create trigger _610_erase_request_clients after update of deleted_at on rowgate.users for each row
  when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_users__erase_request_clients();

--! split: 440-partition-attach-locks-default.sql
-- A new partition takes the rows its default partition holds in its range, then is attached.
-- A row written into the default partition between the move and the attach would fail the
-- attach (its check finds the row) and with it every later day: the default partition is
-- locked first, so writers wait the moment it takes instead.
create or replace function rowgate_private.add_partition(p_parent regclass, p_key text, p_name text, p_from uuid, p_to uuid)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_default regclass;
begin
  execute format('create table rowgate_partitions.%I (like %s including constraints)', p_name, p_parent);
  select p.partdefid::regclass into v_default from pg_partitioned_table p where p.partrelid = p_parent and p.partdefid <> 0;
  if v_default is not null then
    execute format('lock table %s in access exclusive mode', v_default);
    execute format('with moved as (delete from %s where %I >= $1 and %I < $2 returning *) insert into rowgate_partitions.%I select * from moved',
      v_default, p_key, p_key, p_name) using p_from, p_to;
  end if;
  execute format('alter table %s attach partition rowgate_partitions.%I for values from (%L) to (%L)', p_parent, p_name, p_from, p_to);
end;
$$;

--! split: 900-operations.sql
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'authorized_apps:delete', 'authorized_apps:list', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'denials:list', 'events:feed', 'events:get', 'events:list', 'exports:customers', 'exports:events', 'exports:members', 'exports:orders', 'exports:products', 'exports:refunds', 'exports:transactions', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'oauth2_grants:delete', 'oauth2_grants:list', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'requests:get', 'requests:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'sessions:delete', 'sessions:list', 'sessions:revoke_others', 'sql_credentials:create', 'sql_credentials:delete', 'sql_credentials:get', 'sql_credentials:list', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:rotate_secret', 'webhook_endpoints:update');
insert into rowgate_hidden.operations (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) values
  ('accounts:create', 'POST', '/v1/accounts/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('accounts:get', 'GET', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('accounts:update', 'PATCH', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_write', 'payouts_write'], 'organization', 'finance_write', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('auth:logout', 'POST', '/v1/auth/logout', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 204, 'none', null, null, null),
  ('authorization:check', 'POST', '/v1/authorization/check', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorization:operations', 'GET', '/v1/authorization/operations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorized_apps:delete', 'DELETE', '/v1/users/me/authorized-apps/{client_id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('authorized_apps:list', 'GET', '/v1/users/me/authorized-apps', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
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
  ('exports:customers', 'GET', '/v1/exports/customers', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:events', 'GET', '/v1/exports/events', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:members', 'GET', '/v1/exports/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:orders', 'GET', '/v1/exports/orders', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:products', 'GET', '/v1/exports/products', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:refunds', 'GET', '/v1/exports/refunds', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('exports:transactions', 'GET', '/v1/exports/transactions', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', null, null, 200, 'list', null, null, null),
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
  ('oauth2_grants:delete', 'DELETE', '/v1/organizations/{id}/oauth2-grants/{grant_id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', 'access_tokens:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'access_token_management'),
  ('oauth2_grants:list', 'GET', '/v1/organizations/{id}/oauth2-grants', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_read', 'organization_access_tokens_write'], 'organization_user', 'access_token_management', 'access_tokens:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'access_token_management'),
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
  ('requests:get', 'GET', '/v1/organizations/{id}/requests/{request_id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('requests:list', 'GET', '/v1/organizations/{id}/requests', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('roles:create', 'POST', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:delete', 'DELETE', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:list', 'GET', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('roles:update', 'PATCH', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', 'members:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('sessions:delete', 'DELETE', '/v1/users/me/sessions/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('sessions:list', 'GET', '/v1/users/me/sessions', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('sessions:revoke_others', 'POST', '/v1/users/me/sessions/revoke-others', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('sql_credentials:create', 'POST', '/v1/organizations/{id}/sql-credentials', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('sql_credentials:delete', 'DELETE', '/v1/organizations/{id}/sql-credentials/{credential_id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('sql_credentials:get', 'GET', '/v1/organizations/{id}/sql-credentials/{credential_id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('sql_credentials:list', 'GET', '/v1/organizations/{id}/sql-credentials', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
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
  ('webhook_endpoints:rotate_secret', 'POST', '/v1/webhook-endpoints/{id}/secret/rotate', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:update', 'PATCH', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage')
on conflict (operation) do update set method = excluded.method, path = excluded.path, credentials = excluded.credentials, scopes = excluded.scopes, access_class = excluded.access_class, policy = excluded.policy, permission = excluded.permission, status = excluded.status, lookup = excluded.lookup, resource = excluded.resource, match = excluded.match, policy_key = excluded.policy_key;
