--! Previous: sha1:73f85f150846f0484115038534fd197e8a517e7d
--! Hash: sha1:ac66263425d87bbd97c05ffcc6184c50f5872edf
--! Message: read scopes bind in the database; per-organization row counts for exact, cheap totals

-- Read scopes bind in the database too. A token's read scopes were checked by
-- the REST layer only, so GraphQL showed a token every row its subject reaches;
-- now each select policy also requires the scope that reads the table (write
-- scopes imply their read scopes: rowgate.scopes holds the expanded set).
alter policy select_self on rowgate.users
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
alter policy select_colleague on rowgate.users
  using (id = any ((select rowgate_hidden.current_colleague_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('members_read')));
-- and changing oneself needs user:write (the policy of the first migration had no scope)
alter policy update_self on rowgate.users
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:write')));
alter policy select_own on rowgate.personal_access_tokens
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
alter policy select_own on rowgate.oauth2_clients
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('user:read')));
alter policy select_member on rowgate.organizations
  using (id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('organizations_read')));
alter policy select_member on rowgate.memberships
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('members_read')));
alter policy select_manage on rowgate.organization_access_tokens
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user'
    and (select rowgate_hidden.has_scope('organization_access_tokens_read')));
alter policy select_member on rowgate.products
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('products_read')));
alter policy select_member on rowgate.customers
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('customers_read')));
alter policy select_self on rowgate.customers
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_read')));
alter policy select_member on rowgate.customer_members
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null
    and (select rowgate_hidden.has_scope('customers_read')));
alter policy select_self on rowgate.customer_members
  using (id = (select rowgate_hidden.current_subject_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_read')));
alter policy select_member on rowgate.orders
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('orders_read')));
alter policy select_own on rowgate.orders
  using (customer_id = (select rowgate_hidden.current_customer_id())
    and (select rowgate_hidden.has_scope('customer_portal_read')));
-- finance-read data: any of the finance read scopes (SPEC §3)
alter policy select_finance on rowgate.transactions
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
    and (select rowgate_hidden.has_scope('transactions_read') or rowgate_hidden.has_scope('payouts_read')));
alter policy select_finance on rowgate.accounts
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('transactions_read') or rowgate_hidden.has_scope('payouts_read')));
alter policy select_finance on rowgate.payout_accounts
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts:read') or rowgate_hidden.has_scope('payouts_read')));

-- Creating an order looked the product up through RLS, which now needs
-- products_read; an orders_write token must not need it. The function resolves
-- the product past RLS and runs the same checks itself: scope, reach (422 at
-- body.product_id), then orders:write.
create or replace function rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text)
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

-- The policy functions are granted to customer and member subjects, and they
-- read the permissions table for the denial reason: those roles may read it too.
grant select (name, verb, things) on rowgate.permissions to rowgate_customer, rowgate_member, rowgate_anonymous;
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

insert into rowgate_private.organization_row_counts (organization_id, resource, row_count)
  select organization_id, 'orders', count(*) from rowgate.orders group by organization_id
  union all select organization_id, 'transactions', count(*) from rowgate.transactions group by organization_id
  union all select organization_id, 'products', count(*) from rowgate.products where deleted_at is null group by organization_id
  union all select organization_id, 'customers', count(*) from rowgate.customers where deleted_at is null group by organization_id;

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
