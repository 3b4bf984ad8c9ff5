--! Previous: sha1:e172ddca284a95d3ac92080b0503577af461f6d7
--! Hash: sha1:9f93546e64e7e92930b34deabfb628b779fb5a58
--! Message: Leased webhook deliveries in endpoint lanes; a feed by commit horizon

--! split: 001-the-event-feed-reads-by-commit-horizon.sql
-- The event feed (SPEC §17) hands out every event exactly once, in an order a
-- late commit cannot break. An event's id is taken when it is inserted, not
-- when its transaction commits, so a reader paging by id (or created_at)
-- skips an event whose transaction commits after a later one was read.
-- feed_position orders events by their transaction (its xid8) and then by
-- insertion, and a reader takes only positions below the oldest transaction
-- still running (pg_snapshot_xmin): every transaction below that has ended,
-- and a transaction that commits later has a larger xid, so nothing can
-- appear below a position once read. The text is fixed-width digits, so it
-- orders as text too: analysts and GraphQL read and order by the column.
create sequence rowgate_private.event_positions as bigint cache 100;
comment on sequence rowgate_private.event_positions is
  'The order of events within their transaction (the second half of feed_position).';

alter table rowgate.events add column feed_position text collate "C";
-- the events kept so far have all committed: they come first, in their id order
update rowgate.events e set feed_position = '00000000000000000000-' || lpad(nextval('rowgate_private.event_positions')::text, 19, '0')
  from (select organization_id, id from rowgate.events order by id) o
  where e.organization_id = o.organization_id and e.id = o.id;
alter table rowgate.events alter column feed_position set default
  lpad(pg_current_xact_id()::text, 20, '0') || '-' || lpad(nextval('rowgate_private.event_positions')::text, 19, '0');
alter table rowgate.events alter column feed_position set not null;
comment on column rowgate.events.feed_position is
  'The event''s place in the feed (SPEC §17): its transaction, then its order within it. Order by it to read events as the feed hands them out.';
-- a tenant's poll reads its own organizations' range of positions only
create index events_organization_feed on rowgate.events (organization_id, feed_position);
grant select (feed_position) on rowgate.events to rowgate_analyst, rowgate_organization, rowgate_user;

-- A feed cursor older than what retention keeps cannot be continued without a
-- gap (SPEC §17: 410 CursorExpired); the database knows what pruning removed.
create table rowgate_private.event_retention (
  singleton boolean primary key default true check (singleton),
  pruned_before timestamptz not null
);
comment on table rowgate_private.event_retention is
  'Events created before pruned_before may have been pruned: a feed cursor older than that has lost what came after it.';

create function rowgate_hidden.events_pruned_before() returns timestamptz
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select pruned_before from rowgate_private.event_retention;
$$;
comment on function rowgate_hidden.events_pruned_before() is
  'Events created before this instant may have been pruned (null: none ever was); a feed cursor from before it has expired.';
revoke all on function rowgate_hidden.events_pruned_before() from public;
grant execute on function rowgate_hidden.events_pruned_before() to rowgate_organization, rowgate_user;

