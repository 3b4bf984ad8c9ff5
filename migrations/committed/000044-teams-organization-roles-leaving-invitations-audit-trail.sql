--! Previous: sha1:2cc258aab92a61f66e049dc2506e2d9da1d29692
--! Hash: sha1:e172ddca284a95d3ac92080b0503577af461f6d7
--! Message: Teams: organization roles, leaving, invitations, audit trail

--! split: 001-organization-roles.sql
-- Organization roles (SPEC §21): beside the built-in roles (rowgate.roles, the same in every
-- organization and not editable), an organization defines roles of its own, each a set of the
-- permissions of SPEC §5. A membership or an invitation names a built-in role or one of its
-- organization's roles; every permission check reads both, so REST, GraphQL and analysts see a
-- role's permissions from the moment it is saved. An organization's roles are seen by its
-- members only.
create table rowgate.organization_roles (
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  name text not null check (name ~ '^[a-z][a-z0-9_-]{0,49}$'),
  description text check (length(description) <= 500),
  permissions text[] not null check (cardinality(permissions) <= 50),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  primary key (organization_id, id)
);
comment on table rowgate.organization_roles is '@behavior -insert -update -delete
Roles an organization defines (SPEC §21): a name, a description and permissions; the built-in roles are rowgate.roles.';
create unique index organization_roles_name_live on rowgate.organization_roles (organization_id, name) where deleted_at is null;
create index organization_roles_organization on rowgate.organization_roles (organization_id, created_at, id) where deleted_at is null;
alter table rowgate.organization_roles enable row level security;
grant select (id, organization_id, name, description, permissions, created_at, updated_at)
  on rowgate.organization_roles to rowgate_user, rowgate_organization;
grant select (id, organization_id, name, description, permissions, created_at, updated_at, deleted_at)
  on rowgate.organization_roles to rowgate_analyst;
create policy select_member on rowgate.organization_roles for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('members_read')));

-- A role's permissions are known ones, each once, kept sorted (so that a change is seen as one);
-- its name is not a built-in role's.
create or replace function rowgate_private.tg_organization_roles__check() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_unknown text;
begin
  select p into v_unknown from unnest(new.permissions) p
    where p is null or not exists (select 1 from rowgate.permissions k where k.name = p) limit 1;
  if found then
    raise exception 'Unknown permission: %', coalesce(v_unknown, 'null') using errcode = 'RG422', detail = 'body.permissions';
  end if;
  new.permissions := array(select distinct p from unnest(new.permissions) p order by p);
  if exists (select 1 from rowgate.roles r where r.name = new.name) then
    raise exception 'A built-in role has this name' using errcode = 'RG422', detail = 'body.name';
  end if;
  return new;
end;
$$;

create trigger _050_at_most before insert on rowgate.organization_roles
  for each row execute function rowgate_private.tg__at_most('organization_id', '100', 'false', 'organization', 'roles', 'delete');
create trigger _100_timestamps before insert or update on rowgate.organization_roles
  for each row execute function rowgate_private.tg__timestamps();
create trigger _200_check before insert or update on rowgate.organization_roles
  for each row execute function rowgate_private.tg_organization_roles__check();

-- The permissions a role grants in an organization: a built-in role's, else the organization's
-- own role of that name (none when there is no such role).
create or replace function rowgate_private.role_permissions(p_organization_id uuid, p_role text) returns text[]
  language sql stable set search_path = pg_catalog, pg_temp as $$
  select case when exists (select 1 from rowgate.roles r where r.name = p_role)
    then array(select rp.permission from rowgate.role_permissions rp where rp.role = p_role order by 1)
    else (select r.permissions from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_role and r.deleted_at is null) end;
$$;
comment on function rowgate_private.role_permissions(uuid, text) is 'The permissions of a built-in role, or of the organization''s own role of that name; null when neither exists.';

