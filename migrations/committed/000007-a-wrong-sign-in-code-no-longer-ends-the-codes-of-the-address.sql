--! Previous: sha1:1207816ae7f50cda056c2c16a8adc68cd13760e3
--! Hash: sha1:767ead341628a0d9f6fda6ab3022e328840151c2
--! Message: A wrong sign-in code no longer ends the codes of the address: wrong guesses are limited per guesser's address by the server (issue 13, SPEC §14)

-- Issue 13 (SPEC §14): a failed sign-in code guess costs the guesser's
-- address, never locks the address's owner out. Until now every wrong guess
-- counted against every live code of the address, and five of them killed the
-- codes: anybody could lock any chosen user out of signing in, for as long as
-- they cared to keep guessing. The server now limits wrong guesses per client
-- address (src/operating/rate-limit.ts), and a wrong guess changes nothing
-- here: the codes mailed to the owner keep working until they expire (15
-- minutes) or one is used. The attempt count is still kept, for the record.
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
  v_session := rowgate_private.issue_user_session(v_user.id, p_session_token_hash, interval '31 days');
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url,
    exists (select 1 from rowgate_private.platform_admins a where a.user_id = v_user.id),
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
