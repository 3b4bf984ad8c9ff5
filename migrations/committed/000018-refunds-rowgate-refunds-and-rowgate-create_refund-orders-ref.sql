--! Previous: sha1:bf28329082cbfa716ac624adb52cf33e0caa6209
--! Hash: sha1:c0410d18661feeff078cc857e2e5b945a35c9b12
--! Message: Refunds: rowgate.refunds and rowgate.create_refund, orders' refunded_amount, a status change to refunded refunds the rest through the same path (issue 17 part 5, SPEC §18)

--! split: 001-refund-scopes.sql
-- Refunds (issue 17 part 5, SPEC §3, §18): the scopes that read and create
-- refunds. refunds_write implies refunds_read, as every write scope its read
-- scope; web sessions and impersonation sessions pick them up from this table
-- (rowgate_private.all_scopes() and read_scopes()).
insert into rowgate_private.scopes (name, implies) values
  ('refunds_read', null), ('refunds_write', 'refunds_read')
  on conflict (name) do nothing;

--! split: 002-orders-refunded-amount.sql
-- Orders gain refunded_amount (SPEC §18): how much of the order has been given
-- back, from 0 to its amount. Only the refund path writes it (no API role is
-- granted to update it), so it always equals the sum of the order's refunds.
-- Orders refunded before refunds existed were refunded whole: their
-- refunded_amount is their amount (their refund rows are written below).
alter table rowgate.orders add column if not exists refunded_amount bigint not null default 0;
alter table rowgate.orders drop constraint if exists orders_refunded_amount_check;
alter table rowgate.orders add constraint orders_refunded_amount_check check (refunded_amount >= 0 and refunded_amount <= amount);
-- (the orders' own triggers stay out of it: this is no change of the orders,
-- so neither updated_at nor an event moves)
alter table rowgate.orders disable trigger user;
update rowgate.orders set refunded_amount = amount where status = 'refunded' and refunded_amount <> amount;
alter table rowgate.orders enable trigger user;
-- the portal shows it too: what was given back is the customer's business, unlike metadata
grant select (refunded_amount) on rowgate.orders to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
comment on column rowgate.orders.refunded_amount is 'How much of the amount has been refunded (the sum of its refunds), in the minor unit.';

-- A refund names its order together with the order's organization (the
-- foreign key below), so that both tables stay distributable by
-- organization_id (docs/scaling.md, test/citus-readiness.test.ts).
create unique index if not exists orders_organization_id on rowgate.orders (organization_id, id);

--! split: 003-refunds-table.sql
-- The refunds (SPEC §18): money given back on a paid order, in one or several
-- refunds, never more than the order's amount in total. A refund is a
-- financial record: it is never changed or deleted (no update, no soft
-- delete), like a transaction. Keyed by its organization first, like the
-- events, so the table can be distributed by organization_id; `id` alone is
-- indexed for GET /v1/refunds/{id}.
create table if not exists rowgate.refunds (
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  order_id uuid not null,
  amount bigint not null check (amount >= 1 and amount <= 100000000000),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  reason text not null check (reason in ('duplicate', 'fraudulent', 'customer_request', 'other')),
  comment text check (length(comment) <= 1000),
  metadata jsonb not null default '{}' constraint refunds_metadata_valid check (rowgate_hidden.metadata_is_valid(metadata)),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, order_id) references rowgate.orders (organization_id, id)
);
create index if not exists refunds_id on rowgate.refunds (id);
-- lists: per organization by creation and by amount; one order's refunds (the filter, and the sum the triggers check)
create index if not exists refunds_organization_created on rowgate.refunds (organization_id, created_at, id);
create index if not exists refunds_organization_amount on rowgate.refunds (organization_id, amount, id);
create index if not exists refunds_order on rowgate.refunds (organization_id, order_id, created_at, id);
create index if not exists refunds_metadata on rowgate.refunds using gin (metadata jsonb_path_ops);
drop trigger if exists _100_timestamps on rowgate.refunds;
alter table rowgate.refunds enable row level security;
comment on table rowgate.refunds is E'@behavior -insert -update -delete\nMoney given back on a paid order (SPEC §18); created through rowgate.create_refund only.';

-- Who reads refunds: whoever reads the order (every member of its
-- organization, and the organization itself), with the refunds_read scope.
-- Nobody writes the table directly: rowgate.create_refund (security definer)
-- is the only way in, so no insert or update policy exists.
drop policy if exists select_member on rowgate.refunds;
create policy select_member on rowgate.refunds for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('refunds_read')));
grant select (id, organization_id, order_id, amount, currency, reason, comment, metadata, created_at, updated_at)
  on rowgate.refunds to rowgate_user, rowgate_organization, rowgate_analyst;

