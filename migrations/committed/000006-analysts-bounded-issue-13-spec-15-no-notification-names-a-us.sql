--! Previous: sha1:dc1b8176405238e094cdad8962cfaa85c31ec99d
--! Hash: sha1:1207816ae7f50cda056c2c16a8adc68cd13760e3
--! Message: Analysts bounded (issue 13, SPEC §15): no notification names a user (changes go to rowgate_private.user_changes, read by the servers); per-analyst connection limit and timeouts, enforced by enforce_analyst_limits

-- Issue 13, item 8 (SPEC §15): analysts are bounded like every other client.

-- 1. No notification names a user. Any role may LISTEN on any channel, so the
-- user ids that `rowgate_user_changes` carried (migration 000002) told every
-- analyst which users of other tenants signed out, changed their profile or
-- were deleted, as it happened. The ids now go to a table analysts cannot read,
-- and the notification says only "something changed": the servers' answer
-- caches (src/auth/answer-cache.ts) read what changed from here, through
-- rowgate_private.user_changes_since, which only the server's login may call.
-- The server that made a change still learns it from the transaction-local
-- setting rowgate.changed_users with its commit (unchanged).
create table rowgate_private.user_changes (
  id bigint generated always as identity primary key,
  -- space-separated user ids, or '*' for everybody
  user_ids text not null,
  created_at timestamptz not null default now()
);

-- Security definer now: it writes rowgate_private.user_changes whoever changed
-- the rows (an API role, an operator); it still calls nothing but pg_catalog.
-- Rows older than ten minutes go as new ones come: a server reads them within
-- milliseconds, and one that listened again after an outage forgets everything.
create or replace function rowgate_private.tg__announce_user_changes() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_ids text;
  v_so_far text := nullif(current_setting('rowgate.changed_users', true), '');
begin
  if tg_op = 'TRUNCATE' or tg_table_name = 'scopes' then
    v_ids := '*';
  elsif tg_table_name = 'users' then
    select string_agg(distinct id::text, ' ') into v_ids from old_rows;
  else
    select string_agg(distinct user_id::text, ' ') into v_ids from old_rows where user_id is not null;
  end if;
  if v_ids is null then
    return null;
  end if;
  if length(v_ids) > 4000 then
    v_ids := '*';
  end if;
  delete from rowgate_private.user_changes where created_at < now() - interval '10 minutes';
  insert into rowgate_private.user_changes (user_ids) values (v_ids);
  -- the payload names nothing: the same empty text for every change
  perform pg_notify('rowgate_user_changes', '');
  perform set_config('rowgate.changed_users',
    case when v_so_far = '*' or v_ids = '*' or length(v_so_far) > 4000 then '*' else concat_ws(' ', v_so_far, v_ids) end,
    true);
  return null;
end;
$$;
revoke all on function rowgate_private.tg__announce_user_changes() from public;

-- What changed after the change `p_after`: the last id and the changed users
-- ('*' when they are too many to list). Null: only the last id, to start from.
create or replace function rowgate_private.user_changes_since(p_after bigint)
returns table (last_id bigint, user_ids text)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select coalesce(max(c.id), p_after, 0),
    case when p_after is null then null
      when bool_or(c.user_ids = '*') or sum(length(c.user_ids)) > 100000 then '*'
      else string_agg(c.user_ids, ' ') end
  from rowgate_private.user_changes c
  where p_after is null or c.id > p_after;
$$;
revoke all on function rowgate_private.user_changes_since(bigint) from public;
grant execute on function rowgate_private.user_changes_since(bigint) to rowgate_authenticator;

-- 2. An analyst's limits (SPEC §15): at most `connection_limit` sessions (the
-- role's CONNECTION LIMIT, set by `analysts grant`), statements of at most
-- `statement_timeout_ms`, transactions idle at most
-- `idle_in_transaction_timeout_ms`. The timeouts are also the role's defaults,
-- but a session may SET them to anything: these columns are what
-- enforce_analyst_limits holds it to.
alter table rowgate_private.analysts
  add column connection_limit integer not null default 5 check (connection_limit between 1 and 1000),
  add column statement_timeout_ms integer not null default 60000 check (statement_timeout_ms between 100 and 86400000),
  add column idle_in_transaction_timeout_ms integer not null default 60000
    check (idle_in_transaction_timeout_ms between 100 and 86400000);

-- Holds every analyst to its limits, whatever its session set: cancels a
-- statement running past its statement timeout, ends a session idle in a
-- transaction past its idle timeout or holding an advisory lock (the
-- migrations' lock, or any lock the server and the CLI take: analysts have no
-- use for them, and one held for ever blocked migrations and start-up). The
-- server calls it every second; the migrations call it when their lock is
-- taken. Signalling another role's session needs pg_signal_backend, which
-- db/roles.sql grants the owner (it cannot signal a superuser's sessions).
create or replace function rowgate_private.enforce_analyst_limits()
returns table (cancelled integer, terminated integer)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  return query
    with sessions as (
      select s.pid, s.state, s.query_start, s.state_change, a.statement_timeout_ms, a.idle_in_transaction_timeout_ms,
        exists (select 1 from pg_locks l where l.pid = s.pid and l.locktype = 'advisory') as holds_advisory
      from pg_stat_activity s
        join rowgate_private.analysts a on a.login = s.usename
      where s.backend_type = 'client backend' and s.pid <> pg_backend_pid()
    ),
    ended as (
      select pid from sessions
      where holds_advisory
        or (state like 'idle in transaction%' and state_change < clock_timestamp() - make_interval(secs => idle_in_transaction_timeout_ms / 1000.0))
    )
    select
      (select count(*) filter (where pg_cancel_backend(s.pid))::integer from sessions s
        where s.state = 'active' and s.pid not in (select pid from ended)
          and s.query_start < clock_timestamp() - make_interval(secs => s.statement_timeout_ms / 1000.0)),
      (select count(*) filter (where pg_terminate_backend(e.pid))::integer from ended e);
end;
$$;
revoke all on function rowgate_private.enforce_analyst_limits() from public;
grant execute on function rowgate_private.enforce_analyst_limits() to rowgate_authenticator;
