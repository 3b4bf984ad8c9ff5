-- rowgate: cluster-wide roles (SPEC §8). Roles are shared by every database of a
-- cluster, so they live here, outside the migrations. Idempotent: run it as a
-- superuser before `graphile-migrate migrate`, on every deploy if you like.
--
-- Passwords are optional and read from settings so that nothing secret is in
-- this file:  SET rowgate.owner_password = '…'; SET rowgate.authenticator_password = '…';
-- A role whose password setting is empty keeps the password it has.
do $roles$
declare
  r record;
begin
  for r in
    select * from (values
      -- owns the schema and runs the migrations
      ('rowgate_owner',         'login'),
      -- the server connects as this and switches, per transaction, to a subject role
      ('rowgate_authenticator', 'login noinherit'),
      -- one role per subject kind (SPEC §2); no login, reached only by `set local role`
      ('rowgate_anonymous',     'nologin'),
      ('rowgate_user',          'nologin'),
      ('rowgate_organization',  'nologin'),
      ('rowgate_customer',      'nologin'),
      ('rowgate_member',        'nologin'),
      -- analysts' login roles are members of this one (bound to a user)
      ('rowgate_analyst',       'nologin'),
      -- organizations' SQL logins (SPEC §24) are members of this one, bound to a credential
      ('rowgate_sql_login',     'nologin'),
      -- makes and drops those logins, through security definer functions it owns
      ('rowgate_sql_admin',     'nologin createrole')
    ) as t(name, options)
  loop
    if not exists (select 1 from pg_roles where rolname = r.name) then
      execute format('create role %I %s', r.name, r.options);
    else
      execute format('alter role %I %s', r.name, r.options);
    end if;
  end loop;

  -- None of our roles may bypass row-level security or create roles.
  alter role rowgate_owner nosuperuser nobypassrls nocreaterole;
  alter role rowgate_authenticator nosuperuser nobypassrls nocreaterole nocreatedb;
  alter role rowgate_sql_login nosuperuser nobypassrls nocreaterole nocreatedb noreplication;
  -- CREATEROLE on PostgreSQL 16+ reaches only the roles it was given ADMIN OPTION on
  -- or made itself: the logins group and the logins.
  alter role rowgate_sql_admin nosuperuser nobypassrls createrole nocreatedb noreplication;

  if coalesce(current_setting('rowgate.owner_password', true), '') <> '' then
    execute format('alter role rowgate_owner password %L', current_setting('rowgate.owner_password'));
  end if;
  if coalesce(current_setting('rowgate.authenticator_password', true), '') <> '' then
    execute format('alter role rowgate_authenticator password %L', current_setting('rowgate.authenticator_password'));
  end if;
end
$roles$;

-- A safety net for every session of the server's login (GraphQL's included): no
-- statement runs for ever, no transaction idles for ever. The API's own
-- transactions set tighter, transaction-local values (ROWGATE_STATEMENT_TIMEOUT_MS).
alter role rowgate_authenticator set statement_timeout = '30s';
alter role rowgate_authenticator set idle_in_transaction_session_timeout = '60s';
-- Timestamps leave the database in UTC, which the server passes on as RFC 3339
-- text without building a Date (src/db/timestamps.ts); any other zone still works.
alter role rowgate_authenticator set timezone = 'UTC';
-- A transaction, however busy, ends: PostgreSQL 17 and later bound a whole transaction
-- (transaction_timeout), so neither the server's sessions nor an analyst's hold back what
-- vacuum may remove for longer than this. Analysts' login roles are members of
-- rowgate_analyst, whose settings they do not inherit: each gets its own
-- (rowgate_private.create_analyst_login sets it when granting; this sets it on those granted before).
do $transaction_timeout$
declare
  r record;
begin
  if current_setting('server_version_num')::int >= 170000 then
    alter role rowgate_authenticator set transaction_timeout = '120s';
    for r in
      select m.rolname from pg_auth_members am join pg_roles g on g.oid = am.roleid join pg_roles m on m.oid = am.member
      where g.rolname = 'rowgate_analyst' and m.rolcanlogin
    loop
      execute format('alter role %I set transaction_timeout = %L', r.rolname, '15min');
    end loop;
  end if;
end
$transaction_timeout$;

-- The authenticator may become any subject role, and nothing else.
grant rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member
  to rowgate_authenticator;

-- Organizations' SQL logins (SPEC §24). rowgate_sql_admin puts each login it makes in
-- the group (ADMIN OPTION, without being able to use the group's privileges itself);
-- the owner may hand it the functions that make logins (SET, to change their owner,
-- without inheriting CREATEROLE). The group itself is a member of no role.
grant rowgate_sql_login to rowgate_sql_admin with admin true, inherit false, set false;
grant rowgate_sql_admin to rowgate_owner with admin false, inherit false, set true;

-- Analysts' logins (SPEC §15) are made and dropped the same way, by rowgate_sql_admin's
-- functions that the CLI calls as rowgate_owner: it puts each login it makes in
-- rowgate_analyst, without being able to use the group's privileges itself.
grant rowgate_analyst to rowgate_sql_admin with admin true, inherit false, set false;
-- An analyst's login made by a superuser (before those functions) becomes rowgate_sql_admin's
-- to revoke as if it had made it: ADMIN OPTION to drop it, INHERIT to end its sessions; and
-- its membership of rowgate_analyst becomes what the functions grant (no SET ROLE to it).
-- Only a role shaped like one (a member of rowgate_analyst and of no other role, holding no
-- attribute but LOGIN), so that rowgate_sql_admin inherits no one's privileges but an analyst's.
do $analysts$
declare
  r record;
begin
  for r in
    select distinct m.rolname from pg_auth_members am join pg_roles g on g.oid = am.roleid join pg_roles m on m.oid = am.member
    where g.rolname = 'rowgate_analyst'
      and not (m.rolsuper or m.rolcreaterole or m.rolcreatedb or m.rolreplication or m.rolbypassrls)
      and m.rolname !~ '^(pg_|rowgate|rg_sql_)'
      and not exists (select from pg_auth_members o where o.member = m.oid and o.roleid <> g.oid)
      and not exists (select from pg_auth_members o where o.roleid = m.oid and o.member <> 'rowgate_sql_admin'::regrole)
      and not exists (select from pg_auth_members a where a.roleid = m.oid and a.member = 'rowgate_sql_admin'::regrole and a.admin_option)
  loop
    execute format('grant %I to rowgate_sql_admin with admin true, inherit true, set false', r.rolname);
    execute format('grant rowgate_analyst to %I with inherit true, set false', r.rolname);
  end loop;
end
$analysts$;

-- Analysts are held to their limits by rowgate_private.enforce_analyst_limits
-- (owned by rowgate_owner): seeing how long an analyst's statement has run
-- needs pg_read_all_stats (pg_stat_activity shows other roles' states only to
-- it), cancelling it or ending its session pg_signal_backend, which signals no
-- superuser's session.
grant pg_read_all_stats, pg_signal_backend to rowgate_owner;

-- PostgreSQL 16 and later keep `reserved_connections` slots for the members of
-- pg_use_reserved_connections: the server and the operator's CLI still connect
-- when analysts (or anybody else) hold every other slot (docs/operations.md).
do $reserved$
begin
  if exists (select 1 from pg_roles where rolname = 'pg_use_reserved_connections') then
    grant pg_use_reserved_connections to rowgate_owner, rowgate_authenticator;
  end if;
end
$reserved$;
