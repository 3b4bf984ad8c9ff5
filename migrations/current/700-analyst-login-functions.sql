-- Analysts' logins (SPEC §8, §15) made and dropped without a superuser, the way
-- organizations' SQL logins are (SPEC §24): security definer functions owned by
-- rowgate_sql_admin (CREATEROLE reaching only the roles it made, ADMIN OPTION on
-- rowgate_analyst; db/roles.sql grants both once), which only rowgate_owner may call: the
-- role of the DATABASE_URL that `rowgate analysts` commands connect with. The rules an
-- analyst's login keeps are checked here, not by the command: a name of its own (a plain
-- lower-case identifier outside the pg_, rowgate_ and rg_sql_ namespaces, not a reserved
-- word), a SCRAM-SHA-256 verifier and never a clear password (no statement log holds a
-- secret), limits within their bounds, a live user, and no role taken over that is not an
-- analyst's login these functions made. createrole_self_grant = 'inherit' gives
-- rowgate_sql_admin the privileges of each login it makes, which is what lets it end that
-- login's sessions and drop what the login owns. A lock waited for past 2 s fails the
-- migration, which is run again, rather than holding up every statement queued behind it.
set local lock_timeout = '2s';

-- Why a name cannot be an analyst's login, or null when it can.
create function rowgate_private.analyst_login_denial(p_login text)
  returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_login is null or p_login !~ '^[a-z_][a-z0-9_]{0,62}$' then
    return 'An analyst''s login is a lower-case identifier of 1 to 63 characters (a-z, 0-9, _; not starting with a digit)';
  elsif starts_with(p_login, 'pg_') then
    return 'Names starting with pg_ are reserved by PostgreSQL';
  elsif p_login = 'rowgate' or starts_with(p_login, 'rowgate_') then
    return 'Names starting with rowgate_ belong to the API''s own roles';
  elsif starts_with(p_login, 'rg_sql_') then
    return 'Names starting with rg_sql_ belong to organizations'' SQL logins';
  elsif p_login in ('public', 'none') or exists (select from pg_catalog.pg_get_keywords() k where k.word = p_login and k.catcode = 'R') then
    return 'A reserved word is not a login';
  end if;
  return null;
end;
$$;
comment on function rowgate_private.analyst_login_denial(text) is 'Why p_login cannot name an analyst''s login (SPEC §15), or null when it can.';

