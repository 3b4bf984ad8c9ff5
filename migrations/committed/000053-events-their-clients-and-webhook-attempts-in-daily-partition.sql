--! Previous: sha1:05c5035630a9172c8765fe1dc4fb4185bf488891
--! Hash: sha1:2b4b44e767b06d12bd70509880ef125b417cae7d
--! Message: Events, their clients and webhook attempts in daily partitions

--! split: 001-partitions-and-their-upkeep.sql
-- Events, their client addresses and webhook attempts are kept in daily partitions
-- so that retention (SPEC §17) drops a day of them at once instead of deleting
-- rows. The partitions live in a schema of their own that no role but the owner
-- reaches and no interface publishes: they are read and written only through their
-- parents in rowgate, which keep the grants and policies. Ranges are of UUIDv7
-- ids (an id's first 48 bits are its millisecond), cut at midnight UTC.
create schema rowgate_partitions;
revoke all on schema rowgate_partitions from public;
comment on schema rowgate_partitions is 'The daily partitions of rowgate.events, rowgate.event_clients and rowgate.webhook_attempts: reached only through those tables.';

-- The smallest UUIDv7 of a millisecond: the bound between two partitions.
create function rowgate_private.uuidv7_bound(p_at timestamptz) returns uuid
language sql immutable strict set search_path = pg_catalog, pg_temp as $$
  select (lpad(to_hex(floor(extract(epoch from p_at) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid
$$;
comment on function rowgate_private.uuidv7_bound(timestamptz) is 'The smallest UUIDv7 of p_at''s millisecond: ids at or after p_at sort at or after it.';

-- The instant a UUIDv7 (or a bound) stands for.
create function rowgate_private.uuidv7_time(p_id uuid) returns timestamptz
language sql immutable strict set search_path = pg_catalog, pg_temp as $$
  select to_timestamp((('x' || left(replace(p_id::text, '-', ''), 12))::bit(48)::bigint) / 1000.0)
$$;
comment on function rowgate_private.uuidv7_time(uuid) is 'The millisecond a UUIDv7 was made in.';

-- The ranges of a table's partitions, read from the catalog: the default partition
-- has neither bound, the oldest starts at the smallest uuid.
create function rowgate_private.partition_ranges(p_parent regclass)
returns table (partition regclass, lower_id uuid, upper_id uuid)
language sql stable set search_path = pg_catalog, pg_temp as $$
  select c.oid::regclass,
    case when b.bound ~ '^FOR VALUES FROM \(MINVALUE\)' then '00000000-0000-0000-0000-000000000000'::uuid
      else substring(b.bound from 'FROM \(''([0-9a-f-]+)''\)')::uuid end,
    substring(b.bound from ' TO \(''([0-9a-f-]+)''\)')::uuid
  from pg_inherits i
    join pg_class c on c.oid = i.inhrelid
    cross join lateral (select pg_get_expr(c.relpartbound, c.oid) as bound) b
  where i.inhparent = p_parent and b.bound <> 'DEFAULT'
$$;
comment on function rowgate_private.partition_ranges(regclass) is 'The range partitions of p_parent (not its default one) and their bounds.';

-- One partition [p_from, p_to) of p_parent, keyed by p_key. Rows the default
-- partition took in that range (inserted while no partition covered it) move
-- into it first, so attaching it finds the default partition clean. Attaching
-- (rather than creating the partition in place) locks the parent only against
-- other schema changes: reads and writes go on.
create function rowgate_private.add_partition(p_parent regclass, p_key text, p_name text, p_from uuid, p_to uuid) returns void
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
declare
  v_default regclass;
begin
  execute format('create table rowgate_partitions.%I (like %s including constraints)', p_name, p_parent);
  select p.partdefid::regclass into v_default from pg_partitioned_table p where p.partrelid = p_parent and p.partdefid <> 0;
  if v_default is not null then
    execute format('with moved as (delete from %s where %I >= $1 and %I < $2 returning *) insert into rowgate_partitions.%I select * from moved',
      v_default, p_key, p_key, p_name) using p_from, p_to;
  end if;
  execute format('alter table %s attach partition rowgate_partitions.%I for values from (%L) to (%L)', p_parent, p_name, p_from, p_to);
end;
$$;
comment on function rowgate_private.add_partition(regclass, text, text, uuid, uuid) is 'Attaches a partition [p_from, p_to) named p_name to p_parent, with the rows its default partition held in that range.';

-- Every server calls this at start and hourly: the days from the newest partition
-- to a week ahead get theirs, so an insert always finds its day's partition while
-- any server has run in the past week. An insert past them lands in the default
-- partition, whose rows move to their day's partition when it is made.
create function rowgate_private.add_event_partitions() returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp set lock_timeout = '5s' as $$
declare
  v_table record;
  v_day timestamptz;
  v_until timestamptz := now() + interval '7 days';
  v_added integer := 0;
begin
  -- one server at a time: the others find the partitions made
  perform pg_advisory_xact_lock(hashtext('rowgate_private.event_partitions'));
  for v_table in
    select t.parent, t.key, c.relname as name
    from (values ('rowgate.events'::regclass, 'id'), ('rowgate.event_clients'::regclass, 'event_id'),
                 ('rowgate.webhook_attempts'::regclass, 'id')) t (parent, key)
      join pg_class c on c.oid = t.parent
  loop
    v_day := coalesce(
      rowgate_private.uuidv7_time((select r.upper_id from rowgate_private.partition_ranges(v_table.parent) r order by r.upper_id desc limit 1)),
      date_trunc('day', now(), 'UTC'));
    while v_day < v_until loop
      perform rowgate_private.add_partition(v_table.parent, v_table.key,
        v_table.name || '_' || to_char(v_day at time zone 'UTC', 'YYYYMMDD'),
        rowgate_private.uuidv7_bound(v_day), rowgate_private.uuidv7_bound(v_day + interval '24 hours'));
      v_day := v_day + interval '24 hours';
      v_added := v_added + 1;
    end loop;
  end loop;
  return v_added;
end;
$$;
comment on function rowgate_private.add_event_partitions() is 'Makes the daily partitions of events, their client addresses and webhook attempts up to a week ahead; returns how many it made.';
grant execute on function rowgate_private.add_event_partitions() to rowgate_authenticator;

--! split: 002-events-attempts-and-clients-partitioned.sql
-- rowgate.events, rowgate.event_clients and rowgate.webhook_attempts become
-- partitioned by their UUIDv7 id (event_clients by its event's id): the same
-- columns, defaults, constraints, indexes, policies, grants, comments and
-- triggers, under the same names, with every row kept. The key is the id, not
-- created_at, because a partitioned table's primary key must hold its key and
-- these keys stay (organization_id, id), which the API, GraphQL and the
-- deliveries look events up by. Functions name the tables and find the new ones.
--
-- event_clients no longer references events: a foreign key into a partitioned
-- table makes every partition dropped a scan of the referencing table. Its rows
-- are written with their event, by the same function, and partitioned by the
-- same ranges, so its partitions go with the events' ones; an event deleted
-- alone takes its client row with it in rowgate_private.prune_events.
alter table rowgate.event_clients set schema rowgate_private;
alter table rowgate_private.event_clients rename to event_clients_unpartitioned;
alter table rowgate.events set schema rowgate_private;
alter table rowgate_private.events rename to events_unpartitioned;
alter table rowgate.webhook_attempts set schema rowgate_private;
alter table rowgate_private.webhook_attempts rename to webhook_attempts_unpartitioned;

create table rowgate.events (
  id uuid not null default uuidv7(),
  organization_id uuid not null,
  type text not null,
  resource_id uuid not null,
  data jsonb not null,
  actor jsonb not null,
  request_id text,
  audience text not null,
  created_at timestamptz not null default now(),
  previous jsonb,
  feed_position text collate "C" not null default ((lpad((pg_current_xact_id())::text, 20, '0'::text) || '-'::text) || lpad((nextval('rowgate_private.event_positions'::regclass))::text, 19, '0'::text)),
  constraint events_pkey primary key (organization_id, id),
  constraint events_audience_check check ((audience = any (array['members'::text, 'finance_permission'::text, 'finance_policy'::text, 'payouts'::text, 'access_tokens'::text, 'organization_managers'::text, 'member_managers'::text]))),
  constraint events_type_check check ((type ~ '^[a-z_]+\.[a-z_]+$'::text))
) partition by range (id);
comment on table rowgate.events is '@behavior -insert -update -delete
What happened to an organization''s data (SPEC §17): one row per change, written with the change.';
comment on column rowgate.events.previous is 'On a *.updated event, the changed fields'' values before the change; null otherwise.';
comment on column rowgate.events.feed_position is 'The event''s place in the feed (SPEC §17): its transaction, then its order within it. Order by it to read events as the feed hands them out.';
alter table rowgate.events enable row level security;
grant select (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position) on rowgate.events to rowgate_analyst, rowgate_organization, rowgate_user;
create index events_id on rowgate.events (id);
create index events_organization_actor on rowgate.events (organization_id, ((actor ->> 'id'::text)), created_at, id);
create index events_organization_created on rowgate.events (organization_id, created_at, id);
create index events_organization_feed on rowgate.events (organization_id, feed_position);
create index events_resource on rowgate.events (resource_id, created_at, id);
create policy select_audience on rowgate.events as permissive for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (((organization_id = any (( select rowgate_hidden.current_organization_ids() as current_organization_ids)::uuid[])) and ( select rowgate_hidden.has_scope('events_read'::text) as has_scope) and
case audience
    when 'members'::text then true
    when 'finance_permission'::text then (organization_id = any (( select rowgate_hidden.current_organization_ids('finance:read'::text) as current_organization_ids)::uuid[]))
    when 'finance_policy'::text then (rowgate_hidden.finance_read_denial(organization_id) is null)
    when 'payouts'::text then ((rowgate_hidden.finance_read_denial(organization_id) is null) and (( select rowgate_hidden.current_credential_kind() as current_credential_kind) = 'web_session'::text) and ( select rowgate_hidden.has_scope('payouts:read'::text) as has_scope))
    when 'access_tokens'::text then ((organization_id = any (( select rowgate_hidden.current_organization_ids('access_tokens:manage'::text) as current_organization_ids)::uuid[])) and (( select rowgate_hidden.current_subject_kind() as current_subject_kind) = 'user'::text))
    when 'organization_managers'::text then (organization_id = any (( select rowgate_hidden.current_organization_ids('organization:manage'::text) as current_organization_ids)::uuid[]))
    when 'member_managers'::text then ((organization_id = any (( select rowgate_hidden.current_organization_ids('members:manage'::text) as current_organization_ids)::uuid[])) and (( select rowgate_hidden.current_subject_kind() as current_subject_kind) = 'user'::text))
    else false
end));

create table rowgate.event_clients (
  organization_id uuid not null,
  event_id uuid not null,
  audience text not null,
  user_id uuid,
  ip text,
  user_agent text,
  created_at timestamptz not null default now(),
  constraint event_clients_pkey primary key (organization_id, event_id),
  constraint event_clients_ip_check check ((length(ip) <= 100)),
  constraint event_clients_user_agent_check check ((length(user_agent) <= 256))
) partition by range (event_id);
comment on table rowgate.event_clients is '@behavior -insert -update -delete
The client address and User-Agent of the request that wrote an event (SPEC §21): for users with organization:manage, 90 days.';
alter table rowgate.event_clients enable row level security;
grant select (organization_id, event_id, audience, user_id, ip, user_agent, created_at) on rowgate.event_clients to rowgate_analyst, rowgate_organization, rowgate_user;
create index event_clients_created on rowgate.event_clients (created_at);
create index event_clients_user on rowgate.event_clients (user_id) where (user_id is not null);
create policy select_manage on rowgate.event_clients as permissive for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (((organization_id = any (( select rowgate_hidden.current_organization_ids('organization:manage'::text) as current_organization_ids)::uuid[])) and (( select rowgate_hidden.current_subject_kind() as current_subject_kind) = 'user'::text) and ( select rowgate_hidden.has_scope('events_read'::text) as has_scope) and (created_at > (now() - '90 days'::interval)) and
case audience
    when 'members'::text then true
    when 'organization_managers'::text then true
    when 'finance_permission'::text then (organization_id = any (( select rowgate_hidden.current_organization_ids('finance:read'::text) as current_organization_ids)::uuid[]))
    when 'finance_policy'::text then (rowgate_hidden.finance_read_denial(organization_id) is null)
    when 'payouts'::text then ((rowgate_hidden.finance_read_denial(organization_id) is null) and (( select rowgate_hidden.current_credential_kind() as current_credential_kind) = 'web_session'::text) and ( select rowgate_hidden.has_scope('payouts:read'::text) as has_scope))
    when 'access_tokens'::text then (organization_id = any (( select rowgate_hidden.current_organization_ids('access_tokens:manage'::text) as current_organization_ids)::uuid[]))
    when 'member_managers'::text then (organization_id = any (( select rowgate_hidden.current_organization_ids('members:manage'::text) as current_organization_ids)::uuid[]))
    else false
end));

create table rowgate.webhook_attempts (
  id uuid not null default uuidv7(),
  organization_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  delivery_id bigint not null,
  attempt integer not null,
  status text not null,
  response_code integer,
  duration_ms integer not null,
  error text,
  created_at timestamptz not null default now(),
  constraint webhook_attempts_pkey primary key (organization_id, id),
  constraint webhook_attempts_organization_id_endpoint_id_fkey foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id),
  constraint webhook_attempts_status_check check ((status = any (array['succeeded'::text, 'failed'::text])))
) partition by range (id);
comment on table rowgate.webhook_attempts is '@behavior -*
Webhook delivery attempts (REST only).';
alter table rowgate.webhook_attempts enable row level security;
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at) on rowgate.webhook_attempts to rowgate_analyst, rowgate_organization, rowgate_user;
create index webhook_attempts_endpoint on rowgate.webhook_attempts (endpoint_id, created_at, id);
create index webhook_attempts_event on rowgate.webhook_attempts (event_id);
create policy select_manage on rowgate.webhook_attempts as permissive for select to public
  using (((organization_id = any (( select rowgate_hidden.current_organization_ids('organization:manage'::text) as current_organization_ids)::uuid[])) and ( select rowgate_hidden.has_scope('webhooks_read'::text) as has_scope)));

-- The rows so far go to one partition per table ending at today's midnight (UTC),
-- those of today to today's; rowgate_private.prune_events drops it whole once
-- retention reaches that midnight and, until then, deletes its old rows one by one.
-- A default partition takes any row no partition covers.
do $$
declare
  v_today timestamptz := date_trunc('day', now(), 'UTC');
  v_table text;
begin
  foreach v_table in array array['events', 'event_clients', 'webhook_attempts'] loop
    execute format('create table rowgate_partitions.%I partition of rowgate.%I for values from (minvalue) to (%L)',
      v_table || '_before_' || to_char(v_today at time zone 'UTC', 'YYYYMMDD'), v_table, rowgate_private.uuidv7_bound(v_today));
    execute format('create table rowgate_partitions.%I partition of rowgate.%I default', v_table || '_default', v_table);
  end loop;
end;
$$;
insert into rowgate.events (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position)
  select id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position
  from rowgate_private.events_unpartitioned;
insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent, created_at)
  select organization_id, event_id, audience, user_id, ip, user_agent, created_at from rowgate_private.event_clients_unpartitioned;
insert into rowgate.webhook_attempts (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at)
  select id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at
  from rowgate_private.webhook_attempts_unpartitioned;
drop table rowgate_private.event_clients_unpartitioned;
drop table rowgate_private.events_unpartitioned;
drop table rowgate_private.webhook_attempts_unpartitioned;
select rowgate_private.add_event_partitions();

-- Created after the copy: the events copied were queued for delivery when written.
create trigger _500_enqueue_deliveries after insert on rowgate.events referencing new table as inserted
  for each statement execute function rowgate_private.tg_events__enqueue_deliveries();

--! split: 003-pruning-detaches-whole-days.sql
-- prune_events restated: retention now keeps events to the UTC day. A day's
-- partitions of events and their client addresses go whole once the day is older
-- than p_older_than and none of its events has a pending delivery; a partition of
-- webhook attempts once its day is that old and no pending delivery is older than
-- it (so a delivery still retried keeps its attempts). They are detached, not
-- dropped: detaching takes no row locks, leaves nothing to vacuum and frees no
-- files, so the parents' lock (held until the call ends) is short; the next call
-- drops the detached tables, which locks no parent. Detaching comes first so that
-- what follows never reads the rows it removes; when it would wait longer than
-- lock_timeout for a long reader, it is left for the next call. Then rows older
-- than the day that no detach took (the partition of the rows from before
-- partitioning, the default partition, a day kept for a pending delivery, rows
-- whose created_at was set back) are deleted p_batch at a time as before, with
-- their client addresses (no foreign key cascades any more), deliveries and
-- attempts; so are the finished deliveries of events that went with their day.
create or replace function rowgate_private.prune_events(p_older_than interval, p_batch integer default 5000) returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp set lock_timeout = '1s' as $$
declare
  v_before timestamptz;
  v_before_id uuid;
  v_pruned integer;
  v_denials integer;
  v_deliveries integer;
  v_dropped bigint := 0;
  v_oldest_pending timestamptz;
  v_days text;
  v_day record;
begin
  if p_older_than < interval '1 day' then
    raise exception 'events are kept at least a day' using errcode = '22023';
  end if;
  v_before := date_trunc('day', now() - p_older_than, 'UTC');
  v_before_id := rowgate_private.uuidv7_bound(v_before);
  insert into rowgate_private.event_retention (singleton, pruned_before) values (true, v_before)
    on conflict (singleton) do update set pruned_before = greatest(excluded.pruned_before, rowgate_private.event_retention.pruned_before);
  -- whole days, by one server at a time (another one pruning now takes them)
  if pg_try_advisory_xact_lock(hashtext('rowgate_private.event_partitions')) then
    -- the days an earlier call detached: no parent is locked to drop them
    select string_agg(c.oid::regclass::text, ', ') into v_days from pg_class c
      where c.relnamespace = 'rowgate_partitions'::regnamespace and c.relkind = 'r' and not c.relispartition;
    if v_days is not null then
      execute 'drop table ' || v_days;
    end if;
    select min(d.created_at) into v_oldest_pending from rowgate_private.webhook_deliveries d where d.status = 'pending';
    begin
      for v_day in
        with pending as materialized (
          select d.event_id from rowgate_private.webhook_deliveries d where d.status = 'pending'
        )
        select r.parent, r.partition, r.parent = 'rowgate.events'::regclass as of_events
        from (select 'rowgate.events'::regclass as parent, * from rowgate_private.partition_ranges('rowgate.events')
              union all
              select 'rowgate.event_clients'::regclass, * from rowgate_private.partition_ranges('rowgate.event_clients')) r
        where r.upper_id <= v_before_id
          and not exists (select 1 from pending where pending.event_id >= r.lower_id and pending.event_id < r.upper_id)
        union all
        select 'rowgate.webhook_attempts'::regclass, r.partition, false from rowgate_private.partition_ranges('rowgate.webhook_attempts') r
        where r.upper_id <= v_before_id
          and (v_oldest_pending is null or rowgate_private.uuidv7_time(r.upper_id) <= v_oldest_pending)
      loop
        if v_day.of_events then
          v_dropped := v_dropped + (select greatest(c.reltuples, 0)::bigint from pg_class c where c.oid = v_day.partition);
        end if;
        execute format('alter table %s detach partition %s', v_day.parent, v_day.partition);
      end loop;
    exception when lock_not_available then
      v_dropped := 0;
    end;
  end if;
  with old as (
    select old_events.organization_id, old_events.id
    from rowgate.organizations o -- every event's organization is one (organizations are never removed, only marked deleted)
      cross join lateral (
        select e.organization_id, e.id from rowgate.events e
        where e.organization_id = o.id and e.created_at < v_before
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
  ), clients as (
    delete from rowgate.event_clients c using old
    where c.organization_id = old.organization_id and c.event_id = old.id
  ), pruned as (
    delete from rowgate.events e using old
    where e.organization_id = old.organization_id and e.id = old.id
    returning 1
  )
  select count(*)::integer into v_pruned from pruned;
  -- deliveries whose event went with its partition
  with orphaned as (
    select d.organization_id, d.id from rowgate_private.webhook_deliveries d
    where d.event_id < v_before_id and d.status <> 'pending'
      and not exists (select 1 from rowgate.events e where e.organization_id = d.organization_id and e.id = d.event_id)
    limit greatest(p_batch, 1)
    for update of d skip locked
  ), swept as (
    delete from rowgate_private.webhook_deliveries d using orphaned
    where d.organization_id = orphaned.organization_id and d.id = orphaned.id
    returning 1
  )
  select count(*)::integer into v_deliveries from swept;
  with old as (
    select d.organization_id, d.id from rowgate.denials d
    where d.created_at < now() - p_older_than
    order by d.created_at
    limit greatest(p_batch, 1)
    for update skip locked
  ), pruned as (
    delete from rowgate.denials d using old
    where d.organization_id = old.organization_id and d.id = old.id
    returning 1
  )
  select count(*)::integer into v_denials from pruned;
  delete from rowgate_private.denial_counts c where c.hour < date_trunc('hour', now()) - interval '1 hour';
  return least(v_pruned + v_denials + v_deliveries + v_dropped, 2147483647)::integer;
end;
$$;
comment on function rowgate_private.prune_events(interval, integer) is 'Prunes what is older than the UTC day of now() - p_older_than (at least a day), never an event with a pending delivery: detaches whole days of events, their client addresses and webhook attempts (dropped by the next call), and deletes up to p_batch older events left in other partitions (with their deliveries and attempts), p_batch finished deliveries of dropped events and p_batch denials (SPEC §20); returns how many rows went, a detached partition''s by its statistics.';