-- Pruning records how far it went before it deletes, so that a feed poll
-- never continues a cursor across events that are gone.
create or replace function rowgate_private.prune_events(p_older_than interval, p_batch integer default 5000)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_pruned integer;
begin
  if p_older_than < interval '1 day' then
    raise exception 'events are kept at least a day' using errcode = '22023';
  end if;
  insert into rowgate_private.event_retention (singleton, pruned_before) values (true, now() - p_older_than)
    on conflict (singleton) do update set pruned_before = greatest(excluded.pruned_before, rowgate_private.event_retention.pruned_before);
  with old as (
    select old_events.organization_id, old_events.id
    from rowgate.organizations o -- every event's organization is one (organizations are never removed, only marked deleted)
      cross join lateral (
        select e.organization_id, e.id from rowgate.events e
        where e.organization_id = o.id and e.created_at < now() - p_older_than
          and not exists (
            select 1 from rowgate_private.webhook_deliveries d
            where d.organization_id = e.organization_id and d.event_id = e.id and d.status = 'pending')
        order by e.created_at
        limit greatest(p_batch, 1)
        for update of e skip locked
      ) old_events
    limit greatest(p_batch, 1)
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

--! split: 002-leased-deliveries-in-endpoint-lanes.sql
-- Webhook deliveries are leased, and each endpoint is a lane of its own
-- (SPEC §17). A sender claims due work, records a lease and commits, then
-- sends; the outcome is written in a second short transaction. No
-- transaction, connection or xid is held while a receiver takes its time, so
-- a slow endpoint delays no other endpoint, of its organization or another.
-- A sender that dies leaves its lease to run out; the next claim records that
-- attempt as lost and makes it again, with the same webhook-id (at least
-- once). An endpoint has at most one attempt in flight, and its first
-- attempts go out in feed order.
--
-- A lane (one per endpoint) says when a sender next has something to do for
-- it: senders read the lanes that are due through one index, so deliveries
-- that wait (retries not yet due, events behind an endpoint that fails) cost
-- nothing. The writing transaction never touches a lane (a row every write of
-- a tenant updated would serialize its writes): the senders take new
-- deliveries into their lanes themselves, in the order their transactions
-- commit (the same horizon as the event feed), so a delivery of a
-- transaction that commits late is found when it commits.
--
-- A lane that fails is a circuit breaker: after its third failed attempt in a
-- row nothing is sent to the endpoint until its retry time, growing with its
-- failures in a row; then one attempt probes it, and a success lets the rest
-- go. (One or two failures only delay the deliveries that failed: an endpoint
-- that fails now and then is not held up.)

-- the transaction that queued the delivery: lanes take deliveries in this order
alter table rowgate_private.webhook_deliveries add column xid xid8 not null default '0';
alter table rowgate_private.webhook_deliveries alter column xid set default pg_current_xact_id();
comment on column rowgate_private.webhook_deliveries.xid is
  'The transaction that queued the delivery: taken into its endpoint''s lane once that transaction has ended, in this order.';

-- claims read lanes, not a queue of every delivery; a lane reads its own deliveries
drop index rowgate_private.webhook_deliveries_due;
drop index rowgate_private.webhook_deliveries_organization_pending;
drop index rowgate_private.webhook_deliveries_endpoint_pending;
create index webhook_deliveries_intake on rowgate_private.webhook_deliveries (xid, id);
create index webhook_deliveries_endpoint_pending on rowgate_private.webhook_deliveries (endpoint_id, xid, id) where status = 'pending';
create index webhook_deliveries_endpoint_retry on rowgate_private.webhook_deliveries (endpoint_id, next_attempt_at)
  where status = 'pending' and attempts > 0;

create table rowgate_private.webhook_lanes (
  organization_id uuid not null,
  endpoint_id uuid not null,
  due_at timestamptz,
  delivery_id bigint,
  lease uuid,
  failures integer not null default 0,
  primary key (organization_id, endpoint_id),
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id),
  check ((delivery_id is null) = (lease is null))
);
comment on table rowgate_private.webhook_lanes is
  'One endpoint''s delivery state: when a sender next has work for it (due_at; null: none until a delivery is taken in), the attempt in flight and its lease (due_at is then when the lease runs out), and its failed attempts in a row (more than 0: the breaker is open and due_at is the next probe).';
create index webhook_lanes_due on rowgate_private.webhook_lanes (due_at) where due_at is not null;

-- how far the senders have taken deliveries into their lanes
create table rowgate_private.webhook_intake (
  singleton boolean primary key default true check (singleton),
  xid xid8 not null,
  delivery_id bigint not null
);
comment on table rowgate_private.webhook_intake is
  'The last delivery (by its transaction, then its id) taken into its endpoint''s lane; those after it are taken once their transactions have ended.';

-- the deliveries waiting now, and the point from which new ones are taken in
insert into rowgate_private.webhook_lanes (organization_id, endpoint_id, due_at)
  select distinct d.organization_id, d.endpoint_id, now() from rowgate_private.webhook_deliveries d where d.status = 'pending';
