--! Previous: -
--! Hash: sha1:745a98fd8cf22e9546e3d991b8042af0d6735cc3
--! Message: Foundation: schemas, users and credentials, authorization core, tenant resources, interfaces, sign-in and OAuth2

-- rowgate's database. Authorization lives here, for every interface over it:
-- row-level security, and functions that run the same policies. Each object is
-- defined once, after everything it refers to: schemas; the timestamps trigger
-- and scopes; users, analysts and the subject helpers; the authorization core
-- (roles and permissions, organizations, memberships, accounts, policies);
-- tenant resources; credentials; resolution and soft deletes; getting
-- credentials (sign-in, OAuth2); authentication; reporting views and row counts.

-- Schemas. `rowgate` is what the API and GraphQL expose; `rowgate_hidden`
-- holds helpers that API roles may call but that no interface publishes;
-- `rowgate_private` holds secrets (token hashes, sessions) no API role can read.
-- What GraphQL must not publish of `rowgate` (token metadata, functions that
-- take token hashes or serve only the REST layer) says so in its comment, with
-- the PostGraphile smart tag `@behavior -*`.
create schema rowgate;
create schema rowgate_hidden;
create schema rowgate_private;
revoke all on schema rowgate, rowgate_hidden, rowgate_private from public;
grant usage on schema rowgate, rowgate_hidden
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
-- only the authenticator reaches the private schema, and only to call authenticate()
grant usage on schema rowgate_private to rowgate_authenticator;

-- Functions are not executable by everybody unless a grant says so.
alter default privileges revoke execute on functions from public;

-- The database itself, whatever it is named: the API's login role and analysts
-- connect to it (a graphile-migrate reset revokes CONNECT from PUBLIC), and
-- analysts (and the API roles) create nothing: no temporary objects in it.
do $$
begin
  execute format('grant connect on database %I to rowgate_authenticator, rowgate_analyst', current_database());
  execute format('revoke temporary on database %I from public', current_database());
  execute format('grant temporary on database %I to rowgate_owner', current_database());
end
$$;

-- Every table keeps created_at/updated_at; this trigger maintains them.
create function rowgate_private.tg__timestamps() returns trigger
language plpgsql volatile set search_path = pg_catalog, public, pg_temp as $$
begin
  new.created_at = case when tg_op = 'INSERT' then now() else old.created_at end;
  new.updated_at = case when tg_op = 'UPDATE' and old.updated_at >= now() then old.updated_at + interval '1 millisecond' else now() end;
  return new;
end;
$$;

-- Scopes (SPEC §3) as data: every scope, and the read scope a write scope implies.
create table rowgate_private.scopes (
  name text primary key,
  implies text references rowgate_private.scopes (name)
);
insert into rowgate_private.scopes (name, implies) values
  ('user:read', null), ('user:write', 'user:read'),
  ('payouts:read', null), ('payouts:write', 'payouts:read'),
  ('organizations_read', null), ('organizations_write', 'organizations_read'),
  ('members_read', null), ('members_write', 'members_read'),
  ('products_read', null), ('products_write', 'products_read'),
  ('customers_read', null), ('customers_write', 'customers_read'),
  ('orders_read', null), ('orders_write', 'orders_read'),
  ('transactions_read', null), ('transactions_write', 'transactions_read'),
  ('payouts_read', null), ('payouts_write', 'payouts_read'),
  ('organization_access_tokens_read', null), ('organization_access_tokens_write', 'organization_access_tokens_read'),
  ('customer_sessions_write', null),
  ('customer_portal_read', null), ('customer_portal_write', 'customer_portal_read');

-- The scopes a credential kind carries without choosing them.
create function rowgate_private.all_scopes() returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select array_agg(name order by name) from rowgate_private.scopes
  where name not like 'customer_portal_%';
$$;
create function rowgate_private.read_scopes() returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select array_agg(name order by name) from rowgate_private.scopes
  where name like '%read' and name not like 'customer_portal_%';
$$;

-- Scope arithmetic, used to refuse tokens broader than their creator's credential.
create function rowgate_private.expand_scopes(p_scopes text[]) returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select coalesce(array_agg(distinct s order by s), '{}') from (
    select unnest(p_scopes) as s
    union all
    select implies from rowgate_private.scopes where name = any (p_scopes) and implies is not null
  ) t;
$$;

-- Tokens hold only scopes that exist (portal scopes belong to portal sessions).
create function rowgate_private.assert_known_scopes(p_scopes text[]) returns void
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_unknown text;
begin
  select s into v_unknown from unnest(p_scopes) s
    where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scopes';
  end if;
end;
$$;

-- Scopes a client or a grant may name: known, not the portal's.
create function rowgate_private.unknown_scope(p_scopes text[]) returns text
language sql stable set search_path = pg_catalog, pg_temp as $$
  select s from unnest(p_scopes) s
  where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
$$;

-- Users (SPEC §9). `is_admin` is the platform-admin flag an operator sets.
create table rowgate.users (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  name text check (length(name) <= 200),
  avatar_url text check (avatar_url ~ '^https?://' and length(avatar_url) <= 2000),
  is_admin boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index users_email_live on rowgate.users (email) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.users
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.users enable row level security;

-- Analysts (SPEC §8): a LOGIN role, member of rowgate_analyst, bound to a user.
-- The binding is looked up by session_user, which no SQL session can change, so
-- an analyst is that user with the read scopes, whatever settings it sets.
create table rowgate_private.analysts (
  login name primary key,
  user_id uuid not null references rowgate.users,
  created_at timestamptz not null default now()
);

create function rowgate_hidden.analyst_user_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select a.user_id from rowgate_private.analysts a join rowgate.users u on u.id = a.user_id
    where a.login = session_user and u.deleted_at is null);
end;
$$;
create function rowgate_hidden.analyst_scopes() returns text[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  if rowgate_hidden.analyst_user_id() is null then
    return null;
  end if;
  return rowgate_private.read_scopes();
end;
$$;
-- every role that evaluates the subject helpers needs them (they answer null for non-analysts)
grant execute on function rowgate_hidden.analyst_user_id(), rowgate_hidden.analyst_scopes()
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- Subject helpers. The settings that name the subject are trusted only in a
-- session of the API's own login role, rowgate_authenticator, which sets them
-- (transaction-local) right after authenticating: a session of any other role
-- (an analyst, the owner) that sets them by hand gets nothing from them. An
-- analyst's session is its bound user; the API's path (session_user =
-- rowgate_authenticator) is decided by the first branch and never looks
-- analysts up. session_user, not current_user, so the answer is the same inside
-- security definer functions. Written in SQL so that RLS policies evaluate them
-- once per statement.
create function rowgate_hidden.current_subject_kind() returns text
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'user' end;
$$;
comment on function rowgate_hidden.current_subject_kind() is 'The kind of the request''s subject (user, organization, customer, member), or null.';

create function rowgate_hidden.current_subject_id() returns uuid
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_id', true), '')::uuid
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_user_id() end;
$$;
comment on function rowgate_hidden.current_subject_id() is 'The id of the request''s subject, or null.';

create function rowgate_hidden.current_user_id() returns uuid
language sql stable as $$
  select case when rowgate_hidden.current_subject_kind() = 'user' then rowgate_hidden.current_subject_id() end;
$$;
comment on function rowgate_hidden.current_user_id() is 'The User subject of this transaction, or null.';

create function rowgate_hidden.current_scopes() returns text[]
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_scopes() end;
$$;
comment on function rowgate_hidden.current_scopes() is 'The scopes of the credential of this transaction, with the read scopes their write scopes imply.';

grant execute on function rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(),
  rowgate_hidden.current_user_id(), rowgate_hidden.current_scopes()
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- The credential of the transaction, set by the server next to the subject
-- (`rowgate.credential_id`), trusted only under the API's login role like the
-- other settings. Sign-out uses it to revoke exactly the session it came with.
create function rowgate_hidden.current_credential_id() returns uuid
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.credential_id', true), '')::uuid end;
$$;
comment on function rowgate_hidden.current_credential_id() is
  'The id of the session or token that authenticated this transaction, or null.';

-- Token scopes bind in the database (SPEC §3), so every interface over it
-- (REST, GraphQL) shares them: each select policy requires the scope that reads
-- its table, and write policies and write functions the write scope, of the
-- credential that authenticated the transaction. Write scopes imply their read
-- scopes: current_scopes() holds the expanded set.
create function rowgate_hidden.has_scope(p_scope text) returns boolean
language sql stable as $$
  select p_scope = any (coalesce(rowgate_hidden.current_scopes(), '{}'));
$$;
comment on function rowgate_hidden.has_scope(text) is 'Does the credential of this transaction carry the scope?';

create function rowgate_hidden.assert_scope(p_scope text) returns void
language plpgsql stable as $$
begin
  if not rowgate_hidden.has_scope(p_scope) then
    raise exception 'The token lacks the required scope: %', p_scope using errcode = 'RGSCO', detail = p_scope;
  end if;
end;
$$;
grant execute on function rowgate_hidden.has_scope(text), rowgate_hidden.assert_scope(text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- A user sees and edits itself; an analyst sees its own user row, like the
-- API's users do. Colleagues see one another too (select_colleague, with the
-- memberships below); only users and analysts read is_admin.
create policy select_self on rowgate.users for select to rowgate_user, rowgate_analyst
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
create policy update_self on rowgate.users for update to rowgate_user
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:write')));
grant select (id, email, name, avatar_url, created_at, updated_at) on rowgate.users
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant select (is_admin) on rowgate.users to rowgate_user, rowgate_analyst;
grant update (name, avatar_url) on rowgate.users to rowgate_user;

-- Roles and permissions are data (SPEC §5): a migration can add a role or a
-- permission without touching a function. `verb` and `things` make the denial
-- reason "You don't have permission to <verb> <things>".
create table rowgate.permissions (
  name text primary key,
  verb text not null,
  things text not null
);
create table rowgate.roles (
  name text primary key,
  description text not null
);
create table rowgate.role_permissions (
  role text not null references rowgate.roles on update cascade,
  permission text not null references rowgate.permissions on update cascade,
  primary key (role, permission)
);
insert into rowgate.permissions (name, verb, things) values
  ('organization:manage', 'manage', 'the organization'),
  ('members:manage', 'manage', 'members'),
  ('finance:manage', 'manage', 'financial information'),
  ('finance:read', 'read', 'financial information'),
  ('access_tokens:manage', 'manage', 'access tokens'),
  ('products:write', 'write', 'products'),
  ('customers:write', 'write', 'customers'),
  ('orders:write', 'write', 'orders');
insert into rowgate.roles (name, description) values
  ('admin', 'Everything, including members, finance and access tokens.'),
  ('member', 'Writes products, customers and orders.'),
  ('finance', 'Reads financial information.');
insert into rowgate.role_permissions (role, permission)
  select 'admin', name from rowgate.permissions
  union all select 'member', p from unnest(array['products:write', 'customers:write', 'orders:write']) p
  union all select 'finance', 'finance:read';
alter table rowgate.permissions enable row level security;
alter table rowgate.roles enable row level security;
alter table rowgate.role_permissions enable row level security;
-- reference data: readable by every subject and analyst; the policy functions
-- read the permissions for the denial reason, whoever calls them (customer and
-- member subjects too)
create policy select_all on rowgate.permissions for select using (true);
create policy select_all on rowgate.roles for select using (true);
create policy select_all on rowgate.role_permissions for select using (true);
grant select (name, verb, things) on rowgate.permissions
  to rowgate_user, rowgate_organization, rowgate_analyst, rowgate_customer, rowgate_member, rowgate_anonymous;
grant select (name, description) on rowgate.roles to rowgate_user, rowgate_organization, rowgate_analyst;
grant select (role, permission) on rowgate.role_permissions to rowgate_user, rowgate_organization, rowgate_analyst;

-- Organizations: the tenants. `account_id` names the organization's account.
create table rowgate.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 200),
  slug text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and length(slug) between 2 and 64),
  account_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index organizations_slug_live on rowgate.organizations (slug) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.organizations
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.organizations enable row level security;

