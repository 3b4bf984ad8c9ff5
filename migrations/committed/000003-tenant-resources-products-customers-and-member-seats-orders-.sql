--! Previous: sha1:552e1fbbd87649c90c874a923efbdbec1160b9aa
--! Hash: sha1:5060499f90ec2d71b5d433ab7e93c375dcdf7171
--! Message: tenant resources: products, customers and member seats, orders, transactions, payout accounts, portal sessions

-- Tenant resources (SPEC §9): products, customers and their member seats, orders,
-- transactions, payout accounts; and the customer portal's sessions. Every row
-- carries organization_id; every list is an index range on (organization_id, sort column).

-- Products. `is_archived` is a visible state; deleting is a soft delete.
create table rowgate.products (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  name text not null check (length(name) between 1 and 200),
  description text check (length(description) <= 5000),
  price_amount bigint not null check (price_amount >= 0 and price_amount <= 100000000000),
  price_currency text not null check (price_currency ~ '^[a-z]{3}$'),
  is_archived boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index products_organization_created on rowgate.products (organization_id, created_at, id) where deleted_at is null;
create index products_organization_name on rowgate.products (organization_id, name, id) where deleted_at is null;
create index products_organization_price on rowgate.products (organization_id, price_amount, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.products
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.products enable row level security;

-- Customers of an organization; a business customer has member seats.
create table rowgate.customers (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  first_name text check (length(first_name) <= 200),
  last_name text check (length(last_name) <= 200),
  status text not null default 'pending' check (status in ('pending', 'active')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index customers_email_live on rowgate.customers (organization_id, email) where deleted_at is null;
create index customers_organization_created on rowgate.customers (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.customers
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.customers enable row level security;

create table rowgate.customer_members (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  customer_id uuid not null references rowgate.customers,
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  name text check (length(name) <= 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index customer_members_email_live on rowgate.customer_members (customer_id, email) where deleted_at is null;
create index customer_members_organization on rowgate.customer_members (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.customer_members
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.customer_members enable row level security;

-- Orders; the organization comes from the product.
create table rowgate.orders (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  customer_id uuid not null references rowgate.customers,
  product_id uuid not null references rowgate.products,
  amount bigint not null check (amount >= 0 and amount <= 100000000000),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  status text not null default 'pending' check (status in ('pending', 'paid', 'refunded')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index orders_organization_created on rowgate.orders (organization_id, created_at, id);
create index orders_organization_amount on rowgate.orders (organization_id, amount, id);
create index orders_customer on rowgate.orders (customer_id, created_at, id);
create index orders_product on rowgate.orders (product_id);
create trigger _100_timestamps before insert or update on rowgate.orders
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.orders enable row level security;

-- Transactions: the money movements orders cause (written by a trigger only).
create table rowgate.transactions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  order_id uuid not null references rowgate.orders,
  type text not null check (type in ('payment', 'refund')),
  amount bigint not null,
  currency text not null check (currency ~ '^[a-z]{3}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index transactions_organization_created on rowgate.transactions (organization_id, created_at, id);
create index transactions_organization_amount on rowgate.transactions (organization_id, amount, id);
create index transactions_order on rowgate.transactions (order_id);
create trigger _100_timestamps before insert or update on rowgate.transactions
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.transactions enable row level security;

-- Payout accounts: where an organization's balance is paid out.
create table rowgate.payout_accounts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  type text not null check (type in ('bank_account', 'stripe', 'open_collective')),
  country text not null check (country ~ '^[A-Z]{2}$'),
  currency text not null check (currency ~ '^[a-z]{3}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index payout_accounts_organization on rowgate.payout_accounts (organization_id, created_at, id) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.payout_accounts
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.payout_accounts enable row level security;

-- Portal sessions name a customer or a member seat.
alter table rowgate_private.sessions
  add foreign key (customer_id) references rowgate.customers,
  add foreign key (member_id) references rowgate.customer_members;

-- The customer a Customer or Member subject acts for (a member: its customer).
create function rowgate_hidden.current_customer_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'customer' then
    return rowgate_hidden.current_subject_id();
  elsif v_kind = 'member' then
    return (select customer_id from rowgate.customer_members where id = rowgate_hidden.current_subject_id() and deleted_at is null);
  end if;
  return null;
end;
$$;
grant execute on function rowgate_hidden.current_customer_id() to rowgate_customer, rowgate_member;

-- The organization a create names: a User must name a reachable one (422 at
-- body.organization_id otherwise); an Organization subject may omit it. Then the
-- role-permission policy (403 with the reason).
create function rowgate_hidden.target_organization_id(p_organization_id uuid, p_permission text) returns uuid
language plpgsql stable as $$
declare
  v_organization_id uuid := coalesce(p_organization_id,
    case when rowgate_hidden.current_subject_kind() = 'organization' then rowgate_hidden.current_subject_id() end);
  v_denial text;
begin
  if v_organization_id is null then
    raise exception 'organization_id is required' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  if not (v_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.policy_denial(v_organization_id, p_permission);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return v_organization_id;
end;
$$;
grant execute on function rowgate_hidden.target_organization_id(uuid, text) to rowgate_user, rowgate_organization;

-- Row-level security of the tenant resources. Members read; the role permission
-- (or the Organization subject itself) writes; finance rows follow the finance policies.
create policy select_member on rowgate.products for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null);
create policy insert_write on rowgate.products for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[]));
create policy update_write on rowgate.products for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[]) and deleted_at is null);
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at)
  on rowgate.products to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (organization_id, name, description, price_amount, price_currency, is_archived),
  update (name, description, price_amount, price_currency, is_archived)
  on rowgate.products to rowgate_user, rowgate_organization;

create policy select_member on rowgate.customers for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null);
create policy select_self on rowgate.customers for select to rowgate_customer, rowgate_member
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null);
create policy insert_write on rowgate.customers for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[]));
create policy update_write on rowgate.customers for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[]) and deleted_at is null);
-- a customer edits its own name; member seats are read-only
create policy update_self on rowgate.customers for update to rowgate_customer
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null);
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at)
  on rowgate.customers to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