insert into rowgate_private.webhook_intake (singleton, xid, delivery_id) values (true, pg_snapshot_xmin(pg_current_snapshot()), 0);

-- New deliveries into their lanes: those of transactions below the horizon
-- (all ended), after the last taken. An idle lane, or one waiting only for a
-- retry, falls due now; a lane in flight, or waiting for its breaker's next
-- probe, keeps its time. One sender at a time takes them in (the others skip it); it waits for
-- a lane another transaction holds rather than skip it, so that no delivery
-- is taken in without its lane knowing.
create function rowgate_private.take_webhook_deliveries_in(p_horizon xid8) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_intake rowgate_private.webhook_intake;
  v_next xid8;
begin
  select i.* into v_intake from rowgate_private.webhook_intake i;
  -- the next delivery after the last taken, through the (xid, id) index: an idle poll reads one entry
  select d.xid into v_next from rowgate_private.webhook_deliveries d
    where (d.xid, d.id) > (v_intake.xid, v_intake.delivery_id)
    order by d.xid, d.id
    limit 1;
  if v_next is null or v_next >= p_horizon then
    return;
  end if;
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate webhook intake', 0)) then
    return;
  end if;
  -- read again under the lock: another sender may have taken them in meanwhile
  select i.* into v_intake from rowgate_private.webhook_intake i;
  with taken as (
    select d.organization_id, d.endpoint_id, d.xid, d.id, d.status from rowgate_private.webhook_deliveries d
    where (d.xid, d.id) > (v_intake.xid, v_intake.delivery_id) and d.xid < p_horizon
    order by d.xid, d.id
    limit 10000
  ), last_taken as (
    select t.xid, t.id from taken t order by t.xid desc, t.id desc limit 1
  ), lanes as (
    insert into rowgate_private.webhook_lanes as l (organization_id, endpoint_id, due_at)
      select distinct t.organization_id, t.endpoint_id, now() from taken t where t.status = 'pending' order by 1, 2
      on conflict (organization_id, endpoint_id) do update set due_at = now()
        where l.delivery_id is null and (l.due_at is null or (l.failures = 0 and l.due_at > now()))
  )
  update rowgate_private.webhook_intake i set xid = last_taken.xid, delivery_id = last_taken.id from last_taken;
end;
$$;
comment on function rowgate_private.take_webhook_deliveries_in(xid8) is
  'Takes the deliveries queued by transactions that have ended into their endpoints'' lanes (at most 10,000 a call), making idle lanes due.';

-- An attempt's outcome, for its delivery and endpoint: the endpoint's row
-- first (a change of its state made meanwhile has committed, or waits for
-- this), then the delivery, counted when it was claimed: retried while its
-- endpoint can take it, paused when it was disabled, failed when it was
-- deleted or after its tenth attempt; 10 failed deliveries in a row disable
-- the endpoint.
create function rowgate_private.end_webhook_attempt(p_organization_id uuid, p_delivery_id bigint, p_succeeded boolean,
  p_response_code integer, p_duration_ms integer, p_error text, p_retry_delay interval)
returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_delivery rowgate_private.webhook_deliveries;
  v_endpoint record;
begin
  select e.id, e.enabled, e.deleted_at into v_endpoint
    from rowgate.webhook_endpoints e
    where e.organization_id = p_organization_id
      and e.id = (select d.endpoint_id from rowgate_private.webhook_deliveries d where d.organization_id = p_organization_id and d.id = p_delivery_id)
    for no key update;
  update rowgate_private.webhook_deliveries d set
      status = case
        when p_succeeded then 'succeeded'
        when d.attempts >= 10 or v_endpoint.deleted_at is not null then 'failed'
        when not v_endpoint.enabled then 'paused'
        else 'pending' end,
      next_attempt_at = now() + p_retry_delay
    where d.organization_id = p_organization_id and d.id = p_delivery_id
    returning d.* into v_delivery;
  if v_delivery.id is null then
    return;
  end if;
  insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error)
    values (p_organization_id, v_delivery.endpoint_id, v_delivery.event_id, v_delivery.id, v_delivery.attempts,
      case when p_succeeded then 'succeeded' else 'failed' end, p_response_code, p_duration_ms, left(p_error, 500));
  if v_endpoint.deleted_at is not null then
    return;
  end if;
  if p_succeeded then
    update rowgate.webhook_endpoints e set consecutive_failures = 0
      where e.organization_id = p_organization_id and e.id = v_delivery.endpoint_id and e.consecutive_failures > 0;
  elsif v_delivery.status = 'failed' then
    update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + 1,
        enabled = e.enabled and e.consecutive_failures + 1 < 10
      where e.organization_id = p_organization_id and e.id = v_delivery.endpoint_id;
  end if;
