--! Previous: sha1:9455afffa70b35347f2069ffc79cf730ac83d75f
--! Hash: sha1:f5db50ebe09f5e7064b343eca2faf229697bbdc9
--! Message: Webhook endpoints and deliveries: endpoints under organization:manage, sealed secrets, a delivery per subscribed event in the event's transaction, claims with SKIP LOCKED, attempts recorded

-- Issue 16, part 2 (SPEC §17): webhook endpoints and their deliveries. An
-- endpoint subscribes an organization's events to a URL; every event of a
-- subscribed type becomes a pending delivery in the transaction that wrote it
-- (so a delivery exists exactly when its event does, and a crash loses none);
-- the servers' delivery workers claim them with FOR UPDATE SKIP LOCKED, so two
-- servers never make the same attempt, and record every attempt.

-- Endpoints: public metadata under RLS (users with organization:manage, or the
-- organization itself, with webhooks_read / webhooks_write); the signing
-- secret is private (below). `consecutive_failures` counts events whose every
-- attempt failed since the last success; at 10 the endpoint is disabled.
create table if not exists rowgate.webhook_endpoints (
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  url text not null check (length(url) between 1 and 2000),
  event_types text[] not null check (cardinality(event_types) between 1 and 100),
  description text check (length(description) <= 500),
  enabled boolean not null default true,
  consecutive_failures integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  -- keyed by its organization first, as what refers to it, so these tables can
  -- be distributed by organization_id (docs/scaling.md)
  primary key (organization_id, id)
);
create index if not exists webhook_endpoints_id on rowgate.webhook_endpoints (id);
create index if not exists webhook_endpoints_organization on rowgate.webhook_endpoints (organization_id, created_at, id)
  where deleted_at is null;
drop trigger if exists _100_timestamps on rowgate.webhook_endpoints;
create trigger _100_timestamps before insert or update on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.webhook_endpoints enable row level security;
comment on table rowgate.webhook_endpoints is E'@behavior -*\nWebhook endpoints (REST only: creating one makes a secret).';

drop policy if exists select_manage on rowgate.webhook_endpoints;
create policy select_manage on rowgate.webhook_endpoints for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('webhooks_read')));
drop policy if exists update_manage on rowgate.webhook_endpoints;
create policy update_manage on rowgate.webhook_endpoints for update
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.has_scope('webhooks_write')));
grant select (id, organization_id, url, event_types, description, enabled, created_at, updated_at)
  on rowgate.webhook_endpoints to rowgate_user, rowgate_organization;
grant update (url, event_types, description, enabled) on rowgate.webhook_endpoints to rowgate_user, rowgate_organization;

-- Re-enabling an endpoint starts its failure count again.
create or replace function rowgate_private.tg_webhook_endpoints__reset() returns trigger
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
begin
  if new.enabled and not old.enabled then
    new.consecutive_failures := 0;
  end if;
  return new;
end;
$$;
drop trigger if exists _200_reset on rowgate.webhook_endpoints;
create trigger _200_reset before update on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg_webhook_endpoints__reset();

-- Endpoint changes are events too (SPEC §17), for those who manage them.
drop trigger if exists _400_events on rowgate.webhook_endpoints;
create trigger _400_events after insert or update on rowgate.webhook_endpoints for each row
  execute function rowgate_private.tg__events('webhook_endpoint', 'organization_managers',
    'id,organization_id,url,event_types,description,enabled,created_at,updated_at');

-- The signing secret, encrypted by the server (AES-256-GCM under a key derived
-- from the server secret) before it gets here: it must be readable to sign,
-- and a copy of the database alone does not give it away. No API role or
-- analyst reads this table; the delivery worker gets it through
-- claim_webhook_delivery, which only the server's login may call.
create table if not exists rowgate_private.webhook_secrets (
  organization_id uuid not null,
  endpoint_id uuid not null,
  sealed_secret bytea not null,
  primary key (organization_id, endpoint_id),
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id)
);

