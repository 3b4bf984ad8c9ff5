-- A transaction that holds an xid or a snapshot (in any database of the server, or prepared
-- for two-phase commit) holds back what vacuum may remove everywhere; the feed no longer
-- waits for it, but bloat does. The servers read the oldest such transaction's age every few
-- seconds, export it as a metric and log a warning past a bound (SPEC §14). Seeing other
-- roles' transactions takes pg_read_all_stats, which the owner has (db/roles.sql): so this
-- runs as the owner, and shows no query text, only where the transaction is and who runs it.
create function rowgate_private.oldest_transaction()
  returns table (age_seconds double precision, pid integer, database text, role text, application_name text, state text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select o.age_seconds, o.pid, o.database, o.role, o.application_name, o.state from (
    select extract(epoch from clock_timestamp() - a.xact_start)::double precision as age_seconds, a.pid, a.datname::text as database,
      a.usename::text as role, a.application_name, a.state
    from pg_stat_activity a
    where (a.backend_xid is not null or a.backend_xmin is not null) and a.xact_start is not null and a.pid <> pg_backend_pid()
    union all
    select extract(epoch from clock_timestamp() - p.prepared)::double precision, null, p.database::text, p.owner::text,
      null, 'prepared: ' || p.gid
    from pg_prepared_xacts p
  ) o
  order by o.age_seconds desc
  limit 1;
$$;
comment on function rowgate_private.oldest_transaction() is 'The oldest transaction of the server holding an xid or a snapshot (any database; prepared ones too): its age in seconds, its backend and database, its role and application; no row when none.';
revoke all on function rowgate_private.oldest_transaction() from public;
grant execute on function rowgate_private.oldest_transaction() to rowgate_authenticator;