-- The current subject's permissions in an organization: a User's role's (none where it is not a
-- member), every permission for the Organization subject itself.
create or replace function rowgate_hidden.current_permissions(p_organization_id uuid) returns text[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'organization' and p_organization_id = rowgate_hidden.current_subject_id() then
    return array(select p.name from rowgate.permissions p order by 1);
  elsif v_kind = 'user' then
    return coalesce((select rowgate_private.role_permissions(m.organization_id, m.role)
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.organization_id = p_organization_id
        and m.deleted_at is null and o.deleted_at is null), '{}');
  end if;
  return '{}';
end;
$$;
comment on function rowgate_hidden.current_permissions(uuid) is 'The permissions the current subject holds in an organization (its role''s; all of them for the organization itself); empty out of reach.';
grant execute on function rowgate_hidden.current_permissions(uuid) to rowgate_user, rowgate_organization, rowgate_analyst;

-- Restated: a User's organizations with a permission are those where its role grants it,
-- a built-in role or one of the organization's own.
create or replace function rowgate_hidden.current_organization_ids(p_permission text default null) returns uuid[]
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
        and (exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
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

-- Restated: an organization token's creator still manages tokens when its role, built-in or the
-- organization's own, grants access_tokens:manage.
create or replace function rowgate_private.user_manages_access_tokens(p_user_id uuid, p_organization_id uuid) returns boolean
  language sql stable set search_path = pg_catalog, pg_temp as $$
  select exists (
    select 1 from rowgate.memberships m
      join rowgate.organizations o on o.id = m.organization_id
      join rowgate.users u on u.id = m.user_id
    where m.user_id = p_user_id and m.organization_id = p_organization_id
      and m.deleted_at is null and o.deleted_at is null and u.deleted_at is null
      and 'access_tokens:manage' = any (rowgate_private.role_permissions(m.organization_id, m.role)));
$$;

-- A membership's (and an invitation's) role is a built-in role or a live role of its organization;
-- the role row is locked for share, so that a role being deleted cannot be assigned meanwhile.
create or replace function rowgate_private.tg__check_role() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  if exists (select 1 from rowgate.roles r where r.name = new.role) then
    return new;
  end if;
  perform 1 from rowgate.organization_roles r
    where r.organization_id = new.organization_id and r.name = new.role and r.deleted_at is null
    for share;
  if not found then
    raise exception 'Unknown role' using errcode = 'RG422', detail = 'body.role';
  end if;
  return new;
end;
$$;
comment on function rowgate_private.tg__check_role() is 'Refuses a role that is neither built in nor one of the row''s organization''s (RG422 at body.role).';

alter table rowgate.memberships drop constraint memberships_role_fkey;
create trigger _200_check_role before insert or update of role on rowgate.memberships
  for each row execute function rowgate_private.tg__check_role();

-- The built-in role tables are read by signed-in users, organizations and analysts, no longer by
-- every role a policy of `true` would let in.
drop policy select_all on rowgate.roles;
create policy select_signed_in on rowgate.roles for select
  using ((select rowgate_hidden.current_subject_kind()) in ('user', 'organization'));
drop policy select_all on rowgate.role_permissions;
create policy select_signed_in on rowgate.role_permissions for select
  using ((select rowgate_hidden.current_subject_kind()) in ('user', 'organization'));

--! split: 002-no-escalation.sql
-- No escalation (SPEC §21), decided for every interface by the memberships themselves: a user
-- assigns a role (adding a member, changing one's role) only when it holds every permission of
-- that role, never changes its own role, and never changes or removes a member whose role holds
-- a permission it lacks. Leaving (a user ending its own membership) stays allowed; changes made
-- without a User subject (the system, an operator) are not a user's to limit.
create or replace function rowgate_private.tg_memberships__no_escalation() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_mine text[];
begin
  if v_user_id is null then
    return new;
  end if;
  if tg_op = 'INSERT' then
    if new.user_id = v_user_id then
      return new; -- creating an organization, accepting an invitation
    end if;
    if not coalesce(rowgate_private.role_permissions(new.organization_id, new.role), '{}')
        <@ rowgate_hidden.current_permissions(new.organization_id) then
      raise exception 'You can''t give a member a role with permissions you don''t have' using errcode = 'RG403';
    end if;
    return new;
  end if;
  if new.role is not distinct from old.role and (new.deleted_at is null or old.deleted_at is not null) then
    return new;
  end if;
  if old.user_id = v_user_id then
    if new.role is distinct from old.role then
      raise exception 'You can''t change your own role' using errcode = 'RG403';
    end if;
    return new; -- leaving
  end if;
  v_mine := rowgate_hidden.current_permissions(old.organization_id);
  if not coalesce(rowgate_private.role_permissions(old.organization_id, old.role), '{}') <@ v_mine then
    raise exception 'You can''t change or remove a member whose role has permissions you don''t have' using errcode = 'RG403';
  end if;
  if new.role is distinct from old.role
      and not coalesce(rowgate_private.role_permissions(new.organization_id, new.role), '{}') <@ v_mine then
    raise exception 'You can''t give a member a role with permissions you don''t have' using errcode = 'RG403';
  end if;
  return new;
end;
$$;
comment on function rowgate_private.tg_memberships__no_escalation() is 'SPEC §21''s escalation rules for a User''s changes of memberships (RG403 with the reason).';

create trigger _210_no_escalation before insert or update on rowgate.memberships
  for each row execute function rowgate_private.tg_memberships__no_escalation();

-- Roles an organization defines are written through these functions, which check in SPEC §5's
-- order (scope, reach, the members-management policy) and then §21's: a role never gets a
-- permission its author lacks (422 at body.permissions), a role holding a permission its author
-- lacks is not the author's to change or delete (403), built-in roles are not editable (403),
-- and a role in use by a membership or a pending invitation is not deleted (422).
create or replace function rowgate_private.organization_role_for_change(p_organization_id uuid, p_name text, p_scope text)
  returns rowgate.organization_roles
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_role rowgate.organization_roles;
begin
  perform rowgate_hidden.assert_scope(p_scope);
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if p_name is not null then
    select * into v_role from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_name and r.deleted_at is null
      for update;
    if not found and not exists (select 1 from rowgate.roles r where r.name = p_name) then
      raise exception 'Not found' using errcode = 'RG404';
    end if;
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_name is not null and v_role.id is null then
    raise exception 'Built-in roles cannot be changed or deleted' using errcode = 'RG403';
  end if;
  if p_name is not null and not v_role.permissions <@ rowgate_hidden.current_permissions(p_organization_id) then
    raise exception 'You can''t change a role that has permissions you don''t have' using errcode = 'RG403';
  end if;
  return v_role;
end;
$$;
comment on function rowgate_private.organization_role_for_change(uuid, text, text) is 'The organization''s role a User may change (locked), after the checks of SPEC §5 and §21; with no name, only the checks.';

create or replace function rowgate_private.assert_grantable(p_organization_id uuid, p_permissions text[]) returns void
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_lacking text;
begin
  select p into v_lacking from unnest(p_permissions) p
    where p is null or not exists (select 1 from rowgate.permissions k where k.name = p) limit 1;
  if found then
    raise exception 'Unknown permission: %', coalesce(v_lacking, 'null') using errcode = 'RG422', detail = 'body.permissions';
  end if;
  select p into v_lacking from unnest(p_permissions) p
    where not p = any (rowgate_hidden.current_permissions(p_organization_id)) limit 1;
  if found then
    raise exception 'You can''t give a role a permission you don''t have: %', v_lacking
      using errcode = 'RG422', detail = 'body.permissions';
  end if;
end;
$$;
comment on function rowgate_private.assert_grantable(uuid, text[]) is 'Refuses permissions that are unknown or that the current subject does not hold in the organization (RG422 at body.permissions).';

create or replace function rowgate.create_organization_role(p_organization_id uuid, p_name text, p_description text, p_permissions text[])
  returns rowgate.organization_roles
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_role rowgate.organization_roles;
begin
  perform rowgate_private.organization_role_for_change(p_organization_id, null, 'members_write');
  if exists (select 1 from rowgate.roles r where r.name = p_name) then
    raise exception 'A built-in role has this name' using errcode = 'RG422', detail = 'body.name';
  end if;
  if exists (select 1 from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_name and r.deleted_at is null) then
    raise exception 'The organization has a role with this name already' using errcode = 'RG422', detail = 'body.name';
  end if;
  perform rowgate_private.assert_grantable(p_organization_id, p_permissions);
  insert into rowgate.organization_roles (organization_id, name, description, permissions)
    values (p_organization_id, p_name, p_description, p_permissions)
    returning * into v_role;
  return v_role;
end;
$$;
comment on function rowgate.create_organization_role(uuid, text, text, text[]) is '@behavior -*';
grant execute on function rowgate.create_organization_role(uuid, text, text, text[]) to rowgate_user, rowgate_organization;

create or replace function rowgate.update_organization_role(p_organization_id uuid, p_name text,
    p_set_description boolean, p_description text, p_permissions text[])
  returns rowgate.organization_roles
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_role rowgate.organization_roles := rowgate_private.organization_role_for_change(p_organization_id, p_name, 'members_write');
begin
  if p_permissions is not null then
    perform rowgate_private.assert_grantable(p_organization_id, p_permissions);
  end if;
  update rowgate.organization_roles r set
      description = case when p_set_description then p_description else r.description end,
      permissions = coalesce(p_permissions, r.permissions)
    where r.id = v_role.id
    returning * into v_role;
  return v_role;
end;
$$;
comment on function rowgate.update_organization_role(uuid, text, boolean, text, text[]) is '@behavior -*';
grant execute on function rowgate.update_organization_role(uuid, text, boolean, text, text[]) to rowgate_user, rowgate_organization;

create or replace function rowgate.delete_organization_role(p_organization_id uuid, p_name text) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_role rowgate.organization_roles := rowgate_private.organization_role_for_change(p_organization_id, p_name, 'members_write');
begin
  if exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = p_name and m.deleted_at is null) then
    raise exception 'The role is in use: a member has it' using errcode = 'RG422', detail = 'path.name';
  end if;
  if exists (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.role = p_name and i.status = 'pending' and i.expires_at > now()) then
    raise exception 'The role is in use: a pending invitation names it' using errcode = 'RG422', detail = 'path.name';
  end if;
  update rowgate.organization_roles set deleted_at = now() where id = v_role.id;
end;
$$;
comment on function rowgate.delete_organization_role(uuid, text) is '@behavior -*';
grant execute on function rowgate.delete_organization_role(uuid, text) to rowgate_user, rowgate_organization;

--! split: 003-leaving.sql
-- Leaving (SPEC §21): a user ends its own membership with a web session, without anyone's
-- members:manage; the last admin of an organization cannot leave it (it would have no admin).
create or replace function rowgate.leave_organization(p_organization_id uuid) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Leaving an organization takes a web session' using errcode = 'RG403';
  end if;
  select m.* into v_membership from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.organization_id = p_organization_id and m.user_id = rowgate_hidden.current_user_id()
      and m.deleted_at is null and o.deleted_at is null
    for update of m;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  -- the organization's admins, locked in one order: two last admins leaving at once are one after the other
  perform 1 from rowgate.memberships m
    where m.organization_id = p_organization_id and m.role = 'admin' and m.deleted_at is null
    order by m.id for update;
  if v_membership.role = 'admin' and not exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = 'admin' and m.deleted_at is null and m.id <> v_membership.id) then
    raise exception 'The last admin cannot leave the organization: make another member admin first'
      using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.memberships set deleted_at = now() where id = v_membership.id;
