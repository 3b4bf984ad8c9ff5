--! Previous: sha1:5060499f90ec2d71b5d433ab7e93c375dcdf7171
--! Hash: sha1:89512059298fe69475405942afc00fdb8b7de1d8
--! Message: interfaces: scopes bind in the database, analysts bound to users, reporting views, GraphQL smart tags

-- Token scopes bind in the database too (SPEC §3), so every interface over it
-- (REST, GraphQL) shares them: write policies and write functions require the
-- write scope of the credential that authenticated the transaction.
create function rowgate_hidden.has_scope(p_scope text) returns boolean
language sql stable as $$
  select p_scope = any (coalesce(rowgate_hidden.current_scopes(), '{}'));
$$;
comment on function rowgate_hidden.has_scope(text) is 'Does the credential of this transaction carry the scope?';

create function rowgate_hidden.assert_scope(p_scope text) returns void
language plpgsql stable as $$
begin
  if not rowgate_hidden.has_scope(p_scope) then
    raise exception 'The token lacks the required scope: %', p_scope using errcode = 'RGSCO', detail = p_scope;
  end if;
end;
$$;
grant execute on function rowgate_hidden.has_scope(text), rowgate_hidden.assert_scope(text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

alter policy update_manage on rowgate.organizations
  using (id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('organizations_write')));
alter policy update_manage on rowgate.memberships
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
    and deleted_at is null and rowgate_hidden.current_subject_kind() = 'user'
    and (select rowgate_hidden.has_scope('members_write')));
alter policy update_finance on rowgate.accounts
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_write_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts_write') or rowgate_hidden.has_scope('transactions_write')));
alter policy insert_write on rowgate.products
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[])
    and (select rowgate_hidden.has_scope('products_write')));
alter policy update_write on rowgate.products
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('products_write')));
alter policy insert_write on rowgate.customers
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and (select rowgate_hidden.has_scope('customers_write')));
alter policy update_write on rowgate.customers
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('customers:write'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('customers_write')));
alter policy update_self on rowgate.customers
  using (id = (select rowgate_hidden.current_customer_id()) and deleted_at is null
    and (select rowgate_hidden.has_scope('customer_portal_write')));
alter policy insert_write on rowgate.orders
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[])
    and (select rowgate_hidden.has_scope('orders_write')));
alter policy update_write on rowgate.orders
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('orders:write'))::uuid[])
    and (select rowgate_hidden.has_scope('orders_write')));
alter policy insert_finance on rowgate.payout_accounts
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and rowgate_hidden.finance_write_denial(organization_id) is null
    and (select rowgate_hidden.has_scope('payouts:write')));

-- The write functions check the scope first, as the API does.
create or replace function rowgate.create_organization(p_name text, p_slug text) returns rowgate.organizations
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create organizations' using errcode = 'RG403';
  end if;
  insert into rowgate.organizations (name, slug) values (p_name, p_slug) returning * into v_organization;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, v_organization.id, 'admin');
  return v_organization;
end;
$$;

create or replace function rowgate.add_member(p_organization_id uuid, p_email text, p_role text) returns rowgate.memberships
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_user_id uuid;
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  select id into v_user_id from rowgate.users where email = lower(p_email) and deleted_at is null;
  if v_user_id is null then
    raise exception 'No user has this e-mail address' using errcode = 'RG422', detail = 'body.email';
  end if;
  if exists (select 1 from rowgate.memberships where user_id = v_user_id and organization_id = p_organization_id and deleted_at is null) then
    raise exception 'This user is a member already' using errcode = 'RG422', detail = 'body.email';
  end if;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, p_organization_id, p_role)
    returning * into v_membership;
  return v_membership;
end;
$$;

create or replace function rowgate.create_account(p_organization_id uuid, p_country text, p_currency text) returns rowgate.accounts
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_denial text;
  v_account rowgate.accounts;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create accounts' using errcode = 'RG403';
  end if;
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if exists (select 1 from rowgate.accounts where organization_id = p_organization_id and deleted_at is null) then
    raise exception 'The organization has an account already' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  insert into rowgate.accounts (organization_id, admin_id, country, currency)
    values (p_organization_id, v_user_id, p_country, p_currency) returning * into v_account;
  update rowgate.organizations set account_id = v_account.id where id = p_organization_id;
  return v_account;
end;
$$;

create or replace function rowgate.create_organization_access_token(
  p_organization_id uuid, p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.organization_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if exists (select 1 from unnest(p_scopes) s where s in ('user:read', 'user:write', 'payouts:read', 'payouts:write')) then
    raise exception 'Organization tokens carry organization scopes only' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at, created_by)
    values (p_organization_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at,
      rowgate_hidden.current_user_id())
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (p_token_hash, v_token.id);
  return v_token;
end;
$$;

create or replace function rowgate.create_personal_access_token(
  p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.personal_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  return rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash);
end;
$$;

create or replace function rowgate.revoke_personal_access_token(p_id uuid) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.personal_access_tokens set deleted_at = now()
    where id = p_id and user_id = rowgate_hidden.current_user_id() and deleted_at is null;
  return found;
end;
$$;

create or replace function rowgate.delete_current_user() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  if not found then
    return false;
  end if;
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  return true;
end;
$$;

