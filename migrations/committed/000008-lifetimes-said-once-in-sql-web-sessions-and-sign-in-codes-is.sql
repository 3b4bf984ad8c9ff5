--! Previous: sha1:767ead341628a0d9f6fda6ab3022e328840151c2
--! Hash: sha1:3a97c5e522f8055ebf9890377adac01242730df0
--! Message: Lifetimes said once, in SQL: web sessions and sign-in codes (issue 14); request_login_code answers the code's lifetime and the wait before another

--! split: 001-lifetimes-said-once.sql
-- Issue 14: a lifetime is said once, in SQL. A web session's 31 days and a
-- sign-in code's 15 minutes (and the 5 codes an address may ask for in that
-- window) were restated in TypeScript: the CLI passed its own '31 days', and
-- the sign-in route answered `expires_in`, `Retry-After` and the mail's wording
-- from a constant of its own. These functions are now the one place;
-- request_login_code answers the code's lifetime and, when it refuses, how long
-- until the address may ask again (the fifth newest code leaving the window),
-- so the server repeats what the database decided.
create function rowgate_private.web_session_lifetime() returns interval
language sql immutable set search_path = pg_catalog, pg_temp as $$
  select interval '31 days';
$$;
comment on function rowgate_private.web_session_lifetime() is
  'How long a web session made by signing in (or by `rowgate sessions create`) lasts.';

create function rowgate_private.login_code_lifetime() returns interval
language sql immutable set search_path = pg_catalog, pg_temp as $$
  select interval '15 minutes';
$$;
comment on function rowgate_private.login_code_lifetime() is
  'How long a sign-in code stays valid, and the window in which an address may ask for at most 5 codes.';

-- The session a sign-in makes: the user's, for web_session_lifetime().
create function rowgate_private.issue_web_session(p_user_id uuid, p_token_hash bytea) returns rowgate_private.sessions
language sql volatile set search_path = pg_catalog, pg_temp as $$
  select * from rowgate_private.issue_user_session(p_user_id, p_token_hash, rowgate_private.web_session_lifetime());
$$;
comment on function rowgate_private.issue_web_session(uuid, bytea) is
  'A new web session for a user, lasting web_session_lifetime().';

--! split: 002-request-login-code-answers-its-lifetimes.sql
-- request_login_code answered only created or rate_limited, so the server had to
-- know the code's lifetime and the window on its own. It now answers both as
-- seconds. Its return type changes, hence drop and create (nothing else calls it).
drop function rowgate.request_login_code(text, bytea);
create function rowgate.request_login_code(p_email text, p_code_hash bytea)
returns table (status text, expires_in integer, retry_after integer)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_email text := lower(p_email);
  v_window interval := rowgate_private.login_code_lifetime();
  v_fifth_newest timestamptz;
begin
  -- codes a day old serve nobody
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  select c.created_at into v_fifth_newest from rowgate_private.login_codes c
    where c.email = v_email and c.created_at > now() - v_window
    order by c.created_at desc offset 4 limit 1;
  if v_fifth_newest is not null then
    return query select 'rate_limited'::text, null::integer,
      greatest(1, ceil(extract(epoch from v_fifth_newest + v_window - now())))::integer;
    return;
  end if;
  insert into rowgate_private.login_codes (email, code_hash, expires_at)
    values (v_email, p_code_hash, now() + v_window);
  return query select 'created'::text, extract(epoch from v_window)::integer, null::integer;
end;
$$;
comment on function rowgate.request_login_code(text, bytea) is
  E'@behavior -*\nStores a login code''s hash for an address: created with the seconds it stays valid, or rate_limited with the seconds until the address may ask again.';
grant execute on function rowgate.request_login_code(text, bytea) to rowgate_anonymous;

--! split: 003-sign-in-sessions-last-the-web-session-lifetime.sql
-- Signing in with a code makes its session through issue_web_session, the one
-- place that says how long a web session lasts (was: interval '31 days' here).
-- Otherwise as migration 000007 left it.
create or replace function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_session_token_hash bytea)
returns table (
  status text, id uuid, email text, name text, avatar_url text, is_admin boolean,
  created_at timestamptz, updated_at timestamptz, session_expires_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code_id uuid;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
begin
  select c.id into v_code_id from rowgate_private.login_codes c
    where c.email = v_email and c.code_hash = p_code_hash and c.used_at is null and c.expires_at > now()
    for update;
  if v_code_id is null then
    update rowgate_private.login_codes c set attempts = c.attempts + 1
      where c.email = v_email and c.used_at is null and c.expires_at > now();
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