-- Orders refunded before refunds existed get the refund row they would have
-- had: the whole amount, reason `other`, at the time of their refund
-- transaction. Written before the triggers below, so history writes no events
-- (the trail already holds their order.refunded).
insert into rowgate.refunds (organization_id, order_id, amount, currency, reason, comment, created_at, updated_at)
  select o.organization_id, o.id, o.amount, o.currency, 'other', 'Refunded before refunds were recorded',
    coalesce(t.created_at, o.updated_at), coalesce(t.created_at, o.updated_at)
  from rowgate.orders o
  left join lateral (select min(x.created_at) as created_at from rowgate.transactions x
    where x.order_id = o.id and x.type = 'refund') t on true
  where o.status = 'refunded' and o.amount > 0
    and not exists (select 1 from rowgate.refunds r where r.order_id = o.id);

-- created_at and updated_at kept by the database from now on
create trigger _100_timestamps before insert or update on rowgate.refunds
  for each row execute function rowgate_private.tg__timestamps();

-- Exact totals of GET /v1/refunds/ from the striped per-organization counts
-- (migration 000011), starting from the refunds that exist.
drop trigger if exists _900_count_rows on rowgate.refunds;
create trigger _900_count_rows after insert or delete on rowgate.refunds
  for each row execute function rowgate_private.tg__count_rows('refunds', 'hard');
delete from rowgate_private.organization_row_counts where resource = 'refunds';
insert into rowgate_private.organization_row_counts (organization_id, resource, row_count)
  select organization_id, 'refunds', count(*) from rowgate.refunds group by organization_id;

--! split: 004-create-refund.sql
-- The one place a refund is written (SPEC §18): the refund row and its
-- `refund` transaction of −amount. Its callers hold the order's row lock and
-- have checked the arithmetic: rowgate.create_refund (POST /v1/refunds/,
-- GraphQL createRefund) and the orders' status trigger (an order whose status
-- is set to `refunded` refunds what remains, whatever the interface).
create or replace function rowgate_private.record_refund(p_order rowgate.orders, p_amount bigint, p_reason text,
  p_comment text, p_metadata jsonb) returns rowgate.refunds
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
declare
  v_refund rowgate.refunds;
begin
  insert into rowgate.refunds (organization_id, order_id, amount, currency, reason, comment, metadata)
    values (p_order.organization_id, p_order.id, p_amount, p_order.currency, p_reason, p_comment, coalesce(p_metadata, '{}'))
    returning * into v_refund;
  insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
    values (p_order.organization_id, p_order.id, 'refund', -p_amount, p_order.currency);
  return v_refund;
end;
$$;
comment on function rowgate_private.record_refund(rowgate.orders, bigint, text, text, jsonb) is
  'Writes a refund and its transaction; the caller holds the order''s row lock and checked the amount.';

-- Refunding an order (POST /v1/refunds/, GraphQL createRefund): the checks of
-- SPEC §5 in order (the refunds_write scope; the order within reach, else 422
-- at body.order_id as for any id a body names; the orders:write role
-- permission, Organization subjects allowed), then the input, then the
-- arithmetic under the order's row lock: only a `paid` order, by at least 1
-- and at most what remains (422 at body.amount). Two refunds of one order run
-- one after the other, the second seeing what the first left, so together
-- they never exceed the order. The refund that brings refunded_amount to the
-- amount sets the status `refunded` (order.updated and order.refunded events).
-- Security definer: it reads the order past RLS (a refunds_write token needs
-- no orders_read) and writes what no API role may write directly.
-- p_amount null refunds what remains.
create or replace function rowgate.create_refund(p_order_id uuid, p_amount bigint, p_reason text,
  p_comment text default null, p_metadata jsonb default null) returns rowgate.refunds
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_order rowgate.orders;
  v_denial text;
  v_remaining bigint;
  v_amount bigint;
  v_refund rowgate.refunds;
begin
  perform rowgate_hidden.assert_scope('refunds_write');
  select o.* into v_order from rowgate.orders o
    where o.id = p_order_id and o.organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    raise exception 'Order not found' using errcode = 'RG422', detail = 'body.order_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_order.organization_id, 'orders:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_reason is null or p_reason not in ('duplicate', 'fraudulent', 'customer_request', 'other') then
    raise exception 'The reason is one of duplicate, fraudulent, customer_request, other' using errcode = 'RG422', detail = 'body.reason';
  end if;
  if length(p_comment) > 1000 then
    raise exception 'A comment is at most 1000 characters' using errcode = 'RG422', detail = 'body.comment';
  end if;
  if p_metadata is not null and not rowgate_hidden.metadata_is_valid(p_metadata) then
    raise exception 'Metadata is an object of at most 50 keys of 1-40 characters of A-Z, a-z, 0-9, _ and -; values strings of at most 500 characters, integers or booleans'
      using errcode = 'RG422', detail = 'body.metadata';
  end if;
  -- the order's row lock: what remains is read after any refund of the order still running has ended
  select o.* into v_order from rowgate.orders o where o.id = p_order_id for update;
  if v_order.status <> 'paid' then
    raise exception 'Only a paid order can be refunded; this one is %', v_order.status
      using errcode = 'RG422', detail = 'body.order_id';
  end if;
  v_remaining := v_order.amount - v_order.refunded_amount;
  v_amount := coalesce(p_amount, v_remaining);
  if v_amount < 1 then
    raise exception 'A refund is at least 1 (in the currency''s minor unit)' using errcode = 'RG422', detail = 'body.amount';
  end if;
  if v_amount > v_remaining then
    raise exception 'The refund exceeds what remains to refund of the order: % of % %', v_remaining, v_order.amount, v_order.currency
      using errcode = 'RG422', detail = 'body.amount';
  end if;
  v_refund := rowgate_private.record_refund(v_order, v_amount, p_reason, p_comment, p_metadata);
  update rowgate.orders set refunded_amount = refunded_amount + v_amount,
      status = case when refunded_amount + v_amount = amount then 'refunded' else status end
    where id = v_order.id;
  return v_refund;