end;
$$;
comment on function rowgate.leave_organization(uuid) is '@behavior -*
The current user leaves an organization (SPEC §21).';
grant execute on function rowgate.leave_organization(uuid) to rowgate_user;

--! split: 004-invitations.sql
-- Invitations (SPEC §21): a member manager invites an address with a role; the person who signs
-- in with that address accepts (becoming a member in the same transaction) or declines within
-- 7 days. Creating one answers the same whether or not the address has an account. Seen by the
-- organization's member managers and by the invitee (a web session of the invited address).
create or replace function rowgate_private.invitation_lifetime() returns interval
  language sql immutable set search_path = pg_catalog, pg_temp as $$ select interval '7 days'; $$;
comment on function rowgate_private.invitation_lifetime() is 'How long an invitation can be accepted.';

create table rowgate.invitations (
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  role text not null,
  status text not null default 'pending' check (status in ('pending', 'accepted', 'declined', 'revoked', 'expired')),
  invited_by uuid not null references rowgate.users,
  expires_at timestamptz not null default now() + rowgate_private.invitation_lifetime(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id)
);
comment on table rowgate.invitations is '@behavior -insert -update -delete
Invitations to join an organization (SPEC §21). A pending invitation past expires_at is expired.';
comment on column rowgate.invitations.status is 'pending, accepted, declined, revoked or expired (a pending row past expires_at is expired too).';
create unique index invitations_pending_email on rowgate.invitations (organization_id, email) where status = 'pending';
-- the invitee answers an invitation by its id alone
create index invitations_id on rowgate.invitations (id);
create index invitations_organization_created on rowgate.invitations (organization_id, created_at, id);
create index invitations_email_pending on rowgate.invitations (email, created_at) where status = 'pending';
create index invitations_expiring on rowgate.invitations (expires_at) where status = 'pending';
alter table rowgate.invitations enable row level security;
grant select (id, organization_id, email, role, status, invited_by, expires_at, created_at, updated_at)
  on rowgate.invitations to rowgate_user, rowgate_analyst;