-- Which event types one may subscribe to: those whose events it may read
-- (the audiences of migration 000004), checked at subscription time.
create or replace function rowgate_hidden.event_type_denial(p_organization_id uuid, p_type text) returns text
language sql stable as $$
  select case split_part(p_type, '.', 1)
    when 'organization' then null when 'membership' then null when 'product' then null
    when 'customer' then null when 'order' then null when 'member' then null when 'refund' then null
    when 'webhook_endpoint' then null
    when 'transaction' then case when p_organization_id = any (rowgate_hidden.current_organization_ids('finance:read')) then null
      else 'You don''t have permission to read transactions' end
    when 'account' then rowgate_hidden.finance_read_denial(p_organization_id)
    when 'payout_account' then coalesce(rowgate_hidden.finance_read_denial(p_organization_id),
      case when rowgate_hidden.current_credential_kind() is distinct from 'web_session' then 'Payout account events take a web session' end)
    when 'organization_access_token' then rowgate_hidden.access_token_management_denial(p_organization_id)
    else 'Unknown event type'
  end;
$$;
grant execute on function rowgate_hidden.event_type_denial(uuid, text) to rowgate_user, rowgate_organization;

-- Creating an endpoint: webhooks_write, organization:manage (an Organization
-- subject manages itself), event types it may read; the sealed secret is stored
-- privately. The URL's rules (SPEC §17) are checked by the server before.
create or replace function rowgate.create_webhook_endpoint(
  p_organization_id uuid, p_url text, p_event_types text[], p_description text, p_enabled boolean, p_sealed_secret bytea
) returns rowgate.webhook_endpoints
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_endpoint rowgate.webhook_endpoints;
begin
  perform rowgate_hidden.assert_scope('webhooks_write');
  v_organization_id := rowgate_hidden.target_organization_id(p_organization_id, 'organization:manage');
  perform rowgate_hidden.assert_event_types(v_organization_id, p_event_types);
  insert into rowgate.webhook_endpoints (organization_id, url, event_types, description, enabled)
    values (v_organization_id, p_url, p_event_types, p_description, coalesce(p_enabled, true))
    returning * into v_endpoint;
  insert into rowgate_private.webhook_secrets (organization_id, endpoint_id, sealed_secret)
    values (v_endpoint.organization_id, v_endpoint.id, p_sealed_secret);
  return v_endpoint;
end;
$$;
grant execute on function rowgate.create_webhook_endpoint(uuid, text, text[], text, boolean, bytea) to rowgate_user, rowgate_organization;
comment on function rowgate.create_webhook_endpoint(uuid, text, text[], text, boolean, bytea) is E'@behavior -*';

create or replace function rowgate_hidden.assert_event_types(p_organization_id uuid, p_event_types text[]) returns void
language plpgsql stable as $$
declare
  v_type text;
  v_denial text;
begin
  foreach v_type in array p_event_types loop
    v_denial := rowgate_hidden.event_type_denial(p_organization_id, v_type);
    if v_denial = 'Unknown event type' then
      raise exception 'Unknown event type: %', v_type using errcode = 'RG422', detail = 'body.event_types';
    elsif v_denial is not null then
      raise exception '%', v_denial using errcode = 'RG403';
    end if;
  end loop;
end;
$$;
grant execute on function rowgate_hidden.assert_event_types(uuid, text[]) to rowgate_user, rowgate_organization;

-- A changed subscription follows the same rule as a new one.
create or replace function rowgate_private.tg_webhook_endpoints__check_types() returns trigger
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
begin
  if new.event_types is distinct from old.event_types and rowgate_hidden.current_subject_kind() is not null then
    perform rowgate_hidden.assert_event_types(new.organization_id, new.event_types);
  end if;
  return new;
end;
$$;
drop trigger if exists _300_check_types on rowgate.webhook_endpoints;
create trigger _300_check_types before update on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg_webhook_endpoints__check_types();

-- Deliveries: one per (endpoint, event), plus one per redelivery. `status`
-- pending → succeeded | failed; `next_attempt_at` when it may be tried again.
create table if not exists rowgate_private.webhook_deliveries (
  id bigint generated always as identity,
  organization_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id)
);
create index if not exists webhook_deliveries_id on rowgate_private.webhook_deliveries (id);
create index if not exists webhook_deliveries_due on rowgate_private.webhook_deliveries (next_attempt_at) where status = 'pending';
create index if not exists webhook_deliveries_endpoint_pending on rowgate_private.webhook_deliveries (endpoint_id, event_id)
  where status = 'pending';

-- Attempts, readable by those who manage the endpoint (GET …/deliveries).
create table if not exists rowgate.webhook_attempts (
  id uuid not null default uuidv7(),
  organization_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  delivery_id bigint not null,
  attempt integer not null,
  status text not null check (status in ('succeeded', 'failed')),
  response_code integer,
  duration_ms integer not null,
  error text,
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id)
);
create index if not exists webhook_attempts_endpoint on rowgate.webhook_attempts (endpoint_id, created_at, id);
alter table rowgate.webhook_attempts enable row level security;
comment on table rowgate.webhook_attempts is E'@behavior -*\nWebhook delivery attempts (REST only).';
drop policy if exists select_manage on rowgate.webhook_attempts;
create policy select_manage on rowgate.webhook_attempts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('webhooks_read')));
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at)
  on rowgate.webhook_attempts to rowgate_user, rowgate_organization;

