-- An organization always keeps an admin, whatever requests run at once (SPEC §21). Every
-- change that can take away an admin (a demotion, a removal, leaving, deleting the user;
-- through REST, GraphQL's updateMembership or a function) takes the organization's admin
-- lock, an advisory lock keyed by the organization, and decides whether another admin
-- remains only once it holds it: two admins demoting or removing each other are one after
-- the other, and the second sees the first's committed change (each statement of a
-- volatile function reads a fresh snapshot under READ COMMITTED) and is refused.
--
-- One order: the membership row first, then its organization's admin lock. An UPDATE has
-- locked its row before any row trigger runs, so a lock taken in the trigger comes after
-- the row whatever the path, and every function follows the same order (it locks its
-- membership row, then the organization). A holder of the admin lock waits for no
-- membership row of that organization (each transaction changes one membership per
-- organization), and a change spanning several organizations (deleting a user) takes
-- them in organization id order: no cycle, so no deadlock. Locking the other admins'
-- rows instead would be a cycle: each transaction holds the row the other one wants.
--
-- An admin is a membership with the built-in `admin` role; a custom role holding every
-- permission does not count (docs/teams.md).

create or replace function rowgate_private.lock_organization_admins(p_organization_id uuid)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('rowgate admins ' || p_organization_id::text, 0));
$$;
comment on function rowgate_private.lock_organization_admins(uuid) is
  'The organization''s admin lock: held by whoever decides that another admin remains.';

-- Restated: the check now runs under the organization's admin lock, and a deleted user is no
-- longer exempt (deleting a user who is the last admin of an organization with other members
-- is refused; an organization it is the only member of is deleted first, which exempts it).
create or replace function rowgate_private.tg_memberships__keep_an_admin()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if old.role = 'admin' and old.deleted_at is null and (new.role <> 'admin' or new.deleted_at is not null) then
    perform rowgate_private.lock_organization_admins(old.organization_id);
    if not exists (select 1 from rowgate.memberships m where m.organization_id = old.organization_id
        and m.role = 'admin' and m.deleted_at is null and m.id <> old.id)
      and exists (select 1 from rowgate.organizations o where o.id = old.organization_id and o.deleted_at is null) then
      raise exception 'An organization needs at least one admin' using errcode = 'RG422', detail = 'path.user_id';
    end if;
  end if;
  return new;
end;
$$;

-- Restated: the member's own row, then the organization's admin lock (the order every path
-- keeps), in place of locking the other admins' rows: a leaver holding its own row while
-- waiting for another's is a cycle with that admin leaving at the same moment.
create or replace function rowgate.leave_organization(p_organization_id uuid)
returns void
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
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
  perform rowgate_private.lock_organization_admins(p_organization_id);
  if v_membership.role = 'admin' and not exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = 'admin' and m.deleted_at is null and m.id <> v_membership.id) then
    raise exception 'The last admin cannot leave the organization: make another member admin first'
      using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.memberships set deleted_at = now() where id = v_membership.id;
end;
$$;

-- The user's memberships, each row locked and then its organization's admin lock taken,
-- organization by organization in id order: what deleting a user holds before it decides.
create or replace function rowgate_private.lock_user_memberships(p_user_id uuid)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_organization_id uuid;
begin
  for v_organization_id in
    select m.organization_id from rowgate.memberships m
      where m.user_id = p_user_id and m.deleted_at is null order by m.organization_id
  loop
    perform 1 from rowgate.memberships m
      where m.user_id = p_user_id and m.organization_id = v_organization_id and m.deleted_at is null
      for update;
    perform rowgate_private.lock_organization_admins(v_organization_id);
  end loop;
end;
$$;
comment on function rowgate_private.lock_user_memberships(uuid) is
  'Locks a user''s memberships and their organizations'' admin locks in the one order (SPEC §21).';

-- Restated: a deleted user's memberships end organization by organization under their
-- admin locks; an organization of which it is the only member is deleted with it, and the
-- last admin of one with other members is refused by the keep-an-admin trigger.
create or replace function rowgate_private.tg_users__leave_organizations()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_private.lock_user_memberships(new.id);
  for v_membership in
    select m.* from rowgate.memberships m where m.user_id = new.id and m.deleted_at is null order by m.organization_id
  loop
    if not exists (select 1 from rowgate.memberships m where m.organization_id = v_membership.organization_id
        and m.deleted_at is null and m.id <> v_membership.id) then
      update rowgate.organizations set deleted_at = new.deleted_at where id = v_membership.organization_id and deleted_at is null;
    end if;
    update rowgate.memberships set deleted_at = new.deleted_at where id = v_membership.id;
  end loop;
  return null;
end;
$$;

-- Restated: before the user is deleted, its memberships and their organizations' admin
-- locks are held, and the organizations it is the last admin of while others are members
-- are named in a 422 (SPEC §21): make another member admin, or delete them, first. A 422
-- rolls the whole request back, the revoked credentials with it.
create or replace function rowgate.delete_current_user()
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_orphaned text;
begin
  perform rowgate_hidden.assert_scope('user:write');
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
$$;
