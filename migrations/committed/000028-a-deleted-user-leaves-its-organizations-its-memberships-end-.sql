--! Previous: sha1:0ac9a621c90171e440e3f9d33f71273434890f54
--! Hash: sha1:4398d83373d63ee45be361eaf6db1b99afe7ea52
--! Message: A deleted user leaves its organizations: its memberships end with it, however it is deleted

--! split: 001-a-deleted-account-leaves-its-organizations.sql
-- A user whose account was deleted stayed a member of their organizations:
-- REST's members list hid them (it joins the live users), but GraphQL's
-- allMemberships and an analyst's memberships showed the deleted user's id,
-- role and join time, and the totals of the two disagreed (found by a parity
-- attack). A user's deletion now ends its memberships as removing a member
-- does (membership.deleted events included), however it is deleted (DELETE
-- /v1/users/me, or an operator in SQL): a trigger on the users table, not a
-- step of one function. The memberships of users deleted before this
-- migration are ended the same way, without events. Restoring a user
-- (deleted_at back to null) does not restore its memberships: an operator
-- adds them again.
--
-- The last admin of an organization may still be deleted, as before (the
-- organization is then left without an admin either way): the rule that keeps
-- an admin applies to memberships of live users only.
create or replace function rowgate_private.tg_memberships__keep_an_admin() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if old.role = 'admin' and (new.role <> 'admin' or new.deleted_at is not null)
    and not exists (select 1 from rowgate.memberships m where m.organization_id = old.organization_id
      and m.role = 'admin' and m.deleted_at is null and m.id <> old.id)
    and exists (select 1 from rowgate.organizations o where o.id = old.organization_id and o.deleted_at is null)
    and exists (select 1 from rowgate.users u where u.id = old.user_id and u.deleted_at is null) then
    raise exception 'An organization needs at least one admin' using errcode = 'RG422', detail = 'path.user_id';
  end if;
  return new;
end;
$$;

create function rowgate_private.tg_users__leave_organizations() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate.memberships set deleted_at = new.deleted_at where user_id = new.id and deleted_at is null;
  return null;
end;
$$;
comment on function rowgate_private.tg_users__leave_organizations() is 'A deleted user is no longer a member of any organization.';

create trigger _500_leave_organizations after update of deleted_at on rowgate.users
  for each row when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_users__leave_organizations();

-- Those deletions are old news: ending their memberships now sends no
-- membership.deleted events (and so no webhooks) for users deleted long ago.
alter table rowgate.memberships disable trigger _400_events;
update rowgate.memberships m set deleted_at = u.deleted_at
from rowgate.users u
where u.id = m.user_id and u.deleted_at is not null and m.deleted_at is null;
alter table rowgate.memberships enable trigger _400_events;