create or replace function rowgate.create_impersonation_session(p_user_id uuid, p_token_hash bytea)
returns table (user_id uuid, expires_at timestamptz, scopes text[])
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_admin_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  if not exists (select 1 from rowgate.users u where u.id = v_admin_id and u.is_admin and u.deleted_at is null) then
    raise exception 'Only platform admins can impersonate users' using errcode = 'RG403';
  end if;
  if not exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null) then
    raise exception 'No such user' using errcode = 'RG422', detail = 'body.user_id';
  end if;
  return query select s.user_id, s.expires_at, rowgate_private.read_scopes()
    from rowgate_private.issue_user_session(p_user_id, p_token_hash, interval '1 hour', v_admin_id) s;
end;
$$;

create or replace function rowgate.create_customer_session(p_customer_id uuid, p_member_id uuid, p_token_hash bytea)
returns table (customer_id uuid, member_id uuid, expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('customer_sessions_write');
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
  v_scope text := case p_resource
    when 'organization' then 'organizations_write'
    when 'membership' then 'members_write'
    when 'organization_access_token' then 'organization_access_tokens_write'
    when 'product' then 'products_write'
    when 'customer' then 'customers_write'
    when 'payout_account' then 'payouts:write'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  perform rowgate_hidden.assert_scope(v_scope);
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

-- Analysts (SPEC §8): a LOGIN role, member of rowgate_analyst, bound to a user.
-- The binding is looked up by session_user, which no SQL session can change, so
-- an analyst is that user with the read scopes, whatever settings it sets.
create table rowgate_private.analysts (
  login name primary key,
  user_id uuid not null references rowgate.users,
  created_at timestamptz not null default now()
);

create function rowgate_hidden.analyst_user_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select a.user_id from rowgate_private.analysts a join rowgate.users u on u.id = a.user_id
    where a.login = session_user and u.deleted_at is null);
end;
$$;
create function rowgate_hidden.analyst_scopes() returns text[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  if rowgate_hidden.analyst_user_id() is null then
    return null;
  end if;
  return rowgate_private.read_scopes();
end;
$$;
-- every role that evaluates the subject helpers needs them (they answer null for non-analysts)
grant execute on function rowgate_hidden.analyst_user_id(), rowgate_hidden.analyst_scopes()
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- The subject helpers learn analysts; the API's path (session_user =
-- rowgate_authenticator) is decided by the first branch and never looks them up.
create or replace function rowgate_hidden.current_subject_kind() returns text
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'user' end;
$$;
create or replace function rowgate_hidden.current_subject_id() returns uuid
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_id', true), '')::uuid
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_user_id() end;
$$;
create or replace function rowgate_hidden.current_scopes() returns text[]
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_scopes() end;
$$;

-- analysts see their own user row, like the API's users do
alter policy select_self on rowgate.users to rowgate_user, rowgate_analyst;
grant select (id, email, name, avatar_url, is_admin, created_at, updated_at) on rowgate.users to rowgate_analyst;
grant execute on function rowgate_hidden.current_customer_id() to rowgate_analyst;

-- Reporting views for analysts (and the API's users): security_invoker, so the
-- caller's RLS applies to the rows beneath.
create view rowgate.revenue_by_day with (security_invoker = true) as
  select organization_id, (created_at at time zone 'UTC')::date as day, currency,
    coalesce(sum(amount) filter (where type = 'payment'), 0) as gross_amount,
    coalesce(-sum(amount) filter (where type = 'refund'), 0) as refunded_amount,
    sum(amount) as net_amount,
    count(*) filter (where type = 'payment') as payments
  from rowgate.transactions
  group by organization_id, (created_at at time zone 'UTC')::date, currency;
comment on view rowgate.revenue_by_day is 'Payments, refunds and net revenue per organization, UTC day and currency (finance:read).';
create view rowgate.orders_by_day with (security_invoker = true) as
  select organization_id, (created_at at time zone 'UTC')::date as day, status, count(*) as orders, sum(amount) as amount
  from rowgate.orders
  group by organization_id, (created_at at time zone 'UTC')::date, status;
comment on view rowgate.orders_by_day is 'Orders per organization, UTC day and status.';
grant select on rowgate.revenue_by_day, rowgate.orders_by_day to rowgate_user, rowgate_organization, rowgate_analyst;

-- Analysts (and the API roles) create nothing: no temporary objects in this database.
do $$
begin
  execute format('revoke temporary on database %I from public', current_database());
  execute format('grant temporary on database %I to rowgate_owner', current_database());
end
$$;

-- What GraphQL does not publish: token metadata, and functions that take token
-- hashes or serve only the REST layer (PostGraphile smart tags).
comment on table rowgate.personal_access_tokens is E'@behavior -*\nPersonal access tokens (REST only).';
comment on table rowgate.organization_access_tokens is E'@behavior -*\nOrganization access tokens (REST only).';
comment on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea) is E'@behavior -*';
comment on function rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea) is E'@behavior -*';
comment on function rowgate.create_impersonation_session(uuid, bytea) is E'@behavior -*';
comment on function rowgate.create_customer_session(uuid, uuid, bytea) is E'@behavior -*';
comment on function rowgate.revoke_personal_access_token(uuid) is E'@behavior -*';
comment on function rowgate.delete_current_user() is E'@behavior -*';
comment on function rowgate.delete_resource(text, uuid) is E'@behavior -*';
