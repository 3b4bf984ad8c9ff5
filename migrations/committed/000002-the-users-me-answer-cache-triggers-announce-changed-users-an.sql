--! Previous: sha1:745a98fd8cf22e9546e3d991b8042af0d6735cc3
--! Hash: sha1:db7f66dec68d93b852d0b4694fc6ccc12c868d5f
--! Message: The users/me answer cache: triggers announce changed users and sessions; authenticate() says until when its answer holds

-- The server's cache of credential-only answers (issue 7; src/answer-cache.ts,
-- docs/decisions.md). A server may keep what the database answered for a web
-- session (`GET /v1/users/me`: the session is good until a time, with these
-- scopes, for this user, whose row reads so) only while the database has not
-- said otherwise. These triggers say otherwise, in the transaction that makes
-- the change: a notification on `rowgate_user_changes` (delivered to every
-- server at commit; a payload of user ids, or `*` for all), and the same ids in
-- the transaction-local setting `rowgate.changed_users`, which the server that
-- made the change reads with its commit and applies before it answers.
-- Notifications can only empty a cache, never fill one: anybody may send them.

-- Statement-level, over the transition table: one notification per statement,
-- however many rows it changes. It runs as whoever changed the rows (an API
-- role, an operator), so it calls nothing but pg_catalog.
create or replace function rowgate_private.tg__announce_user_changes() returns trigger
language plpgsql volatile as $$
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
  -- a notification's payload holds under 8,000 bytes: a long list is "everybody"
  if length(v_ids) > 4000 then
    v_ids := '*';
  end if;
  perform pg_notify('rowgate_user_changes', v_ids);
  perform set_config('rowgate.changed_users',
    case when v_so_far = '*' or v_ids = '*' or length(v_so_far) > 4000 then '*' else concat_ws(' ', v_so_far, v_ids) end,
    true);
  return null;
end;
$$;

-- A user's row is their answer; a user's deletion ends their sessions.
drop trigger if exists _900_announce_update on rowgate.users;
create trigger _900_announce_update after update on rowgate.users
  referencing old table as old_rows for each statement execute function rowgate_private.tg__announce_user_changes();
drop trigger if exists _900_announce_delete on rowgate.users;
create trigger _900_announce_delete after delete on rowgate.users
  referencing old table as old_rows for each statement execute function rowgate_private.tg__announce_user_changes();
drop trigger if exists _900_announce_truncate on rowgate.users;
create trigger _900_announce_truncate after truncate on rowgate.users
  for each statement execute function rowgate_private.tg__announce_user_changes();

-- A session revoked, cut short or removed (a new session changes nothing cached).
drop trigger if exists _900_announce_update on rowgate_private.sessions;
create trigger _900_announce_update after update on rowgate_private.sessions
  referencing old table as old_rows for each statement execute function rowgate_private.tg__announce_user_changes();
drop trigger if exists _900_announce_delete on rowgate_private.sessions;
create trigger _900_announce_delete after delete on rowgate_private.sessions
  referencing old table as old_rows for each statement execute function rowgate_private.tg__announce_user_changes();
drop trigger if exists _900_announce_truncate on rowgate_private.sessions;
create trigger _900_announce_truncate after truncate on rowgate_private.sessions
  for each statement execute function rowgate_private.tg__announce_user_changes();

-- A web session carries every scope (an impersonation, the read ones): a
-- change to the scopes changes every cached answer.
drop trigger if exists _900_announce_change on rowgate_private.scopes;
create trigger _900_announce_change after insert or update or delete or truncate on rowgate_private.scopes
  for each statement execute function rowgate_private.tg__announce_user_changes();

-- authenticate() also says until when its answer holds (the credential's
-- expiry; null: none), so that a cached answer ends when the credential does.
-- Its result type changes, so it is dropped and created again.
drop function if exists rowgate_private.authenticate(text, bytea);
create function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
returns table (
  credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean, expires_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation, s.expires_at
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;
grant execute on function rowgate_private.authenticate(text, bytea) to rowgate_authenticator;
