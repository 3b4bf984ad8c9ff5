-- The claim takes first attempts in the order of their events' feed positions, from the
-- deliveries the sequencer has taken in, instead of those queued below the xmin horizon; it
-- runs the sequencer first, so that a sender running alone sees new deliveries too.
CREATE OR REPLACE FUNCTION rowgate_private.claim_webhook_deliveries(p_limit integer, p_lease interval)
 RETURNS TABLE(delivery_id bigint, lease uuid, attempt integer, failures integer, organization_id uuid, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamp with time zone, previous jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_lane rowgate_private.webhook_lanes;
  v_endpoint record;
  v_secret bytea;
  v_delivery rowgate_private.webhook_deliveries;
  v_event rowgate.events;
  v_lease uuid;
  v_claimed integer := 0;
begin
  if p_lease < interval '1 second' then
    raise exception 'a lease lasts at least a second' using errcode = '22023';
  end if;
  -- a sender running alone (no API server beside it) still sees its deliveries placed; a
  -- sequencer kept waiting on a lane (lock_timeout) leaves the placing to its next run
  begin
    perform rowgate_private.place_events(1000);
  exception when lock_not_available then
    null;
  end;
  for v_lane in
    select l.* from rowgate_private.webhook_lanes l
    where l.due_at <= now()
    order by l.due_at
    limit greatest(p_limit, 1) + 20
    for update skip locked
  loop
    exit when v_claimed >= p_limit;
    begin
      select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
        where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id
        for no key update skip locked;
      continue when not found;
      if v_lane.delivery_id is not null then
        -- the lease ran out: its sender stopped or stalled before it recorded an answer
        perform rowgate_private.end_webhook_attempt(v_lane.organization_id, v_lane.delivery_id, false, null, 0,
          'No outcome was recorded: the sender stopped before its lease ran out', interval '0');
        update rowgate_private.webhook_lanes l set delivery_id = null, lease = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
          where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id;
      end if;
      select s.sealed_secret into v_secret from rowgate_private.webhook_secrets s
        where s.organization_id = v_lane.organization_id and s.endpoint_id = v_lane.endpoint_id;
      if not v_endpoint.enabled or v_endpoint.deleted_at is not null or v_secret is null then
        if v_endpoint.deleted_at is not null or v_secret is null then
          delete from rowgate_private.webhook_deliveries d
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        else
          update rowgate_private.webhook_deliveries d set status = 'paused'
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        end if;
        update rowgate_private.webhook_lanes l set due_at = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      loop
        v_delivery := null;
        select d.* into v_delivery from rowgate_private.webhook_deliveries d
          where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
            and d.status = 'pending' and d.attempts > 0 and d.next_attempt_at <= now()
          order by d.next_attempt_at
          limit 1;
        if v_delivery.id is null then
          select d.* into v_delivery from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts = 0 and d.feed_position is not null
            order by d.feed_position, d.id
            limit 1;
        end if;
        exit when v_delivery.id is null;
        select ev.* into v_event from rowgate.events ev where ev.organization_id = v_delivery.organization_id and ev.id = v_delivery.event_id;
        exit when v_event.id is not null;
        delete from rowgate_private.webhook_deliveries d where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      end loop;
      if v_delivery.id is null then
        -- nothing to send now: the lane falls due at its next retry, or when a delivery is taken in
        update rowgate_private.webhook_lanes l set due_at = (
            select min(d.next_attempt_at) from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts > 0)
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      v_lease := gen_random_uuid();
      update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = now() + p_lease
        where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      update rowgate_private.webhook_lanes l set delivery_id = v_delivery.id, lease = v_lease, due_at = now() + p_lease
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
      v_claimed := v_claimed + 1;
      delivery_id := v_delivery.id;
      lease := v_lease;
      attempt := v_delivery.attempts + 1;
      failures := v_lane.failures;
      organization_id := v_lane.organization_id;
      endpoint_id := v_lane.endpoint_id;
      url := v_endpoint.url;
      sealed_secret := v_secret;
      event_id := v_event.id;
      type := v_event.type;
      resource_id := v_event.resource_id;
      data := v_event.data;
      -- the body is the event as its endpoint's managers read it: the actor's client address and user agent with it
      actor := v_event.actor || coalesce((select jsonb_build_object('ip', c.ip, 'user_agent', c.user_agent)
        from rowgate.event_clients c where c.organization_id = v_event.organization_id and c.event_id = v_event.id),
        jsonb_build_object('ip', null, 'user_agent', null));
      previous := v_event.previous;
      request_id := v_event.request_id;
      created_at := v_event.created_at;
      return next;
    exception when others then
      -- a lane that cannot be claimed (a fault in its rows) is set aside for a minute; the others go on
      raise warning 'webhook lane of endpoint % not claimed: %', v_lane.endpoint_id, sqlerrm;
      update rowgate_private.webhook_lanes l set due_at = now() + interval '1 minute'
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
    end;
  end loop;
end;
$function$;
comment on function rowgate_private.claim_webhook_deliveries(integer,interval) is 'Leases up to p_limit due attempts, one per endpoint, for p_lease; commit before sending. Each answer is recorded with record_webhook_attempt and its lease.';
grant execute on function rowgate_private.claim_webhook_deliveries(integer,interval) to rowgate_authenticator;
