--! Previous: sha1:3a97c5e522f8055ebf9890377adac01242730df0
--! Hash: sha1:9455afffa70b35347f2069ffc79cf730ac83d75f
--! Message: Events: one row per change of an organization's data, written by triggers in the same transaction, read under the resource's own rules

-- Issue 16, part 1 (SPEC §17): events. Every change of an organization's data
-- writes an event row in the same transaction as the change, by a trigger on
-- the resource's table (one place: REST, GraphQL, the CLI and psql all pass
-- through it), so a rolled-back change leaves none. An event says what
-- changed (`type`, `resource_id`), the resource as REST answers it at that
-- moment (`data`), who did it (`actor`, from the transaction's subject
-- settings) and in which request (`request_id`). Events are read under RLS:
-- visible exactly to those who may read the resource it describes.

-- The scopes of SPEC §3 that events and webhook endpoints need.
insert into rowgate_private.scopes (name, implies) values
  ('events_read', null), ('webhooks_read', null), ('webhooks_write', 'webhooks_read')
  on conflict (name) do nothing;

-- The events. `id` is a UUIDv7: ids grow with time within a session, so the
-- events of one transaction (which share created_at, the transaction's start)
-- sort in the order they were written (order.created before order.paid).
-- `audience` says whose reading rules the event follows (the resource's), and
-- no foreign key ties an event to its organization: the trail outlives rows,
-- and a key share lock on the organization per event would make every write
-- of a tenant touch one row (LESSONS: the counter hot spot).
create table if not exists rowgate.events (
  id uuid not null default uuidv7(),
  organization_id uuid not null,
  type text not null check (type ~ '^[a-z_]+\.[a-z_]+$'),
  resource_id uuid not null,
  data jsonb not null,
  actor jsonb not null,
  request_id text,
  audience text not null check (audience in ('members', 'finance_permission', 'finance_policy', 'payouts', 'access_tokens', 'organization_managers')),
  created_at timestamptz not null default now(),
  -- keyed by its organization first, so the table can be distributed by it (docs/scaling.md)
  primary key (organization_id, id)
);
create index if not exists events_id on rowgate.events (id);
create index if not exists events_organization_created on rowgate.events (organization_id, created_at, id);
create index if not exists events_resource on rowgate.events (resource_id, created_at, id);
alter table rowgate.events enable row level security;
comment on table rowgate.events is E'@behavior -insert -update -delete\nWhat happened to an organization''s data (SPEC §17): one row per change, written with the change.';

-- Who made the change (SPEC §17 `actor`): the transaction's subject and its
-- credential, from the settings the server sets (trusted only under the API's
-- login role, like every subject helper); `system` when there is none (the
-- operator CLI, migrations, psql as the owner). Security definer: the
-- impersonator and the OAuth2 client are read from private tables.
create or replace function rowgate_hidden.current_actor() returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_credential_kind text := rowgate_hidden.current_credential_kind();
  v_credential_id uuid := rowgate_hidden.current_credential_id();
  v_impersonator_id uuid;
  v_client_id text;
begin
  if v_kind is null then
    return jsonb_build_object('kind', 'system', 'id', null, 'credential_kind', null, 'credential_id', null,
      'impersonator_id', null, 'oauth2_client_id', null);
  end if;
  if v_credential_kind = 'web_session' then
    select s.impersonator_id into v_impersonator_id from rowgate_private.sessions s where s.id = v_credential_id;
  elsif v_credential_kind in ('oauth2_user_token', 'oauth2_organization_token') then
    select t.client_id into v_client_id from rowgate_private.oauth2_access_tokens t where t.id = v_credential_id;
    v_credential_kind := 'oauth2_token';
  end if;
  return jsonb_build_object('kind', v_kind, 'id', rowgate_hidden.current_subject_id(),
    'credential_kind', v_credential_kind, 'credential_id', v_credential_id,
    'impersonator_id', v_impersonator_id, 'oauth2_client_id', v_client_id);
end;
$$;
comment on function rowgate_hidden.current_actor() is 'Who is making the changes of this transaction, as events record it (SPEC §17).';

-- Writes the events of one row's change. Arguments of the trigger: the
-- resource (the type's prefix), the audience, and the columns of its REST read
-- schema. The timestamps of `data` are written as REST writes them (UTC, the
-- function's own time zone). An update that changes nothing REST shows (or
-- only last_used_at, which every use of a token moves) writes nothing; one
-- that sets deleted_at is `<resource>.deleted`. Orders also say `order.paid`
-- and `order.refunded` when their status becomes that.
create or replace function rowgate_private.tg__events() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp set timezone = 'UTC' as $$
declare
  v_resource text := tg_argv[0];
  v_row jsonb := to_jsonb(case when tg_op = 'DELETE' then old else new end);
  v_old jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  v_data jsonb;
  v_types text[];
  v_resource_id uuid;
  v_type text;
begin
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif (v_row - '{updated_at,last_used_at}'::text[]) = (v_old - '{updated_at,last_used_at}'::text[]) then
    return null;
  else
    v_types := array[v_resource || '.updated'];
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  select jsonb_object_agg(key, value) into v_data from jsonb_each(v_row) where key = any (string_to_array(tg_argv[2], ','));
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
  end if;
  foreach v_type in array v_types loop
    insert into rowgate.events (organization_id, type, resource_id, data, actor, request_id, audience)
    values (coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), v_type, v_resource_id, v_data,
      rowgate_hidden.current_actor(), nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]);
  end loop;
  return null;
end;
$$;

-- One line per resource: its name, audience and the columns of its REST read
-- schema (src/resources/*.ts; test/events.test.ts checks each event's data
-- against the REST answer). Organizations are their own organization_id.
drop trigger if exists _400_events on rowgate.organizations;
create trigger _400_events after insert or update on rowgate.organizations for each row
  execute function rowgate_private.tg__events('organization', 'members', 'id,name,slug,account_id,created_at,updated_at');
drop trigger if exists _400_events on rowgate.memberships;
create trigger _400_events after insert or update on rowgate.memberships for each row
  execute function rowgate_private.tg__events('membership', 'members', 'user_id,organization_id,role,created_at,updated_at');
drop trigger if exists _400_events on rowgate.products;
create trigger _400_events after insert or update on rowgate.products for each row
  execute function rowgate_private.tg__events('product', 'members',
    'id,organization_id,name,description,price_amount,price_currency,is_archived,created_at,updated_at');
drop trigger if exists _400_events on rowgate.customers;
create trigger _400_events after insert or update on rowgate.customers for each row
  execute function rowgate_private.tg__events('customer', 'members',
    'id,organization_id,email,first_name,last_name,status,created_at,updated_at');
drop trigger if exists _400_events on rowgate.orders;
create trigger _400_events after insert or update on rowgate.orders for each row
  execute function rowgate_private.tg__events('order', 'members',
    'id,organization_id,customer_id,product_id,amount,currency,status,created_at,updated_at');
drop trigger if exists _400_events on rowgate.transactions;
create trigger _400_events after insert or update on rowgate.transactions for each row
  execute function rowgate_private.tg__events('transaction', 'finance_permission',
    'id,organization_id,order_id,type,amount,currency,created_at,updated_at');
drop trigger if exists _400_events on rowgate.accounts;
create trigger _400_events after insert or update on rowgate.accounts for each row
  execute function rowgate_private.tg__events('account', 'finance_policy',
    'id,organization_id,admin_id,country,currency,status,created_at,updated_at');
drop trigger if exists _400_events on rowgate.payout_accounts;
create trigger _400_events after insert or update on rowgate.payout_accounts for each row
  execute function rowgate_private.tg__events('payout_account', 'payouts', 'id,organization_id,type,country,currency,created_at,updated_at');
drop trigger if exists _400_events on rowgate.organization_access_tokens;
create trigger _400_events after insert or update on rowgate.organization_access_tokens for each row
  execute function rowgate_private.tg__events('organization_access_token', 'access_tokens',
    'id,organization_id,comment,scopes,expires_at,last_used_at,created_at,updated_at');

-- Reading events: the scope events_read, an organization the subject reaches,
-- and the reading rules of the resource the event describes (SPEC §5, §17):
-- every member; transactions under the permission filter finance:read (as
-- their list); accounts under the finance-read policy; payout accounts under
-- it too, with a web session holding payouts:read (their access class,
-- migration 000003); organization access tokens and webhook endpoints to
-- users who manage them. The same rows for REST, GraphQL and analysts.
drop policy if exists select_audience on rowgate.events;
create policy select_audience on rowgate.events for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('events_read'))
    and case audience
      when 'members' then true
      when 'finance_permission' then organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
      when 'finance_policy' then rowgate_hidden.finance_read_denial(organization_id) is null
      when 'payouts' then rowgate_hidden.finance_read_denial(organization_id) is null
        and (select rowgate_hidden.current_credential_kind()) = 'web_session' and (select rowgate_hidden.has_scope('payouts:read'))
      when 'access_tokens' then organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      when 'organization_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
      else false
    end);
grant select (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at)
  on rowgate.events to rowgate_user, rowgate_organization, rowgate_analyst;
-- the API's subjects may ask who they are, as events will record them
grant execute on function rowgate_hidden.current_actor() to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;
