-- The rate limits' counts live in four unlogged partitions, one per slice of
-- 15 seconds of the database's clock taken in turn, and a slice that is over
-- is emptied whole by TRUNCATE: however many new keys arrive (a flood of IPv6
-- /64s), the store holds only the keys of the last minute, and emptying it
-- costs the same whatever it holds. A window (at most 10 seconds) is always
-- over before the slice its first row went to is emptied, two slices later. A
-- key's points in one window may be split over two slices (written on either
-- side of a slice's end): its count is their sum.
drop function rowgate_private.prune_rate_limit_counts();
-- squawk-ignore ban-drop-table -- the previous release reaches the counts only through the two functions re-created here with their signatures, and a minute of counts is all they hold
drop table rowgate_private.rate_limit_counts;

create table rowgate_private.rate_limit_counts (
  policy text not null,
  key text not null,
  window_number bigint not null,
  points integer not null,
  slice smallint not null,
  primary key (policy, key, window_number, slice)
) partition by list (slice);
comment on table rowgate_private.rate_limit_counts is
  'Requests let through per rate-limit policy, key (a credential''s hash or a client address) and window, summed over every server; in four slices of 15 seconds taken in turn, each emptied whole once its windows are over.';
create unlogged table rowgate_private.rate_limit_counts_0 partition of rowgate_private.rate_limit_counts for values in (0);
create unlogged table rowgate_private.rate_limit_counts_1 partition of rowgate_private.rate_limit_counts for values in (1);
create unlogged table rowgate_private.rate_limit_counts_2 partition of rowgate_private.rate_limit_counts for values in (2);
create unlogged table rowgate_private.rate_limit_counts_3 partition of rowgate_private.rate_limit_counts for values in (3);

create function rowgate_private.rate_limit_slice(p_at timestamptz) returns smallint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (floor(extract(epoch from p_at) / 15)::bigint % 4)::smallint;
$$;
comment on function rowgate_private.rate_limit_slice(timestamptz) is
  'The slice of the rate limits'' counts that is written at a time: 15-second slices of the clock, four taken in turn.';

-- p_expires_in is kept for the servers of the previous release, which still send it: a window's
-- end is now bounded by the slice it was written in.
create or replace function rowgate_private.exchange_rate_limit_counts(
  p_server uuid, p_policies text[], p_keys text[], p_windows bigint[], p_points integer[], p_expires_in integer[]
) returns table (policy text, key text, window_number bigint, points integer, servers integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_servers integer;
begin
  insert into rowgate_private.rate_limit_servers (id, seen_at) values (p_server, now())
    on conflict (id) do update set seen_at = excluded.seen_at;
  select count(*)::integer into v_servers from rowgate_private.rate_limit_servers s
    where s.seen_at > now() - interval '10 seconds';
  insert into rowgate_private.rate_limit_counts as c (policy, key, window_number, points, slice)
    select d.policy, d.key, d.window_number, d.points, rowgate_private.rate_limit_slice(now())
    from unnest(p_policies, p_keys, p_windows, p_points) as d(policy, key, window_number, points)
    where d.points <> 0
    order by d.policy, d.key, d.window_number
    on conflict (policy, key, window_number, slice) do update set points = c.points + excluded.points;
  return query
    select d.policy, d.key, d.window_number,
      coalesce((select sum(c.points)::integer from rowgate_private.rate_limit_counts c
        where c.policy = d.policy and c.key = d.key and c.window_number = d.window_number), 0),
      v_servers
    from unnest(p_policies, p_keys, p_windows) with ordinality as d(policy, key, window_number, n)
    order by d.n;
  return query select null::text, null::text, null::bigint, null::integer, v_servers;
end;
$$;

-- Emptying a slice waits for no one: an exchange holding it only delays the emptying to the next
-- call (of this server or another), never an exchange behind a waiting TRUNCATE.
create function rowgate_private.prune_rate_limit_counts() returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '50ms'
as $$
declare
  v_slice smallint := (rowgate_private.rate_limit_slice(now()) + 2) % 4;
  v_partition text := format('rowgate_private.rate_limit_counts_%s', v_slice);
  v_full boolean;
begin
  delete from rowgate_private.rate_limit_servers s where s.seen_at < now() - interval '1 hour';
  execute format('select exists (select from %s)', v_partition) into v_full;
  if not v_full then
    return 0;
  end if;
  execute format('truncate %s', v_partition);
  return 1;
exception when lock_not_available then
  return 0;
end;
$$;
comment on function rowgate_private.prune_rate_limit_counts() is
  'Empties the slice of the rate limits'' counts whose windows are all over (unless an exchange holds it: then a later call does), and forgets servers gone for an hour; returns the slices emptied.';
grant execute on function rowgate_private.prune_rate_limit_counts() to rowgate_authenticator;