grant insert (organization_id, email, first_name, last_name, status), update (email, first_name, last_name, status)
  on rowgate.customers to rowgate_user, rowgate_organization;
grant update (first_name, last_name) on rowgate.customers to rowgate_customer;

create policy select_member on rowgate.customer_members for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]) and deleted_at is null);
create policy select_self on rowgate.customer_members for select to rowgate_member
  using (id = (select rowgate_hidden.current_subject_id()) and deleted_at is null);
grant select (id, organization_id, customer_id, email, name, created_at, updated_at)
  on rowgate.customer_members to rowgate_user, rowgate_organization, rowgate_member, rowgate_analyst;

create policy select_member on rowgate.orders for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[]));
create policy select_own on rowgate.orders for select to rowgate_customer, rowgate_member
  using (customer_id = (select rowgate_hidden.current_customer_id()));
create policy insert_write on rowgate.orders for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[]));
create policy update_write on rowgate.orders for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[]));
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at)
  on rowgate.orders to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
grant insert (organization_id, customer_id, product_id, amount, currency, status), update (status)
  on rowgate.orders to rowgate_user, rowgate_organization;

-- transactions: the permission filter finance:read (Organization subjects bypass it)
create policy select_finance on rowgate.transactions for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[]));
grant select (id, organization_id, order_id, type, amount, currency, created_at, updated_at)
  on rowgate.transactions to rowgate_user, rowgate_organization, rowgate_analyst;

create policy select_finance on rowgate.payout_accounts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null);
create policy insert_finance on rowgate.payout_accounts for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and rowgate_hidden.finance_write_denial(organization_id) is null);
grant select (id, organization_id, type, country, currency, created_at, updated_at)
  on rowgate.payout_accounts to rowgate_user, rowgate_organization, rowgate_analyst;
grant insert (organization_id, type, country, currency) on rowgate.payout_accounts to rowgate_user;

-- Orders: the customer must belong to the product's organization; payment and
-- refund transactions follow the status. Status moves forward only.
create function rowgate_private.tg_orders__check() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if tg_op = 'INSERT' then
    if not exists (select 1 from rowgate.customers c where c.id = new.customer_id
        and c.organization_id = new.organization_id and c.deleted_at is null) then
      raise exception 'The customer does not belong to the product''s organization' using errcode = 'RG422', detail = 'body.customer_id';
    end if;
  elsif new.status is distinct from old.status and not (
      (old.status = 'pending' and new.status = 'paid') or (old.status = 'paid' and new.status = 'refunded')) then
    raise exception 'An order goes from pending to paid to refunded; % to % is not allowed', old.status, new.status
      using errcode = 'RG422', detail = 'body.status';
  end if;
  return new;
end;
$$;
create trigger _200_check before insert or update on rowgate.orders
  for each row execute function rowgate_private.tg_orders__check();

create function rowgate_private.tg_orders__transactions() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if new.status = 'paid' and (tg_op = 'INSERT' or old.status <> 'paid') then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'payment', new.amount, new.currency);
  elsif new.status = 'refunded' and tg_op = 'UPDATE' and old.status <> 'refunded' then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'refund', -new.amount, new.currency);
  end if;
  return null;
end;
$$;
create trigger _500_transactions after insert or update of status on rowgate.orders
  for each row execute function rowgate_private.tg_orders__transactions();