-- Every event of a subscribed type becomes a delivery of each enabled endpoint
-- that subscribes to it, in the event's own transaction. The notification names
-- nothing (any role may LISTEN, SPEC §15): it only wakes the workers.
create or replace function rowgate_private.tg_events__enqueue_deliveries() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, new.id from rowgate.webhook_endpoints e
    where e.organization_id = new.organization_id and e.enabled and e.deleted_at is null and new.type = any (e.event_types);
  if found then
    perform pg_notify('rowgate_webhooks', '');
  end if;
  return null;
end;
$$;
drop trigger if exists _500_enqueue_deliveries on rowgate.events;
create trigger _500_enqueue_deliveries after insert on rowgate.events
  for each row execute function rowgate_private.tg_events__enqueue_deliveries();

-- The worker's side, callable by the server's login only (never by a subject's
-- role). Claiming locks one due delivery of an enabled endpoint until the
-- worker's transaction ends (FOR UPDATE SKIP LOCKED: another worker takes
-- another); a first attempt waits for every earlier event of its endpoint to
-- have had its first attempt (SPEC §17: first attempts in event order).
create or replace function rowgate_private.claim_webhook_delivery()
returns table (delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea,
  event_id uuid, organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_delivery rowgate_private.webhook_deliveries;
begin
  select d.* into v_delivery from rowgate_private.webhook_deliveries d
    join rowgate.webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending' and d.next_attempt_at <= now() and e.enabled and e.deleted_at is null
      and (d.attempts > 0 or not exists (
        select 1 from rowgate_private.webhook_deliveries p
        where p.endpoint_id = d.endpoint_id and p.status = 'pending' and p.attempts = 0 and p.event_id < d.event_id))
    order by d.next_attempt_at, d.event_id
    limit 1
    for update of d skip locked;
  if v_delivery.id is null then
    return;
  end if;
  return query
    select v_delivery.id, v_delivery.attempts + 1, e.id, e.url, s.sealed_secret,
      ev.id, ev.organization_id, ev.type, ev.resource_id, ev.data, ev.actor, ev.request_id, ev.created_at
    from rowgate.webhook_endpoints e
      join rowgate_private.webhook_secrets s on s.endpoint_id = e.id
      join rowgate.events ev on ev.id = v_delivery.event_id
    where e.id = v_delivery.endpoint_id;
end;
$$;

-- Records an attempt of a claimed delivery: success ends it; a failure is
-- tried again after p_retry_delay, until the 10th attempt, which fails the
-- event; 10 failed events in a row disable the endpoint, a success resets the count.
create or replace function rowgate_private.record_webhook_attempt(
  p_delivery_id bigint, p_succeeded boolean, p_response_code integer, p_duration_ms integer, p_error text, p_retry_delay interval
) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_delivery rowgate_private.webhook_deliveries;
begin
  update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1,
      status = case when p_succeeded then 'succeeded' when d.attempts + 1 >= 10 then 'failed' else 'pending' end,
      next_attempt_at = now() + p_retry_delay
    where d.id = p_delivery_id
    returning d.* into v_delivery;
  insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error)
    select e.organization_id, e.id, v_delivery.event_id, v_delivery.id, v_delivery.attempts,
      case when p_succeeded then 'succeeded' else 'failed' end, p_response_code, p_duration_ms, left(p_error, 500)
    from rowgate.webhook_endpoints e where e.id = v_delivery.endpoint_id;
  if p_succeeded then
    update rowgate.webhook_endpoints e set consecutive_failures = 0 where e.id = v_delivery.endpoint_id and e.consecutive_failures > 0;
  elsif v_delivery.status = 'failed' then
    update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + 1,
        enabled = e.enabled and e.consecutive_failures + 1 < 10
      where e.id = v_delivery.endpoint_id;
  end if;
end;
$$;

