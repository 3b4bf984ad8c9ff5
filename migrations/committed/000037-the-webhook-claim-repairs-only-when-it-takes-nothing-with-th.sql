--! Previous: sha1:279bc7b813ad0ab584150532d90931a5f853d55d
--! Hash: sha1:20aa32aa934ff2693b56c8965ce5a78ea22fcbed
--! Message: The webhook claim repairs only when it takes nothing, with the endpoint read locked; secrets found by their key

--! split: 001-the-claim-repairs-only-when-it-takes-nothing.sql
-- Why: a review of migration 000036 found two faults in the claim's repair.
-- It ran inside the claim's transaction, which a worker holds for a whole
-- attempt (up to 10 s): an endpoint enabled meanwhile resumed nothing (its
-- trigger could not see the uncommitted pause), and the delivery stayed
-- paused under an enabled endpoint for good; and it read the endpoint without
-- a lock, so an enabling not yet committed was read as disabled. Now the
-- repair runs only when the claim took nothing (it commits at once), and
-- reads the endpoint locked for share, skipping one being changed. And the
-- secrets were looked up by endpoint alone, which their primary key
-- (organization, endpoint) cannot serve: a scan of every secret, for each
-- candidate, on every poll; the organization is named too.
create or replace function rowgate_private.claim_webhook_delivery()
returns table (delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid,
  organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_candidate record;
  v_delivery rowgate_private.webhook_deliveries;
  v_unclaimable uuid[] := '{}';
begin
  for v_candidate in
    with recursive organizations (id) as (
      (select d.organization_id from rowgate_private.webhook_deliveries d
        where d.status = 'pending' order by d.organization_id limit 1)
      union all
      select (select d.organization_id from rowgate_private.webhook_deliveries d
          where d.status = 'pending' and d.organization_id > o.id order by d.organization_id limit 1)
        from organizations o where o.id is not null
    )
    select o.id, due.next_attempt_at, due.event_id
    from organizations o
      cross join lateral (select d.next_attempt_at, d.event_id from rowgate_private.webhook_deliveries d
        where d.organization_id = o.id and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at, d.event_id limit 1) due
    where o.id is not null
    order by due.next_attempt_at, due.event_id
    limit 100
  loop
    begin
      continue when not pg_try_advisory_xact_lock(hashtextextended('rowgate webhook organization ' || v_candidate.id, 0));
      select d.* into v_delivery from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.id = d.endpoint_id
        where d.organization_id = v_candidate.id and d.status = 'pending' and d.next_attempt_at <= now()
          and e.enabled and e.deleted_at is null
          and exists (select 1 from rowgate.events ev where ev.organization_id = d.organization_id and ev.id = d.event_id)
          and exists (select 1 from rowgate_private.webhook_secrets s
            where s.organization_id = d.organization_id and s.endpoint_id = d.endpoint_id)
          and (d.attempts > 0 or not exists (
            select 1 from rowgate_private.webhook_deliveries p
            where p.endpoint_id = d.endpoint_id and p.status = 'pending' and p.attempts = 0 and p.event_id < d.event_id))
        order by d.next_attempt_at, d.event_id
        limit 1
        for update of d skip locked;
      if v_delivery.id is null then
        -- nothing of this organization's to claim: the subtransaction, and its lock, are undone
        raise exception 'nothing claimed' using errcode = 'RGNOC';
      end if;
      exit;
    exception when sqlstate 'RGNOC' then
      v_delivery := null;
    end;
    v_unclaimable := v_unclaimable || v_candidate.id;
  end loop;
  if v_delivery.id is null then
    -- nothing claimed: what kept the organizations candidates with nothing to claim, when it is undeliverable,
    -- repaired now and committed with this claim (never held across an attempt). The endpoint is read
    -- locked, so that an enabling that has not committed skips the row (the next claim sees it again) and
    -- one that commits after this sees it paused and resumes it
    with stale as (
      select d.id, (e.deleted_at is not null or ev.id is null or s.endpoint_id is null) as gone
      from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.organization_id = d.organization_id and e.id = d.endpoint_id
        left join rowgate.events ev on ev.organization_id = d.organization_id and ev.id = d.event_id
        left join rowgate_private.webhook_secrets s on s.organization_id = d.organization_id and s.endpoint_id = d.endpoint_id
      where d.organization_id = any (v_unclaimable) and d.status = 'pending'
        and (not e.enabled or e.deleted_at is not null or ev.id is null or s.endpoint_id is null)
      for update of d skip locked
      for share of e skip locked
    ), removed as (
      delete from rowgate_private.webhook_deliveries d using stale where d.id = stale.id and stale.gone
    )
    update rowgate_private.webhook_deliveries d set status = 'paused' from stale where d.id = stale.id and not stale.gone;
    return;
  end if;
  return query
    select v_delivery.id, v_delivery.attempts + 1, e.id, e.url, s.sealed_secret,
      ev.id, ev.organization_id, ev.type, ev.resource_id, ev.data, ev.actor, ev.request_id, ev.created_at
    from rowgate.webhook_endpoints e
      join rowgate_private.webhook_secrets s on s.organization_id = e.organization_id and s.endpoint_id = e.id
      join rowgate.events ev on ev.id = v_delivery.event_id
    where e.id = v_delivery.endpoint_id;
end;
$$;

--! split: 002-the-cap-function-says-what-it-counts.sql
-- Why: the function's comment still said it counts live rows; since 000036 a
-- token counts until revoked, and the third argument no longer matters.
comment on function rowgate_private.tg__at_most() is
  'Refuses an insert past the owner''s number of rows not deleted (revoked), expired ones included (RG403, the reason as the message).';
