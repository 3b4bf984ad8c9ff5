-- An endpoint enabled again has its paused deliveries taken in once more by the sequencer
-- (their position cleared) rather than once its transaction is below the xmin horizon.
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__hold_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_in_flight bigint := (select l.delivery_id from rowgate_private.webhook_lanes l
    where l.organization_id = new.organization_id and l.endpoint_id = new.id);
begin
  if new.deleted_at is not null and old.deleted_at is null then
    delete from rowgate_private.webhook_deliveries d
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status in ('pending', 'paused')
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif old.enabled and not new.enabled then
    update rowgate_private.webhook_deliveries d set status = 'paused'
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status = 'pending'
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif new.enabled and not old.enabled and new.deleted_at is null then
    update rowgate_private.webhook_deliveries d set status = 'pending', next_attempt_at = now(), feed_position = null
      where d.organization_id = new.organization_id and d.endpoint_id = new.id and d.status = 'paused';
  end if;
  return null;
end;
$function$;
comment on function rowgate_private.tg_webhook_endpoints__hold_deliveries() is 'A disabled endpoint''s deliveries are paused, an enabled one''s resumed, a deleted one''s removed; never waiting for an attempt in flight.';