-- Memberships: a user's role in an organization. Removing one is a soft delete,
-- and every lookup below excludes removed ones, so access ends at once.
create table rowgate.memberships (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references rowgate.users,
  organization_id uuid not null references rowgate.organizations,
  role text not null references rowgate.roles on update cascade,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index memberships_live on rowgate.memberships (user_id, organization_id) where deleted_at is null;
create index memberships_organization on rowgate.memberships (organization_id, created_at) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.memberships
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.memberships enable row level security;

-- Accounts: where an organization's money goes; `admin_id` is the one user who
-- may see and manage its financial information.
create table rowgate.accounts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  admin_id uuid not null references rowgate.users,
  country text not null check (country ~ '^[A-Z]{2}$'),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  status text not null default 'pending' check (status in ('pending', 'active', 'disabled')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index accounts_organization_live on rowgate.accounts (organization_id) where deleted_at is null;
-- an organization and its account name each other: the organization's side once both exist
alter table rowgate.organizations add foreign key (account_id) references rowgate.accounts;
create trigger _100_timestamps before insert or update on rowgate.accounts
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.accounts enable row level security;

-- The single source of "which organizations does the subject reach": a User its
-- live memberships (optionally only those whose role grants p_permission), an
-- Organization itself, anybody else none. Returns an array so that policies use
-- it as `organization_id = any ((select …)::uuid[])`: one evaluation per
-- statement (an initPlan) and an index scan, never a per-row lookup.
-- The two User queries are kept apart on purpose: one query with
-- `p_permission is null or exists (…)` got a custom plan on every call (its
-- plan without a permission looks cheaper than the generic one, so PL/pgSQL's
-- plan cache never settles), 0.17 ms of planning each time, three times per
-- list request; planned once, a call costs ~0.02 ms (bench/serve.ts, issue 7).
create function rowgate_hidden.current_organization_ids(p_permission text default null) returns uuid[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'user' and p_permission is null then
    return array(
      select m.organization_id
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null and o.deleted_at is null);
  elsif v_kind = 'user' then
    return array(
      select m.organization_id
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null and o.deleted_at is null
        and exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission));
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$$;
comment on function rowgate_hidden.current_organization_ids(text) is
  'The organizations the current subject reaches; with a permission, a User''s only where its role grants it (Organization subjects bypass the filter).';

-- Does the current User's role in the organization grant the permission?
create function rowgate_hidden.has_permission(p_organization_id uuid, p_permission text) returns boolean
language sql stable as $$
  select p_organization_id = any (rowgate_hidden.current_organization_ids(p_permission));
$$;

-- Policies (SPEC §5): null when allowed, otherwise the denial reason. They assume
-- the organization is reachable (checked first, as a 404). The finance policy
-- answers only for organizations the subject reaches: any other gets the answer
-- of one without an account, so that a SQL session (an analyst) cannot learn
-- whether an organization exists and has an account.
create function rowgate_hidden.role_permission_denial(p_organization_id uuid, p_permission text) returns text
language sql stable as $$
  select case rowgate_hidden.current_subject_kind()
    when 'organization' then null
    when 'user' then case when rowgate_hidden.has_permission(p_organization_id, p_permission) then null
      else (select format('You don''t have permission to %s %s', verb, things) from rowgate.permissions where name = p_permission) end
    else 'Not permitted'
  end;
$$;

create function rowgate_hidden.finance_denial(p_organization_id uuid, p_write boolean) returns text
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_admin_id uuid;
begin
  if v_kind = 'organization' and not p_write then
    return null;
  elsif v_kind <> 'user' or v_kind is null then
    return 'Not permitted';
  end if;
  select a.admin_id into v_admin_id from rowgate.organizations o join rowgate.accounts a on a.id = o.account_id
    where o.id = p_organization_id and a.deleted_at is null
      and p_organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    return 'Organization has no account';
  elsif v_admin_id is distinct from rowgate_hidden.current_user_id() then
    return case when p_write then 'Only the account admin can manage financial information'
      else 'Only the account admin can access financial information' end;
  end if;
  return null;
end;
$$;
create function rowgate_hidden.finance_read_denial(p_organization_id uuid) returns text
language sql stable as $$ select rowgate_hidden.finance_denial(p_organization_id, false); $$;
create function rowgate_hidden.finance_write_denial(p_organization_id uuid) returns text
language sql stable as $$ select rowgate_hidden.finance_denial(p_organization_id, true); $$;

create function rowgate_hidden.members_management_denial(p_organization_id uuid) returns text
language sql stable as $$
  select case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage members'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'members:manage') end;
$$;

create function rowgate_hidden.access_token_management_denial(p_organization_id uuid) returns text
language sql stable as $$
  select case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage access tokens'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'access_tokens:manage') end;
$$;

-- One policy by name, for the API's order of checks.
create function rowgate_hidden.policy_denial(p_organization_id uuid, p_policy text) returns text
language sql stable as $$
  select case p_policy
    when 'read' then null
    when 'finance_read' then rowgate_hidden.finance_read_denial(p_organization_id)
    when 'finance_write' then rowgate_hidden.finance_write_denial(p_organization_id)
    when 'members_management' then rowgate_hidden.members_management_denial(p_organization_id)
    when 'access_token_management' then rowgate_hidden.access_token_management_denial(p_organization_id)
    else rowgate_hidden.role_permission_denial(p_organization_id, p_policy)
  end;
$$;

grant execute on function
  rowgate_hidden.current_organization_ids(text), rowgate_hidden.has_permission(uuid, text),
  rowgate_hidden.role_permission_denial(uuid, text), rowgate_hidden.finance_denial(uuid, boolean),
  rowgate_hidden.finance_read_denial(uuid), rowgate_hidden.finance_write_denial(uuid),
  rowgate_hidden.members_management_denial(uuid), rowgate_hidden.access_token_management_denial(uuid),
  rowgate_hidden.policy_denial(uuid, text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- Row-level security of the organization tables, from the functions above.
create policy select_member on rowgate.organizations for select
  using (id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('organizations_read')));
create policy update_manage on rowgate.organizations for update
  using (id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('organizations_write')));
grant select (id, name, slug, account_id, created_at, updated_at) on rowgate.organizations
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant update (name, slug) on rowgate.organizations to rowgate_user, rowgate_organization;

create policy select_member on rowgate.memberships for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('members_read')));
create policy update_manage on rowgate.memberships for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user'
    and (select rowgate_hidden.has_scope('members_write')))
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[]));
grant select (id, user_id, organization_id, role, created_at, updated_at) on rowgate.memberships
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant update (role) on rowgate.memberships to rowgate_user;

