--! Previous: sha1:20aa32aa934ff2693b56c8965ce5a78ea22fcbed
--! Hash: sha1:4dc3543fa8201c83fcd89d3e7ebe12a2fb4e92d0
--! Message: Changes read by transaction horizon, not by id; a refund names its amount; an order inserted refunded was paid first

--! split: 001-user-changes-read-by-transaction-horizon.sql
-- Why: a server read what changed with `id > <the last id it read>`, but an
-- identity value is taken when a row is inserted, not when its transaction
-- commits. A transaction that inserted change N and committed after another's
-- N+1 had been read was never read: its users' answers stayed in every other
-- server's cache until they aged out (up to 30 s), revoked sessions and
-- deleted users included (a hostile audit, two instances under concurrent
-- writes). Each change now records its transaction, and a server reads the
-- changes of every transaction that had not ended when it last read
-- (pg_snapshot_xmin of that read's snapshot): a transaction that commits
-- later has a transaction id at least that. A change may be read twice (its
-- users' answers forgotten twice, which costs a read from the database); none
-- is missed. rowgate_private.user_changes_since stays for the servers of the
-- previous release during a rolling deploy.
alter table rowgate_private.user_changes add column xid xid8 not null default pg_current_xact_id();
create index user_changes_xid on rowgate_private.user_changes (xid);
comment on column rowgate_private.user_changes.xid is 'The transaction that made the change: read by every server while the transaction may not have been seen to end.';

create or replace function rowgate_private.user_changes_after(p_horizon xid8)
returns table (horizon xid8, user_ids text)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select pg_snapshot_xmin(pg_current_snapshot()),
    case when p_horizon is null then null
      when bool_or(c.user_ids = '*') or sum(length(c.user_ids)) > 100000 then '*'
      else string_agg(c.user_ids, ' ') end
  from rowgate_private.user_changes c
  where p_horizon is not null and c.xid >= p_horizon;
$$;
comment on function rowgate_private.user_changes_after(xid8) is 'The users whose answers changed in transactions at or after a horizon (''*'': everybody; null horizon: none), and the next horizon: the oldest transaction still running now.';
revoke all on function rowgate_private.user_changes_after(xid8) from public;
grant execute on function rowgate_private.user_changes_after(xid8) to rowgate_authenticator;

--! split: 002-a-refund-names-its-amount.sql
-- Why: REST's POST /v1/refunds/ requires `amount` (SPEC §18), but the rule
-- lived only in its schema: GraphQL's createRefund without pAmount (or with a
-- variable the client forgot to set) refunded everything that remained. The
-- database now requires it, for every interface; refunding the rest is
-- PATCH /v1/orders/{id} with status refunded (updateOrderByRowId).
create or replace function rowgate.create_refund(p_order_id uuid, p_amount bigint, p_reason text,
  p_comment text default null, p_metadata jsonb default null)
returns rowgate.refunds
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_order rowgate.orders;
  v_denial text;
  v_remaining bigint;
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
  if p_amount is null then
    raise exception 'A refund names its amount (in the currency''s minor unit); the rest of an order is refunded by setting its status to refunded'
      using errcode = 'RG422', detail = 'body.amount';
  end if;
  -- the order's row lock: what remains is read after any refund of the order still running has ended
  select o.* into v_order from rowgate.orders o where o.id = p_order_id for update;
  if v_order.status <> 'paid' then
    raise exception 'Only a paid order can be refunded; this one is %', v_order.status
      using errcode = 'RG422', detail = 'body.order_id';
  end if;
  v_remaining := v_order.amount - v_order.refunded_amount;
  if p_amount < 1 then
    raise exception 'A refund is at least 1 (in the currency''s minor unit)' using errcode = 'RG422', detail = 'body.amount';
  end if;
  if p_amount > v_remaining then
    raise exception 'The refund exceeds what remains to refund of the order: % of % %', v_remaining, v_order.amount, v_order.currency
      using errcode = 'RG422', detail = 'body.amount';
  end if;
  v_refund := rowgate_private.record_refund(v_order, p_amount, p_reason, p_comment, p_metadata);
  update rowgate.orders set refunded_amount = refunded_amount + p_amount,
      status = case when refunded_amount + p_amount = amount then 'refunded' else status end
    where id = v_order.id;
  return v_refund;
end;
$$;
comment on function rowgate.create_refund(uuid,bigint,text,text,jsonb) is 'Refunds a paid order by an amount, at most what remains; the order''s status becomes refunded when nothing remains.';

--! split: 003-an-order-inserted-refunded-was-paid-first.sql
-- Why: an order inserted as refunded (operators and fixtures: the API refuses
-- it) recorded its refund transaction of -amount and no payment, so its
-- transactions summed to -amount and revenue_by_day counted money never
-- received. It records its payment first, as an order paid then refunded
-- through the API does: its transactions net to 0.
create or replace function rowgate_private.tg_orders__transactions()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_unrecorded bigint;
begin
  if new.status = 'paid' and (tg_op = 'INSERT' or old.status <> 'paid') then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'payment', new.amount, new.currency);
  elsif new.status = 'refunded' and (tg_op = 'INSERT' or old.status <> 'refunded') then
    if tg_op = 'INSERT' then
      insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
        values (new.organization_id, new.id, 'payment', new.amount, new.currency);
    end if;
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
