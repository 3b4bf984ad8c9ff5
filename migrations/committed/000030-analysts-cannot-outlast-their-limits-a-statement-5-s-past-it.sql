--! Previous: sha1:8c264aac4b7e11fc7d0d9b4d1ddd6b4b080ddabb
--! Hash: sha1:1a8695529cf1ef2da9d17685b5c1eecbe0a3e3e0
--! Message: Analysts cannot outlast their limits: a statement 5 s past its timeout (its cancel caught), a transaction longer than both limits together, or a session in a maintenance database ends the session

--! split: 001-analysts-cannot-outlast-their-limits.sql
-- Why: a hostile analyst outlasted every limit enforce_analyst_limits held it to.
-- A DO block that catches query_canceled swallowed each cancel (30 of them)
-- and held its lock on rowgate.products for 35 s: a migration's ALTER TABLE
-- waited behind it, and the API's reads queued behind the ALTER (504). A
-- transaction of short statements (six pg_sleep(4), never idle for long) held
-- its lock for 24 s, bounded by nothing. A session in template1 made CREATE
-- DATABASE fail, and one in the postgres database, holding a temporary table,
-- made `analysts revoke` fail to drop the role.
-- Now, besides what it did (a statement past its timeout cancelled, a session
-- idle in a transaction past its idle timeout or holding an advisory lock
-- ended), it ends the session:
-- - of a statement still running 5 s past its timeout (its cancel was caught);
-- - of a transaction open longer than the statement timeout and the idle
--   timeout together (two minutes by default): no statement may run longer and
--   no pause last longer, so this is what the two limits already meant for a
--   transaction, and how long an analyst can hold a lock that a migration waits for;
-- - connected to the cluster's maintenance databases (postgres, template0,
--   template1), where an analyst has nothing to read.
create or replace function rowgate_private.enforce_analyst_limits()
returns table (cancelled integer, terminated integer)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  return query
    with sessions as (
      select s.pid, s.state, s.datname, s.query_start, s.state_change, s.xact_start,
        make_interval(secs => a.statement_timeout_ms / 1000.0) as statement_limit,
        make_interval(secs => a.idle_in_transaction_timeout_ms / 1000.0) as idle_limit,
        exists (select 1 from pg_locks l where l.pid = s.pid and l.locktype = 'advisory') as holds_advisory
      from pg_stat_activity s
        join rowgate_private.analysts a on a.login = s.usename
      where s.backend_type = 'client backend' and s.pid <> pg_backend_pid()
    ),
    ended as (
      select pid from sessions
      where holds_advisory
        or datname in ('postgres', 'template0', 'template1')
        or (state like 'idle in transaction%' and state_change < clock_timestamp() - idle_limit)
        or (state = 'active' and query_start < clock_timestamp() - statement_limit - interval '5 seconds')
        or xact_start < clock_timestamp() - statement_limit - idle_limit
    )
    select
      (select count(*) filter (where pg_cancel_backend(s.pid))::integer from sessions s
        where s.state = 'active' and s.pid not in (select pid from ended)
          and s.query_start < clock_timestamp() - s.statement_limit),
      (select count(*) filter (where pg_terminate_backend(e.pid))::integer from ended e);
end;
$$;
revoke all on function rowgate_private.enforce_analyst_limits() from public;
grant execute on function rowgate_private.enforce_analyst_limits() to rowgate_authenticator;
