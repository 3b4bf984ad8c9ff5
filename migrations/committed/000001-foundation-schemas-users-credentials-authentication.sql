--! Previous: -
--! Hash: sha1:457c63a61416266d5175a15a079ffa78d7f1bf6d
--! Message: foundation: schemas, users, credentials, authentication

-- Schemas. `rowgate` is what the API (and later GraphQL) exposes; `rowgate_hidden`
-- holds helpers that API roles may call but that no interface publishes;
-- `rowgate_private` holds secrets (token hashes, sessions) no API role can read.
create schema rowgate;
create schema rowgate_hidden;
create schema rowgate_private;
revoke all on schema rowgate, rowgate_hidden, rowgate_private from public;
grant usage on schema rowgate, rowgate_hidden
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;
-- only the authenticator reaches the private schema, and only to call authenticate()
grant usage on schema rowgate_private to rowgate_authenticator;

-- Functions are not executable by everybody unless a grant says so.
alter default privileges revoke execute on functions from public;

-- Every table keeps created_at/updated_at; this trigger maintains them.
create function rowgate_private.tg__timestamps() returns trigger
language plpgsql volatile set search_path = pg_catalog, public, pg_temp as $$
begin
  new.created_at = case when tg_op = 'INSERT' then now() else old.created_at end;
  new.updated_at = case when tg_op = 'UPDATE' and old.updated_at >= now() then old.updated_at + interval '1 millisecond' else now() end;
  return new;
end;
$$;

-- Scopes (SPEC §3) as data: every scope, and the read scope a write scope implies.
create table rowgate_private.scopes (
  name text primary key,
  implies text references rowgate_private.scopes (name)
);
insert into rowgate_private.scopes (name, implies) values
  ('user:read', null), ('user:write', 'user:read'),
  ('payouts:read', null), ('payouts:write', 'payouts:read'),
  ('organizations_read', null), ('organizations_write', 'organizations_read'),
  ('members_read', null), ('members_write', 'members_read'),
  ('products_read', null), ('products_write', 'products_read'),
  ('customers_read', null), ('customers_write', 'customers_read'),
  ('orders_read', null), ('orders_write', 'orders_read'),
  ('transactions_read', null), ('transactions_write', 'transactions_read'),
  ('payouts_read', null), ('payouts_write', 'payouts_read'),
  ('organization_access_tokens_read', null), ('organization_access_tokens_write', 'organization_access_tokens_read'),
  ('customer_sessions_write', null),
  ('customer_portal_read', null), ('customer_portal_write', 'customer_portal_read');

-- The scopes a credential kind carries without choosing them.
create function rowgate_private.all_scopes() returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select array_agg(name order by name) from rowgate_private.scopes
  where name not like 'customer_portal_%';
$$;
create function rowgate_private.read_scopes() returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select array_agg(name order by name) from rowgate_private.scopes
  where name like '%read' and name not like 'customer_portal_%';
$$;

-- Users (SPEC §9). `is_admin` is the platform-admin flag an operator sets.
create table rowgate.users (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  name text check (length(name) <= 200),
  avatar_url text check (avatar_url ~ '^https?://' and length(avatar_url) <= 2000),
  is_admin boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index users_email_live on rowgate.users (email) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.users
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.users enable row level security;

-- Subject helpers. The settings that name the subject are trusted only in a
-- session of the API's own login role, rowgate_authenticator, which sets them
-- (transaction-local) right after authenticating: a session of any other role
-- (an analyst, the owner) that sets them by hand gets nobody. session_user, not
-- current_user, so the answer is the same inside security definer functions.
-- Written in SQL so that RLS policies evaluate them once per statement.
create function rowgate_hidden.current_subject_kind() returns text
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.subject_kind', true), '') end;
$$;
comment on function rowgate_hidden.current_subject_kind() is 'The kind of the request''s subject (user, organization, customer, member), or null.';

create function rowgate_hidden.current_subject_id() returns uuid
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.subject_id', true), '')::uuid end;
$$;
comment on function rowgate_hidden.current_subject_id() is 'The id of the request''s subject, or null.';

create function rowgate_hidden.current_user_id() returns uuid
language sql stable as $$
  select case when rowgate_hidden.current_subject_kind() = 'user' then rowgate_hidden.current_subject_id() end;
$$;
comment on function rowgate_hidden.current_user_id() is 'The User subject of this transaction, or null.';

create function rowgate_hidden.current_scopes() returns text[]
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
    then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ') end;
$$;
comment on function rowgate_hidden.current_scopes() is 'The scopes of the credential of this transaction, with the read scopes their write scopes imply.';

grant execute on function rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(),
  rowgate_hidden.current_user_id(), rowgate_hidden.current_scopes()
  to rowgate_anonymous, rowgate_user, rowgate_organization, rowgate_customer, rowgate_member, rowgate_analyst;

-- Scope arithmetic, used to refuse tokens broader than their creator's credential.
create function rowgate_private.expand_scopes(p_scopes text[]) returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select coalesce(array_agg(distinct s order by s), '{}') from (
    select unnest(p_scopes) as s
    union all
    select implies from rowgate_private.scopes where name = any (p_scopes) and implies is not null
  ) t;
$$;

-- A user sees and edits itself.
create policy select_self on rowgate.users for select to rowgate_user
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null);
create policy update_self on rowgate.users for update to rowgate_user
  using (id = (select rowgate_hidden.current_user_id()) and deleted_at is null);
