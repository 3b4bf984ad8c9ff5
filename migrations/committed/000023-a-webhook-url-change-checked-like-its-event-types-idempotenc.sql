--! Previous: sha1:058b8414d50c3085aa8ba9342f044a527e8cc732
--! Hash: sha1:c3d3de3ceebdfca5fd8722ededcbdeaa32ecfebe
--! Message: A webhook URL change checked like its event types; idempotency keys cleaned without waiting and expired for their subject; orders created with their metadata

--! split: 001-a-webhook-url-change-is-checked-like-its-event-types.sql
-- Pointing an endpoint at a new URL sends its events somewhere new, so it is a
-- change of the subscription (SPEC §17: the right to read the event types is
-- checked when a subscription is made or changed). Only a change of the event
-- types was checked: a token that may not read payout account events could
-- redirect an endpoint a web session had subscribed to them and receive them.
create or replace function rowgate_private.tg_webhook_endpoints__check_types() returns trigger
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
begin
  if (new.event_types is distinct from old.event_types or new.url is distinct from old.url)
      and rowgate_hidden.current_subject_kind() is not null then
    perform rowgate_hidden.assert_event_types(new.organization_id, new.event_types);
  end if;
  return new;
end;
$$;

--! split: 002-idempotency-keys-cleaned-without-waiting-and-expired-for-their-subject.sql
-- Two faults of claiming a key (SPEC §17). Each claim deleted up to ten
-- expired keys of anybody and held their row locks until its transaction
-- ended, so a slow keyed write of one tenant made every other tenant's keyed
-- writes wait for it; expired rows another transaction holds are now skipped.
-- And a subject's own key past its lifetime was still replayed when the
-- cleanup had not reached it; it is now forgotten before it is looked up, as
-- docs/decisions.md says (the key may be used again).
create or replace function rowgate.claim_idempotency_key(p_key text, p_request_hash bytea)
returns table (status text, response_status integer, response_body text)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_id uuid := rowgate_hidden.current_subject_id();
  v_found rowgate_private.idempotency_keys;
begin
  if v_kind is null or v_id is null then
    raise exception 'Idempotency keys belong to a subject' using errcode = 'RG403';
  end if;
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate idempotency ' || v_kind || ' ' || v_id || ' ' || p_key, 0)) then
    return query select 'in_use'::text, null::integer, null::text;
    return;
  end if;
  delete from rowgate_private.idempotency_keys k
    where k.subject_kind = v_kind and k.subject_id = v_id and k.key = p_key
      and k.created_at < now() - rowgate_private.idempotency_key_lifetime();
  delete from rowgate_private.idempotency_keys k
    where k.ctid = any (array(select k2.ctid from rowgate_private.idempotency_keys k2
      where k2.created_at < now() - rowgate_private.idempotency_key_lifetime() limit 10 for update skip locked));
  select * into v_found from rowgate_private.idempotency_keys k
    where k.subject_kind = v_kind and k.subject_id = v_id and k.key = p_key;
  if v_found.key is null then
    return query select 'new'::text, null::integer, null::text;
  elsif v_found.request_hash <> p_request_hash then
    return query select 'reused'::text, null::integer, null::text;
  else
    return query select 'replay'::text, v_found.response_status, v_found.response_body;
  end if;
end;
$$;

--! split: 003-an-order-is-created-with-its-metadata.sql
-- An order created with metadata was inserted without it and then updated: its
-- order.created (and order.paid) events carried empty metadata, unlike the
-- answer, and an order.updated event followed (SPEC §17: an event's data is
-- the row as REST renders it). The metadata now goes in with the insert;
-- without it the order's metadata is the column's default, as before.
drop function rowgate.create_order(uuid, uuid, bigint, text, text);
create function rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text,
  p_metadata jsonb default null)
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
  return query insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status, metadata)
    values (v_product.organization_id, p_customer_id, p_product_id, coalesce(p_amount, v_product.price_amount),
      coalesce(p_currency, v_product.price_currency), coalesce(p_status, 'pending'), coalesce(p_metadata, '{}'))
    returning *;
end;
$$;
grant execute on function rowgate.create_order(uuid, uuid, bigint, text, text, jsonb) to rowgate_user, rowgate_organization;
