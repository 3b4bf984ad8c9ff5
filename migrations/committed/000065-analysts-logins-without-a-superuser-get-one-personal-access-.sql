--! Previous: sha1:86a6d5604c12558cf04606e668cddca015f0e4de
--! Hash: sha1:b56a1c610a88fdd7cf960fb918146679f5882a6c
--! Message: Analysts' logins without a superuser; GET one personal access token

--! split: 700-analyst-login-functions.sql
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

--! split: 900-operations.sql
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'authorized_apps:delete', 'authorized_apps:list', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'denials:list', 'events:feed', 'events:get', 'events:list', 'exports:customers', 'exports:events', 'exports:members', 'exports:orders', 'exports:products', 'exports:refunds', 'exports:transactions', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'oauth2_grants:delete', 'oauth2_grants:list', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:get', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'requests:get', 'requests:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'sessions:delete', 'sessions:list', 'sessions:revoke_others', 'sql_credentials:create', 'sql_credentials:delete', 'sql_credentials:get', 'sql_credentials:list', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:rotate_secret', 'webhook_endpoints:update');
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
  ('personal_access_tokens:get', 'GET', '/v1/personal-access-tokens/{id}', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'visible', 'personal_access_tokens', '{"id":"id"}'::jsonb, null),
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