end;
$$;
comment on function rowgate_private.end_webhook_attempt(uuid, bigint, boolean, integer, integer, text, interval) is
  'Records an attempt''s outcome on its delivery, its endpoint and the attempts list.';

-- Up to p_limit attempts to make now, each on a lane of its own, leased for
-- p_lease: a due retry of the lane first, else its first attempt next in feed
-- order. A lane whose lease ran out has that attempt recorded as lost (it
-- counts toward the 10) and made again. The endpoint's row is read locked and
-- skipped while another transaction changes it (the next claim sees it);
-- what a lane cannot deliver is repaired: a disabled endpoint's deliveries
-- paused, a deleted one's or one without its signing secret removed, a
-- delivery whose event is gone removed.
create function rowgate_private.claim_webhook_deliveries(p_limit integer, p_lease interval)
returns table (delivery_id bigint, lease uuid, attempt integer, failures integer, organization_id uuid, endpoint_id uuid, url text,
  sealed_secret bytea, event_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz,
  previous jsonb)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_horizon xid8 := pg_snapshot_xmin(pg_current_snapshot());
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
  perform rowgate_private.take_webhook_deliveries_in(v_horizon);
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
              and d.status = 'pending' and d.attempts = 0 and d.xid < v_horizon
            order by d.xid, d.id
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
$$;
comment on function rowgate_private.claim_webhook_deliveries(integer, interval) is
  'Leases up to p_limit due attempts, one per endpoint, for p_lease; commit before sending. Each answer is recorded with record_webhook_attempt and its lease.';

-- The outcome of a leased attempt, in its own short transaction. Nothing
-- happens when the lease was lost (it ran out and the attempt was claimed
-- again: that sender records it). A third failure in a row opens the
-- endpoint's breaker until p_breaker_delay from now (the lane's next probe);
-- once it has failed 10 attempts in a row,
-- deliveries that waited behind it longer than a delivery's whole retry
-- schedule (p_give_up_after) fail too, so that an endpoint that stays down
-- is disabled in that time, not after every waiting event's ten attempts.
-- A success closes the breaker and the lane's next delivery is due at once.
create function rowgate_private.record_webhook_attempt(p_organization_id uuid, p_endpoint_id uuid, p_delivery_id bigint, p_lease uuid,
  p_succeeded boolean, p_response_code integer, p_duration_ms integer, p_error text,
  p_retry_delay interval, p_breaker_delay interval, p_give_up_after interval)
returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_lane rowgate_private.webhook_lanes;
  v_endpoint record;
  v_given_up integer;
