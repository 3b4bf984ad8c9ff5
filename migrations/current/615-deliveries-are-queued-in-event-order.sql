-- Deliveries are queued in the order of their events' ids (the order a transaction wrote
-- them): an event has no feed position while its transaction runs.
CREATE OR REPLACE FUNCTION rowgate_private.tg_events__enqueue_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, i.id
    from inserted i
      join rowgate.webhook_endpoints e on e.organization_id = i.organization_id
    where e.enabled and e.deleted_at is null and i.type = any (e.event_types)
    order by i.id, e.id;
  return null;
end;
$function$;
