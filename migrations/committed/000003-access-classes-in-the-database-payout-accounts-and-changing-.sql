--! Previous: sha1:db7f66dec68d93b852d0b4694fc6ccc12c868d5f
--! Hash: sha1:5d0b81ce5c760f3ac04129b04a0f0fefb1921a51
--! Message: Access classes in the database: payout accounts and changing the user take web sessions only; the platform-admin flag moves to rowgate_private.platform_admins

-- Issue 12, item 5. Two rules that lived only in the REST route table now live
-- here, so GraphQL and analysts' SQL get them too (SPEC §4, §13; LESSONS: "a
-- rule enforced only in the REST route table is missing in every other
-- interface"):
-- 1. payout accounts (read and write) and changing the user take a web session;
-- 2. nobody reads a user's platform-admin flag but the user itself, through
--    GET /v1/users/me and the sign-in answer (it was a column of rowgate.users
--    that every colleague could select through GraphQL's allUsers).

-- The kind of credential that authenticated the transaction (SPEC §2: web_session,
-- personal_access_token, organization_access_token, oauth2_user_token,
-- oauth2_organization_token, customer_session, member_session). The server sets
-- `rowgate.credential_kind` next to the subject, and like the other subject
-- settings it is trusted only in a session of rowgate_authenticator. An analyst
-- (a LOGIN role bound to a user, signed in with its own password) counts as a
-- web session: it is that person at a console, reading with the read scopes
-- only, which is what an impersonation session is (docs/decisions.md).
create or replace function rowgate_hidden.current_credential_kind() returns text
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.credential_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'web_session' end;
$$;
comment on function rowgate_hidden.current_credential_kind() is
  'The kind of the credential of this transaction (web_session, personal_access_token, …); an analyst''s login counts as web_session; null without one.';
grant execute on function rowgate_hidden.current_credential_kind()
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- Payout accounts are "web payouts read / write" (SPEC §4, §9): a web session
-- holding payouts:read (payouts:write for changes), then the finance policies.
-- Organization tokens (OAT, OAuth2 organization tokens) and user tokens (PAT,
-- OAuth2 user tokens) read and write none, whatever their scopes; the
-- organization scope payouts_read no longer opens this table (it still reads
-- accounts and transactions, SPEC §3's finance-read scopes).
drop policy if exists select_finance on rowgate.payout_accounts;
drop policy if exists select_finance_web_session on rowgate.payout_accounts;
create policy select_finance_web_session on rowgate.payout_accounts for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and deleted_at is null and rowgate_hidden.finance_read_denial(organization_id) is null
    and (select rowgate_hidden.current_credential_kind()) = 'web_session'
    and (select rowgate_hidden.has_scope('payouts:read')));
drop policy if exists insert_finance on rowgate.payout_accounts;
drop policy if exists insert_finance_web_session on rowgate.payout_accounts;
create policy insert_finance_web_session on rowgate.payout_accounts for insert
  with check (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and rowgate_hidden.finance_write_denial(organization_id) is null
    and (select rowgate_hidden.current_credential_kind()) = 'web_session'
    and (select rowgate_hidden.has_scope('payouts:write')));
-- (payout accounts have no update policy and no update grant: nothing changes a row but deleting it)

-- Changing the user is "web user write" (SPEC §4: PATCH /v1/users/me); deleting
-- it (rowgate.delete_current_user) stays open to every User credential with
-- user:write (SPEC §9).
drop policy if exists update_self on rowgate.users;
drop policy if exists update_self_web_session on rowgate.users;
create policy update_self_web_session on rowgate.users for update to rowgate_user
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null
    and (select rowgate_hidden.current_credential_kind()) = 'web_session'
    and (select rowgate_hidden.has_scope('user:write')));

-- Soft deletes, as in migration 000001, with one more check: a payout account
-- is deleted with a web session only (DELETE /v1/payout-accounts/{id} is web
-- payouts write). The credential is checked first, as authentication comes
-- before scopes (SPEC §5); REST refuses other credentials with a 401 before it
-- gets here, so this answers only callers that skip the route table.
create or replace function rowgate.delete_resource(p_resource text, p_id uuid) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_policy text := case p_resource
    when 'organization' then 'organization:manage'
    when 'membership' then 'members_management'
    when 'organization_access_token' then 'access_token_management'
    when 'product' then 'products:write'
    when 'customer' then 'customers:write'
    when 'payout_account' then 'finance_write'
  end;
  v_scope text := case p_resource
    when 'organization' then 'organizations_write'
    when 'membership' then 'members_write'
    when 'organization_access_token' then 'organization_access_tokens_write'
    when 'product' then 'products_write'
    when 'customer' then 'customers_write'
    when 'payout_account' then 'payouts:write'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  if p_resource = 'payout_account' and rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Payout accounts are managed with a web session only' using errcode = 'RG403';
  end if;
  perform rowgate_hidden.assert_scope(v_scope);
  select a.organization_id, a.denial into v_organization_id, v_denial from rowgate_hidden.authorize(p_resource, p_id, v_policy) a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  elsif v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  elsif p_resource = 'organization' and rowgate_hidden.current_subject_kind() is distinct from 'user' then
    raise exception 'Only users can delete organizations' using errcode = 'RG403';
  end if;
  case p_resource
    when 'organization' then update rowgate.organizations set deleted_at = now() where id = p_id;
    when 'membership' then update rowgate.memberships set deleted_at = now() where id = p_id;
    when 'organization_access_token' then update rowgate.organization_access_tokens set deleted_at = now() where id = p_id;
    when 'product' then update rowgate.products set deleted_at = now() where id = p_id;
    when 'customer' then update rowgate.customers set deleted_at = now() where id = p_id;
    when 'payout_account' then update rowgate.payout_accounts set deleted_at = now() where id = p_id;
  end case;
