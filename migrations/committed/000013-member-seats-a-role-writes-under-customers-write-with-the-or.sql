--! Previous: sha1:207b052cff1343af692e9983f9cc467dc72f3627
--! Hash: sha1:43c77429e015acf11fc872c107570a6b4bccd9f8
--! Message: Member seats: a role, writes under customers:write with the organization taken from the customer, a soft delete that ends the seat's member sessions, seats removed with their customer, row counts for GET /v1/members/

-- Member seats (issue 17, SPEC §18): the seats of a business customer existed
-- with their read policies and member sessions, but nothing created, changed or
-- removed one. This gives them a role, write policies under the customers:write
-- permission (customers_write scope), their organization taken from the
-- customer, a soft delete that ends the seat's member sessions at once, and the
-- per-organization row counts and indexes that GET /v1/members/ needs.

alter table rowgate.customer_members add column if not exists role text not null default 'member'
  check (role in ('owner', 'billing_manager', 'member'));
comment on column rowgate.customer_members.role is 'owner, billing_manager or member.';

-- lists: /v1/members/ sorted by e-mail per organization; one customer's seats by creation
create index if not exists customer_members_organization_email on rowgate.customer_members (organization_id, email, id)
  where deleted_at is null;
create index if not exists customer_members_customer_created on rowgate.customer_members (customer_id, created_at, id)
  where deleted_at is null;

-- A seat belongs to its customer's organization: the organization is taken from
-- the customer, which must be live and, for a request's subject, within its
-- reach (otherwise 422 at body.customer_id: the same answer for a customer that
-- does not exist and one of another organization). The insert policy then asks
-- customers:write. Operators' sessions (no subject) are not narrowed.
create or replace function rowgate_private.tg_customer_members__organization() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  select c.organization_id into new.organization_id from rowgate.customers c
    where c.id = new.customer_id and c.deleted_at is null
      and (rowgate_hidden.current_subject_kind() is null
        or c.organization_id = any (rowgate_hidden.current_organization_ids()));
  if new.organization_id is null then
    raise exception 'Customer not found' using errcode = 'RG422', detail = 'body.customer_id';
  end if;
  return new;
end;
$$;
drop trigger if exists _200_organization on rowgate.customer_members;
create trigger _200_organization before insert on rowgate.customer_members
  for each row execute function rowgate_private.tg_customer_members__organization();

-- Writes: the role permission customers:write (Organization subjects bypass it)
-- and the customers_write scope, as for customers themselves.
drop policy if exists insert_write on rowgate.customer_members;
create policy insert_write on rowgate.customer_members for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and (select rowgate_hidden.has_scope('customers_write')));
drop policy if exists update_write on rowgate.customer_members;
create policy update_write on rowgate.customer_members for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('customers_write')));
grant select (role) on rowgate.customer_members to rowgate_user, rowgate_organization, rowgate_member, rowgate_analyst;
grant insert (customer_id, email, name, role), update (email, name, role)
  on rowgate.customer_members to rowgate_user, rowgate_organization;

-- A seat removed ends its member sessions at once (authenticate() already
-- refuses a deleted seat's sessions; the sessions are revoked too, so that no
-- later change can bring them back).
create or replace function rowgate_private.tg_customer_members__end_sessions() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate_private.sessions set revoked_at = now() where member_id = new.id and revoked_at is null;
  return null;
end;
$$;
drop trigger if exists _500_end_sessions on rowgate.customer_members;
create trigger _500_end_sessions after update of deleted_at on rowgate.customer_members
  for each row when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_customer_members__end_sessions();

-- A customer removed takes its seats with it (they would otherwise stay listed
-- under GET /v1/members/ for a customer that answers 404).
create or replace function rowgate_private.tg_customers__remove_seats() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate.customer_members set deleted_at = new.deleted_at where customer_id = new.id and deleted_at is null;
  return null;
end;
$$;
drop trigger if exists _500_remove_seats on rowgate.customers;
create trigger _500_remove_seats after update of deleted_at on rowgate.customers
  for each row when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_customers__remove_seats();

-- Removing a seat (DELETE /v1/customers/{id}/members/{member_id}): the select
-- policy hides deleted rows, so the marking update runs here, after the same
-- checks as every soft delete: the scope, the customer resolved and reached
-- (404), the customers:write policy (403), the seat being the customer's (404).
create or replace function rowgate.delete_customer_member(p_customer_id uuid, p_member_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('customers_write');
  select a.organization_id, a.denial into v_organization_id, v_denial
    from rowgate_hidden.authorize('customer', p_customer_id, 'customers:write') a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if not exists (select 1 from rowgate.customer_members m
      where m.id = p_member_id and m.customer_id = p_customer_id and m.deleted_at is null) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.customer_members set deleted_at = now() where id = p_member_id;
end;
$$;
grant execute on function rowgate.delete_customer_member(uuid, uuid) to rowgate_user, rowgate_organization;
comment on function rowgate.delete_customer_member(uuid, uuid) is E'@behavior -*';

-- Exact totals of GET /v1/members/ from the per-organization counts (issue 7),
-- starting from the seats that exist.
drop trigger if exists _900_count_rows on rowgate.customer_members;
create trigger _900_count_rows after insert or delete or update of deleted_at on rowgate.customer_members
  for each row execute function rowgate_private.tg__count_rows('customer_members', 'soft');
delete from rowgate_private.organization_row_counts where resource = 'customer_members';
insert into rowgate_private.organization_row_counts (organization_id, resource, row_count)
  select organization_id, 'customer_members', count(*) from rowgate.customer_members where deleted_at is null
  group by organization_id;