-- Whether a user exists and is not deleted, read past the users' row-level security for
-- rowgate_sql_admin, which may read nothing else of users.
create function rowgate_private.is_live_user(p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return exists (select from rowgate.users u where u.id = p_user_id and u.deleted_at is null);
end;
$$;
comment on function rowgate_private.is_live_user(uuid) is 'Whether the user p_user_id exists and is not deleted.';

-- The analyst's login p_login as revoke finds it: its binding's user, and whether its role
-- exists. Refuses a name that is no analyst's login, a role that is not an analyst's
-- login rowgate_sql_admin administers (an API role, a superuser, an organization's SQL
-- login, a member of rowgate_analyst that a superuser made), and an unbound name.
create function rowgate_private.revocable_analyst_login(p_login text, out user_id uuid, out role_exists boolean, out can_login boolean)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_denial text := rowgate_private.analyst_login_denial(p_login);
  v_role record;
begin
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG422', detail = 'login';
  end if;
  select r.rolsuper, r.rolcanlogin,
      exists (select from pg_catalog.pg_auth_members m where m.member = r.oid and m.roleid = 'rowgate_analyst'::regrole) as analyst,
      exists (select from pg_catalog.pg_auth_members m where m.roleid = r.oid and m.member = 'rowgate_sql_admin'::regrole and m.admin_option) as administered
    into v_role
    from pg_catalog.pg_roles r where r.rolname = p_login;
  role_exists := found;
  if role_exists and (v_role.rolsuper or not v_role.analyst) then
    raise exception 'Role % is not an analyst; only analysts'' logins are revoked here', p_login using errcode = 'RG422', detail = 'login';
  end if;
  if role_exists and not v_role.administered then
    raise exception 'Role % is an analyst that rowgate_sql_admin does not administer; a superuser running db/roles.sql hands it over', p_login
      using errcode = 'RG422', detail = 'login';
  end if;
  select a.user_id into user_id from rowgate_private.analysts a where a.login = p_login;
  if not found then
    raise exception '% is not an analyst of this database', p_login using errcode = 'RG422', detail = 'login';
  end if;
  can_login := coalesce(v_role.rolcanlogin, false);
end;
$$;
comment on function rowgate_private.revocable_analyst_login(text) is 'The bound analyst''s login p_login that rowgate_sql_admin may revoke (SPEC §15): its user and its role''s state; refuses any other role.';

create function rowgate_private.create_analyst_login(p_user_id uuid, p_login text, p_verifier text,
    p_connection_limit integer default 5, p_statement_timeout_ms integer default 60000,
    p_idle_in_transaction_timeout_ms integer default 60000)
  returns rowgate_private.analysts
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set createrole_self_grant = 'inherit'
as $$
declare
  v_denial text := rowgate_private.analyst_login_denial(p_login);
  v_analyst boolean;
  v_binding rowgate_private.analysts;
begin
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG422', detail = 'login';
  end if;
  if p_verifier is null or p_verifier !~ '^SCRAM-SHA-256\$[0-9]{4,7}:[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$' then
    raise exception 'An analyst''s login takes a SCRAM-SHA-256 verifier, never a password' using errcode = 'RG422', detail = 'verifier';
  end if;
  if p_connection_limit is null or p_connection_limit not between 1 and 1000 then
    raise exception 'A connection limit is from 1 to 1000' using errcode = 'RG422', detail = 'connection_limit';
  end if;
  if p_statement_timeout_ms is null or p_statement_timeout_ms not between 1000 and 86400000 then
    raise exception 'A statement timeout is from 1 second to 1 day' using errcode = 'RG422', detail = 'statement_timeout';
  end if;
  if p_idle_in_transaction_timeout_ms is null or p_idle_in_transaction_timeout_ms not between 1000 and 86400000 then
    raise exception 'An idle-in-transaction timeout is from 1 second to 1 day' using errcode = 'RG422', detail = 'idle_in_transaction_timeout';
  end if;
  if not rowgate_private.is_live_user(p_user_id) then
    raise exception 'User % not found', p_user_id using errcode = 'RG404', detail = 'user_id';
  end if;
  -- one grant or revoke at a time per name, across sessions
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || p_login, 0));
  if exists (select from rowgate_private.analysts a where a.login = p_login) then
    raise exception '% is bound as an analyst already; revoke it first to rebind it', p_login using errcode = 'RG422', detail = 'login';
  end if;
  -- an existing role is never adopted, whatever it is
  select exists (select from pg_catalog.pg_auth_members m where m.member = r.oid and m.roleid = 'rowgate_analyst'::regrole)
    into v_analyst from pg_catalog.pg_roles r where r.rolname = p_login;
  if found then
    raise exception '%', case when v_analyst then format('Role %s is an analyst already; revoke it first to rebind it', p_login)
      else format('Role %s exists and is not an analyst; choose another login', p_login) end
      using errcode = 'RG422', detail = 'login';
  end if;
  execute format('create role %I login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls connection limit %s password %L',
    p_login, p_connection_limit, p_verifier);
  execute format('grant rowgate_analyst to %I with inherit true, set false', p_login);
  -- the session's defaults; rowgate_private.enforce_analyst_limits holds it to the binding's whatever it SETs
  execute format('alter role %I set statement_timeout = %L', p_login, p_statement_timeout_ms);
  execute format('alter role %I set idle_in_transaction_session_timeout = %L', p_login, p_idle_in_transaction_timeout_ms);
  -- a whole transaction is bounded too where PostgreSQL can (17+), as db/roles.sql sets it
  if current_setting('server_version_num')::int >= 170000 then
    execute format('alter role %I set transaction_timeout = %L', p_login, '15min');
  end if;
  insert into rowgate_private.analysts (login, user_id, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms)
    values (p_login, p_user_id, p_connection_limit, p_statement_timeout_ms, p_idle_in_transaction_timeout_ms)
    returning * into v_binding;
  return v_binding;
end;
$$;
comment on function rowgate_private.create_analyst_login(uuid,text,text,integer,integer,integer) is 'Makes the analyst''s login p_login (SPEC §15), whose password''s SCRAM-SHA-256 verifier is p_verifier, member of rowgate_analyst and bound to the user p_user_id, with its limits.';