end;
$$;

-- Platform admins (SPEC §2: a user flag an operator sets, which allows
-- impersonation). Kept out of rowgate.users so that no grant on that table can
-- show it: a column grant let every colleague read every colleague's flag
-- through GraphQL, and a column left out of a grant would break analysts'
-- `select *` (LESSONS). Private: the operator CLI (the owner) writes it; the
-- functions below read it.
create table if not exists rowgate_private.platform_admins (
  user_id uuid primary key references rowgate.users on delete cascade,
  created_at timestamptz not null default now()
);

-- The flag moves once, from the column of migration 000001 to the table.
do $$
begin
  if exists (select 1 from pg_attribute where attrelid = 'rowgate.users'::regclass and attname = 'is_admin' and not attisdropped) then
    insert into rowgate_private.platform_admins (user_id) select id from rowgate.users where is_admin on conflict (user_id) do nothing;
    alter table rowgate.users drop column is_admin;
  end if;
end
$$;

-- The flag is part of its user's answer (GET /v1/users/me shows it), so giving
-- or taking it changes the user, as changing the column did: the user's
-- updated_at moves, and the users table's triggers announce the change to the
-- servers' answer caches (migration 000002). A user whose row changed in this
-- very transaction (created with the flag) was announced already.
create or replace function rowgate_private.tg_platform_admins__touch_user() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate.users u set updated_at = now()
    where u.id in (case when tg_op <> 'INSERT' then old.user_id end, case when tg_op <> 'DELETE' then new.user_id end)
      and u.updated_at < now();
  return null;
end;
$$;
drop trigger if exists _900_touch_user on rowgate_private.platform_admins;
create trigger _900_touch_user after insert or update or delete on rowgate_private.platform_admins
  for each row execute function rowgate_private.tg_platform_admins__touch_user();
drop trigger if exists _900_announce_truncate on rowgate_private.platform_admins;
create trigger _900_announce_truncate after truncate on rowgate_private.platform_admins
  for each statement execute function rowgate_private.tg__announce_user_changes();

-- Whether the transaction's User is a platform admin: its own flag, for the
-- answers that show it (GET and PATCH /v1/users/me). Nobody can ask about
-- another user. PL/pgSQL, so that a call is cheap once the session has run it.
create or replace function rowgate_hidden.current_user_is_platform_admin() returns boolean
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return exists (select 1 from rowgate_private.platform_admins a where a.user_id = rowgate_hidden.current_user_id());
end;
$$;
comment on function rowgate_hidden.current_user_is_platform_admin() is
  'Is the User of this transaction a platform admin (SPEC §2)? Its own flag only.';
grant execute on function rowgate_hidden.current_user_is_platform_admin() to rowgate_user;

-- Impersonation (SPEC §2, §9), as in migration 000001, with the flag read from
-- its table, and the admin's own web session required (POST /v1/impersonations/
-- is web user write): no token of a platform admin impersonates anybody.
create or replace function rowgate.create_impersonation_session(p_user_id uuid, p_token_hash bytea)
returns table (user_id uuid, expires_at timestamptz, scopes text[])
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_admin_id uuid := rowgate_hidden.current_user_id();
begin
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Impersonation takes a platform admin''s web session' using errcode = 'RG403';
  end if;
  perform rowgate_hidden.assert_scope('user:write');
  if not exists (select 1 from rowgate_private.platform_admins a join rowgate.users u on u.id = a.user_id
      where a.user_id = v_admin_id and u.deleted_at is null) then
    raise exception 'Only platform admins can impersonate users' using errcode = 'RG403';
  end if;
  if not exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null) then
    raise exception 'No such user' using errcode = 'RG422', detail = 'body.user_id';
  end if;
  return query select s.user_id, s.expires_at, rowgate_private.read_scopes()
    from rowgate_private.issue_user_session(p_user_id, p_token_hash, interval '1 hour', v_admin_id) s;
end;
$$;

-- Signing in with a code (SPEC §12), as in migration 000001; the answer is the
-- user's own, so it carries its flag, now read from its table.
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
    where c.email = v_email and c.code_hash = p_code_hash and c.used_at is null
      and c.expires_at > now() and c.attempts < 5
    for update;
  if v_code_id is null then
    -- a wrong guess counts against every live code of the address
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

-- `select * from rowgate.users` works for an analyst (SPEC §15; LESSONS: a
-- column grant that leaves out a column makes `select *` fail): deleted_at was
-- the one column not granted. Its select policies show live users only, so the
-- analyst reads null there and learns nothing.
grant select (deleted_at) on rowgate.users to rowgate_analyst;