-- The e-mail address of the User of this transaction.
create or replace function rowgate_hidden.current_user_email() returns text
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select u.email from rowgate.users u where u.id = rowgate_hidden.current_user_id() and u.deleted_at is null);
end;
$$;
comment on function rowgate_hidden.current_user_email() is 'The e-mail address of the current User subject, or null.';
grant execute on function rowgate_hidden.current_user_email() to rowgate_user, rowgate_analyst;

create policy select_manage on rowgate.invitations for select to rowgate_user, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('members_read')));
create policy select_invitee_web_session on rowgate.invitations for select to rowgate_user, rowgate_analyst
  using (email = (select rowgate_hidden.current_user_email())
    and (select rowgate_hidden.current_credential_kind()) = 'web_session'
    and (select rowgate_hidden.has_scope('user:read')));

create trigger _100_timestamps before insert or update on rowgate.invitations
  for each row execute function rowgate_private.tg__timestamps();
create trigger _200_check_role before insert or update of role on rowgate.invitations
  for each row execute function rowgate_private.tg__check_role();

-- What the invitee and the managers see beside an invitation: the organization's name and the
-- inviter's, for a caller who may see the invitation itself.
create or replace function rowgate_hidden.invitation_names(p_id uuid)
  returns table (organization_name text, inviter_name text)
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return query
    select o.name, u.name from rowgate.invitations i
      join rowgate.organizations o on o.id = i.organization_id
      left join rowgate.users u on u.id = i.invited_by and u.deleted_at is null
    where i.id = p_id
      and ((i.email = rowgate_hidden.current_user_email() and rowgate_hidden.current_credential_kind() = 'web_session')
        or i.organization_id = any (rowgate_hidden.current_organization_ids('members:manage')));
end;
$$;
comment on function rowgate_hidden.invitation_names(uuid) is '@behavior -*
The organization''s and the inviter''s names of an invitation the caller may see.';
grant execute on function rowgate_hidden.invitation_names(uuid) to rowgate_user, rowgate_analyst;

-- Marks pending invitations past their expiry expired (one event each); the API's upkeep calls
-- it. Whether an invitation can still be answered never depends on it: expires_at decides.
create or replace function rowgate_private.expire_invitations(p_batch integer default 1000) returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_expired integer;
begin
  with due as (
    select i.id from rowgate.invitations i where i.status = 'pending' and i.expires_at <= now()
    order by i.expires_at limit greatest(p_batch, 1) for update skip locked
  )
  update rowgate.invitations i set status = 'expired' from due where i.id = due.id;
  get diagnostics v_expired = row_count;
  return v_expired;
end;
$$;
comment on function rowgate_private.expire_invitations(integer) is 'Marks up to p_batch pending invitations past expires_at expired; returns how many.';
grant execute on function rowgate_private.expire_invitations(integer) to rowgate_authenticator;

