--! Previous: sha1:eb18f3ace8322e9fe47a0423ea18489a2eccaceb
--! Hash: sha1:459a3e677d623c819c1aed9e6323cf2581f560ad
--! Message: Metadata has no __proto__ key, and an order in another currency names its amount, for every interface

--! split: 001-metadata-has-no-proto-key.sql
-- Why: a metadata key `__proto__` fits SPEC §18's key rule, but JavaScript
-- readers do not keep it as a key: zod's records skip it, so REST dropped it
-- without a word while GraphQL stored it, and REST's next PATCH of that
-- metadata lost it (a hostile audit). REST's input refuses a field so named
-- anywhere (a 422 at its location); the rule here makes every interface
-- refuse it (GraphQL, analysts' and operators' SQL). Rows that hold the key
-- already keep it: a check is not run again on rows it passed.
create or replace function rowgate_hidden.metadata_is_valid(p_metadata jsonb) returns boolean
language sql immutable parallel safe as $$
  select jsonb_typeof(p_metadata) = 'object'
    and (select count(*) from jsonb_object_keys(p_metadata)) <= 50
    and not (p_metadata ? '__proto__')
    and not exists (
      select 1 from jsonb_each(p_metadata) e
      where e.key !~ '^[A-Za-z0-9_-]{1,40}$'
        or not coalesce(case jsonb_typeof(e.value)
          when 'string' then length(e.value #>> '{}') <= 500
          when 'boolean' then true
          when 'number' then (e.value #>> '{}') ~ '^-?[0-9]{1,16}$'
            and abs((e.value #>> '{}')::numeric) <= 9007199254740991
          else false end, false));
$$;
comment on function rowgate_hidden.metadata_is_valid(jsonb) is
  'At most 50 keys of 1-40 characters of [A-Za-z0-9_-], not __proto__; values strings of at most 500 characters, integers within ±(2^53-1), or booleans.';

--! split: 002-an-order-in-another-currency-names-its-amount.sql
-- Why: an order created in a currency other than its product's took the
-- product's amount as it was, in the new currency: GraphQL's createOrder with
-- a product of 1000 USD and `currency: "eur"` made a paid order of 1000 EUR
-- and its payment transaction (a hostile audit). REST refused it ("amount is
-- required when currency is given"), a rule that lived in the API's schema
-- only; it is the database's now, for every interface.
create or replace function rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text,
  p_metadata jsonb default null)
returns setof rowgate.orders
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_product record;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('orders_write');
  if p_currency is not null and p_amount is null then
    raise exception 'amount is required when currency is given' using errcode = 'RG422', detail = 'body.amount';
  end if;
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