begin
  select l.* into v_lane from rowgate_private.webhook_lanes l
    where l.organization_id = p_organization_id and l.endpoint_id = p_endpoint_id
    for update;
  if v_lane.lease is distinct from p_lease or v_lane.delivery_id is distinct from p_delivery_id then
    return false;
  end if;
  perform rowgate_private.end_webhook_attempt(p_organization_id, p_delivery_id, p_succeeded, p_response_code, p_duration_ms, p_error,
    p_retry_delay);
  select e.enabled, e.deleted_at into v_endpoint from rowgate.webhook_endpoints e
    where e.organization_id = p_organization_id and e.id = p_endpoint_id;
  if not p_succeeded and v_lane.failures + 1 >= 10 and v_endpoint.enabled and v_endpoint.deleted_at is null then
    with given_up as (
      update rowgate_private.webhook_deliveries d set status = 'failed'
        where d.organization_id = p_organization_id and d.endpoint_id = p_endpoint_id and d.status = 'pending'
          and d.id <> p_delivery_id and d.created_at < now() - p_give_up_after
        returning 1
    )
    select count(*)::integer into v_given_up from given_up;
    if v_given_up > 0 then
      update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + v_given_up,
          enabled = e.enabled and e.consecutive_failures + v_given_up < 10
        where e.organization_id = p_organization_id and e.id = p_endpoint_id;
      select e.enabled, e.deleted_at into v_endpoint from rowgate.webhook_endpoints e
        where e.organization_id = p_organization_id and e.id = p_endpoint_id;
    end if;
  end if;
  update rowgate_private.webhook_lanes l set delivery_id = null, lease = null,
      failures = case when p_succeeded then 0 else l.failures + 1 end,
      due_at = case
        when not v_endpoint.enabled or v_endpoint.deleted_at is not null then null
        when not p_succeeded and l.failures + 1 >= 3 then now() + p_breaker_delay
        when exists (select 1 from rowgate_private.webhook_deliveries d
            where d.endpoint_id = p_endpoint_id and d.organization_id = p_organization_id and d.status = 'pending' and d.attempts = 0)
          then now()
        else (select min(d.next_attempt_at) from rowgate_private.webhook_deliveries d
            where d.endpoint_id = p_endpoint_id and d.organization_id = p_organization_id and d.status = 'pending' and d.attempts > 0)
      end
    where l.organization_id = p_organization_id and l.endpoint_id = p_endpoint_id;
  return true;
end;
$$;
comment on function rowgate_private.record_webhook_attempt(uuid, uuid, bigint, uuid, boolean, integer, integer, text, interval, interval, interval) is
  'Records a leased attempt''s answer (false: the lease was lost, nothing recorded), moves the endpoint''s breaker and sets when its lane is next due.';

grant execute on function rowgate_private.claim_webhook_deliveries(integer, interval),
  rowgate_private.record_webhook_attempt(uuid, uuid, bigint, uuid, boolean, integer, integer, text, interval, interval, interval)
  to rowgate_authenticator;

-- The previous release's senders claimed with a transaction held open for
-- the whole attempt; during a rolling deploy they find nothing to claim and
-- idle at their poll interval, and the new senders deliver everything.
drop function rowgate_private.claim_webhook_delivery();
create function rowgate_private.claim_webhook_delivery()
returns table (delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid,
  organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz,
  previous jsonb)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select null::bigint, null::integer, null::uuid, null::text, null::bytea, null::uuid, null::uuid, null::text, null::uuid,
    null::jsonb, null::jsonb, null::text, null::timestamptz, null::jsonb
  where false;
$$;
grant execute on function rowgate_private.claim_webhook_delivery() to rowgate_authenticator;
create or replace function rowgate_private.next_webhook_delivery_at() returns timestamptz
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select null::timestamptz;
$$;

--! split: 003-the-write-path-notifies-nobody.sql
-- A write that queues a delivery no longer notifies: a notifying commit takes
-- a lock every other notifying commit waits for, so with most organizations
-- subscribed most writes queued behind each other. The senders find new
-- deliveries by reading the lanes' due index and the deliveries after the
-- last taken in, a short sleep apart when idle. Deliveries are queued in the
-- feed's order of their events.
create or replace function rowgate_private.tg_events__enqueue_deliveries() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, i.id
    from inserted i
      join rowgate.webhook_endpoints e on e.organization_id = i.organization_id
    where e.enabled and e.deleted_at is null and i.type = any (e.event_types)
    order by i.feed_position, e.id;
  return null;
end;
$$;

-- A redelivery is taken into its lane like any delivery.
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
    from rowgate.webhook_endpoints e where e.organization_id = v_organization_id and e.id = p_endpoint_id
    for share;
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id, status)
    values (v_organization_id, p_endpoint_id, p_event_id, v_status) returning id into v_id;
  return v_id;
end;
$$;

