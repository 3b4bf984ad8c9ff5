--! Previous: sha1:a4b9bca68e899a2ec55d14b21a47438bc5214a49
--! Hash: sha1:8d14d1a4b942c33ba4bdf2d556f3914eb87e8991
--! Message: Events take their data by leaving the hidden columns out

--! split: 001-events-take-their-data-by-leaving-hidden-columns-out.sql
-- An event's data is its row as REST renders it. Leaving the few columns REST
-- does not show out of the row is one expression; picking the shown ones key by
-- key was a query on every change. The trigger's arguments name both lists: the
-- shown columns document the data, the hidden ones are what the trigger removes,
-- and a test checks that together they are every column of the table, so a
-- column added later is shown or hidden on purpose.
create or replace function rowgate_private.tg__events()
  returns trigger
  language plpgsql
  volatile
  security definer
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_resource text := tg_argv[0];
  v_hidden text[] := string_to_array(tg_argv[3], ',');
  v_status_column text := case when tg_nargs > 4 then tg_argv[4] end;
  -- the data as REST renders it: timestamps in UTC, which the session's time zone usually is already
  v_utc boolean := current_setting('TimeZone') in ('UTC', 'Etc/UTC');
  v_row jsonb := case when v_utc then to_jsonb(case when tg_op = 'DELETE' then old else new end)
    else rowgate_private.json_in_utc(case when tg_op = 'DELETE' then old else new end) end;
  v_old jsonb := case when tg_op <> 'UPDATE' then null when v_utc then to_jsonb(old) else rowgate_private.json_in_utc(old) end;
  v_data jsonb := v_row - v_hidden;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
begin
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif v_status_column is not null and v_row->v_status_column is distinct from v_old->v_status_column then
    v_types := array[v_resource || '.' || (v_row->>v_status_column)];
  elsif v_data - '{updated_at,last_used_at}'::text[] = (v_old - v_hidden) - '{updated_at,last_used_at}'::text[] then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old - v_hidden) o
      where o.key not in ('updated_at', 'last_used_at') and o.value is distinct from v_row->o.key;
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
  elsif v_resource = 'role' then
    v_data := v_data || jsonb_build_object('built_in', false);
  elsif v_resource = 'invitation' then
    select v_data || jsonb_build_object('organization_name', o.name, 'inviter_name', u.name) into v_data
      from rowgate.organizations o left join rowgate.users u on u.id = (v_row->>'invited_by')::uuid
      where o.id = (v_row->>'organization_id')::uuid;
  end if;
  if session_user = 'rowgate_authenticator' then
    v_ip := nullif(current_setting('rowgate.client_address', true), '');
    v_user_agent := left(nullif(current_setting('rowgate.user_agent', true), ''), 256);
  end if;
  with inserted as (
    insert into rowgate.events (organization_id, type, resource_id, data, previous, actor, request_id, audience)
    select coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), t.type, v_resource_id, v_data,
      case when t.type = v_resource || '.updated' then v_previous end,
      actor.value, nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]
    from unnest(v_types) with ordinality as t(type, n)
      cross join (select rowgate_hidden.current_actor() as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, rowgate_hidden.current_user_id(), left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$$;
comment on function rowgate_private.tg__events() is
  'Writes the events of a change (SPEC §17) with their client address and User-Agent (SPEC §21). Arguments: the resource, the audience, the columns the data shows, the columns it leaves out, and optionally the column whose new value names the event.';

--! split: 002-events-triggers-name-hidden-columns.sql
-- The events triggers name the columns each event's data leaves out, after those it shows.
drop trigger _400_events on rowgate.accounts;
create trigger _400_events after insert or update on rowgate.accounts
  for each row execute function rowgate_private.tg__events('account', 'finance_policy', 'id,organization_id,admin_id,country,currency,status,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.customer_members;
create trigger _400_events after insert or update on rowgate.customer_members
  for each row execute function rowgate_private.tg__events('member', 'members', 'id,organization_id,customer_id,email,name,role,metadata,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.customers;
create trigger _400_events after insert or update on rowgate.customers
  for each row execute function rowgate_private.tg__events('customer', 'members', 'id,organization_id,email,first_name,last_name,status,external_id,metadata,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.invitations;
create trigger _400_events after insert or update on rowgate.invitations
  for each row execute function rowgate_private.tg__events('invitation', 'member_managers', 'id,organization_id,email,role,status,invited_by,expires_at,created_at,updated_at', '', 'status');
drop trigger _400_events on rowgate.memberships;
create trigger _400_events after insert or update on rowgate.memberships
  for each row execute function rowgate_private.tg__events('membership', 'members', 'user_id,organization_id,role,created_at,updated_at', 'id,deleted_at');
drop trigger _400_events on rowgate.orders;
create trigger _400_events after insert or update on rowgate.orders
  for each row execute function rowgate_private.tg__events('order', 'members', 'id,organization_id,customer_id,product_id,amount,currency,status,refunded_amount,metadata,created_at,updated_at', '');
drop trigger _400_events on rowgate.organization_access_tokens;
create trigger _400_events after insert or update on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__events('organization_access_token', 'access_tokens', 'id,organization_id,comment,scopes,expires_at,last_used_at,allowed_ips,created_at,updated_at', 'created_by,deleted_at');
drop trigger _400_events on rowgate.organization_roles;
create trigger _400_events after insert or update on rowgate.organization_roles
  for each row execute function rowgate_private.tg__events('role', 'members', 'id,organization_id,name,description,permissions,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.organizations;
create trigger _400_events after insert or update on rowgate.organizations
  for each row execute function rowgate_private.tg__events('organization', 'members', 'id,name,slug,account_id,max_token_lifetime_days,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.payout_accounts;
create trigger _400_events after insert or update on rowgate.payout_accounts
  for each row execute function rowgate_private.tg__events('payout_account', 'payouts', 'id,organization_id,type,country,currency,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.products;
create trigger _400_events after insert or update on rowgate.products
  for each row execute function rowgate_private.tg__events('product', 'members', 'id,organization_id,name,description,price_amount,price_currency,is_archived,metadata,created_at,updated_at', 'deleted_at');
drop trigger _400_events on rowgate.refunds;
create trigger _400_events after insert or update on rowgate.refunds
  for each row execute function rowgate_private.tg__events('refund', 'members', 'id,organization_id,order_id,amount,currency,reason,comment,metadata,created_at,updated_at', '');
drop trigger _400_events on rowgate.transactions;
create trigger _400_events after insert or update on rowgate.transactions
  for each row execute function rowgate_private.tg__events('transaction', 'finance_permission', 'id,organization_id,order_id,type,amount,currency,created_at,updated_at', '');
drop trigger _400_events on rowgate.webhook_endpoints;
create trigger _400_events after insert or update on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg__events('webhook_endpoint', 'organization_managers', 'id,organization_id,url,event_types,description,enabled,created_at,updated_at', 'consecutive_failures,deleted_at');