-- Creating: scope, reach, the members-management policy, the role (known, and no escalation),
-- not a member already, then the caps of SPEC §21 (50 pending per organization, 100 invitation
-- mails a day; RG429, the detail the seconds until one more is allowed when that is known),
-- counted under a per-organization lock so that concurrent invitations respect them.
create or replace function rowgate.create_invitation(p_organization_id uuid, p_email text, p_role text)
  returns rowgate.invitations
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_email text := lower(p_email);
  v_denial text;
  v_permissions text[];
  v_invitation rowgate.invitations;
  v_oldest timestamptz;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  v_permissions := rowgate_private.role_permissions(p_organization_id, p_role);
  if v_permissions is null then
    raise exception 'Unknown role' using errcode = 'RG422', detail = 'body.role';
  end if;
  if not v_permissions <@ rowgate_hidden.current_permissions(p_organization_id) then
    raise exception 'You can''t invite with a role that has permissions you don''t have' using errcode = 'RG403';
  end if;
  if exists (select 1 from rowgate.memberships m join rowgate.users u on u.id = m.user_id
      where m.organization_id = p_organization_id and m.deleted_at is null and u.email = v_email and u.deleted_at is null) then
    raise exception 'This address belongs to a member already' using errcode = 'RG422', detail = 'body.email';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('rowgate invitations ' || p_organization_id::text, 0));
  update rowgate.invitations set status = 'expired'
    where organization_id = p_organization_id and email = v_email and status = 'pending' and expires_at <= now();
  if exists (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.email = v_email and i.status = 'pending') then
    raise exception 'This address has a pending invitation already: revoke it to invite it again'
      using errcode = 'RG422', detail = 'body.email';
  end if;
  if (select count(*) from (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.status = 'pending' and i.expires_at > now() limit 50) pending) >= 50 then
    raise exception 'At most 50 invitations may be pending in an organization: revoke one, or wait for answers'
      using errcode = 'RG429';
  end if;
  select min(created_at) into v_oldest from (select i.created_at from rowgate.invitations i
      where i.organization_id = p_organization_id and i.created_at > now() - interval '1 day'
      order by i.created_at desc limit 100) sent
    having count(*) >= 100;
  if v_oldest is not null then
    raise exception 'At most 100 invitation mails a day may leave an organization' using errcode = 'RG429',
      detail = greatest(1, ceil(extract(epoch from v_oldest + interval '1 day' - now())))::integer::text;
  end if;
  insert into rowgate.invitations (organization_id, email, role, invited_by)
    values (p_organization_id, v_email, p_role, rowgate_hidden.current_user_id())
    returning * into v_invitation;
  return v_invitation;
end;
$$;
comment on function rowgate.create_invitation(uuid, text, text) is '@behavior -*
Invites an address to the organization (SPEC §21). Past a cap, RG429 (detail: the seconds to wait, when known).';
grant execute on function rowgate.create_invitation(uuid, text, text) to rowgate_user, rowgate_organization;

-- Revoking: a pending invitation of the organization, by a member manager.
create or replace function rowgate.revoke_invitation(p_organization_id uuid, p_id uuid) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.invitations set status = 'revoked'
    where id = p_id and organization_id = p_organization_id and status = 'pending' and expires_at > now();
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
end;
$$;
comment on function rowgate.revoke_invitation(uuid, uuid) is '@behavior -*';
grant execute on function rowgate.revoke_invitation(uuid, uuid) to rowgate_user, rowgate_organization;

-- The invitee's pending invitation, locked: signed in with a web session as the invited address;
-- anyone else, or an invitation expired, revoked or answered, finds nothing (404).
create or replace function rowgate_private.invitee_invitation(p_id uuid) returns rowgate.invitations
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_invitation rowgate.invitations;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  select i.* into v_invitation from rowgate.invitations i join rowgate.organizations o on o.id = i.organization_id
    where i.id = p_id and i.email = rowgate_hidden.current_user_email()
      and i.status = 'pending' and i.expires_at > now() and o.deleted_at is null
    for update of i;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  return v_invitation;
end;
$$;

create or replace function rowgate.accept_invitation(p_id uuid) returns rowgate.memberships
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_invitation rowgate.invitations := rowgate_private.invitee_invitation(p_id);
  v_membership rowgate.memberships;
begin
  if exists (select 1 from rowgate.memberships m where m.organization_id = v_invitation.organization_id
      and m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null) then
    raise exception 'You are a member of this organization already' using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.invitations set status = 'accepted' where id = v_invitation.id;
  insert into rowgate.memberships (user_id, organization_id, role)
    values (rowgate_hidden.current_user_id(), v_invitation.organization_id, v_invitation.role)
    returning * into v_membership;
  return v_membership;
end;
$$;
comment on function rowgate.accept_invitation(uuid) is '@behavior -*
The invitee accepts: the membership is created in the same transaction.';
grant execute on function rowgate.accept_invitation(uuid) to rowgate_user;

create or replace function rowgate.decline_invitation(p_id uuid) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_invitation rowgate.invitations := rowgate_private.invitee_invitation(p_id);
begin
  update rowgate.invitations set status = 'declined' where id = v_invitation.id;
end;
$$;
comment on function rowgate.decline_invitation(uuid) is '@behavior -*';
grant execute on function rowgate.decline_invitation(uuid) to rowgate_user;

-- An invitation's mail goes out in the inviting user's request: with no mail server, to the
-- development outbox.
grant execute on function rowgate.record_outbox_mail(text, text, text) to rowgate_user;

--! split: 005-audit.sql
-- An audit trail with before and after (SPEC §21): every `*.updated` event carries `previous`,
-- the changed fields' values before the change.
alter table rowgate.events add column previous jsonb;
comment on column rowgate.events.previous is 'On a *.updated event, the changed fields'' values before the change; null otherwise.';
grant select (previous) on rowgate.events to rowgate_user, rowgate_organization, rowgate_analyst;

-- Invitation events are seen by the organization's member managers only, like the invitations.
alter table rowgate.events drop constraint events_audience_check;
alter table rowgate.events add constraint events_audience_check check (audience in
  ('members', 'finance_permission', 'finance_policy', 'payouts', 'access_tokens', 'organization_managers', 'member_managers'));
