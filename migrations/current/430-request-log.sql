-- An organization's request log (SPEC §25, "Request log"): the /v1 requests about an
-- organization, for its managers, written after each answer by the server in batches (never in
-- the request's transaction) and kept 30 days in daily partitions dropped whole. A row is
-- written only where its caller reaches the organization, checked as it is written, so no
-- stranger's probe lands in another tenant's log. Its id is made by the server before the
-- request's transaction and carried there as `rowgate.request_log_id`, which links the events
-- the request wrote and its recorded denial to it (never the client's request id).
create table if not exists rowgate.request_log (
  id uuid not null,
  organization_id uuid not null,
  request_id text not null,
  method text not null,
  route text not null,
  path text not null,
  status integer not null,
  error text,
  duration_ms integer not null,
  credential_kind text,
  credential_id uuid,
  user_id uuid,
  client_ip inet,
  user_agent text,
  api_version text,
  idempotent_replayed boolean not null default false,
  created_at timestamptz not null,
  constraint request_log_pkey primary key (organization_id, id),
  constraint request_log_user_agent_check check (length(user_agent) <= 256),
  constraint request_log_path_check check (length(path) <= 2000)
) partition by range (id);
comment on table rowgate.request_log is '@behavior -*
The /v1 requests about an organization of the last 30 days (SPEC §25), for users with organization:manage; written in batches after the answers, so a row appears within seconds or, when writing falls behind, not at all.';
create table if not exists rowgate_partitions.request_log_default partition of rowgate.request_log default;
alter table rowgate.request_log enable row level security;
grant select (id, organization_id, request_id, method, route, path, status, error, duration_ms, credential_kind, credential_id,
  user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at) on rowgate.request_log to rowgate_analyst, rowgate_user;
create index if not exists request_log_organization_created on rowgate.request_log (organization_id, created_at, id);
create index if not exists request_log_user on rowgate.request_log (user_id) where client_ip is not null or user_agent is not null;
drop policy if exists select_manage on rowgate.request_log;
create policy select_manage on rowgate.request_log for select to rowgate_user, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('organizations_read')));

-- The events a request wrote, by its request log id.
create table if not exists rowgate_private.request_log_events (
  request_log_id uuid not null,
  organization_id uuid not null,
  event_id uuid not null,
  created_at timestamptz not null default now()
);
comment on table rowgate_private.request_log_events is 'The events each request wrote, linked by the request log id its transaction carried.';
create index if not exists request_log_events_request on rowgate_private.request_log_events (request_log_id);
create index if not exists request_log_events_created on rowgate_private.request_log_events (created_at);

-- The request log id of this transaction: set only by the API's authentication statement.
create or replace function rowgate_private.current_request_log_id() returns uuid
  language sql stable set search_path = pg_catalog, pg_temp as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.request_log_id', true), '')::uuid end;
$$;

create or replace function rowgate_private.tg_events__link_request() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_log_id uuid := rowgate_private.current_request_log_id();
begin
  if v_log_id is not null then
    insert into rowgate_private.request_log_events (request_log_id, organization_id, event_id)
      select v_log_id, i.organization_id, i.id from inserted i;
  end if;
  return null;
end;
$$;
drop trigger if exists _600_link_request on rowgate.events;
create trigger _600_link_request after insert on rowgate.events referencing new table as inserted
  for each statement execute function rowgate_private.tg_events__link_request();

alter table rowgate.denials add column if not exists request_log_id uuid;
comment on column rowgate.denials.request_log_id is 'The request log row (SPEC §25) of the refused request; null on an overflow row.';
grant select (request_log_id) on rowgate.denials to rowgate_analyst, rowgate_user;
create index if not exists denials_request_log on rowgate.denials (request_log_id) where request_log_id is not null;

create or replace function rowgate_private.tg_denials__link_request() returns trigger
  language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  if new.operation is not null then
    new.request_log_id := rowgate_private.current_request_log_id();
  end if;
  return new;
end;
$$;
drop trigger if exists _150_link_request on rowgate.denials;
create trigger _150_link_request before insert on rowgate.denials for each row
  execute function rowgate_private.tg_denials__link_request();

-- The events a request wrote, for the organization's managers.
create or replace function rowgate.request_log_event_ids(p_organization_id uuid, p_id uuid) returns uuid[]
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select coalesce(array_agg(l.event_id order by l.event_id), '{}')
  from rowgate_private.request_log_events l
  where l.request_log_id = p_id and l.organization_id = p_organization_id
    and p_organization_id = any (rowgate_hidden.current_organization_ids('organization:manage'))
    and rowgate_hidden.has_scope('organizations_read');
$$;
comment on function rowgate.request_log_event_ids(uuid, uuid) is '@behavior -*';
grant execute on function rowgate.request_log_event_ids(uuid, uuid) to rowgate_user;