-- Creating an order: organization, amount and currency from the product (seen
-- through RLS, so an unreachable product is a 422), then orders:write.
create function rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text)
returns setof rowgate.orders
language plpgsql volatile as $$
declare
  v_product record;
  v_denial text;
begin
  select organization_id, price_amount, price_currency into v_product from rowgate.products where id = p_product_id;
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
grant execute on function rowgate.create_order(uuid, uuid, bigint, text, text) to rowgate_user, rowgate_organization;

-- Customer portal sessions: a User or Organization with customers:write on the
-- customer's organization; for a member seat, a member session.
create function rowgate.create_customer_session(p_customer_id uuid, p_member_id uuid, p_token_hash bytea)
returns table (customer_id uuid, member_id uuid, expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  select c.organization_id into v_organization_id from rowgate.customers c
    where c.id = p_customer_id and c.deleted_at is null
      and c.organization_id = any (rowgate_hidden.current_organization_ids());
  if v_organization_id is null then
    raise exception 'Customer not found' using errcode = 'RG422', detail = 'body.customer_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_organization_id, 'customers:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_member_id is not null and not exists (select 1 from rowgate.customer_members m
      where m.id = p_member_id and m.customer_id = p_customer_id and m.deleted_at is null) then
    raise exception 'Member not found for this customer' using errcode = 'RG422', detail = 'body.member_id';
  end if;
  return query insert into rowgate_private.sessions as s (token_hash, kind, customer_id, member_id, expires_at)
    values (p_token_hash, case when p_member_id is null then 'customer' else 'member' end,
      case when p_member_id is null then p_customer_id end, p_member_id, now() + interval '1 hour')
    returning p_customer_id, s.member_id, s.expires_at;
end;
$$;
grant execute on function rowgate.create_customer_session(uuid, uuid, bytea) to rowgate_user, rowgate_organization;

-- Portal writes: a customer changes itself; a member seat reads only.
create function rowgate_hidden.portal_write_denial() returns text
language sql stable as $$
  select case rowgate_hidden.current_subject_kind()
    when 'customer' then null
    when 'member' then 'Members have read-only access to the customer portal'
    else 'Not permitted' end;
$$;
grant execute on function rowgate_hidden.portal_write_denial() to rowgate_customer, rowgate_member;

-- Resolution and soft deletes learn the new resources.
create or replace function rowgate_hidden.resource_organization_id(p_resource text, p_id uuid) returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return case p_resource
    when 'organization' then (select id from rowgate.organizations where id = p_id and deleted_at is null)
    when 'account' then (select organization_id from rowgate.accounts where id = p_id and deleted_at is null)
    when 'membership' then (select organization_id from rowgate.memberships where id = p_id and deleted_at is null)
    when 'organization_access_token' then
      (select organization_id from rowgate.organization_access_tokens where id = p_id and deleted_at is null)
    when 'product' then (select organization_id from rowgate.products where id = p_id and deleted_at is null)
    when 'customer' then (select organization_id from rowgate.customers where id = p_id and deleted_at is null)
    when 'order' then (select organization_id from rowgate.orders where id = p_id)
    when 'payout_account' then (select organization_id from rowgate.payout_accounts where id = p_id and deleted_at is null)
  end;
end;
$$;

create or replace function rowgate.delete_resource(p_resource text, p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_policy text := case p_resource
    when 'organization' then 'organization:manage'
    when 'membership' then 'members_management'
    when 'organization_access_token' then 'access_token_management'
    when 'product' then 'products:write'
    when 'customer' then 'customers:write'
    when 'payout_account' then 'finance_write'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  select a.organization_id, a.denial into v_organization_id, v_denial from rowgate_hidden.authorize(p_resource, p_id, v_policy) a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  elsif v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  elsif p_resource = 'organization' and rowgate_hidden.current_subject_kind() is distinct from 'user' then
    raise exception 'Only users can delete organizations' using errcode = 'RG403';
  end if;
  case p_resource
    when 'organization' then update rowgate.organizations set deleted_at = now() where id = p_id;
    when 'membership' then update rowgate.memberships set deleted_at = now() where id = p_id;
    when 'organization_access_token' then update rowgate.organization_access_tokens set deleted_at = now() where id = p_id;
    when 'product' then update rowgate.products set deleted_at = now() where id = p_id;
    when 'customer' then update rowgate.customers set deleted_at = now() where id = p_id;
    when 'payout_account' then update rowgate.payout_accounts set deleted_at = now() where id = p_id;
  end case;
end;
$$;

-- Authentication learns customer and member sessions (the portal scopes only).
create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
returns table (
  credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    -- last use is recorded at most once a minute, so reads stay cheap
    update rowgate.personal_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.personal_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    update rowgate.organization_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.organization_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;