end;
$$;
grant execute on function rowgate.create_refund(uuid, bigint, text, text, jsonb) to rowgate_user, rowgate_organization;
comment on function rowgate.create_refund(uuid, bigint, text, text, jsonb) is
  'Refunds a paid order, by at most what remains (null: all of it); the order''s status becomes refunded when nothing remains.';

--! split: 005-order-status-refunds.sql
-- Restates the orders' check and transactions triggers (migration 000001) so
-- that setting an order's status to `refunded` goes through the refund path
-- (SPEC §18: PATCH /v1/orders/{id} with status refunded refunds the
-- remainder): the status change sets refunded_amount to the amount (before),
-- and the transactions trigger records what no refund row records yet as one
-- refund of reason `other` (rowgate_private.record_refund: the refund row and
-- its transaction), instead of writing a refund transaction of its own. REST,
-- GraphQL's updateOrderByRowId and SQL all take this path. An order inserted
-- as `refunded` (operators and fixtures only; the API creates pending or paid
-- orders) is refunded whole the same way.
create or replace function rowgate_private.tg_orders__check() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if tg_op = 'INSERT' then
    if not exists (select 1 from rowgate.customers c where c.id = new.customer_id
        and c.organization_id = new.organization_id and c.deleted_at is null) then
      raise exception 'The customer does not belong to the product''s organization' using errcode = 'RG422', detail = 'body.customer_id';
    end if;
    if new.status = 'refunded' then
      if rowgate_hidden.current_subject_kind() is not null then
        raise exception 'An order is created pending or paid, and refunded afterwards' using errcode = 'RG422', detail = 'body.status';
      end if;
      new.refunded_amount := new.amount;
    end if;
  elsif new.status is distinct from old.status and not (
      (old.status = 'pending' and new.status = 'paid') or (old.status = 'paid' and new.status = 'refunded')) then
    raise exception 'An order goes from pending to paid to refunded; % to % is not allowed', old.status, new.status
      using errcode = 'RG422', detail = 'body.status';
  elsif old.status = 'paid' and new.status = 'refunded' then
    -- refunded: nothing remains (the refund of the rest is written after the update)
    new.refunded_amount := new.amount;
  end if;
  return new;
end;
$$;

create or replace function rowgate_private.tg_orders__transactions() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_unrecorded bigint;
begin
  if new.status = 'paid' and (tg_op = 'INSERT' or old.status <> 'paid') then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'payment', new.amount, new.currency);
  elsif new.status = 'refunded' and (tg_op = 'INSERT' or old.status <> 'refunded') then
    -- what the status change refunded that no refund row records: rowgate.create_refund
    -- writes its refund before it sets the status, so then nothing is left over
    v_unrecorded := new.refunded_amount - (select coalesce(sum(r.amount), 0) from rowgate.refunds r
      where r.organization_id = new.organization_id and r.order_id = new.id);
    if v_unrecorded > 0 then
      perform rowgate_private.record_refund(new, v_unrecorded, 'other',
        'The rest of the order, refunded when its status was set to refunded', '{}');
    end if;
  end if;
  return null;
end;
$$;

-- Events (SPEC §17): a refund is `refund.created`, read by whoever reads the
-- organization's orders (the audience `members`); orders carry
-- refunded_amount in `data`, as REST answers them now, so a partial refund is
-- an `order.updated` and the one that completes it also `order.refunded`.
drop trigger if exists _400_events on rowgate.refunds;
create trigger _400_events after insert or update on rowgate.refunds for each row
  execute function rowgate_private.tg__events('refund', 'members',
    'id,organization_id,order_id,amount,currency,reason,comment,metadata,created_at,updated_at');
drop trigger if exists _400_events on rowgate.orders;
create trigger _400_events after insert or update on rowgate.orders for each row
  execute function rowgate_private.tg__events('order', 'members',
    'id,organization_id,customer_id,product_id,amount,currency,status,refunded_amount,metadata,created_at,updated_at');