grant select (id, email, name, avatar_url, is_admin, created_at, updated_at) on rowgate.users to rowgate_user;
grant update (name, avatar_url) on rowgate.users to rowgate_user;

-- Web, customer and member sessions are secrets: private, reached through functions.
create table rowgate_private.sessions (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  kind text not null check (kind in ('user', 'customer', 'member')),
  user_id uuid references rowgate.users on delete cascade,
  customer_id uuid,
  member_id uuid,
  is_impersonation boolean not null default false,
  impersonator_id uuid references rowgate.users on delete cascade,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  check ((kind = 'user') = (user_id is not null)),
  check ((kind = 'customer') = (customer_id is not null and member_id is null) or kind <> 'customer'),
  check ((kind = 'member') = (member_id is not null) or kind <> 'member'),
  check (is_impersonation = (impersonator_id is not null))
);
create index sessions_user_id on rowgate_private.sessions (user_id) where revoked_at is null;

-- Personal access tokens: the metadata the API shows is public (RLS: the owner
-- only); the keyed hash of the token is private.
create table rowgate.personal_access_tokens (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references rowgate.users on delete cascade,
  comment text not null check (length(comment) between 1 and 200),
  scopes text[] not null,
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index personal_access_tokens_user_id on rowgate.personal_access_tokens (user_id, created_at);
create trigger _100_timestamps before insert or update on rowgate.personal_access_tokens
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.personal_access_tokens enable row level security;
create policy select_own on rowgate.personal_access_tokens for select to rowgate_user
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null);
grant select (id, user_id, comment, scopes, expires_at, last_used_at, created_at, updated_at)
  on rowgate.personal_access_tokens to rowgate_user;

-- OAuth2 access tokens (issued by the authorization server of a later issue; stored
-- and verified from now on). For a user (`rg_at_u_`) or an organization (`rg_at_o_`).
create table rowgate_private.oauth2_access_tokens (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  client_id text not null,
  user_id uuid not null references rowgate.users on delete cascade,
  organization_id uuid,
  scopes text[] not null,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_access_tokens_user_id on rowgate_private.oauth2_access_tokens (user_id) where revoked_at is null;

-- Keyed hashes of the public-metadata tokens (PATs now, organization tokens later).
create table rowgate_private.access_token_hashes (
  token_hash bytea primary key,
  personal_access_token_id uuid unique references rowgate.personal_access_tokens on delete cascade
);

-- Issuing credentials. The token is made and hashed by the server (which holds
-- the key); these store the hash. Used by the API's functions and the operator CLI.
create function rowgate_private.issue_user_session(
  p_user_id uuid, p_token_hash bytea, p_lifetime interval, p_impersonator_id uuid default null
) returns rowgate_private.sessions
language sql volatile set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.sessions (token_hash, kind, user_id, is_impersonation, impersonator_id, expires_at)
    values (p_token_hash, 'user', p_user_id, p_impersonator_id is not null, p_impersonator_id, now() + p_lifetime)
    returning *;
$$;

-- Tokens hold only scopes that exist (portal scopes belong to portal sessions).
create function rowgate_private.assert_known_scopes(p_scopes text[]) returns void
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_unknown text;
begin
  select s into v_unknown from unnest(p_scopes) s
    where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scopes';
  end if;
end;
$$;

create function rowgate_private.issue_personal_access_token(
  p_user_id uuid, p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.personal_access_tokens
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
declare
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_private.assert_known_scopes(p_scopes);
  insert into rowgate.personal_access_tokens (user_id, comment, scopes, expires_at)
    values (p_user_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at)
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id)
    values (p_token_hash, v_token.id);
  return v_token;
end;
$$;

-- Creating a PAT through the API: the caller's own credential bounds the scopes (SPEC §3).
create function rowgate.create_personal_access_token(
  p_comment text, p_scopes text[], p_expires_at timestamptz, p_token_hash bytea
) returns rowgate.personal_access_tokens
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  return rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash);
end;
$$;
grant execute on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea) to rowgate_user;

-- Revoking one's own personal access token: a soft delete. The select policy
-- hides deleted rows, so the marking update runs here, for the owner only.
create function rowgate.revoke_personal_access_token(p_id uuid) returns boolean
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  with revoked as (
    update rowgate.personal_access_tokens set deleted_at = now()
    where id = p_id and user_id = rowgate_hidden.current_user_id() and deleted_at is null
    returning 1
  )
  select exists (select 1 from revoked);
$$;
grant execute on function rowgate.revoke_personal_access_token(uuid) to rowgate_user;

-- Deleting the current user (SPEC §9): a soft delete that revokes every credential.
create function rowgate.delete_current_user() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  if not found then
    return false;
  end if;
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  return true;
end;
$$;
grant execute on function rowgate.delete_current_user() to rowgate_user;

-- Authentication: from a credential kind and the keyed hash of its token, the
-- subject it names, or no row. Called by the authenticator before it switches role.
-- A credential authenticates nobody when expired, revoked, or when its user is deleted.
create function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
returns table (
  credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    -- last use is recorded at most once a minute, so reads stay cheap
    update rowgate.personal_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.personal_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  end if;
end;
$$;
grant execute on function rowgate_private.authenticate(text, bytea) to rowgate_authenticator;
