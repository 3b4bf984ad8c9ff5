--! Previous: sha1:651f3bd91c15a5107e169dd6ce62a80d40e3e352
--! Hash: sha1:6d1fdbf828f850eb7d4697343674df81d9b3bfcf
--! Message: Rate limits counted for the deployment; codes bound to attempts

--! split: 001-rate-limits-are-counted-for-the-whole-deployment.sql
-- Rate limits hold for the whole deployment, not per process: every server
-- adds what it let through to these counts in batches and reads the sums back,
-- so a credential or a client address gets its allowance once, however many
-- servers serve the database (SPEC §14). A server decides each request from
-- the sums it last read plus what it has let through since, and exchanges
-- before it lets a key's share of the allowance through unexchanged: how far
-- the deployment may go past an allowance is bounded by the number of servers
-- (docs/decisions.md, "Rate limits").
--
-- The tables are unlogged: a count is worth a window of seconds, a crash that
-- loses it costs one window of one allowance, and counting must not write WAL.
create unlogged table rowgate_private.rate_limit_counts (
  policy text not null,
  key text not null,
  -- the window's number: whole windows since the epoch, of the policy's length
  window_number bigint not null,
  points integer not null,
  expires_at timestamptz not null,
  primary key (policy, key, window_number)
);
create index rate_limit_counts_expiry on rowgate_private.rate_limit_counts (expires_at);
comment on table rowgate_private.rate_limit_counts is
  'Requests let through per rate-limit policy, key (a credential''s hash or a client address) and window, summed over every server.';

-- The servers that exchanged counts lately: how many share an allowance.
create unlogged table rowgate_private.rate_limit_servers (
  id uuid primary key,
  seen_at timestamptz not null
);
comment on table rowgate_private.rate_limit_servers is
  'Servers that exchanged rate-limit counts lately; their number bounds how far an allowance can be passed.';

-- One exchange: a server's points since its last exchange in, the sums of
-- every key it counts out, in the order asked, and then one row more with no
-- key, which carries the number of servers alive (the answer to a server
-- with nothing to count, which only says it is alive). The rows are
-- written in key order, so that two servers exchanging the same keys wait for
-- each other instead of deadlocking.
create function rowgate_private.exchange_rate_limit_counts(
  p_server uuid,
  p_policies text[],
  p_keys text[],
  p_windows bigint[],
  p_points integer[],
  p_expires_in integer[]
)
returns table (policy text, key text, window_number bigint, points integer, servers integer)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_servers integer;
begin
  insert into rowgate_private.rate_limit_servers (id, seen_at) values (p_server, now())
    on conflict (id) do update set seen_at = excluded.seen_at;
  select count(*)::integer into v_servers from rowgate_private.rate_limit_servers s
    where s.seen_at > now() - interval '10 seconds';
  insert into rowgate_private.rate_limit_counts as c (policy, key, window_number, points, expires_at)
    select d.policy, d.key, d.window_number, d.points, now() + make_interval(secs => d.expires_in)
    from unnest(p_policies, p_keys, p_windows, p_points, p_expires_in) as d(policy, key, window_number, points, expires_in)
    where d.points <> 0
    order by d.policy, d.key, d.window_number
    on conflict (policy, key, window_number) do update set points = c.points + excluded.points;
  return query
    select d.policy, d.key, d.window_number, coalesce(c.points, 0), v_servers
    from unnest(p_policies, p_keys, p_windows) with ordinality as d(policy, key, window_number, n)
    left join rowgate_private.rate_limit_counts c
      on c.policy = d.policy and c.key = d.key and c.window_number = d.window_number
    order by d.n;
  return query select null::text, null::text, null::bigint, null::integer, v_servers;
end;
$$;
comment on function rowgate_private.exchange_rate_limit_counts(uuid, text[], text[], bigint[], integer[], integer[]) is
  'Adds a server''s rate-limit points and answers the deployment''s sums for the same keys, with the number of servers alive.';
grant execute on function rowgate_private.exchange_rate_limit_counts(uuid, text[], text[], bigint[], integer[], integer[])
  to rowgate_authenticator;

-- Past windows serve nobody; a server prunes them now and then, a batch at a time.
create function rowgate_private.prune_rate_limit_counts() returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_pruned integer;
begin
  delete from rowgate_private.rate_limit_servers s where s.seen_at < now() - interval '1 hour';
  with gone as (
    select c.ctid from rowgate_private.rate_limit_counts c where c.expires_at < now() limit 10000
  )
  delete from rowgate_private.rate_limit_counts c using gone where c.ctid = gone.ctid;
  get diagnostics v_pruned = row_count;
  return v_pruned;
end;
$$;
comment on function rowgate_private.prune_rate_limit_counts() is
  'Deletes rate-limit counts of windows that are over (at most 10,000 a call) and servers gone for an hour.';
grant execute on function rowgate_private.prune_rate_limit_counts() to rowgate_authenticator;