-- Writes a batch of requests (a JSON array) as the server saw them; keeps only the rows whose
-- subject reaches the organization now (a user by a live membership, within its token's
-- organizations; an organization subject its own), and none of a deleted user's addresses.
create or replace function rowgate_private.record_requests(p_rows jsonb) returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_written integer;
begin
  insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, error, duration_ms,
      credential_kind, credential_id, user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at)
    select r.id, coalesce(r.organization_id, d.organization_id), left(r.request_id, 128), left(r.method, 10), left(r.route, 200), left(r.path, 2000),
      r.status, left(r.error, 100), greatest(r.duration_ms, 0), r.credential_kind, r.credential_id,
      case when r.subject_kind = 'user' then r.subject_id end,
      case when u.deleted_at is null then r.client_ip end,
      case when u.deleted_at is null then left(r.user_agent, 256) end,
      r.api_version, coalesce(r.idempotent_replayed, false), r.created_at
    from jsonb_to_recordset(p_rows) as r(id uuid, organization_id uuid, subject_kind text, subject_id uuid, request_id text,
        method text, route text, path text, status integer, error text, duration_ms integer, credential_kind text,
        credential_id uuid, client_ip inet, user_agent text, api_version text, idempotent_replayed boolean, created_at timestamptz)
      left join rowgate.users u on r.subject_kind = 'user' and u.id = r.subject_id
      -- a refusal whose organization the server did not learn: the one its denial was recorded in
      left join lateral (select d.organization_id from rowgate.denials d
        where r.organization_id is null and d.request_log_id = r.id limit 1) d on true
    where coalesce(r.organization_id, d.organization_id) is not null and r.id is not null
      and case r.subject_kind
        when 'organization' then coalesce(r.organization_id, d.organization_id) = r.subject_id
        when 'user' then exists (select 1 from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
            where m.user_id = r.subject_id and m.organization_id = coalesce(r.organization_id, d.organization_id)
              and m.deleted_at is null and o.deleted_at is null)
          and (r.credential_kind is distinct from 'personal_access_token' or exists (select 1 from rowgate.personal_access_tokens t
            where t.id = r.credential_id
              and (t.organization_ids is null or coalesce(r.organization_id, d.organization_id) = any (t.organization_ids))))
        else false end
    on conflict do nothing;
  get diagnostics v_written = row_count;
  return v_written;
end;
$$;
grant execute on function rowgate_private.record_requests(jsonb) to rowgate_authenticator;

-- The daily partitions of the request log, made up to a week ahead (as the events' are).
create or replace function rowgate_private.add_request_log_partitions() returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp set lock_timeout = '5s' as $$
declare
  v_day timestamptz;
  v_until timestamptz := now() + interval '7 days';
  v_added integer := 0;
begin
  perform pg_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions'));
  v_day := coalesce(
    rowgate_private.uuidv7_time((select r.upper_id from rowgate_private.partition_ranges('rowgate.request_log') r
      order by r.upper_id desc limit 1)),
    date_trunc('day', now(), 'UTC'));
  while v_day < v_until loop
    perform rowgate_private.add_partition('rowgate.request_log', 'id', 'request_log_' || to_char(v_day at time zone 'UTC', 'YYYYMMDD'),
      rowgate_private.uuidv7_bound(v_day), rowgate_private.uuidv7_bound(v_day + interval '24 hours'));
    v_day := v_day + interval '24 hours';
    v_added := v_added + 1;
  end loop;
  return v_added;
end;
$$;
comment on function rowgate_private.add_request_log_partitions() is 'Makes the daily partitions of the request log up to a week ahead; returns how many it made.';
grant execute on function rowgate_private.add_request_log_partitions() to rowgate_authenticator;

-- Drops the request log's days older than 30 days, whole, and the links of their requests.
create or replace function rowgate_private.prune_request_log() returns integer
  language plpgsql security definer set search_path = pg_catalog, pg_temp set lock_timeout = '1s' as $$
declare
  v_before uuid := rowgate_private.uuidv7_bound(date_trunc('day', now() - interval '30 days', 'UTC'));
  v_day record;
  v_dropped integer := 0;
begin
  if not pg_try_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions')) then
    return 0;
  end if;
  for v_day in select r.partition from rowgate_private.partition_ranges('rowgate.request_log') r where r.upper_id <= v_before loop
    execute format('drop table %s', v_day.partition);
    v_dropped := v_dropped + 1;
  end loop;
  delete from rowgate.request_log where id < v_before;
  delete from rowgate_private.request_log_events where created_at < now() - interval '31 days';
  return v_dropped;
end;
$$;
comment on function rowgate_private.prune_request_log() is 'Drops the request log''s days older than 30 days; returns how many.';
grant execute on function rowgate_private.prune_request_log() to rowgate_authenticator;

-- A deleted user's addresses leave the request log with it.
create or replace function rowgate_private.tg_users__erase_request_clients() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate.request_log set client_ip = null, user_agent = null
    where user_id = new.id and (client_ip is not null or user_agent is not null);
  update rowgate_private.sessions set client_ip = null, user_agent = null where user_id = new.id;
  return null;
end;
$$;
drop trigger if exists _610_erase_request_clients on rowgate.users;
create trigger _610_erase_request_clients after update of deleted_at on rowgate.users for each row
  when (old.deleted_at is null and new.deleted_at is not null)
  execute function rowgate_private.tg_users__erase_request_clients();

