--! Previous: sha1:8ba3a3856dbf35b3d877d8d5d073dcd082096d8f
--! Hash: sha1:18f493fa47dcd19f4570728cb1f55d7fba58f5bf
--! Message: The write path with events (issue 16 part 4): a change's events in one insert with the actor computed once, webhook deliveries queued once per statement (a statement-level trigger over the inserted events), and retention pruning through each organization's index so events carry one index less

--! split: 001-events-in-one-statement.sql
-- The write path (issue 16, part 4: write_with_events_vs_without ≥ 0.85): a
-- change's events (order.created and order.paid of a new paid order) are written
-- by one insert statement instead of one each, with the actor computed once per
-- change rather than once per event. Same rows, same order (their UUIDv7 ids are
-- made in the order of the types), same data; the statement-level delivery
-- trigger below then runs once per change too.
create or replace function rowgate_private.tg__events() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp set "TimeZone" = 'UTC' as $$
declare
  v_resource text := tg_argv[0];
  v_columns text[] := string_to_array(tg_argv[2], ',');
  v_row jsonb := to_jsonb(case when tg_op = 'DELETE' then old else new end);
  v_old jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  v_data jsonb;
  v_types text[];
  v_resource_id uuid;
begin
  select jsonb_object_agg(key, value) into v_data from jsonb_each(v_row) where key = any (v_columns);
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif (v_data - '{updated_at,last_used_at}'::text[])
      = (select coalesce(jsonb_object_agg(key, value), '{}') from jsonb_each(v_old) where key = any (v_columns) and key not in ('updated_at', 'last_used_at')) then
    return null;
  else
    v_types := array[v_resource || '.updated'];
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
  end if;
  insert into rowgate.events (organization_id, type, resource_id, data, actor, request_id, audience)
  select coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), t.type, v_resource_id, v_data,
    actor.value, nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]
  from unnest(v_types) with ordinality as t(type, n)
    cross join (select rowgate_hidden.current_actor() as value) actor
  order by t.n;
  return null;
end;
$$;

--! split: 002-deliveries-queued-per-statement.sql
-- Queuing webhook deliveries once per statement that writes events, not once per
-- event (issue 16, part 4): the row-level trigger ran a security-definer
-- function, its endpoint lookup and its search_path switch for every event,
-- 150-250 µs a write even for an organization without endpoints. The events of
-- the statement are joined with the endpoints at once, in event order, so a
-- delivery's id still follows its event's (first attempts go out in event order).
create or replace function rowgate_private.tg_events__enqueue_deliveries() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, i.id
    from inserted i
      join rowgate.webhook_endpoints e on e.organization_id = i.organization_id
    where e.enabled and e.deleted_at is null and i.type = any (e.event_types)
    order by i.id, e.id;
  if found then
    perform pg_notify('rowgate_webhooks', '');
  end if;
  return null;
end;
$$;

drop trigger if exists _500_enqueue_deliveries on rowgate.events;
create trigger _500_enqueue_deliveries after insert on rowgate.events
  referencing new table as inserted
  for each statement execute function rowgate_private.tg_events__enqueue_deliveries();

--! split: 003-pruning-without-its-own-index.sql
-- Event retention finds old events through each organization's
-- (organization_id, created_at, id) index instead of an index of its own on
-- created_at (migration 000017): one index less for every event written, on
-- the write path this issue measures; pruning runs hourly and may read a few
-- index pages per organization. Same rule as before: never an event whose
-- delivery is pending; its finished deliveries and attempts go with it.
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

drop index if exists rowgate.events_created;
