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
