--! Previous: sha1:c3d3de3ceebdfca5fd8722ededcbdeaa32ecfebe
--! Hash: sha1:dca7da970e9ff6693711f23b94ccdaf28e26cde7
--! Message: Webhook attempts one organization at a time: an organization holds at most one attempt in flight across all servers

--! split: 001-webhook-attempts-one-organization-at-a-time.sql
-- Webhook delivery fair between organizations (SPEC §17; found by a hostile
-- review). Every server runs a few attempts at once, each held for up to its
-- 10 s timeout, and a claim took the earliest due delivery of anybody: an
-- organization with many endpoints that never answer held every slot, and
-- every other organization's deliveries waited (10 silent endpoints delayed
-- another organization's first delivery by ~50 s). Now an organization has at
-- most one attempt in flight across all servers: the claim takes a
-- transaction-scoped advisory lock on the organization, held by the attempt's
-- transaction until it is recorded, and skips organizations whose lock another
-- attempt holds. The candidates are each organization's earliest due delivery,
-- so a backlog of one organization cannot hide the others' from the claim.
create or replace function rowgate_private.claim_webhook_delivery()
returns table (delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid,
  organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_candidate record;
  v_delivery rowgate_private.webhook_deliveries;
begin
  for v_candidate in
    select c.id, c.organization_id from (
      select distinct on (d.organization_id) d.id, d.organization_id, d.next_attempt_at, d.event_id
      from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.id = d.endpoint_id
      where d.status = 'pending' and d.next_attempt_at <= now() and e.enabled and e.deleted_at is null
        and (d.attempts > 0 or not exists (
          select 1 from rowgate_private.webhook_deliveries p
          where p.endpoint_id = d.endpoint_id and p.status = 'pending' and p.attempts = 0 and p.event_id < d.event_id))
      order by d.organization_id, d.next_attempt_at, d.event_id
    ) c
    order by c.next_attempt_at, c.event_id
    limit 100
  loop
    continue when not pg_try_advisory_xact_lock(hashtextextended('rowgate webhook organization ' || v_candidate.organization_id, 0));
    select d.* into v_delivery from rowgate_private.webhook_deliveries d
      where d.organization_id = v_candidate.organization_id and d.id = v_candidate.id and d.status = 'pending'
      for update skip locked;
    exit when v_delivery.id is not null;
  end loop;
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
