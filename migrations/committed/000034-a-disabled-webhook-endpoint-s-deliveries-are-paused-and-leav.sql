--! Previous: sha1:459a3e677d623c819c1aed9e6323cf2581f560ad
--! Hash: sha1:15051564a76a57f17652ce4aa85c2b62112a430e
--! Message: A disabled webhook endpoint's deliveries are paused and leave the queue; deleting an endpoint never waits for an attempt in flight; subscriptions name event types that happen

--! split: 001-a-disabled-endpoint-s-deliveries-are-paused.sql
-- Why: a disabled endpoint's deliveries stayed `pending` (PATCH enabled:false,
-- the disabling after 10 failed events, a redelivery to a disabled endpoint),
-- and the claim's candidates are each organization's earliest due *pending*
-- delivery, the 100 earliest of them: a hostile audit made 101 organizations,
-- each with one disabled endpoint and a due delivery, and another tenant's
-- webhooks stopped (its delivery stayed unattempted while those stood first),
-- while every worker polled every 20 ms for ever (next_webhook_delivery_at
-- counted them as due). And deleting an endpoint deleted its pending
-- deliveries, waiting for the one a worker held for its attempt (up to 10 s,
-- a pool connection held: six such deletes made another tenant's read a
-- 503), and could deadlock with the worker recording that attempt (the
-- endpoint's row taken in the other order: the attempt was lost).
--
-- Now a delivery waits in the queue only while its endpoint can take it:
-- `paused` while the endpoint is disabled (back to `pending`, due at once,
-- when it is enabled again), removed when the endpoint is deleted. Neither
-- change waits for the delivery a worker is attempting (skip locked); the
-- worker, recording that attempt, reads its endpoint's state after the change
-- has committed (it takes the endpoint's row first) and pauses or ends the
-- delivery instead of retrying it. Paused deliveries are not due, are no
-- organization's candidates, and are pruned with their events.
alter table rowgate_private.webhook_deliveries drop constraint webhook_deliveries_status_check;
alter table rowgate_private.webhook_deliveries add constraint webhook_deliveries_status_check
  check (status in ('pending', 'paused', 'succeeded', 'failed'));

-- What the endpoint's state means for its deliveries, whichever way it changed.
create function rowgate_private.tg_webhook_endpoints__hold_deliveries() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.deleted_at is not null and old.deleted_at is null then
    delete from rowgate_private.webhook_deliveries d
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status in ('pending', 'paused')
        for update skip locked);
  elsif old.enabled and not new.enabled then
    update rowgate_private.webhook_deliveries d set status = 'paused'
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status = 'pending'
        for update skip locked);
  elsif new.enabled and not old.enabled and new.deleted_at is null then
    update rowgate_private.webhook_deliveries d set status = 'pending', next_attempt_at = now()
      where d.organization_id = new.organization_id and d.endpoint_id = new.id and d.status = 'paused';
    if found then
      perform pg_notify('rowgate_webhooks', '');
    end if;
  end if;
  return null;
end;
$$;
comment on function rowgate_private.tg_webhook_endpoints__hold_deliveries() is
  'A disabled endpoint''s deliveries are paused, an enabled one''s resumed, a deleted one''s removed; never waiting for an attempt in flight.';
create trigger _500_hold_deliveries after update of enabled, deleted_at on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg_webhook_endpoints__hold_deliveries();

-- The paused deliveries of an endpoint are kept apart from the queue's index.
create index webhook_deliveries_endpoint_paused on rowgate_private.webhook_deliveries (endpoint_id) where status = 'paused';

