--! Previous: sha1:457c63a61416266d5175a15a079ffa78d7f1bf6d
--! Hash: sha1:552e1fbbd87649c90c874a923efbdbec1160b9aa
--! Message: authorization core: organizations, memberships, roles and permissions, policies, accounts, organization tokens, impersonation

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
-- reference data: readable by every subject and analyst
create policy select_all on rowgate.permissions for select using (true);
create policy select_all on rowgate.roles for select using (true);
create policy select_all on rowgate.role_permissions for select using (true);
grant select (name, verb, things) on rowgate.permissions to rowgate_user, rowgate_organization, rowgate_analyst;
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
alter table rowgate.organizations add foreign key (account_id) references rowgate.accounts;
create trigger _100_timestamps before insert or update on rowgate.accounts
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.accounts enable row level security;

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
alter table rowgate_private.access_token_hashes
  add column organization_access_token_id uuid unique references rowgate.organization_access_tokens on delete cascade,
  add check (num_nonnulls(personal_access_token_id, organization_access_token_id) = 1);
-- OAuth2 organization tokens (rg_at_o_) name the organization they act for
alter table rowgate_private.oauth2_access_tokens
  add foreign key (organization_id) references rowgate.organizations;

-- The single source of "which organizations does the subject reach": a User its
-- live memberships (optionally only those whose role grants p_permission), an
-- Organization itself, anybody else none. Returns an array so that policies use
-- it as `organization_id = any ((select …)::uuid[])`: one evaluation per
-- statement (an initPlan) and an index scan, never a per-row lookup.
create function rowgate_hidden.current_organization_ids(p_permission text default null) returns uuid[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'user' then
    return array(
      select m.organization_id
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null and o.deleted_at is null
        and (p_permission is null or exists (
          select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)));
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
-- the organization is reachable (checked first, as a 404).
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
    where o.id = p_organization_id and a.deleted_at is null;
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

grant execute on function
  rowgate_hidden.current_organization_ids(text), rowgate_hidden.has_permission(uuid, text),
  rowgate_hidden.role_permission_denial(uuid, text), rowgate_hidden.finance_denial(uuid, boolean),
  rowgate_hidden.finance_read_denial(uuid), rowgate_hidden.finance_write_denial(uuid),
  rowgate_hidden.members_management_denial(uuid), rowgate_hidden.access_token_management_denial(uuid),
  rowgate_hidden.policy_denial(uuid, text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
-- resolution sees past RLS: only for the API's requests
grant execute on function rowgate_hidden.resource_organization_id(text, uuid), rowgate_hidden.authorize(text, uuid, text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;

-- Row-level security of the organization tables, from the functions above.
create policy select_member on rowgate.organizations for select
  using (id = any ((select rowgate_hidden.current_organization_ids())::uuid[]));
create policy update_manage on rowgate.organizations for update
  using (id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[]));
grant select (id, name, slug, account_id, created_at, updated_at) on rowgate.organizations
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant update (name, slug) on rowgate.organizations to rowgate_user, rowgate_organization;

create policy select_member on rowgate.memberships for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null);
create policy update_manage on rowgate.memberships for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user')
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
  using (id = any ((select rowgate_hidden.current_colleague_ids())::uuid[]) and deleted_at is null);
grant select (id, email, name, avatar_url, created_at, updated_at) on rowgate.users to rowgate_organization, rowgate_analyst;

create policy select_finance on rowgate.accounts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null);
create policy update_finance on rowgate.accounts for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_write_denial(organization_id) is null);
grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at) on rowgate.accounts
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant update (country, currency) on rowgate.accounts to rowgate_user;

create policy select_manage on rowgate.organization_access_tokens for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user');
grant select (id, organization_id, comment, scopes, expires_at, last_used_at, created_by, created_at, updated_at)
  on rowgate.organization_access_tokens to rowgate_user;

-- Writes that need more than one row, or a lookup past RLS, are functions that
-- run the same policies first.

-- A User creates an organization and becomes its admin.
create function rowgate.create_organization(p_name text, p_slug text) returns rowgate.organizations
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
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

-- Organization access tokens: a User with access_tokens:manage, scopes within its own.
create function rowgate.create_organization_access_token(
  p_organization_id uuid, p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.organization_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
begin
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

-- Impersonation (SPEC §2): a platform admin gets a read-scope web session of another user, for 1 hour.
create function rowgate.create_impersonation_session(p_user_id uuid, p_token_hash bytea)
returns table (user_id uuid, expires_at timestamptz, scopes text[])
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_admin_id uuid := rowgate_hidden.current_user_id();
begin
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

-- Soft deletes (SPEC §6). The select policies hide deleted rows, so the update
-- that marks a row deleted cannot run under them; this function runs the same
-- checks (rowgate_hidden.authorize, with the policy each resource requires) and
-- then marks the row. 404 / 403 come back as RG404 / RG403.
create function rowgate.delete_resource(p_resource text, p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_policy text := case p_resource
    when 'organization' then 'organization:manage'
    when 'membership' then 'members_management'
    when 'organization_access_token' then 'access_token_management'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  select a.organization_id, a.denial into v_organization_id, v_denial from rowgate_hidden.authorize(p_resource, p_id, v_policy) a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  elsif v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  elsif p_resource = 'organization' and rowgate_hidden.current_subject_kind() is distinct from 'user' then
    raise exception 'Only users can delete organizations' using errcode = 'RG403';
  end if;
  if p_resource = 'organization' then
    update rowgate.organizations set deleted_at = now() where id = p_id;
  elsif p_resource = 'membership' then
    update rowgate.memberships set deleted_at = now() where id = p_id;
  elsif p_resource = 'organization_access_token' then
    update rowgate.organization_access_tokens set deleted_at = now() where id = p_id;
  end if;
end;
$$;
grant execute on function rowgate.delete_resource(text, uuid) to rowgate_user, rowgate_organization;

-- Deleting a user also ends its memberships' effect: current_organization_ids()
-- never returns organizations of a deleted user (its credentials die with it).

-- Authentication learns organization tokens: OATs and OAuth2 organization tokens.
create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
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
    -- last use is recorded at most once a minute, so reads stay cheap
    update rowgate.personal_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.personal_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    update rowgate.organization_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.organization_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    -- acts for the organization while the user who granted it still administers it
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;

-- The API's login role and analysts connect to this database, whatever it is
-- named (a graphile-migrate reset revokes CONNECT from PUBLIC).
do $$
begin
  execute format('grant connect on database %I to rowgate_authenticator, rowgate_analyst', current_database());
end
$$;