-- A server that stops says so, so that the others stop counting it among
-- those sharing an allowance (their shares grow back at once).
create function rowgate_private.leave_rate_limit_counts(p_server uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  delete from rowgate_private.rate_limit_servers s where s.id = p_server;
end;
$$;
comment on function rowgate_private.leave_rate_limit_counts(uuid) is
  'Removes a stopping server from those sharing rate-limit allowances.';
grant execute on function rowgate_private.leave_rate_limit_counts(uuid) to rowgate_authenticator;

--! split: 002-a-sign-in-code-belongs-to-the-attempt-that-asked-for-it.sql
-- A sign-in code belongs to the attempt that asked for it (SPEC §12, §14): the
-- client that asks gets an opaque attempt token, and the code works only with
-- it. Another client's guesses therefore cannot reach a code mailed to the
-- owner, and the 5 wrong codes an attempt allows are counted on the attempt,
-- wherever they come from. Codes are bounded per client address: 5 an hour
-- for one e-mail address and 20 an hour in all, counted here so that every
-- server sees them; what one client asks for spends nobody else's allowance,
-- so nobody can lock the owner out. With 5 guesses per attempt, an address
-- makes at most 100 guesses an hour against codes of about 2^40.
--
-- Codes issued before attempts existed work with no attempt: they go.
delete from rowgate_private.login_codes;
alter table rowgate_private.login_codes
  add column attempt_hash bytea not null,
  add column client text not null check (length(client) <= 64);
alter table rowgate_private.login_codes rename column attempts to wrong_codes;
create unique index login_codes_attempt on rowgate_private.login_codes (attempt_hash);
create index login_codes_client on rowgate_private.login_codes (client, created_at);
comment on column rowgate_private.login_codes.attempt_hash is
  'The keyed hash of the attempt token the code was issued to: the code works with that attempt only.';
comment on column rowgate_private.login_codes.client is
  'The client address (an IPv6 client''s /64) that asked for the code: its allowance paid for it.';
comment on column rowgate_private.login_codes.wrong_codes is
  'Wrong codes tried with the attempt; at 5 the attempt is over.';

create function rowgate_private.login_code_wrong_codes_allowed() returns integer
language sql immutable parallel safe as $$ select 5 $$;
comment on function rowgate_private.login_code_wrong_codes_allowed() is
  'Wrong codes an attempt allows before its code is dead.';

drop function rowgate.request_login_code(text, bytea);
create function rowgate.request_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_client text)
returns table (status text, expires_in integer, retry_after integer)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_email text := lower(p_email);
  v_lifetime interval := rowgate_private.login_code_lifetime();
  v_for_address timestamptz;
  v_in_all timestamptz;
begin
  -- two requests of one client at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.login_code:' || p_client, 0));
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  -- the fifth newest code for this address and the twentieth newest in all, within the hour
  select c.created_at into v_for_address from rowgate_private.login_codes c
    where c.client = p_client and c.email = v_email and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 4 limit 1;
  select c.created_at into v_in_all from rowgate_private.login_codes c
    where c.client = p_client and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 19 limit 1;
  if v_for_address is not null or v_in_all is not null then
    return query select 'rate_limited'::text, null::integer,
      greatest(1, ceil(extract(epoch from
        greatest(v_for_address, v_in_all) + interval '1 hour' - now())))::integer;
    return;
  end if;
  insert into rowgate_private.login_codes (email, code_hash, attempt_hash, client, expires_at)
    values (v_email, p_code_hash, p_attempt_hash, p_client, now() + v_lifetime);
  return query select 'created'::text, extract(epoch from v_lifetime)::integer, null::integer;
end;
$$;
comment on function rowgate.request_login_code(text, bytea, bytea, text) is
  E'@behavior -*\nStores a login code''s hash for an address and the attempt that asked: created with the seconds it stays valid, or rate_limited (5 codes an hour per client and address, 20 per client) with the seconds until the client may ask again.';
revoke all on function rowgate.request_login_code(text, bytea, bytea, text) from public;
grant execute on function rowgate.request_login_code(text, bytea, bytea, text) to rowgate_anonymous;

drop function rowgate.authenticate_login_code(text, bytea, bytea);
create function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_session_token_hash bytea)
returns table (
  status text, id uuid, email text, name text, avatar_url text, is_admin boolean,
  created_at timestamptz, updated_at timestamptz, session_expires_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code rowgate_private.login_codes;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
begin
  -- the attempt's guesses are counted one after the other, from wherever they come
  select c.* into v_code from rowgate_private.login_codes c where c.attempt_hash = p_attempt_hash for update;
  if v_code.id is null or v_code.used_at is not null or v_code.expires_at <= now()
     or v_code.wrong_codes >= rowgate_private.login_code_wrong_codes_allowed() then
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  if v_code.email <> v_email or v_code.code_hash <> p_code_hash then
    update rowgate_private.login_codes c set wrong_codes = c.wrong_codes + 1 where c.id = v_code.id;
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  -- a code signs in once, and the other codes of the address die with it
  update rowgate_private.login_codes c set used_at = now() where c.email = v_email and c.used_at is null;
  select u.* into v_user from rowgate.users u where u.email = v_email and u.deleted_at is null;
  if v_user.id is null then
    insert into rowgate.users (email) values (v_email) returning * into v_user;
  end if;
  v_session := rowgate_private.issue_web_session(v_user.id, p_session_token_hash);
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url,
    exists (select 1 from rowgate_private.platform_admins a where a.user_id = v_user.id),
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
comment on function rowgate.authenticate_login_code(text, bytea, bytea, bytea) is
  E'@behavior -*\nSigns in with a login code and the attempt it was issued to: ok with the user and the new session''s expiry, or invalid (a wrong code counts against the attempt; 5 end it).';
revoke all on function rowgate.authenticate_login_code(text, bytea, bytea, bytea) from public;
grant execute on function rowgate.authenticate_login_code(text, bytea, bytea, bytea) to rowgate_anonymous;