-- An endpoint's state and its deliveries: disabled, its waiting deliveries
-- pause; deleted, they are removed; enabled again, they resume as if queued
-- by the enabling transaction, so the senders take them into the lane when it
-- commits (the endpoint's change never writes the lane, which a sender may be
-- holding). The attempt in flight (leased) is left to its sender, which reads
-- the endpoint's new state when it records the answer.
create or replace function rowgate_private.tg_webhook_endpoints__hold_deliveries() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
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
    update rowgate_private.webhook_deliveries d set status = 'pending', next_attempt_at = now(), xid = pg_current_xact_id()
      where d.organization_id = new.organization_id and d.endpoint_id = new.id and d.status = 'paused';
  end if;
  return null;
end;
$$;

--! split: 004-operations.sql
-- The event feed joins the operations the explanations read.
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'events:feed', 'events:get', 'events:list', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'openapi', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:update');
insert into rowgate_hidden.operations (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) values
  ('accounts:create', 'POST', '/v1/accounts/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('accounts:get', 'GET', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('accounts:update', 'PATCH', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_write', 'payouts_write'], 'organization', 'finance_write', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('auth:logout', 'POST', '/v1/auth/logout', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 204, 'none', null, null, null),
  ('authorization:check', 'POST', '/v1/authorization/check', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorization:operations', 'GET', '/v1/authorization/operations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('credentials:revoke', 'POST', '/v1/credentials/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('customer_members:create', 'POST', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:delete', 'DELETE', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:get', 'GET', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'read'),
  ('customer_members:list', 'GET', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'read'),
  ('customer_members:list_all', 'GET', '/v1/members/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customer_members:update', 'PATCH', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_portal:get_order', 'GET', '/v1/customer-portal/orders/{id}', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, null),
  ('customer_portal:list_orders', 'GET', '/v1/customer-portal/orders/', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:me', 'GET', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:update_me', 'PATCH', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_sessions:create', 'POST', '/v1/customer-sessions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customer_sessions_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:create', 'POST', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:delete', 'DELETE', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:delete_external', 'DELETE', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('customers:get', 'GET', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"id":"id"}'::jsonb, 'read'),
  ('customers:get_external', 'GET', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'read'),
  ('customers:list', 'GET', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customers:update', 'PATCH', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:update_external', 'PATCH', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('events:feed', 'GET', '/v1/events/feed', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('events:get', 'GET', '/v1/events/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', 'read', null, 200, 'visible', 'events', '{"id":"id"}'::jsonb, 'read'),
  ('events:list', 'GET', '/v1/events/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('impersonations:create', 'POST', '/v1/impersonations/', array['web_session'], array['user:write'], 'web_user_write', 'platform_admin', null, 201, 'none', null, null, 'platform_admin'),
  ('invitations:accept', 'POST', '/v1/invitations/{id}/accept', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('invitations:create', 'POST', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:decline', 'POST', '/v1/invitations/{id}/decline', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('invitations:list', 'GET', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:mine', 'GET', '/v1/invitations/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('invitations:revoke', 'DELETE', '/v1/organizations/{id}/invitations/{invitation_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('login_code:authenticate', 'POST', '/v1/login-code/authenticate', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('login_code:request', 'POST', '/v1/login-code/request', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('members:add', 'POST', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('members:leave', 'DELETE', '/v1/organizations/{id}/members/me', array['web_session'], array['user:write'], 'web_user_write', 'read', null, 204, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('members:list', 'GET', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('members:remove', 'DELETE', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('members:update', 'PATCH', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('oauth2:authorize', 'GET', '/v1/oauth2/authorize', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('oauth2:consent', 'POST', '/v1/oauth2/consent', array['web_session'], array['user:write'], 'web_user_write', null, null, 302, 'none', null, null, null),
  ('oauth2:introspect', 'POST', '/v1/oauth2/introspect', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:register', 'POST', '/v1/oauth2/register', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('oauth2:revoke', 'POST', '/v1/oauth2/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:token', 'POST', '/v1/oauth2/token', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:userinfo', 'GET', '/v1/oauth2/userinfo', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:read', 'user:write'], 'user_read', null, null, 200, 'none', null, null, null),
  ('oauth2_clients:delete', 'DELETE', '/v1/oauth2/clients/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:get', 'GET', '/v1/oauth2/clients/{id}', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:list', 'GET', '/v1/oauth2/clients/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('openapi', 'GET', '/v1/openapi.json', '{}'::text[], '{}'::text[], 'public', null, null, 200, 'none', null, null, null),
  ('orders:create', 'POST', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('orders:get', 'GET', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', 'read', null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, 'read'),
  ('orders:list', 'GET', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('orders:update', 'PATCH', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 200, 'authorize', 'order', '{"id":"id"}'::jsonb, 'orders:write'),
  ('organization_access_tokens:create', 'POST', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 201, 'target', null, null, 'access_token_management'),
  ('organization_access_tokens:delete', 'DELETE', '/v1/organization-access-tokens/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 204, 'authorize', 'organization_access_token', '{"id":"id"}'::jsonb, 'access_token_management'),
  ('organization_access_tokens:list', 'GET', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_read', 'organization_access_tokens_write'], 'organization_user', null, null, 200, 'list', null, null, null),
  ('organizations:create', 'POST', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', null, null, 201, 'none', null, null, null),
  ('organizations:delete', 'DELETE', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('organizations:get', 'GET', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:get_account', 'GET', '/v1/organizations/{id}/account', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'finance_read'),
  ('organizations:list', 'GET', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('organizations:permissions', 'GET', '/v1/organizations/{id}/permissions', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:update', 'PATCH', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('payout_accounts:create', 'POST', '/v1/payout-accounts/', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 201, 'target', null, null, 'finance_write'),
  ('payout_accounts:delete', 'DELETE', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 204, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('payout_accounts:get', 'GET', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', 'finance_read', null, 200, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('payout_accounts:list', 'GET', '/v1/payout-accounts/', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', null, null, 200, 'list', null, null, null),
  ('personal_access_tokens:create', 'POST', '/v1/personal-access-tokens/', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('personal_access_tokens:delete', 'DELETE', '/v1/personal-access-tokens/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'personal_access_tokens', '{"id":"id"}'::jsonb, null),
  ('personal_access_tokens:list', 'GET', '/v1/personal-access-tokens/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('products:create', 'POST', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 201, 'target', null, null, 'products:write'),
  ('products:delete', 'DELETE', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 204, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('products:get', 'GET', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', 'read', null, 200, 'visible', 'products', '{"id":"id"}'::jsonb, 'read'),
  ('products:list', 'GET', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('products:update', 'PATCH', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 200, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('refunds:create', 'POST', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('refunds:get', 'GET', '/v1/refunds/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', 'read', null, 200, 'visible', 'refunds', '{"id":"id"}'::jsonb, 'read'),
  ('refunds:list', 'GET', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('roles:create', 'POST', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:delete', 'DELETE', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:list', 'GET', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('roles:update', 'PATCH', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('transactions:get', 'GET', '/v1/transactions/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'read', null, 200, 'visible', 'transactions', '{"id":"id"}'::jsonb, 'read'),
  ('transactions:list', 'GET', '/v1/transactions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('users:delete_me', 'DELETE', '/v1/users/me', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:write'], 'user_write', null, null, 204, 'none', null, null, null),
  ('users:me', 'GET', '/v1/users/me', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('users:update_me', 'PATCH', '/v1/users/me', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('webhook_deliveries:list', 'GET', '/v1/webhook-endpoints/{id}/deliveries', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:create', 'POST', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('webhook_endpoints:delete', 'DELETE', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 204, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:get', 'GET', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:list', 'GET', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('webhook_endpoints:redeliver', 'POST', '/v1/webhook-endpoints/{id}/redeliver', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 202, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:update', 'PATCH', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage')
on conflict (operation) do update set method = excluded.method, path = excluded.path, credentials = excluded.credentials, scopes = excluded.scopes, access_class = excluded.access_class, policy = excluded.policy, permission = excluded.permission, status = excluded.status, lookup = excluded.lookup, resource = excluded.resource, match = excluded.match, policy_key = excluded.policy_key;
