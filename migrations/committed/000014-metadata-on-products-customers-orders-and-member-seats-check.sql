--! Previous: sha1:43c77429e015acf11fc872c107570a6b4bccd9f8
--! Hash: sha1:f351cf71bd7db79ec183b50b258b3ab10025244b
--! Message: Metadata on products, customers, orders and member seats (checked by rowgate_hidden.metadata_is_valid, GIN-indexed with jsonb_path_ops) and customers' external_id, unique among an organization's live customers

-- Metadata and external ids (issue 17, SPEC §18): merchants link rowgate rows
-- to their own records. Products, customers, orders and member seats get
-- `metadata` (at most 50 keys of 1–40 characters of [A-Za-z0-9_-]; values
-- strings of at most 500 characters, integers or booleans), checked here so
-- that GraphQL and SQL writes obey the same rule as REST, and indexed with GIN
-- (jsonb_path_ops: the `@>` containment the list filters use). Customers get
-- `external_id`, unique among an organization's live customers.

-- The rule, once. Integers stay within ±(2^53 − 1) so that every JSON reader
-- (JavaScript's included) reads them exactly.
create or replace function rowgate_hidden.metadata_is_valid(p_metadata jsonb) returns boolean
language sql immutable parallel safe as $$
  select jsonb_typeof(p_metadata) = 'object'
    and (select count(*) from jsonb_object_keys(p_metadata)) <= 50
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
  'At most 50 keys of 1-40 characters of [A-Za-z0-9_-]; values strings of at most 500 characters, integers within ±(2^53-1), or booleans.';
grant execute on function rowgate_hidden.metadata_is_valid(jsonb)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_anonymous, rowgate_analyst;

alter table rowgate.products add column if not exists metadata jsonb not null default '{}'
  constraint products_metadata_valid check (rowgate_hidden.metadata_is_valid(metadata));
alter table rowgate.customers add column if not exists metadata jsonb not null default '{}'
  constraint customers_metadata_valid check (rowgate_hidden.metadata_is_valid(metadata));
alter table rowgate.orders add column if not exists metadata jsonb not null default '{}'
  constraint orders_metadata_valid check (rowgate_hidden.metadata_is_valid(metadata));
alter table rowgate.customer_members add column if not exists metadata jsonb not null default '{}'
  constraint customer_members_metadata_valid check (rowgate_hidden.metadata_is_valid(metadata));

create index if not exists products_metadata on rowgate.products using gin (metadata jsonb_path_ops) where deleted_at is null;
create index if not exists customers_metadata on rowgate.customers using gin (metadata jsonb_path_ops) where deleted_at is null;
create index if not exists orders_metadata on rowgate.orders using gin (metadata jsonb_path_ops);
create index if not exists customer_members_metadata on rowgate.customer_members using gin (metadata jsonb_path_ops)
  where deleted_at is null;

-- Customers' own ids: at most 200 characters, unique among an organization's live customers.
alter table rowgate.customers add column if not exists external_id text
  constraint customers_external_id_length check (length(external_id) between 1 and 200);
create unique index if not exists customers_external_id_live on rowgate.customers (organization_id, external_id)
  where deleted_at is null and external_id is not null;

-- Who reads and writes them: the columns' tables' existing policies decide the
-- rows; the portal's subjects read neither (a merchant's own bookkeeping).
grant select (metadata) on rowgate.products, rowgate.customers, rowgate.orders, rowgate.customer_members
  to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (metadata), update (metadata) on rowgate.products, rowgate.customers, rowgate.orders, rowgate.customer_members
  to rowgate_user, rowgate_organization;
grant select (external_id) on rowgate.customers to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (external_id), update (external_id) on rowgate.customers to rowgate_user, rowgate_organization;

-- Orders filtered by their customer's external id (`external_customer_id`): the
-- subject's live customers with those ids, found past the customers' RLS, so
-- that a credential with orders_read but not customers_read can filter too. It
-- never looks beyond the subject's organizations.
create or replace function rowgate_hidden.customer_ids_by_external_id(p_external_ids text[]) returns uuid[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return array(select c.id from rowgate.customers c
    where c.external_id = any (p_external_ids) and c.deleted_at is null
      and c.organization_id = any (rowgate_hidden.current_organization_ids()));
end;
$$;
grant execute on function rowgate_hidden.customer_ids_by_external_id(text[]) to rowgate_user, rowgate_organization;