-- When the next pending delivery falls due (the worker sleeps until then at most).
create or replace function rowgate_private.next_webhook_delivery_at() returns timestamptz
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select min(next_attempt_at) from rowgate_private.webhook_deliveries where status = 'pending';
$$;
grant execute on function rowgate_private.claim_webhook_delivery(),
  rowgate_private.record_webhook_attempt(bigint, boolean, integer, integer, text, interval),
  rowgate_private.next_webhook_delivery_at()
  to rowgate_authenticator;

-- Steps 2-5 of SPEC §5 for one endpoint (REST's GET, PATCH, DELETE, deliveries
-- and redeliver): the scope, then the endpoint resolved past RLS, the
-- organization in reach (404), organization:manage (403 with the reason).
-- Answers the endpoint's organization.
create or replace function rowgate_hidden.authorize_webhook_endpoint(p_id uuid, p_scope text) returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope(p_scope);
  select e.organization_id into v_organization_id from rowgate.webhook_endpoints e where e.id = p_id and e.deleted_at is null;
  if v_organization_id is null or not v_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_organization_id, 'organization:manage');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return v_organization_id;
end;
$$;
grant execute on function rowgate_hidden.authorize_webhook_endpoint(uuid, text) to rowgate_user, rowgate_organization;

-- An endpoint is a resource the API's declared authorization resolves (REST
-- routes declare `authorize: {resource: 'webhook_endpoint', ...}`): as the
-- other resources, its organization, past soft deletes.
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
    when 'webhook_endpoint' then (select organization_id from rowgate.webhook_endpoints where id = p_id and deleted_at is null)
  end;
end;
$$;

-- Deleting an endpoint: a soft delete (the select policy hides deleted rows, so
-- it runs here); its pending deliveries are dropped.
create or replace function rowgate.delete_webhook_endpoint(p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  update rowgate.webhook_endpoints set deleted_at = now() where id = p_id;
  delete from rowgate_private.webhook_deliveries where endpoint_id = p_id and status = 'pending';
end;
$$;
grant execute on function rowgate.delete_webhook_endpoint(uuid) to rowgate_user, rowgate_organization;
comment on function rowgate.delete_webhook_endpoint(uuid) is E'@behavior -*';

-- Redelivery (POST …/{id}/redeliver): one more delivery of an event of the
-- endpoint's organization the caller may read (RLS on events decides), under
-- the endpoint's own rules (webhooks_write, organization:manage).
create or replace function rowgate.redeliver_webhook_event(p_endpoint_id uuid, p_event_id uuid) returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_id bigint;
begin
  v_organization_id := rowgate_hidden.authorize_webhook_endpoint(p_endpoint_id, 'webhooks_write');
  if not exists (select 1 from rowgate.events ev where ev.id = p_event_id and ev.organization_id = v_organization_id
      and rowgate_hidden.event_type_denial(v_organization_id, ev.type) is null) then
    raise exception 'No such event of this organization' using errcode = 'RG422', detail = 'body.event_id';
  end if;
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    values (v_organization_id, p_endpoint_id, p_event_id) returning id into v_id;
  perform pg_notify('rowgate_webhooks', '');
  return v_id;
end;
$$;
grant execute on function rowgate.redeliver_webhook_event(uuid, uuid) to rowgate_user, rowgate_organization;
comment on function rowgate.redeliver_webhook_event(uuid, uuid) is E'@behavior -*';

-- Events of migration 000004, with one change: an update is an event when
-- what REST shows of the row changed (not any column: an endpoint's failure
-- count, which REST does not show, moves on every failed event).
create or replace function rowgate_private.tg__events() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp set timezone = 'UTC' as $$
declare
  v_resource text := tg_argv[0];
  v_columns text[] := string_to_array(tg_argv[2], ',');
  v_row jsonb := to_jsonb(case when tg_op = 'DELETE' then old else new end);
  v_old jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  v_data jsonb;
  v_types text[];
  v_resource_id uuid;
  v_type text;
begin
  select jsonb_object_agg(key, value) into v_data from jsonb_each(v_row) where key = any (v_columns);
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif (v_data - '{updated_at,last_used_at}'::text[])
      = (select coalesce(jsonb_object_agg(key, value), '{}') from jsonb_each(v_old) where key = any (v_columns) and key not in ('updated_at', 'last_used_at')) then
    return null;
  else
    v_types := array[v_resource || '.updated'];
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
  end if;
  foreach v_type in array v_types loop
    insert into rowgate.events (organization_id, type, resource_id, data, actor, request_id, audience)
    values (coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), v_type, v_resource_id, v_data,
      rowgate_hidden.current_actor(), nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]);
  end loop;
  return null;
end;
$$;