-- Revoking takes two transactions: the login can no longer log in once the first commits,
-- so the sessions the second ends cannot come back (a session that reconnects at once can
-- keep a temporary table in another database, and the role's drop would fail).
create function rowgate_private.disable_analyst_login(p_login text)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_analyst record;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || coalesce(p_login, ''), 0));
  select * into v_analyst from rowgate_private.revocable_analyst_login(p_login);
  if v_analyst.role_exists then
    execute format('alter role %I nologin', p_login);
  end if;
end;
$$;
comment on function rowgate_private.disable_analyst_login(text) is 'The first step of revoking the analyst''s login p_login (SPEC §15): it logs in no more.';

create function rowgate_private.drop_analyst_login(p_login text)
  returns table (login text, user_id uuid, role_dropped boolean, sessions_terminated integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_analyst record;
  v_terminated integer := 0;
  v_until timestamptz;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || coalesce(p_login, ''), 0));
  select * into v_analyst from rowgate_private.revocable_analyst_login(p_login);
  if v_analyst.role_exists then
    if v_analyst.can_login then
      raise exception 'Role % can still log in: rowgate_private.disable_analyst_login comes first, in its own transaction', p_login
        using errcode = '55000';
    end if;
    -- its sessions end in every database, and are waited for: a session's temporary
    -- tables go with its process, and until then the role cannot be dropped
    select count(*) filter (where pg_terminate_backend(s.pid))::integer into v_terminated
      from pg_catalog.pg_stat_activity s where s.usename = p_login;
    v_until := clock_timestamp() + interval '5 seconds';
    loop
      perform pg_stat_clear_snapshot();
      exit when not exists (select from pg_catalog.pg_stat_activity s where s.usename = p_login) or clock_timestamp() > v_until;
      perform pg_sleep(0.05);
    end loop;
    -- whatever it came to own or be granted in this database goes with it (nothing, unless a
    -- DBA granted it more); what it owns elsewhere keeps the role, and this raises
    execute format('drop owned by %I', p_login);
    execute format('drop role %I', p_login);
  end if;
  delete from rowgate_private.analysts a where a.login = p_login;
  return query select p_login, v_analyst.user_id, v_analyst.role_exists, v_terminated;
end;
$$;
comment on function rowgate_private.drop_analyst_login(text) is 'The second step of revoking the analyst''s login p_login (SPEC §15): ends its sessions, drops its role and unbinds it.';

-- What rowgate_sql_admin reads and writes as it keeps the bindings, and calls as it checks
grant select (login, user_id, created_at, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms),
  insert (login, user_id, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms), delete
  on rowgate_private.analysts to rowgate_sql_admin;
revoke all on function rowgate_private.analyst_login_denial(text), rowgate_private.is_live_user(uuid),
  rowgate_private.revocable_analyst_login(text) from public;
grant execute on function rowgate_private.analyst_login_denial(text), rowgate_private.is_live_user(uuid),
  rowgate_private.revocable_analyst_login(text) to rowgate_sql_admin;

-- Each belongs to rowgate_sql_admin (CREATE on the schema only for the change of owner),
-- and only rowgate_owner may call them: granted as their new owner, since a change of
-- owner hands the old owner's privileges to the new one
revoke all on function rowgate_private.create_analyst_login(uuid, text, text, integer, integer, integer),
  rowgate_private.disable_analyst_login(text), rowgate_private.drop_analyst_login(text) from public;
grant create on schema rowgate_private to rowgate_sql_admin;
alter function rowgate_private.create_analyst_login(uuid, text, text, integer, integer, integer) owner to rowgate_sql_admin;
alter function rowgate_private.disable_analyst_login(text) owner to rowgate_sql_admin;
alter function rowgate_private.drop_analyst_login(text) owner to rowgate_sql_admin;
revoke create on schema rowgate_private from rowgate_sql_admin;
set role rowgate_sql_admin;
grant execute on function rowgate_private.create_analyst_login(uuid, text, text, integer, integer, integer),
  rowgate_private.disable_analyst_login(text), rowgate_private.drop_analyst_login(text) to rowgate_owner;
reset role;