drop policy select_audience on rowgate.events;
create policy select_audience on rowgate.events for select to rowgate_user, rowgate_organization, rowgate_analyst
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
      else false
    end);

-- GET /v1/events/?actor_id=: one actor's events of an organization, newest first, from an index range.
create index events_organization_actor on rowgate.events (organization_id, (actor ->> 'id'), created_at, id);

-- Where a change came from (SPEC §21): the request's client address (SPEC §14) and User-Agent
-- (at most 256 characters), kept apart from the events so that only users with
-- organization:manage (and their analysts) read them, and only for events they may read; erased
-- after 90 days (hidden at once, deleted by the API's upkeep) and when the acting user is deleted.
create table rowgate.event_clients (
  organization_id uuid not null,
  event_id uuid not null,
  audience text not null,
  user_id uuid references rowgate.users,
  ip text check (length(ip) <= 100),
  user_agent text check (length(user_agent) <= 256),
  created_at timestamptz not null default now(),
  primary key (organization_id, event_id),
  foreign key (organization_id, event_id) references rowgate.events on delete cascade
);
comment on table rowgate.event_clients is '@behavior -insert -update -delete
The client address and User-Agent of the request that wrote an event (SPEC §21): for users with organization:manage, 90 days.';
create index event_clients_user on rowgate.event_clients (user_id) where user_id is not null;
create index event_clients_created on rowgate.event_clients (created_at);
alter table rowgate.event_clients enable row level security;
grant select (organization_id, event_id, audience, user_id, ip, user_agent, created_at)
  on rowgate.event_clients to rowgate_user, rowgate_organization, rowgate_analyst;
create policy select_manage on rowgate.event_clients for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.current_subject_kind()) = 'user'
    and (select rowgate_hidden.has_scope('events_read'))
    and created_at > now() - interval '90 days'
    and case audience
      when 'members' then true
      when 'organization_managers' then true
      when 'finance_permission' then organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
      when 'finance_policy' then rowgate_hidden.finance_read_denial(organization_id) is null
      when 'payouts' then rowgate_hidden.finance_read_denial(organization_id) is null
        and (select rowgate_hidden.current_credential_kind()) = 'web_session'
        and (select rowgate_hidden.has_scope('payouts:read'))
      when 'access_tokens' then organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
      when 'member_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
      else false
    end);

create or replace function rowgate_private.erase_event_clients(p_batch integer default 5000) returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_erased integer;
begin
  delete from rowgate.event_clients c using (
    select organization_id, event_id from rowgate.event_clients
    where created_at <= now() - interval '90 days' limit greatest(p_batch, 1)) old
  where c.organization_id = old.organization_id and c.event_id = old.event_id;
  get diagnostics v_erased = row_count;
  return v_erased;
end;
$$;
comment on function rowgate_private.erase_event_clients(integer) is 'Erases up to p_batch client addresses and user agents of events older than 90 days; returns how many.';
grant execute on function rowgate_private.erase_event_clients(integer) to rowgate_authenticator;

create or replace function rowgate_private.tg_users__erase_clients() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  delete from rowgate.event_clients where user_id = new.id;
  return null;
end;
$$;
comment on function rowgate_private.tg_users__erase_clients() is 'A deleted user''s client addresses and user agents are erased from the audit trail.';
create trigger _600_erase_clients after update of deleted_at on rowgate.users
  for each row when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_users__erase_clients();

-- Restated: the actor names `ip` and `user_agent` too, null in the stored event (they live in
-- rowgate.event_clients, for the readers allowed to see them).
create or replace function rowgate_hidden.current_actor() returns jsonb
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_credential_kind text := rowgate_hidden.current_credential_kind();
  v_credential_id uuid := rowgate_hidden.current_credential_id();
  v_impersonator_id uuid;
  v_client_id text;
begin
  if v_kind is null then
    return jsonb_build_object('kind', 'system', 'id', null, 'credential_kind', null, 'credential_id', null,
      'impersonator_id', null, 'oauth2_client_id', null, 'ip', null, 'user_agent', null);
  end if;
  if v_credential_kind = 'web_session' then
    select s.impersonator_id into v_impersonator_id from rowgate_private.sessions s where s.id = v_credential_id;
  elsif v_credential_kind in ('oauth2_user_token', 'oauth2_organization_token') then
    select t.client_id into v_client_id from rowgate_private.oauth2_access_tokens t where t.id = v_credential_id;
    v_credential_kind := 'oauth2_token';
  end if;
  return jsonb_build_object('kind', v_kind, 'id', rowgate_hidden.current_subject_id(),
    'credential_kind', v_credential_kind, 'credential_id', v_credential_id,
    'impersonator_id', v_impersonator_id, 'oauth2_client_id', v_client_id, 'ip', null, 'user_agent', null);
end;
$$;

-- Restated: an update's event carries `previous`; a table may name a status column whose change
-- is its event's type (`invitation.accepted`); role and invitation events carry what their read
-- schemas show beside the row; and the request's client address and User-Agent, trusted only
-- from the API's own sessions, go to rowgate.event_clients.
create or replace function rowgate_private.tg__events() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp set "TimeZone" = 'UTC' as $$
declare
  v_resource text := tg_argv[0];
  v_columns text[] := string_to_array(tg_argv[2], ',');
  v_status_column text := case when tg_nargs > 3 then tg_argv[3] end;
  v_row jsonb := to_jsonb(case when tg_op = 'DELETE' then old else new end);
  v_old jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  v_data jsonb;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