-- the colleagues a subject sees (for member lists): users sharing a reachable organization
create function rowgate_hidden.current_colleague_ids() returns uuid[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return array(
    select distinct m.user_id from rowgate.memberships m
    where m.organization_id = any (rowgate_hidden.current_organization_ids()) and m.deleted_at is null);
end;
$$;
grant execute on function rowgate_hidden.current_colleague_ids()
  to rowgate_user, rowgate_organization, rowgate_analyst;
create policy select_colleague on rowgate.users for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (id = any ((select rowgate_hidden.current_colleague_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('members_read')));

-- financial information: any of the finance read scopes reads it (SPEC §3)
create policy select_finance on rowgate.accounts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('transactions_read') or rowgate_hidden.has_scope('payouts_read')));
create policy update_finance on rowgate.accounts for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_write_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts_write') or rowgate_hidden.has_scope('transactions_write')));
grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at) on rowgate.accounts
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant update (country, currency) on rowgate.accounts to rowgate_user;

-- Writes that need more than one row, or a lookup past RLS, are functions that
-- check the credential's write scope first, as the API does, then run the same
-- policies.

-- A User creates an organization and becomes its admin.
create function rowgate.create_organization(p_name text, p_slug text) returns rowgate.organizations
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create organizations' using errcode = 'RG403';
  end if;
  insert into rowgate.organizations (name, slug) values (p_name, p_slug) returning * into v_organization;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, v_organization.id, 'admin');
  return v_organization;
end;
$$;
grant execute on function rowgate.create_organization(text, text) to rowgate_user;

-- Adds an existing user (by e-mail) to an organization, under the members-management policy.
create function rowgate.add_member(p_organization_id uuid, p_email text, p_role text) returns rowgate.memberships
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_user_id uuid;
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  select id into v_user_id from rowgate.users where email = lower(p_email) and deleted_at is null;
  if v_user_id is null then
    raise exception 'No user has this e-mail address' using errcode = 'RG422', detail = 'body.email';
  end if;
  if exists (select 1 from rowgate.memberships where user_id = v_user_id and organization_id = p_organization_id and deleted_at is null) then
    raise exception 'This user is a member already' using errcode = 'RG422', detail = 'body.email';
  end if;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, p_organization_id, p_role)
    returning * into v_membership;
  return v_membership;
end;
$$;
grant execute on function rowgate.add_member(uuid, text, text) to rowgate_user, rowgate_organization;

-- An organization keeps at least one admin.
create function rowgate_private.tg_memberships__keep_an_admin() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if old.role = 'admin' and (new.role <> 'admin' or new.deleted_at is not null)
    and not exists (select 1 from rowgate.memberships m where m.organization_id = old.organization_id
      and m.role = 'admin' and m.deleted_at is null and m.id <> old.id)
    and exists (select 1 from rowgate.organizations o where o.id = old.organization_id and o.deleted_at is null) then
    raise exception 'An organization needs at least one admin' using errcode = 'RG422', detail = 'path.user_id';
  end if;
  return new;
end;
$$;
create trigger _200_keep_an_admin before update on rowgate.memberships
  for each row execute function rowgate_private.tg_memberships__keep_an_admin();

-- A User with organization:manage creates the organization's account and becomes its admin.
create function rowgate.create_account(p_organization_id uuid, p_country text, p_currency text) returns rowgate.accounts
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_denial text;
  v_account rowgate.accounts;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create accounts' using errcode = 'RG403';
  end if;
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if exists (select 1 from rowgate.accounts where organization_id = p_organization_id and deleted_at is null) then
    raise exception 'The organization has an account already' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  insert into rowgate.accounts (organization_id, admin_id, country, currency)
    values (p_organization_id, v_user_id, p_country, p_currency) returning * into v_account;
  update rowgate.organizations set account_id = v_account.id where id = p_organization_id;
  return v_account;
end;
$$;
grant execute on function rowgate.create_account(uuid, text, text) to rowgate_user;

-- Tenant resources (SPEC §9): products, customers and their member seats, orders,
-- transactions, payout accounts. Every row carries organization_id; every list
-- is an index range on (organization_id, sort column).

-- Products. `is_archived` is a visible state; deleting is a soft delete.
create table rowgate.products (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  name text not null check (length(name) between 1 and 200),
  description text check (length(description) <= 5000),
  price_amount bigint not null check (price_amount >= 0 and price_amount <= 100000000000),
  price_currency text not null check (price_currency ~ '^[a-z]{3}$'),
  is_archived boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index products_organization_created on rowgate.products (organization_id, created_at, id) where deleted_at is null;
create index products_organization_name on rowgate.products (organization_id, name, id) where deleted_at is null;
create index products_organization_price on rowgate.products (organization_id, price_amount, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.products
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.products enable row level security;

-- Customers of an organization; a business customer has member seats.
create table rowgate.customers (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  first_name text check (length(first_name) <= 200),
  last_name text check (length(last_name) <= 200),
  status text not null default 'pending' check (status in ('pending', 'active')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index customers_email_live on rowgate.customers (organization_id, email) where deleted_at is null;
create index customers_organization_created on rowgate.customers (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.customers
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.customers enable row level security;

create table rowgate.customer_members (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  customer_id uuid not null references rowgate.customers,
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  name text check (length(name) <= 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index customer_members_email_live on rowgate.customer_members (customer_id, email) where deleted_at is null;
create index customer_members_organization on rowgate.customer_members (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.customer_members
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.customer_members enable row level security;

-- Orders; the organization comes from the product.
create table rowgate.orders (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  customer_id uuid not null references rowgate.customers,
  product_id uuid not null references rowgate.products,
  amount bigint not null check (amount >= 0 and amount <= 100000000000),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  status text not null default 'pending' check (status in ('pending', 'paid', 'refunded')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index orders_organization_created on rowgate.orders (organization_id, created_at, id);
create index orders_organization_amount on rowgate.orders (organization_id, amount, id);
create index orders_customer on rowgate.orders (customer_id, created_at, id);
create index orders_product on rowgate.orders (product_id);
create trigger _100_timestamps before insert or update on rowgate.orders
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.orders enable row level security;

-- Transactions: the money movements orders cause (written by a trigger only).
create table rowgate.transactions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  order_id uuid not null references rowgate.orders,
  type text not null check (type in ('payment', 'refund')),
  amount bigint not null,
  currency text not null check (currency ~ '^[a-z]{3}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index transactions_organization_created on rowgate.transactions (organization_id, created_at, id);
create index transactions_organization_amount on rowgate.transactions (organization_id, amount, id);
create index transactions_order on rowgate.transactions (order_id);
create trigger _100_timestamps before insert or update on rowgate.transactions
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.transactions enable row level security;

-- Payout accounts: where an organization's balance is paid out.
create table rowgate.payout_accounts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  type text not null check (type in ('bank_account', 'stripe', 'open_collective')),
  country text not null check (country ~ '^[A-Z]{2}$'),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index payout_accounts_organization on rowgate.payout_accounts (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.payout_accounts
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.payout_accounts enable row level security;

-- The customer a Customer or Member subject acts for (a member: its customer).
create function rowgate_hidden.current_customer_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'customer' then
    return rowgate_hidden.current_subject_id();
  elsif v_kind = 'member' then
    return (select customer_id from rowgate.customer_members where id = rowgate_hidden.current_subject_id() and deleted_at is null);
  end if;
  return null;
end;
$$;
grant execute on function rowgate_hidden.current_customer_id() to rowgate_customer, rowgate_member, rowgate_analyst;

-- The organization a create names: a User must name a reachable one (422 at
-- body.organization_id otherwise); an Organization subject may omit it. Then the
-- role-permission policy (403 with the reason).
create function rowgate_hidden.target_organization_id(p_organization_id uuid, p_permission text) returns uuid
language plpgsql stable as $$
declare
  v_organization_id uuid := coalesce(p_organization_id,
    case when rowgate_hidden.current_subject_kind() = 'organization' then rowgate_hidden.current_subject_id() end);
  v_denial text;
begin
  if v_organization_id is null then
    raise exception 'organization_id is required' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  if not (v_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.policy_denial(v_organization_id, p_permission);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return v_organization_id;
end;
$$;
grant execute on function rowgate_hidden.target_organization_id(uuid, text) to rowgate_user, rowgate_organization;

-- Row-level security of the tenant resources. Members read; the role permission
-- (or the Organization subject itself) writes; finance rows follow the finance
-- policies. Customers and member seats read their own rows in the portal.
create policy select_member on rowgate.products for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('products_read')));
create policy insert_write on rowgate.products for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[])
    and (select rowgate_hidden.has_scope('products_write')));
create policy update_write on rowgate.products for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('products_write')));
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at)
  on rowgate.products to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (organization_id, name, description, price_amount, price_currency, is_archived),
  update (name, description, price_amount, price_currency, is_archived)
  on rowgate.products to rowgate_user, rowgate_organization;

create policy select_member on rowgate.customers for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('customers_read')));
create policy select_self on rowgate.customers for select to rowgate_customer, rowgate_member
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_read')));
create policy insert_write on rowgate.customers for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and (select rowgate_hidden.has_scope('customers_write')));
create policy update_write on rowgate.customers for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('customers_write')));
-- a customer edits its own name; member seats are read-only
create policy update_self on rowgate.customers for update to rowgate_customer
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_write')));
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at)
  on rowgate.customers to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
