--! Previous: sha1:b3c10f99bb162dfae041fe5fc1f7302df90699f3
--! Hash: sha1:bf28329082cbfa716ac624adb52cf33e0caa6209
--! Message: Event retention (SPEC §17): rowgate_private.prune_events deletes events older than ROWGATE_EVENT_RETENTION_DAYS in batches, never one with a pending webhook delivery, with the finished deliveries and attempts of those it deletes

--! split: 001-event-retention.sql
-- Event retention (SPEC §17): events are an audit trail and are kept unless the
-- operator sets ROWGATE_EVENT_RETENTION_DAYS; then the server prunes, in small
-- batches, the events older than that. An event whose webhook delivery is still
-- pending stays until the delivery ends (a retry must be able to send it); the
-- finished deliveries and attempts of a pruned event go with it, since nothing
-- can redeliver an event that is gone. Runs as the owner (security definer):
-- no API role deletes events, and the authenticator may only call this.
create or replace function rowgate_private.prune_events(p_older_than interval, p_batch integer default 5000)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_pruned integer;
begin
  if p_older_than < interval '1 day' then
    raise exception 'events are kept at least a day' using errcode = '22023';
  end if;
  with old as (
    select e.organization_id, e.id from rowgate.events e
    where e.created_at < now() - p_older_than
      and not exists (
        select 1 from rowgate_private.webhook_deliveries d
        where d.organization_id = e.organization_id and d.event_id = e.id and d.status = 'pending')
    order by e.created_at
    limit greatest(p_batch, 1)
    for update skip locked
  ), attempts as (
    delete from rowgate.webhook_attempts a using old
    where a.organization_id = old.organization_id and a.event_id = old.id
  ), deliveries as (
    delete from rowgate_private.webhook_deliveries d using old
    where d.organization_id = old.organization_id and d.event_id = old.id
  ), pruned as (
    delete from rowgate.events e using old
    where e.organization_id = old.organization_id and e.id = old.id
    returning 1
  )
  select count(*)::integer into v_pruned from pruned;
  return v_pruned;
end;
$$;
comment on function rowgate_private.prune_events(interval, integer) is
  'Deletes up to p_batch events older than p_older_than (at least a day) whose deliveries are over, with those deliveries and their attempts; returns how many events went.';
revoke all on function rowgate_private.prune_events(interval, integer) from public;
grant execute on function rowgate_private.prune_events(interval, integer) to rowgate_authenticator;

-- Pruning reads old events by time across organizations, and finds a pruned
-- event's deliveries and attempts by its id.
create index events_created on rowgate.events (created_at);
create index webhook_deliveries_event on rowgate_private.webhook_deliveries (event_id);
create index webhook_attempts_event on rowgate.webhook_attempts (event_id);