begin
  select jsonb_object_agg(key, value) into v_data from jsonb_each(v_row) where key = any (v_columns);
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
  elsif (v_data - '{updated_at,last_used_at}'::text[])
      = (select coalesce(jsonb_object_agg(key, value), '{}') from jsonb_each(v_old) where key = any (v_columns) and key not in ('updated_at', 'last_used_at')) then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old) o
      where o.key = any (v_columns) and o.key not in ('updated_at', 'last_used_at')
        and o.value is distinct from v_row->o.key;
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
      cross join (select rowgate_hidden.current_actor() as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, rowgate_hidden.current_user_id(), left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$$;

create trigger _400_events after insert or update on rowgate.organization_roles
  for each row execute function rowgate_private.tg__events('role', 'members', 'id,organization_id,name,description,permissions,created_at,updated_at');
create trigger _400_events after insert or update on rowgate.invitations
  for each row execute function rowgate_private.tg__events('invitation', 'member_managers',
    'id,organization_id,email,role,status,invited_by,expires_at,created_at,updated_at', 'status');

-- Restated: webhook endpoints may subscribe to invitation events (member managers only: they are
-- seen by them alone) and to role events.
create or replace function rowgate_hidden.event_type_denial(p_organization_id uuid, p_type text) returns text
  language sql stable as $$
  select case
    when not (p_type ~ '^[a-z_]+\.(created|updated|deleted)$' or p_type in ('order.paid', 'order.refunded')
      or p_type in ('invitation.accepted', 'invitation.declined', 'invitation.revoked', 'invitation.expired')) then 'Unknown event type'
    else case split_part(p_type, '.', 1)
      when 'organization' then null when 'membership' then null when 'product' then null
      when 'customer' then null when 'order' then null when 'member' then null when 'refund' then null
      when 'webhook_endpoint' then null
      when 'role' then case when p_type = 'role.deleted' or p_type ~ '^role\.(created|updated)$' then null else 'Unknown event type' end
      when 'invitation' then case when p_type ~ '\.(updated|deleted)$' then 'Unknown event type'
        else rowgate_hidden.members_management_denial(p_organization_id) end
      when 'transaction' then case when p_organization_id = any (rowgate_hidden.current_organization_ids('finance:read')) then null
        else 'You don''t have permission to read transactions' end
      when 'account' then rowgate_hidden.finance_read_denial(p_organization_id)
      when 'payout_account' then coalesce(rowgate_hidden.finance_read_denial(p_organization_id),
        case when rowgate_hidden.current_credential_kind() is distinct from 'web_session' then 'Payout account events take a web session' end)
      when 'organization_access_token' then rowgate_hidden.access_token_management_denial(p_organization_id)
      else 'Unknown event type'
    end
  end;
$$;

--! split: 006-webhook-bodies.sql
-- A webhook's body is the event as GET /v1/events/{id} answers it to the organization managers who
-- configure endpoints (SPEC §17, §21): the claim hands the sender `previous` too, and the actor's
-- client address and user agent. Restated whole (its columns change): as before otherwise.
drop function rowgate_private.claim_webhook_delivery();
create function rowgate_private.claim_webhook_delivery()
 returns table(delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid, organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamp with time zone, previous jsonb)
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_candidate record;
  v_delivery rowgate_private.webhook_deliveries;
  v_unclaimable uuid[] := '{}';
begin
  for v_candidate in
    with recursive organizations (id) as (
      (select d.organization_id from rowgate_private.webhook_deliveries d
        where d.status = 'pending' order by d.organization_id limit 1)
      union all
      select (select d.organization_id from rowgate_private.webhook_deliveries d
          where d.status = 'pending' and d.organization_id > o.id order by d.organization_id limit 1)
        from organizations o where o.id is not null
    )
    select o.id, due.next_attempt_at, due.event_id
    from organizations o
      cross join lateral (select d.next_attempt_at, d.event_id from rowgate_private.webhook_deliveries d
        where d.organization_id = o.id and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at, d.event_id limit 1) due
    where o.id is not null
    order by due.next_attempt_at, due.event_id
    limit 100
  loop
    begin
      continue when not pg_try_advisory_xact_lock(hashtextextended('rowgate webhook organization ' || v_candidate.id, 0));
      select d.* into v_delivery from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.id = d.endpoint_id
        where d.organization_id = v_candidate.id and d.status = 'pending' and d.next_attempt_at <= now()
          and e.enabled and e.deleted_at is null
          and exists (select 1 from rowgate.events ev where ev.organization_id = d.organization_id and ev.id = d.event_id)
          and exists (select 1 from rowgate_private.webhook_secrets s
            where s.organization_id = d.organization_id and s.endpoint_id = d.endpoint_id)
          and (d.attempts > 0 or not exists (
            select 1 from rowgate_private.webhook_deliveries p
            where p.endpoint_id = d.endpoint_id and p.status = 'pending' and p.attempts = 0 and p.event_id < d.event_id))
        order by d.next_attempt_at, d.event_id
        limit 1
        for update of d skip locked;
      if v_delivery.id is null then
        -- nothing of this organization's to claim: the subtransaction, and its lock, are undone
        raise exception 'nothing claimed' using errcode = 'RGNOC';
      end if;
      exit;
    exception when sqlstate 'RGNOC' then
      v_delivery := null;
    end;
    v_unclaimable := v_unclaimable || v_candidate.id;
  end loop;
  if v_delivery.id is null then
    -- nothing claimed: what kept the organizations candidates with nothing to claim, when it is undeliverable,
    -- repaired now and committed with this claim (never held across an attempt). The endpoint is read
    -- locked, so that an enabling that has not committed skips the row (the next claim sees it again) and
    -- one that commits after this sees it paused and resumes it
    with stale as (
      select d.id, (e.deleted_at is not null or ev.id is null or s.endpoint_id is null) as gone
      from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.organization_id = d.organization_id and e.id = d.endpoint_id
        left join rowgate.events ev on ev.organization_id = d.organization_id and ev.id = d.event_id
        left join rowgate_private.webhook_secrets s on s.organization_id = d.organization_id and s.endpoint_id = d.endpoint_id
      where d.organization_id = any (v_unclaimable) and d.status = 'pending'
        and (not e.enabled or e.deleted_at is not null or ev.id is null or s.endpoint_id is null)
      for update of d skip locked
      for share of e skip locked
    ), removed as (
      delete from rowgate_private.webhook_deliveries d using stale where d.id = stale.id and stale.gone
    )
    update rowgate_private.webhook_deliveries d set status = 'paused' from stale where d.id = stale.id and not stale.gone;
    return;
  end if;
  return query
    select v_delivery.id, v_delivery.attempts + 1, e.id, e.url, s.sealed_secret,
      ev.id, ev.organization_id, ev.type, ev.resource_id, ev.data,
      ev.actor || jsonb_build_object('ip', c.ip, 'user_agent', c.user_agent), ev.request_id, ev.created_at, ev.previous
    from rowgate.webhook_endpoints e
      join rowgate_private.webhook_secrets s on s.organization_id = e.organization_id and s.endpoint_id = e.id
      join rowgate.events ev on ev.id = v_delivery.event_id
      left join rowgate.event_clients c on c.organization_id = ev.organization_id and c.event_id = ev.id
    where e.id = v_delivery.endpoint_id;
end;
$$;
grant execute on function rowgate_private.claim_webhook_delivery() to rowgate_authenticator;

--! split: 007-operations.sql
-- The operations of teams (roles, invitations, leaving) join the table the
-- explanations read, so that a check answers for them too.
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'events:get', 'events:list', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'openapi', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:update');
insert into rowgate_hidden.operations (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) values
  ('accounts:create', 'POST', '/v1/accounts/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('accounts:get', 'GET', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('accounts:update', 'PATCH', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_write', 'payouts_write'], 'organization', 'finance_write', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('auth:logout', 'POST', '/v1/auth/logout', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 204, 'none', null, null, null),
  ('authorization:check', 'POST', '/v1/authorization/check', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorization:operations', 'GET', '/v1/authorization/operations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
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
  ('events:get', 'GET', '/v1/events/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', 'read', null, 200, 'visible', 'events', '{"id":"id"}'::jsonb, 'read'),
  ('events:list', 'GET', '/v1/events/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('impersonations:create', 'POST', '/v1/impersonations/', array['web_session'], array['user:write'], 'web_user_write', 'platform_admin', null, 201, 'none', null, null, 'platform_admin'),
  ('invitations:accept', 'POST', '/v1/invitations/{id}/accept', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('invitations:create', 'POST', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:decline', 'POST', '/v1/invitations/{id}/decline', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('invitations:list', 'GET', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:mine', 'GET', '/v1/invitations/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('invitations:revoke', 'DELETE', '/v1/organizations/{id}/invitations/{invitation_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('login_code:authenticate', 'POST', '/v1/login-code/authenticate', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('login_code:request', 'POST', '/v1/login-code/request', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('members:add', 'POST', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('members:leave', 'DELETE', '/v1/organizations/{id}/members/me', array['web_session'], array['user:write'], 'web_user_write', 'read', null, 204, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('members:list', 'GET', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('members:remove', 'DELETE', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('members:update', 'PATCH', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
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
  ('openapi', 'GET', '/v1/openapi.json', '{}'::text[], '{}'::text[], 'public', null, null, 200, 'none', null, null, null),
  ('orders:create', 'POST', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('orders:get', 'GET', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', 'read', null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, 'read'),
  ('orders:list', 'GET', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('orders:update', 'PATCH', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 200, 'authorize', 'order', '{"id":"id"}'::jsonb, 'orders:write'),
  ('organization_access_tokens:create', 'POST', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 201, 'target', null, null, 'access_token_management'),
  ('organization_access_tokens:delete', 'DELETE', '/v1/organization-access-tokens/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 204, 'authorize', 'organization_access_token', '{"id":"id"}'::jsonb, 'access_token_management'),
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
  ('roles:create', 'POST', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:delete', 'DELETE', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:list', 'GET', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('roles:update', 'PATCH', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
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
  ('webhook_endpoints:update', 'PATCH', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage')
on conflict (operation) do update set method = excluded.method, path = excluded.path, credentials = excluded.credentials, scopes = excluded.scopes, access_class = excluded.access_class, policy = excluded.policy, permission = excluded.permission, status = excluded.status, lookup = excluded.lookup, resource = excluded.resource, match = excluded.match, policy_key = excluded.policy_key;