grant insert (organization_id, email, first_name, last_name, status), update (email, first_name, last_name, status)
  on rowgate.customers to rowgate_user, rowgate_organization;
grant update (first_name, last_name) on rowgate.customers to rowgate_customer;

create policy select_member on rowgate.customer_members for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('customers_read')));
create policy select_self on rowgate.customer_members for select to rowgate_member
  using (id = (select rowgate_hidden.current_subject_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_read')));
grant select (id, organization_id, customer_id, email, name, created_at, updated_at)
  on rowgate.customer_members to rowgate_user, rowgate_organization, rowgate_member, rowgate_analyst;

create policy select_member on rowgate.orders for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('orders_read')));
create policy select_own on rowgate.orders for select to rowgate_customer, rowgate_member
  using (customer_id = (select rowgate_hidden.current_customer_id())
    and (select rowgate_hidden.has_scope('customer_portal_read')));
create policy insert_write on rowgate.orders for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[])
    and (select rowgate_hidden.has_scope('orders_write')));
create policy update_write on rowgate.orders for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[])
    and (select rowgate_hidden.has_scope('orders_write')));
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at)
  on rowgate.orders to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
grant insert (organization_id, customer_id, product_id, amount, currency, status), update (status)
  on rowgate.orders to rowgate_user, rowgate_organization;

-- transactions: the permission filter finance:read (Organization subjects bypass
-- it), and any of the finance read scopes (SPEC §3)
create policy select_finance on rowgate.transactions for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
    and (select rowgate_hidden.has_scope('transactions_read') or rowgate_hidden.has_scope('payouts_read')));
grant select (id, organization_id, order_id, type, amount, currency, created_at, updated_at)
  on rowgate.transactions to rowgate_user, rowgate_organization, rowgate_analyst;

create policy select_finance on rowgate.payout_accounts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts:read') or rowgate_hidden.has_scope('payouts_read')));
create policy insert_finance on rowgate.payout_accounts for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and rowgate_hidden.finance_write_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts:write')));
grant select (id, organization_id, type, country, currency, created_at, updated_at)
  on rowgate.payout_accounts to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (organization_id, type, country, currency) on rowgate.payout_accounts to rowgate_user;

-- Orders: the customer must belong to the product's organization; payment and
-- refund transactions follow the status. Status moves forward only.
create function rowgate_private.tg_orders__check() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if tg_op = 'INSERT' then
    if not exists (select 1 from rowgate.customers c where c.id = new.customer_id
        and c.organization_id = new.organization_id and c.deleted_at is null) then
      raise exception 'The customer does not belong to the product''s organization' using errcode = 'RG422', detail = 'body.customer_id';
    end if;
  elsif new.status is distinct from old.status and not (
      (old.status = 'pending' and new.status = 'paid') or (old.status = 'paid' and new.status = 'refunded')) then
    raise exception 'An order goes from pending to paid to refunded; % to % is not allowed', old.status, new.status
      using errcode = 'RG422', detail = 'body.status';
  end if;
  return new;
end;
$$;
create trigger _200_check before insert or update on rowgate.orders
  for each row execute function rowgate_private.tg_orders__check();

create function rowgate_private.tg_orders__transactions() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if new.status = 'paid' and (tg_op = 'INSERT' or old.status <> 'paid') then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'payment', new.amount, new.currency);
  elsif new.status = 'refunded' and tg_op = 'UPDATE' and old.status <> 'refunded' then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'refund', -new.amount, new.currency);
  end if;
  return null;
end;
$$;
create trigger _500_transactions after insert or update of status on rowgate.orders
  for each row execute function rowgate_private.tg_orders__transactions();

-- Creating an order: organization, amount and currency from the product. The
-- function resolves the product past RLS (an orders_write token needs no
-- products_read) and runs the same checks itself: scope, reach (422 at
-- body.product_id), then orders:write.
create function rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text)
returns setof rowgate.orders
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_product record;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('orders_write');
  select p.organization_id, p.price_amount, p.price_currency into v_product from rowgate.products p
    where p.id = p_product_id and p.deleted_at is null
      and p.organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    raise exception 'Product not found' using errcode = 'RG422', detail = 'body.product_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_product.organization_id, 'orders:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return query insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
    values (v_product.organization_id, p_customer_id, p_product_id, coalesce(p_amount, v_product.price_amount),
      coalesce(p_currency, v_product.price_currency), coalesce(p_status, 'pending'))
    returning *;
end;
$$;
grant execute on function rowgate.create_order(uuid, uuid, bigint, text, text) to rowgate_user, rowgate_organization;

-- Portal writes: a customer changes itself; a member seat reads only.
create function rowgate_hidden.portal_write_denial() returns text
language sql stable as $$
  select case rowgate_hidden.current_subject_kind()
    when 'customer' then null
    when 'member' then 'Members have read-only access to the customer portal'
    else 'Not permitted' end;
$$;
grant execute on function rowgate_hidden.portal_write_denial() to rowgate_customer, rowgate_member;

-- Credentials (SPEC §2). Web, customer and member sessions are secrets:
-- private, reached through functions. A portal session names a customer or one
-- of its member seats.
create table rowgate_private.sessions (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  kind text not null check (kind in ('user', 'customer', 'member')),
  user_id uuid references rowgate.users on delete cascade,
  customer_id uuid references rowgate.customers,
  member_id uuid references rowgate.customer_members,
  is_impersonation boolean not null default false,
  impersonator_id uuid references rowgate.users on delete cascade,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  check ((kind = 'user') = (user_id is not null)),
  check ((kind = 'customer') = (customer_id is not null and member_id is null) or kind <> 'customer'),
  check ((kind = 'member') = (member_id is not null) or kind <> 'member'),
  check (is_impersonation = (impersonator_id is not null))
);
create index sessions_user_id on rowgate_private.sessions (user_id) where revoked_at is null;

-- Personal access tokens: the metadata the API shows is public (RLS: the owner
-- only); the keyed hash of the token is private.
create table rowgate.personal_access_tokens (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references rowgate.users on delete cascade,
  comment text not null check (length(comment) between 1 and 200),
  scopes text[] not null,
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index personal_access_tokens_user_id on rowgate.personal_access_tokens (user_id, created_at);
create trigger _100_timestamps before insert or update on rowgate.personal_access_tokens
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.personal_access_tokens enable row level security;
create policy select_own on rowgate.personal_access_tokens for select to rowgate_user
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
grant select (id, user_id, comment, scopes, expires_at, last_used_at, created_at, updated_at)
  on rowgate.personal_access_tokens to rowgate_user;
comment on table rowgate.personal_access_tokens is E'@behavior -*\nPersonal access tokens (REST only).';

-- Organization access tokens: metadata public (RLS), hashes private.
create table rowgate.organization_access_tokens (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  comment text not null check (length(comment) between 1 and 200),
  scopes text[] not null,
  expires_at timestamptz,
  last_used_at timestamptz,
  created_by uuid references rowgate.users,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index organization_access_tokens_organization on rowgate.organization_access_tokens (organization_id, created_at)
  where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.organization_access_tokens enable row level security;
create policy select_manage on rowgate.organization_access_tokens for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user'
    and (select rowgate_hidden.has_scope('organization_access_tokens_read')));
grant select (id, organization_id, comment, scopes, expires_at, last_used_at, created_by, created_at, updated_at)
  on rowgate.organization_access_tokens to rowgate_user;
comment on table rowgate.organization_access_tokens is E'@behavior -*\nOrganization access tokens (REST only).';

-- Keyed hashes of the public-metadata tokens: each names one personal or one
-- organization access token.
create table rowgate_private.access_token_hashes (
  token_hash bytea primary key,
  personal_access_token_id uuid unique references rowgate.personal_access_tokens on delete cascade,
  organization_access_token_id uuid unique references rowgate.organization_access_tokens on delete cascade,
  check (num_nonnulls(personal_access_token_id, organization_access_token_id) = 1)
);

-- Issuing credentials. The token is made and hashed by the server (which holds
-- the key); these store the hash. Used by the API's functions and the operator CLI.
create function rowgate_private.issue_user_session(
  p_user_id uuid, p_token_hash bytea, p_lifetime interval, p_impersonator_id uuid default null
) returns rowgate_private.sessions
language sql volatile set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.sessions (token_hash, kind, user_id, is_impersonation, impersonator_id, expires_at)
    values (p_token_hash, 'user', p_user_id, p_impersonator_id is not null, p_impersonator_id, now() + p_lifetime)
    returning *;
$$;

create function rowgate_private.issue_personal_access_token(
  p_user_id uuid, p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.personal_access_tokens
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
declare
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_private.assert_known_scopes(p_scopes);
  insert into rowgate.personal_access_tokens (user_id, comment, scopes, expires_at)
    values (p_user_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at)
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id)
    values (p_token_hash, v_token.id);
  return v_token;
end;
$$;

-- Creating a PAT through the API: the caller's own credential bounds the scopes (SPEC §3).
create function rowgate.create_personal_access_token(
  p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.personal_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  return rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash);
end;
$$;
grant execute on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea) to rowgate_user;
comment on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea) is E'@behavior -*';