-- Deleting an endpoint: the trigger removes its deliveries.
create or replace function rowgate.delete_webhook_endpoint(p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  update rowgate.webhook_endpoints set deleted_at = now() where id = p_id;
end;
$$;

-- An attempt's record: the endpoint's row first (a change of its state made
-- meanwhile has committed, or waits for this), then the delivery: retried
-- only while its endpoint can take it; paused when it was disabled; failed
-- when it was deleted (its attempts stay listed).
create or replace function rowgate_private.record_webhook_attempt(p_delivery_id bigint, p_succeeded boolean, p_response_code integer,
  p_duration_ms integer, p_error text, p_retry_delay interval)
returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_delivery rowgate_private.webhook_deliveries;
  v_endpoint record;
begin
  select e.id, e.enabled, e.deleted_at into v_endpoint
    from rowgate.webhook_endpoints e
    where e.id = (select d.endpoint_id from rowgate_private.webhook_deliveries d where d.id = p_delivery_id)
    for no key update;
  update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1,
      status = case
        when p_succeeded then 'succeeded'
        when d.attempts + 1 >= 10 or v_endpoint.deleted_at is not null then 'failed'
        when not v_endpoint.enabled then 'paused'
        else 'pending' end,
      next_attempt_at = now() + p_retry_delay
    where d.id = p_delivery_id
    returning d.* into v_delivery;
  insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error)
    select e.organization_id, e.id, v_delivery.event_id, v_delivery.id, v_delivery.attempts,
      case when p_succeeded then 'succeeded' else 'failed' end, p_response_code, p_duration_ms, left(p_error, 500)
    from rowgate.webhook_endpoints e where e.id = v_delivery.endpoint_id;
  if v_endpoint.deleted_at is not null then
    return;
  end if;
  if p_succeeded then
    update rowgate.webhook_endpoints e set consecutive_failures = 0 where e.id = v_delivery.endpoint_id and e.consecutive_failures > 0;
  elsif v_delivery.status = 'failed' then
    update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + 1,
        enabled = e.enabled and e.consecutive_failures + 1 < 10
      where e.id = v_delivery.endpoint_id;
  end if;
end;
$$;

-- A redelivery to a disabled endpoint waits with its other deliveries.
create or replace function rowgate.redeliver_webhook_event(p_endpoint_id uuid, p_event_id uuid) returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_id bigint;
  v_status text;
begin
  v_organization_id := rowgate_hidden.authorize_webhook_endpoint(p_endpoint_id, 'webhooks_write');
  if not exists (select 1 from rowgate.events ev where ev.id = p_event_id and ev.organization_id = v_organization_id
      and rowgate_hidden.event_type_denial(v_organization_id, ev.type) is null) then
    raise exception 'No such event of this organization' using errcode = 'RG422', detail = 'body.event_id';
  end if;
  select case when e.enabled then 'pending' else 'paused' end into v_status
    from rowgate.webhook_endpoints e where e.id = p_endpoint_id;
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id, status)
    values (v_organization_id, p_endpoint_id, p_event_id, v_status) returning id into v_id;
  if v_status = 'pending' then
    perform pg_notify('rowgate_webhooks', '');
  end if;
  return v_id;
end;
$$;

-- The deliveries already waiting for an endpoint that cannot take them.
update rowgate_private.webhook_deliveries d set status = 'paused'
  from rowgate.webhook_endpoints e
  where e.id = d.endpoint_id and e.organization_id = d.organization_id
    and d.status = 'pending' and not e.enabled and e.deleted_at is null;
delete from rowgate_private.webhook_deliveries d
  using rowgate.webhook_endpoints e
  where e.id = d.endpoint_id and e.organization_id = d.organization_id
    and d.status = 'pending' and e.deleted_at is not null;

--! split: 002-a-subscription-names-events-that-happen.sql
-- Why: a subscription was checked by its resource only, so `order.bogus`
-- was accepted beside `order.paid` (a hostile audit), and a type listed twice
-- was kept twice. An event type is `<resource>.created|updated|deleted`, or
-- `order.paid` or `order.refunded` (SPEC §17); anything else is unknown (422),
-- and so is a list that names a type twice.
create or replace function rowgate_hidden.event_type_denial(p_organization_id uuid, p_type text) returns text
language sql stable as $$
  select case
    when not (p_type ~ '^[a-z_]+\.(created|updated|deleted)$' or p_type in ('order.paid', 'order.refunded')) then 'Unknown event type'
    else case split_part(p_type, '.', 1)
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
    end
  end;
$$;

create or replace function rowgate_hidden.assert_event_types(p_organization_id uuid, p_event_types text[]) returns void
language plpgsql stable as $$
declare
  v_type text;
  v_denial text;
begin
  if cardinality(p_event_types) <> (select count(distinct t) from unnest(p_event_types) t) then
    raise exception 'An event type is listed twice' using errcode = 'RG422', detail = 'body.event_types';
  end if;
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
