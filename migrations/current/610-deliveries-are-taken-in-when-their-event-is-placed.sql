-- A webhook endpoint's first attempts go out in feed order (SPEC §17). A delivery is taken
-- into its endpoint's lane by the sequencer, in the transaction that places its event, and
-- carries that event's position: the lanes no longer wait for the xmin horizon either. A
-- delivery queued for an event placed earlier (redelivered, or resumed with its endpoint)
-- has a null position until the sequencer's next run takes it in.
drop function rowgate_private.take_webhook_deliveries_in(xid8);
-- squawk-ignore ban-drop-table -- the intake is private to the functions this migration replaces; no release reads it directly
drop table rowgate_private.webhook_intake;
-- squawk-ignore require-concurrent-index-deletion -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
drop index rowgate_private.webhook_deliveries_endpoint_pending;
-- squawk-ignore require-concurrent-index-deletion -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
drop index rowgate_private.webhook_deliveries_intake;
-- squawk-ignore ban-drop-column -- only the webhook functions replaced here read it; the previous release's senders call them by the same signatures
alter table rowgate_private.webhook_deliveries drop column xid;
alter table rowgate_private.webhook_deliveries add column feed_position bigint;
comment on column rowgate_private.webhook_deliveries.feed_position is 'Its event''s feed position, set when the sequencer takes the delivery into its endpoint''s lane (null until then); first attempts go out in this order.';
update rowgate_private.webhook_deliveries d set feed_position = e.feed_position
  from rowgate.events e
  where e.organization_id = d.organization_id and e.id = d.event_id and d.status in ('pending', 'paused');
update rowgate_private.webhook_deliveries d set feed_position = 0
  where d.feed_position is null and d.status = 'pending';
-- squawk-ignore require-concurrent-index-creation -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
create index webhook_deliveries_endpoint_pending on rowgate_private.webhook_deliveries (endpoint_id, feed_position, id)
  where status = 'pending' and feed_position is not null;
-- squawk-ignore require-concurrent-index-creation -- webhook_deliveries is held exclusively by this migration already (its xid column goes), so a concurrent build or drop gains nothing
create index webhook_deliveries_waiting on rowgate_private.webhook_deliveries (id)
  where status = 'pending' and feed_position is null;

-- The sequencer: one run at a time across every server (an advisory lock, skipped when
-- another holds it), a bounded batch, one short transaction. It numbers the committed
-- events not yet placed in id order (a transaction's events in the order it wrote them),
-- takes their deliveries and any delivery queued for an event placed earlier into their
-- endpoints' lanes, and makes those lanes due. It returns how many events it placed.
create function rowgate_private.place_events(p_limit integer) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '1s'
as $$
declare
  v_organizations uuid[];
  v_ids uuid[];
begin
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate feed sequencer', 0)) then
    return 0;
  end if;
  with batch as (
    select e.organization_id, e.id from rowgate.events e
    where e.feed_position is null
    order by e.id
    limit greatest(p_limit, 1)
  ), numbered as (
    select b.organization_id, b.id, nextval('rowgate_private.feed_positions') as feed_position
    from (select * from batch order by id) b
  ), placed as (
    update rowgate.events e set feed_position = n.feed_position
      from numbered n
      where e.organization_id = n.organization_id and e.id = n.id
      returning e.organization_id, e.id
  )
  select array_agg(p.organization_id), array_agg(p.id) into v_organizations, v_ids from placed p;
  with taken as (
    update rowgate_private.webhook_deliveries d set feed_position = e.feed_position
      from rowgate.events e
      where d.event_id = any (v_ids) and d.feed_position is null and d.status = 'pending'
        and e.organization_id = d.organization_id and e.id = d.event_id
      returning d.organization_id, d.endpoint_id
  ), earlier as (
    -- a delivery whose event was placed before (or pruned since: the claim drops it)
    update rowgate_private.webhook_deliveries d set feed_position = coalesce(e.feed_position, 0)
      from rowgate_private.webhook_deliveries w
        left join rowgate.events e on e.organization_id = w.organization_id and e.id = w.event_id
      where w.id in (select q.id from rowgate_private.webhook_deliveries q
          where q.status = 'pending' and q.feed_position is null order by q.id limit 1000)
        and (e.id is null or e.feed_position is not null) and not w.event_id = any (coalesce(v_ids, '{}'))
        and d.organization_id = w.organization_id and d.id = w.id
      returning d.organization_id, d.endpoint_id
  )
  insert into rowgate_private.webhook_lanes as l (organization_id, endpoint_id, due_at)
    select distinct t.organization_id, t.endpoint_id, now() from (select * from taken union all select * from earlier) t order by 1, 2
    on conflict (organization_id, endpoint_id) do update set due_at = now()
      where l.delivery_id is null and (l.due_at is null or (l.failures = 0 and l.due_at > now()));
  return coalesce(cardinality(v_ids), 0);
end;
$$;
comment on function rowgate_private.place_events(integer) is 'The feed''s sequencer: gives up to p_limit committed events their feed positions, takes their deliveries (and those queued for events placed earlier) into their endpoints'' lanes; returns the events placed (0 while another run holds the lock).';
revoke all on function rowgate_private.place_events(integer) from public;
grant execute on function rowgate_private.place_events(integer) to rowgate_authenticator;