-- Revoking one's own personal access token: a soft delete. The select policy
-- hides deleted rows, so the marking update runs here, for the owner only.
create function rowgate.revoke_personal_access_token(p_id uuid) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.personal_access_tokens set deleted_at = now()
    where id = p_id and user_id = rowgate_hidden.current_user_id() and deleted_at is null;
  return found;
end;
$$;
grant execute on function rowgate.revoke_personal_access_token(uuid) to rowgate_user;
comment on function rowgate.revoke_personal_access_token(uuid) is E'@behavior -*';

-- Organization access tokens: a User with access_tokens:manage, scopes within its own.
create function rowgate.create_organization_access_token(
  p_organization_id uuid, p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.organization_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
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
  insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at, created_by)
    values (p_organization_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at,
      rowgate_hidden.current_user_id())
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (p_token_hash, v_token.id);
  return v_token;
end;
$$;
grant execute on function rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea) to rowgate_user;
comment on function rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea) is E'@behavior -*';

-- Impersonation (SPEC §2): a platform admin gets a read-scope web session of another user, for 1 hour.
create function rowgate.create_impersonation_session(p_user_id uuid, p_token_hash bytea)
returns table (user_id uuid, expires_at timestamptz, scopes text[])
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_admin_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  if not exists (select 1 from rowgate.users u where u.id = v_admin_id and u.is_admin and u.deleted_at is null) then
    raise exception 'Only platform admins can impersonate users' using errcode = 'RG403';
  end if;
  if not exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null) then
    raise exception 'No such user' using errcode = 'RG422', detail = 'body.user_id';
  end if;
  return query select s.user_id, s.expires_at, rowgate_private.read_scopes()
    from rowgate_private.issue_user_session(p_user_id, p_token_hash, interval '1 hour', v_admin_id) s;
end;
$$;
grant execute on function rowgate.create_impersonation_session(uuid, bytea) to rowgate_user;
comment on function rowgate.create_impersonation_session(uuid, bytea) is E'@behavior -*';

-- Customer portal sessions: a User or Organization with customers:write on the
-- customer's organization; for a member seat, a member session.
create function rowgate.create_customer_session(p_customer_id uuid, p_member_id uuid, p_token_hash bytea)
returns table (customer_id uuid, member_id uuid, expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('customer_sessions_write');
  select c.organization_id into v_organization_id from rowgate.customers c
    where c.id = p_customer_id and c.deleted_at is null
      and c.organization_id = any (rowgate_hidden.current_organization_ids());
  if v_organization_id is null then
    raise exception 'Customer not found' using errcode = 'RG422', detail = 'body.customer_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_organization_id, 'customers:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_member_id is not null and not exists (select 1 from rowgate.customer_members m
      where m.id = p_member_id and m.customer_id = p_customer_id and m.deleted_at is null) then
    raise exception 'Member not found for this customer' using errcode = 'RG422', detail = 'body.member_id';
  end if;
  return query insert into rowgate_private.sessions as s (token_hash, kind, customer_id, member_id, expires_at)
    values (p_token_hash, case when p_member_id is null then 'customer' else 'member' end,
      case when p_member_id is null then p_customer_id end, p_member_id, now() + interval '1 hour')
    returning p_customer_id, s.member_id, s.expires_at;
end;
$$;
grant execute on function rowgate.create_customer_session(uuid, uuid, bytea) to rowgate_user, rowgate_organization;
comment on function rowgate.create_customer_session(uuid, uuid, bytea) is E'@behavior -*';

-- Deleting the current user (SPEC §9): a soft delete that revokes every
-- credential. That also ends its memberships' effect: current_organization_ids()
-- never returns organizations of a deleted user (its credentials die with it).
create function rowgate.delete_current_user() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  if not found then
    return false;
  end if;
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  return true;
end;
$$;
grant execute on function rowgate.delete_current_user() to rowgate_user;
comment on function rowgate.delete_current_user() is E'@behavior -*';

-- The owning organization of a resource, seen past RLS: resolution comes before
-- the organization check and the policy (SPEC §5), and these rows may be hidden
-- by a policy that must answer 403, not 404.
create function rowgate_hidden.resource_organization_id(p_resource text, p_id uuid) returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return case p_resource
    when 'organization' then (select id from rowgate.organizations where id = p_id and deleted_at is null)
    when 'account' then (select organization_id from rowgate.accounts where id = p_id and deleted_at is null)
    when 'membership' then (select organization_id from rowgate.memberships where id = p_id and deleted_at is null)
    when 'organization_access_token' then
      (select organization_id from rowgate.organization_access_tokens where id = p_id and deleted_at is null)
    when 'product' then (select organization_id from rowgate.products where id = p_id and deleted_at is null)
    when 'customer' then (select organization_id from rowgate.customers where id = p_id and deleted_at is null)
    when 'order' then (select organization_id from rowgate.orders where id = p_id)
    when 'payout_account' then (select organization_id from rowgate.payout_accounts where id = p_id and deleted_at is null)
  end;
end;
$$;

-- Steps 3–5 of SPEC §5 in one call: resolve the resource, check the subject
-- reaches its organization, run the policy. `organization_id` null: 404;
-- `denial` set: 403 with that reason; otherwise go ahead.
create function rowgate_hidden.authorize(p_resource text, p_id uuid, p_policy text)
returns table (organization_id uuid, denial text)
language sql stable as $$
  with resolved as (
    select rowgate_hidden.resource_organization_id(p_resource, p_id) as organization_id
  ), reachable as (
    select r.organization_id from resolved r
    where r.organization_id = any (rowgate_hidden.current_organization_ids())
  )
  select r.organization_id, rowgate_hidden.policy_denial(r.organization_id, p_policy)
  from (select 1) one left join reachable r on true;
$$;

-- resolution sees past RLS: only for the API's requests
grant execute on function rowgate_hidden.resource_organization_id(text, uuid), rowgate_hidden.authorize(text, uuid, text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;

-- Soft deletes (SPEC §6). The select policies hide deleted rows, so the update
-- that marks a row deleted cannot run under them; this function checks the
-- scope, runs the same checks (rowgate_hidden.authorize, with the policy each
-- resource requires) and then marks the row. 404 / 403 come back as RG404 / RG403.
create function rowgate.delete_resource(p_resource text, p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_policy text := case p_resource
    when 'organization' then 'organization:manage'
    when 'membership' then 'members_management'
    when 'organization_access_token' then 'access_token_management'
    when 'product' then 'products:write'
    when 'customer' then 'customers:write'
    when 'payout_account' then 'finance_write'
  end;
  v_scope text := case p_resource
    when 'organization' then 'organizations_write'
    when 'membership' then 'members_write'
    when 'organization_access_token' then 'organization_access_tokens_write'
    when 'product' then 'products_write'
    when 'customer' then 'customers_write'
    when 'payout_account' then 'payouts:write'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  perform rowgate_hidden.assert_scope(v_scope);
  select a.organization_id, a.denial into v_organization_id, v_denial from rowgate_hidden.authorize(p_resource, p_id, v_policy) a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  elsif v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  elsif p_resource = 'organization' and rowgate_hidden.current_subject_kind() is distinct from 'user' then
    raise exception 'Only users can delete organizations' using errcode = 'RG403';
  end if;
  case p_resource
    when 'organization' then update rowgate.organizations set deleted_at = now() where id = p_id;
    when 'membership' then update rowgate.memberships set deleted_at = now() where id = p_id;
    when 'organization_access_token' then update rowgate.organization_access_tokens set deleted_at = now() where id = p_id;
    when 'product' then update rowgate.products set deleted_at = now() where id = p_id;
    when 'customer' then update rowgate.customers set deleted_at = now() where id = p_id;
    when 'payout_account' then update rowgate.payout_accounts set deleted_at = now() where id = p_id;
  end case;
end;
$$;
grant execute on function rowgate.delete_resource(text, uuid) to rowgate_user, rowgate_organization;
comment on function rowgate.delete_resource(text, uuid) is E'@behavior -*';

-- Getting credentials (SPEC §2, §12): sign-in by e-mail code, sign-out, and an
-- OAuth2 authorization server (clients, codes with PKCE, token families with
-- rotating refresh tokens, revocation, introspection). Secrets (code hashes,
-- client-secret hashes, refresh-token hashes, the development outbox) are
-- private; client metadata is public under RLS. The server makes every secret
-- and passes only its keyed hash. Checks that must record a failure (attempt
-- counts, a spent code, a reused refresh token) return a status instead of
-- raising, so the record is committed; the server maps the status.

-- Sign-in by e-mail code. A code is short, so it is stored only as a keyed
-- hash bound to the address, lives 15 minutes, and every live code of an
-- address dies after 5 wrong attempts in all. At most 5 codes per address are
-- issued per 15 minutes.
create table rowgate_private.login_codes (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  code_hash bytea not null,
  attempts integer not null default 0,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index login_codes_email on rowgate_private.login_codes (email, created_at);

create function rowgate.request_login_code(p_email text, p_code_hash bytea) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_email text := lower(p_email);
begin
  -- codes a day old serve nobody
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  if (select count(*) from rowgate_private.login_codes c
      where c.email = v_email and c.created_at > now() - interval '15 minutes') >= 5 then
    return 'rate_limited';
  end if;
  insert into rowgate_private.login_codes (email, code_hash, expires_at)
    values (v_email, p_code_hash, now() + interval '15 minutes');
  return 'created';
end;
$$;
comment on function rowgate.request_login_code(text, bytea) is
  E'@behavior -*\nStores a login code''s hash for an address: created, or rate_limited.';

-- Signs in with a code: the user (created on first sign-in) and a 31-day web
-- session, or status `invalid` (a wrong, used, expired or exhausted code; the
-- failed attempt is counted and committed).
create function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_session_token_hash bytea)
returns table (
  status text, id uuid, email text, name text, avatar_url text, is_admin boolean,
  created_at timestamptz, updated_at timestamptz, session_expires_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code_id uuid;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
begin
  select c.id into v_code_id from rowgate_private.login_codes c
    where c.email = v_email and c.code_hash = p_code_hash and c.used_at is null
      and c.expires_at > now() and c.attempts < 5
    for update;
  if v_code_id is null then
    -- a wrong guess counts against every live code of the address
    update rowgate_private.login_codes c set attempts = c.attempts + 1
      where c.email = v_email and c.used_at is null and c.expires_at > now();
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
  v_session := rowgate_private.issue_user_session(v_user.id, p_session_token_hash, interval '31 days');
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url, v_user.is_admin,
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
comment on function rowgate.authenticate_login_code(text, bytea, bytea) is
  E'@behavior -*\nSigns in with an e-mail code: the user and its new session, or status invalid.';

-- The development outbox (SPEC §10 `mail outbox`): with no mail server
-- configured, mail is kept here so that a newcomer can read a sign-in code
-- with the CLI. It holds codes in clear, so it is private, and keeps a day.
create table rowgate_private.mail_outbox (
  id uuid primary key default gen_random_uuid(),
  recipient text not null,
  subject text not null,
  body text not null,
  created_at timestamptz not null default now()
);
create index mail_outbox_created_at on rowgate_private.mail_outbox (created_at);

create function rowgate.record_outbox_mail(p_to text, p_subject text, p_text text) returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  delete from rowgate_private.mail_outbox where created_at < now() - interval '1 day';
  insert into rowgate_private.mail_outbox (recipient, subject, body) values (lower(p_to), p_subject, p_text);
$$;
comment on function rowgate.record_outbox_mail(text, text, text) is
  E'@behavior -*\nKeeps a message in the development outbox (no mail server configured).';

-- Signing out revokes the session server-side (LESSONS: a sign-out that only
-- clears the cookie leaves the token working): exactly the session of this
-- request, and only the current user's.
create function rowgate.revoke_current_session() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:read');
  update rowgate_private.sessions s set revoked_at = now()
    where s.id = rowgate_hidden.current_credential_id() and s.kind = 'user'
      and s.user_id = rowgate_hidden.current_user_id() and s.revoked_at is null;
  return found;
end;
$$;
comment on function rowgate.revoke_current_session() is E'@behavior -*\nSigns out: revokes the web session of this request.';

-- OAuth2 clients (RFC 7591), registered by a signed-in user who alone sees and
-- manages them. Public metadata under RLS; a confidential client's secret is
-- stored as a keyed hash, privately. `scopes` bounds what it may ever ask for.
create table rowgate.oauth2_clients (
  id uuid primary key default gen_random_uuid(),
  client_id text not null unique check (client_id ~ '^rg_ci_[0-9A-Za-z]{24,64}$'),
  user_id uuid not null references rowgate.users,
  client_name text not null check (length(client_name) between 1 and 200),
  redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 10),
  scopes text[] not null check (cardinality(scopes) between 1 and 50),
  token_endpoint_auth_method text not null
    check (token_endpoint_auth_method in ('client_secret_basic', 'client_secret_post', 'none')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index oauth2_clients_user_id on rowgate.oauth2_clients (user_id, created_at) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.oauth2_clients
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.oauth2_clients enable row level security;
create policy select_own on rowgate.oauth2_clients for select to rowgate_user
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
grant select (id, client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method, created_at, updated_at)
  on rowgate.oauth2_clients to rowgate_user;
comment on table rowgate.oauth2_clients is E'@behavior -*\nOAuth2 clients registered by users (REST only).';

create table rowgate_private.oauth2_client_secrets (
  client_id text primary key references rowgate.oauth2_clients (client_id),
  secret_hash bytea not null
);

-- The live client, when the presented credentials authenticate it (RFC 6749
-- §2.3): a confidential client with its secret, a public client ("none")
-- with none. The server parses HTTP Basic or the body and hashes the secret.
create function rowgate_private.authenticate_oauth2_client(p_client_id text, p_secret_hash bytea)
returns rowgate.oauth2_clients
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null then
    return null;
  elsif v_client.token_endpoint_auth_method = 'none' then
    return case when p_secret_hash is null then v_client end;
  elsif p_secret_hash is null or not exists (select 1 from rowgate_private.oauth2_client_secrets s
      where s.client_id = p_client_id and s.secret_hash = p_secret_hash) then
    return null;
  end if;
  return v_client;
end;
$$;

-- Registering a client (RFC 7591): its scopes within the registering user's own;
-- a confidential client has a secret, a public client none.
create function rowgate.register_oauth2_client(
  p_client_id text, p_client_name text, p_redirect_uris text[], p_scopes text[],
  p_token_endpoint_auth_method text, p_secret_hash bytea
) returns rowgate.oauth2_clients
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_unknown text := rowgate_private.unknown_scope(p_scopes);
  v_client rowgate.oauth2_clients;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can register OAuth2 clients' using errcode = 'RG403';
  end if;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scope';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A client cannot register a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scope';
  end if;
  if (p_token_endpoint_auth_method = 'none') <> (p_secret_hash is null) then
    raise exception 'A confidential client has a secret, a public client none';
  end if;
  insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
    values (p_client_id, v_user_id, p_client_name, p_redirect_uris,
      (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_token_endpoint_auth_method)
    returning * into v_client;
  if p_secret_hash is not null then
    insert into rowgate_private.oauth2_client_secrets (client_id, secret_hash) values (p_client_id, p_secret_hash);
  end if;
  return v_client;
end;
$$;
comment on function rowgate.register_oauth2_client(text, text, text[], text[], text, bytea) is
  E'@behavior -*\nRegisters an OAuth2 client owned by the current user (RFC 7591).';

-- Authorization codes (RFC 6749 §4.1) with their PKCE challenge (RFC 7636;
-- S256 only, so the method is not stored). Valid 10 minutes, spent by the
-- first exchange attempt whatever its outcome.
create table rowgate_private.oauth2_authorization_codes (
  id uuid primary key default gen_random_uuid(),
  code_hash bytea not null unique,
  client_id text not null references rowgate.oauth2_clients (client_id),
  user_id uuid not null references rowgate.users,
  organization_id uuid references rowgate.organizations,
  scopes text[] not null,
  redirect_uri text not null,
  code_challenge text,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_authorization_codes_client_id on rowgate_private.oauth2_authorization_codes (client_id);

-- A token family: what one authorization code led to, refresh after refresh.
-- Revoking it (a reused refresh token, a replayed code, RFC 7009 revocation of
-- a refresh token, the client's deletion) revokes its access tokens at once.
create table rowgate_private.oauth2_token_families (
  id uuid primary key default gen_random_uuid(),
  client_id text not null references rowgate.oauth2_clients (client_id),
  user_id uuid not null references rowgate.users,
  organization_id uuid references rowgate.organizations,
  scopes text[] not null,
  authorization_code_id uuid not null unique references rowgate_private.oauth2_authorization_codes,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_token_families_client_id on rowgate_private.oauth2_token_families (client_id) where revoked_at is null;

-- Refresh tokens rotate: each is good for one refresh, then `used_at` is set
-- and presenting it again is reuse. 30 days from issue, so a family lives
-- while its client keeps refreshing.
create table rowgate_private.oauth2_refresh_tokens (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  family_id uuid not null references rowgate_private.oauth2_token_families,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_refresh_tokens_family_id on rowgate_private.oauth2_refresh_tokens (family_id);

-- OAuth2 access tokens, of a family: for a user (`rg_at_u_`), or for the
-- organization (`rg_at_o_`) the grant named.
create table rowgate_private.oauth2_access_tokens (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  client_id text not null,
  user_id uuid not null references rowgate.users on delete cascade,
  organization_id uuid references rowgate.organizations,
  scopes text[] not null,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  family_id uuid references rowgate_private.oauth2_token_families
);
create index oauth2_access_tokens_user_id on rowgate_private.oauth2_access_tokens (user_id) where revoked_at is null;
create index oauth2_access_tokens_family_id on rowgate_private.oauth2_access_tokens (family_id) where revoked_at is null;
create index oauth2_access_tokens_client_id on rowgate_private.oauth2_access_tokens (client_id) where revoked_at is null;

-- Revoking a family revokes its access tokens at once; its refresh tokens are
-- refused from then on.
create function rowgate_private.revoke_oauth2_family(p_family_id uuid) returns void
language sql volatile set search_path = pg_catalog, pg_temp as $$
  update rowgate_private.oauth2_token_families set revoked_at = now() where id = p_family_id and revoked_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where family_id = p_family_id and revoked_at is null;
$$;

-- Issues an access token (1 hour) and a refresh token (30 days) in a family;
-- answers the access token's expiry.
create function rowgate_private.issue_oauth2_tokens(
  p_family_id uuid, p_scopes text[], p_access_token_hash bytea, p_refresh_token_hash bytea
) returns timestamptz
language sql volatile set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.oauth2_refresh_tokens (token_hash, family_id, expires_at)
    values (p_refresh_token_hash, p_family_id, now() + interval '30 days');
  insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at, family_id)
    select p_access_token_hash, f.client_id, f.user_id, f.organization_id, p_scopes, now() + interval '1 hour', f.id
    from rowgate_private.oauth2_token_families f where f.id = p_family_id
    returning expires_at;
$$;

-- Deleting a client (its owner only) ends every grant made to it.
create function rowgate.delete_oauth2_client(p_id uuid) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_client_id text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.oauth2_clients c set deleted_at = now()
    where c.id = p_id and c.user_id = rowgate_hidden.current_user_id() and c.deleted_at is null
    returning c.client_id into v_client_id;
  if v_client_id is null then
    return false;
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
    where f.client_id = v_client_id and f.revoked_at is null;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now() where t.client_id = v_client_id and t.revoked_at is null;
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.client_id = v_client_id and c.used_at is null;
  delete from rowgate_private.oauth2_client_secrets s where s.client_id = v_client_id;
  return true;
end;
$$;
comment on function rowgate.delete_oauth2_client(uuid) is E'@behavior -*\nDeletes one of the current user''s OAuth2 clients and revokes its tokens.';

-- The checks of an authorization request, for the signed-in user: `ok` with
-- what the consent page shows, or an RFC 6749 §4.1.2.1 error. `invalid_client`
-- and `invalid_redirect_uri` are shown to the user (never redirected); the
-- others go back to the redirect URI. An organization grant follows the
-- access-token management policy and carries organization scopes only.
create function rowgate.check_oauth2_authorization(
  p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid,
  p_code_challenge text, p_code_challenge_method text
) returns table (status text, description text, client_name text, scopes text[], organization_name text)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients;
  v_scopes text[];
  v_unknown text;
  v_denial text;
  v_organization_name text;
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
  end if;
  return query select 'ok'::text, null::text, v_client.client_name, v_scopes, v_organization_name;
end;
$$;
comment on function rowgate.check_oauth2_authorization(text, text, text[], uuid, text, text) is
  E'@behavior -*\nChecks an OAuth2 authorization request for the current user: ok, or the RFC 6749 error.';

-- The user consents: an authorization code, after the same checks.
create function rowgate.create_oauth2_authorization_code(
  p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid,
  p_code_challenge text, p_code_challenge_method text, p_code_hash bytea
) returns timestamptz
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_status text;
  v_description text;
  v_scopes text[];
  v_expires_at timestamptz := now() + interval '10 minutes';
begin
  perform rowgate_hidden.assert_scope('user:write');
  select c.status, c.description, c.scopes into v_status, v_description, v_scopes
    from rowgate.check_oauth2_authorization(p_client_id, p_redirect_uri, p_scopes, p_organization_id,
      p_code_challenge, p_code_challenge_method) c;
  if v_status <> 'ok' then
    raise exception '%', v_description using errcode = 'RG403';
  end if;
  insert into rowgate_private.oauth2_authorization_codes
      (code_hash, client_id, user_id, organization_id, scopes, redirect_uri, code_challenge, expires_at)
    values (p_code_hash, p_client_id, rowgate_hidden.current_user_id(), p_organization_id, v_scopes, p_redirect_uri,
      p_code_challenge, v_expires_at);
  return v_expires_at;
end;
$$;
comment on function rowgate.create_oauth2_authorization_code(text, text, text[], uuid, text, text, bytea) is
  E'@behavior -*\nIssues an authorization code to a client the current user authorizes.';

-- Whether a user may grant tokens for an organization: the access-token
-- management policy, for a given user rather than the transaction's subject
-- (the token endpoint and authentication run with no user subject).
create function rowgate_private.user_manages_access_tokens(p_user_id uuid, p_organization_id uuid) returns boolean
language sql stable set search_path = pg_catalog, pg_temp as $$
  select exists (
    select 1 from rowgate.memberships m
      join rowgate.role_permissions rp on rp.role = m.role and rp.permission = 'access_tokens:manage'
      join rowgate.organizations o on o.id = m.organization_id
      join rowgate.users u on u.id = m.user_id
    where m.user_id = p_user_id and m.organization_id = p_organization_id
      and m.deleted_at is null and o.deleted_at is null and u.deleted_at is null);
$$;

-- Whether a family may still issue tokens: its user live and, for an
-- organization grant, still allowed to manage the organization's tokens.
create function rowgate_private.oauth2_grant_holds(p_user_id uuid, p_organization_id uuid) returns boolean
language sql stable set search_path = pg_catalog, pg_temp as $$
  select exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null)
    and (p_organization_id is null or rowgate_private.user_manages_access_tokens(p_user_id, p_organization_id));
$$;

-- The token endpoint, authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.6).
-- The server sends the S256 challenge it computed from the code_verifier, and
-- the hashes of a user token, an organization token and a refresh token it
-- made; the grant decides which access token is issued. A replayed code
-- revokes the tokens issued from it.
create function rowgate.exchange_oauth2_authorization_code(
  p_client_id text, p_client_secret_hash bytea, p_code_hash bytea, p_redirect_uri text, p_code_challenge text,
  p_user_token_hash bytea, p_organization_token_hash bytea, p_refresh_token_hash bytea
) returns table (status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
  v_code rowgate_private.oauth2_authorization_codes;
  v_family rowgate_private.oauth2_token_families;
  v_failure text;
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select c.* into v_code from rowgate_private.oauth2_authorization_codes c
    where c.code_hash = p_code_hash and c.client_id = p_client_id for update;
  if v_code.id is null then
    return query select 'invalid_grant'::text, 'The authorization code is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_code.used_at is not null then
    -- whoever replays a code may have stolen it: what was issued from it ends
    perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
      where f.authorization_code_id = v_code.id;
    return query select 'invalid_grant'::text,
      'The authorization code was used already; the tokens issued from it are revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  -- one attempt per code: from here on it is spent, whatever the outcome
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.id = v_code.id;
  v_failure := case
    when v_code.expires_at <= now() then 'The authorization code has expired'
    when p_redirect_uri is distinct from v_code.redirect_uri then 'redirect_uri differs from the authorization request''s'
    when v_code.code_challenge is not null and p_code_challenge is null then 'code_verifier is required'
    when v_code.code_challenge is distinct from p_code_challenge then
      case when v_code.code_challenge is null then 'No code_challenge was sent with the authorization request'
        else 'The code_verifier does not match the code_challenge' end
  end;
  if v_failure is null and not rowgate_private.oauth2_grant_holds(v_code.user_id, v_code.organization_id) then
    v_failure := 'The user can no longer grant this authorization';
  end if;
  if v_failure is not null then
    return query select 'invalid_grant'::text, v_failure, null::text, null::text[], null::timestamptz;
    return;
  end if;
  insert into rowgate_private.oauth2_token_families (client_id, user_id, organization_id, scopes, authorization_code_id)
    values (v_code.client_id, v_code.user_id, v_code.organization_id, v_code.scopes, v_code.id)
    returning * into v_family;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_family.scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_family.scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_refresh_token_hash);
end;
$$;
comment on function rowgate.exchange_oauth2_authorization_code(text, bytea, bytea, text, text, bytea, bytea, bytea) is
  E'@behavior -*\nThe authorization_code grant of the token endpoint.';

-- The token endpoint, refresh_token grant (RFC 6749 §6) with rotation: the
-- presented refresh token is spent and a new one issued in the same family.
-- A spent refresh token presented again is reuse: the family is revoked.
-- `p_scopes` may narrow the new access token, never widen it.
create function rowgate.refresh_oauth2_token(
  p_client_id text, p_client_secret_hash bytea, p_refresh_token_hash bytea, p_scopes text[],
  p_user_token_hash bytea, p_organization_token_hash bytea, p_new_refresh_token_hash bytea
) returns table (status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
  v_token rowgate_private.oauth2_refresh_tokens;
  v_family rowgate_private.oauth2_token_families;
  v_scopes text[];
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select r.* into v_token from rowgate_private.oauth2_refresh_tokens r
    join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_refresh_token_hash and f.client_id = p_client_id
    for update of r;
  if v_token.id is not null then
    select f.* into v_family from rowgate_private.oauth2_token_families f where f.id = v_token.family_id for update;
  end if;
  if v_token.id is null then
    return query select 'invalid_grant'::text, 'The refresh token is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_family.revoked_at is not null then
    return query select 'invalid_grant'::text, 'The refresh token is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.used_at is not null then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text,
      'The refresh token was used already; every token of its grant is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.expires_at <= now() then
    return query select 'invalid_grant'::text, 'The refresh token has expired'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif not rowgate_private.oauth2_grant_holds(v_family.user_id, v_family.organization_id) then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text, 'The user can no longer grant this authorization'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  v_scopes := coalesce((select array_agg(distinct s order by s) from unnest(p_scopes) s), v_family.scopes);
  if not (v_scopes <@ v_family.scopes) then
    return query select 'invalid_scope'::text, 'A refresh cannot widen the scopes of the grant'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  update rowgate_private.oauth2_refresh_tokens r set used_at = now() where r.id = v_token.id;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_new_refresh_token_hash);
end;
$$;
comment on function rowgate.refresh_oauth2_token(text, bytea, bytea, text[], bytea, bytea, bytea) is
  E'@behavior -*\nThe refresh_token grant of the token endpoint, with rotation and reuse detection.';

-- Revocation (RFC 7009) by the client the token was issued to: a refresh
-- token ends its whole family, an access token itself. An unknown token, or
-- another client's, is not an error (`ok`, nothing changes).
create function rowgate.revoke_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_token_hash bytea) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
begin
  if v_client.client_id is null then
    return 'invalid_client';
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id)
    from rowgate_private.oauth2_refresh_tokens r join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now()
    where t.token_hash = p_token_hash and t.client_id = p_client_id and t.revoked_at is null;
  return 'ok';
end;
$$;
comment on function rowgate.revoke_oauth2_token(text, bytea, bytea) is E'@behavior -*\nRFC 7009 token revocation.';

-- Introspection (RFC 7662) by the client the token was issued to (any other
-- client learns only `active: false`). An access token is active exactly when
-- authentication accepts it.
create function rowgate.introspect_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_token_hash bytea)
returns table (
  status text, active boolean, token_type text, scopes text[], user_id uuid, username text,
  organization_id uuid, expires_at timestamptz, issued_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
    return;
  end if;
  return query
    select 'ok'::text, true, 'access_token'::text, t.scopes, t.user_id, u.email, t.organization_id, t.expires_at, t.created_at
    from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
    where t.token_hash = p_token_hash and t.client_id = p_client_id
      and exists (select 1 from rowgate_private.authenticate(
        case when t.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end, p_token_hash))
    union all
    select 'ok'::text, true, 'refresh_token'::text, f.scopes, f.user_id, u.email, f.organization_id, r.expires_at, r.created_at
    from rowgate_private.oauth2_refresh_tokens r
      join rowgate_private.oauth2_token_families f on f.id = r.family_id
      join rowgate.users u on u.id = f.user_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id and r.used_at is null and f.revoked_at is null
      and r.expires_at > now() and rowgate_private.oauth2_grant_holds(f.user_id, f.organization_id);
  if not found then
    return query select 'ok'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
  end if;
end;
$$;
comment on function rowgate.introspect_oauth2_token(text, bytea, bytea) is E'@behavior -*\nRFC 7662 token introspection.';

-- The scopes an OAuth2 client may register (RFC 8414 `scopes_supported`).
create function rowgate.oauth2_scopes_supported() returns text[]
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select rowgate_private.all_scopes();
$$;
comment on function rowgate.oauth2_scopes_supported() is E'@behavior -*\nThe scopes OAuth2 clients may ask for.';

-- Who calls what: requests without a credential run as rowgate_anonymous and
-- reach only sign-in, the outbox and the token endpoints; users manage their
-- clients, consent, and sign out.
grant execute on function
  rowgate.request_login_code(text, bytea),
  rowgate.authenticate_login_code(text, bytea, bytea),
  rowgate.record_outbox_mail(text, text, text),
  rowgate.exchange_oauth2_authorization_code(text, bytea, bytea, text, text, bytea, bytea, bytea),
  rowgate.refresh_oauth2_token(text, bytea, bytea, text[], bytea, bytea, bytea),
  rowgate.revoke_oauth2_token(text, bytea, bytea),
  rowgate.introspect_oauth2_token(text, bytea, bytea),
  rowgate.oauth2_scopes_supported()
  to rowgate_anonymous;
grant execute on function
  rowgate.revoke_current_session(),
  rowgate.register_oauth2_client(text, text, text[], text[], text, bytea),
  rowgate.delete_oauth2_client(uuid),
  rowgate.check_oauth2_authorization(text, text, text[], uuid, text, text),
  rowgate.create_oauth2_authorization_code(text, text, text[], uuid, text, text, bytea)
  to rowgate_user;

-- Authentication: from a credential kind and the keyed hash of its token, the
-- subject it names, or no row. Called by the authenticator before it switches role.
-- A credential authenticates nobody when expired, revoked, or when its user (or
-- its organization, customer or member seat) is deleted. An OAuth2 organization
-- token acts for its organization only while the user who granted it still may
-- manage the organization's tokens; customer and member sessions carry the
-- portal scopes only.

-- A token's last use is recorded at most once a minute, so reads stay cheap,
-- and only when the row is free (SKIP LOCKED): a row lock held in the request's
-- transaction would make every other request of the same token wait for it to
-- end (a slow request holding up its token's other requests, up to the
-- statement timeout). A concurrent request of the same token skips the record
-- instead of waiting; the record stays at most a minute behind.
create function rowgate_private.record_token_use(p_kind text, p_token_hash bytea) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'personal_access_token' then
    update rowgate.personal_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  elsif p_kind = 'organization_access_token' then
    update rowgate.organization_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  end if;
end;
$$;

create function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
returns table (
  credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;
grant execute on function rowgate_private.authenticate(text, bytea) to rowgate_authenticator;

-- Reporting views for analysts (and the API's users): security_invoker, so the
-- caller's RLS applies to the rows beneath.
create view rowgate.revenue_by_day with (security_invoker = true) as
  select organization_id, (created_at at time zone 'UTC')::date as day, currency,
    coalesce(sum(amount) filter (where type = 'payment'), 0) as gross_amount,
    coalesce(-sum(amount) filter (where type = 'refund'), 0) as refunded_amount,
    sum(amount) as net_amount,
    count(*) filter (where type = 'payment') as payments
  from rowgate.transactions
  group by organization_id, (created_at at time zone 'UTC')::date, currency;
comment on view rowgate.revenue_by_day is 'Payments, refunds and net revenue per organization, UTC day and currency (finance:read).';
create view rowgate.orders_by_day with (security_invoker = true) as
  select organization_id, (created_at at time zone 'UTC')::date as day, status, count(*) as orders, sum(amount) as amount
  from rowgate.orders
  group by organization_id, (created_at at time zone 'UTC')::date, status;
comment on view rowgate.orders_by_day is 'Orders per organization, UTC day and status.';
grant select on rowgate.revenue_by_day, rowgate.orders_by_day to rowgate_user, rowgate_organization, rowgate_analyst;

-- Exact totals without counting (issue 7): per-organization row counts of the
-- tenant lists, kept by triggers, so that an unfiltered list's total_count is a
-- sum over the subject's organizations instead of an index scan over every
-- visible row (linear in the tenant's size). Filtered lists still count.
create table rowgate_private.organization_row_counts (
  organization_id uuid not null references rowgate.organizations,
  resource text not null,
  row_count bigint not null default 0,
  primary key (organization_id, resource)
);

-- tg_argv[0]: the resource; tg_argv[1] = 'soft' when rows are soft-deleted (deleted_at)
create function rowgate_private.tg__count_rows() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_soft boolean := tg_argv[1] = 'soft';
  v_delta integer;
  v_organization_id uuid;
begin
  -- (each branch names deleted_at only for tables that have it: PL/pgSQL
  -- compiles a statement when it first runs it)
  if tg_op = 'INSERT' then
    v_organization_id := new.organization_id;
    v_delta := 1;
    if v_soft then
      v_delta := case when new.deleted_at is null then 1 else 0 end;
    end if;
  elsif tg_op = 'UPDATE' then
    v_organization_id := new.organization_id;
    v_delta := (case when new.deleted_at is null then 1 else 0 end) - (case when old.deleted_at is null then 1 else 0 end);
  else
    v_organization_id := old.organization_id;
    v_delta := -1;
    if v_soft then
      v_delta := case when old.deleted_at is null then -1 else 0 end;
    end if;
  end if;
  if v_delta <> 0 then
    insert into rowgate_private.organization_row_counts as c (organization_id, resource, row_count)
      values (v_organization_id, tg_argv[0], v_delta)
      on conflict (organization_id, resource) do update set row_count = c.row_count + excluded.row_count;
  end if;
  return null;
end;
$$;

create trigger _900_count_rows after insert or delete on rowgate.orders
  for each row execute function rowgate_private.tg__count_rows('orders', 'hard');
create trigger _900_count_rows after insert or delete on rowgate.transactions
  for each row execute function rowgate_private.tg__count_rows('transactions', 'hard');
create trigger _900_count_rows after insert or delete or update of deleted_at on rowgate.products
  for each row execute function rowgate_private.tg__count_rows('products', 'soft');
create trigger _900_count_rows after insert or delete or update of deleted_at on rowgate.customers
  for each row execute function rowgate_private.tg__count_rows('customers', 'soft');

-- The total of a list over some organizations, never beyond what the subject
-- reaches (with the permission filter of the table's RLS policy).
create function rowgate_hidden.organization_row_count(p_resource text, p_organization_ids uuid[]) returns bigint
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select coalesce(sum(c.row_count), 0)::bigint from rowgate_private.organization_row_counts c
    where c.resource = p_resource and c.organization_id = any (p_organization_ids)
      and c.organization_id = any (rowgate_hidden.current_organization_ids(
        case p_resource when 'transactions' then 'finance:read' end)));
end;
$$;
comment on function rowgate_hidden.organization_row_count(text, uuid[]) is E'@behavior -*\nThe number of live rows of a tenant list over the given organizations the subject reaches.';
grant execute on function rowgate_hidden.organization_row_count(text, uuid[])
  to rowgate_user, rowgate_organization, rowgate_analyst;
