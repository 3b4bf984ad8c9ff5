--! Previous: sha1:89512059298fe69475405942afc00fdb8b7de1d8
--! Hash: sha1:73f85f150846f0484115038534fd197e8a517e7d
--! Message: sign-in and OAuth2: login codes, the development outbox, sign-out, OAuth2 clients, codes with PKCE, rotating refresh-token families, revocation, introspection

-- Getting credentials (SPEC §2, §12): sign-in by e-mail code, sign-out, and an
-- OAuth2 authorization server (clients, codes with PKCE, token families with
-- rotating refresh tokens, revocation, introspection). Secrets (code hashes,
-- client-secret hashes, refresh-token hashes, the development outbox) are
-- private; client metadata is public under RLS. The server makes every secret
-- and passes only its keyed hash. Checks that must record a failure (attempt
-- counts, a spent code, a reused refresh token) return a status instead of
-- raising, so the record is committed; the server maps the status.

-- The credential of the transaction, set by the server next to the subject
-- (`rowgate.credential_id`), trusted only under the API's login role like the
-- other settings. Sign-out uses it to revoke exactly the session it came with.
create function rowgate_hidden.current_credential_id() returns uuid
language sql stable as $$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.credential_id', true), '')::uuid end;
$$;
comment on function rowgate_hidden.current_credential_id() is
  'The id of the session or token that authenticated this transaction, or null.';

-- Whether a user may grant tokens for an organization: the access-token
-- management policy, for a given user rather than the transaction's subject
-- (the token endpoint and authentication run with no user subject).
create function rowgate_private.user_manages_access_tokens(p_user_id uuid, p_organization_id uuid) returns boolean
language sql stable set search_path = pg_catalog, pg_temp as $$
  select exists (
    select 1 from rowgate.memberships m
      join rowgate.role_permissions rp on rp.role = m.role and rp.permission = 'access_tokens:manage'
      join rowgate.organizations o on o.id = m.organization_id
      join rowgate.users u on u.id = m.user_id
    where m.user_id = p_user_id and m.organization_id = p_organization_id
      and m.deleted_at is null and o.deleted_at is null and u.deleted_at is null);
$$;

-- Sign-in by e-mail code. A code is short, so it is stored only as a keyed
-- hash bound to the address, lives 15 minutes, and every live code of an
-- address dies after 5 wrong attempts in all. At most 5 codes per address are
-- issued per 15 minutes.
create table rowgate_private.login_codes (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email = lower(email) and email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  code_hash bytea not null,
  attempts integer not null default 0,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index login_codes_email on rowgate_private.login_codes (email, created_at);

create function rowgate.request_login_code(p_email text, p_code_hash bytea) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_email text := lower(p_email);
begin
  -- codes a day old serve nobody
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  if (select count(*) from rowgate_private.login_codes c
      where c.email = v_email and c.created_at > now() - interval '15 minutes') >= 5 then
    return 'rate_limited';
  end if;
  insert into rowgate_private.login_codes (email, code_hash, expires_at)
    values (v_email, p_code_hash, now() + interval '15 minutes');
  return 'created';
end;
$$;
comment on function rowgate.request_login_code(text, bytea) is
  E'@behavior -*\nStores a login code''s hash for an address: created, or rate_limited.';

-- Signs in with a code: the user (created on first sign-in) and a 31-day web
-- session, or status `invalid` (a wrong, used, expired or exhausted code; the
-- failed attempt is counted and committed).
create function rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_session_token_hash bytea)
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
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url, v_user.is_admin,
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$$;
comment on function rowgate.authenticate_login_code(text, bytea, bytea) is
  E'@behavior -*\nSigns in with an e-mail code: the user and its new session, or status invalid.';

-- The development outbox (SPEC §10 `mail outbox`): with no mail server
-- configured, mail is kept here so that a newcomer can read a sign-in code
-- with the CLI. It holds codes in clear, so it is private, and keeps a day.
create table rowgate_private.mail_outbox (
  id uuid primary key default gen_random_uuid(),
  recipient text not null,
  subject text not null,
  body text not null,
  created_at timestamptz not null default now()
);
create index mail_outbox_created_at on rowgate_private.mail_outbox (created_at);

create function rowgate.record_outbox_mail(p_to text, p_subject text, p_text text) returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  delete from rowgate_private.mail_outbox where created_at < now() - interval '1 day';
  insert into rowgate_private.mail_outbox (recipient, subject, body) values (lower(p_to), p_subject, p_text);
$$;
comment on function rowgate.record_outbox_mail(text, text, text) is
  E'@behavior -*\nKeeps a message in the development outbox (no mail server configured).';

-- Signing out revokes the session server-side (LESSONS: a sign-out that only
-- clears the cookie leaves the token working): exactly the session of this
-- request, and only the current user's.
create function rowgate.revoke_current_session() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  perform rowgate_hidden.assert_scope('user:read');
  update rowgate_private.sessions s set revoked_at = now()
    where s.id = rowgate_hidden.current_credential_id() and s.kind = 'user'
      and s.user_id = rowgate_hidden.current_user_id() and s.revoked_at is null;
  return found;
end;
$$;
comment on function rowgate.revoke_current_session() is E'@behavior -*\nSigns out: revokes the web session of this request.';

-- OAuth2 clients (RFC 7591), registered by a signed-in user who alone sees and
-- manages them. Public metadata under RLS; a confidential client's secret is
-- stored as a keyed hash, privately. `scopes` bounds what it may ever ask for.
create table rowgate.oauth2_clients (
  id uuid primary key default gen_random_uuid(),
  client_id text not null unique check (client_id ~ '^rg_ci_[0-9A-Za-z]{24,64}$'),
  user_id uuid not null references rowgate.users,
  client_name text not null check (length(client_name) between 1 and 200),
  redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 10),
  scopes text[] not null check (cardinality(scopes) between 1 and 50),
  token_endpoint_auth_method text not null
    check (token_endpoint_auth_method in ('client_secret_basic', 'client_secret_post', 'none')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index oauth2_clients_user_id on rowgate.oauth2_clients (user_id, created_at) where deleted_at is null;
create trigger _100_timestamps before insert or update on rowgate.oauth2_clients
  for each row execute function rowgate_private.tg__timestamps();
alter table rowgate.oauth2_clients enable row level security;
create policy select_own on rowgate.oauth2_clients for select to rowgate_user
  using (user_id = (select rowgate_hidden.current_user_id()) and deleted_at is null);
grant select (id, client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method, created_at, updated_at)
  on rowgate.oauth2_clients to rowgate_user;
comment on table rowgate.oauth2_clients is E'@behavior -*\nOAuth2 clients registered by users (REST only).';

create table rowgate_private.oauth2_client_secrets (
  client_id text primary key references rowgate.oauth2_clients (client_id),
  secret_hash bytea not null
);

-- The live client, when the presented credentials authenticate it (RFC 6749
-- §2.3): a confidential client with its secret, a public client ("none")
-- with none. The server parses HTTP Basic or the body and hashes the secret.
create function rowgate_private.authenticate_oauth2_client(p_client_id text, p_secret_hash bytea)
returns rowgate.oauth2_clients
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null then
    return null;
  elsif v_client.token_endpoint_auth_method = 'none' then
    return case when p_secret_hash is null then v_client end;
  elsif p_secret_hash is null or not exists (select 1 from rowgate_private.oauth2_client_secrets s
      where s.client_id = p_client_id and s.secret_hash = p_secret_hash) then
    return null;
  end if;
  return v_client;
end;
$$;

-- Scopes a client or a grant may name: known, not the portal's.
create function rowgate_private.unknown_scope(p_scopes text[]) returns text
language sql stable set search_path = pg_catalog, pg_temp as $$
  select s from unnest(p_scopes) s
  where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
$$;

create function rowgate.register_oauth2_client(
  p_client_id text, p_client_name text, p_redirect_uris text[], p_scopes text[],
  p_token_endpoint_auth_method text, p_secret_hash bytea
) returns rowgate.oauth2_clients
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_unknown text := rowgate_private.unknown_scope(p_scopes);
  v_client rowgate.oauth2_clients;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can register OAuth2 clients' using errcode = 'RG403';
  end if;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scope';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A client cannot register a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scope';
  end if;
  if (p_token_endpoint_auth_method = 'none') <> (p_secret_hash is null) then
    raise exception 'A confidential client has a secret, a public client none';
  end if;
  insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
    values (p_client_id, v_user_id, p_client_name, p_redirect_uris,
      (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_token_endpoint_auth_method)
    returning * into v_client;
  if p_secret_hash is not null then
    insert into rowgate_private.oauth2_client_secrets (client_id, secret_hash) values (p_client_id, p_secret_hash);
  end if;
  return v_client;
end;
$$;
comment on function rowgate.register_oauth2_client(text, text, text[], text[], text, bytea) is
  E'@behavior -*\nRegisters an OAuth2 client owned by the current user (RFC 7591).';

-- Authorization codes (RFC 6749 §4.1) with their PKCE challenge (RFC 7636;
-- S256 only, so the method is not stored). Valid 10 minutes, spent by the
-- first exchange attempt whatever its outcome.
create table rowgate_private.oauth2_authorization_codes (
  id uuid primary key default gen_random_uuid(),
  code_hash bytea not null unique,
  client_id text not null references rowgate.oauth2_clients (client_id),
  user_id uuid not null references rowgate.users,
  organization_id uuid references rowgate.organizations,
  scopes text[] not null,
  redirect_uri text not null,
  code_challenge text,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_authorization_codes_client_id on rowgate_private.oauth2_authorization_codes (client_id);

-- A token family: what one authorization code led to, refresh after refresh.
-- Revoking it (a reused refresh token, a replayed code, RFC 7009 revocation of
-- a refresh token, the client's deletion) revokes its access tokens at once.
create table rowgate_private.oauth2_token_families (
  id uuid primary key default gen_random_uuid(),
  client_id text not null references rowgate.oauth2_clients (client_id),
  user_id uuid not null references rowgate.users,
  organization_id uuid references rowgate.organizations,
  scopes text[] not null,
  authorization_code_id uuid not null unique references rowgate_private.oauth2_authorization_codes,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_token_families_client_id on rowgate_private.oauth2_token_families (client_id) where revoked_at is null;

-- Refresh tokens rotate: each is good for one refresh, then `used_at` is set
-- and presenting it again is reuse. 30 days from issue, so a family lives
-- while its client keeps refreshing.
create table rowgate_private.oauth2_refresh_tokens (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  family_id uuid not null references rowgate_private.oauth2_token_families,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth2_refresh_tokens_family_id on rowgate_private.oauth2_refresh_tokens (family_id);

alter table rowgate_private.oauth2_access_tokens
  add column family_id uuid references rowgate_private.oauth2_token_families;
create index oauth2_access_tokens_family_id on rowgate_private.oauth2_access_tokens (family_id) where revoked_at is null;
create index oauth2_access_tokens_client_id on rowgate_private.oauth2_access_tokens (client_id) where revoked_at is null;

create function rowgate_private.revoke_oauth2_family(p_family_id uuid) returns void
language sql volatile set search_path = pg_catalog, pg_temp as $$
  update rowgate_private.oauth2_token_families set revoked_at = now() where id = p_family_id and revoked_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where family_id = p_family_id and revoked_at is null;
$$;

-- Issues an access token (1 hour) and a refresh token (30 days) in a family;
-- answers the access token's expiry.
create function rowgate_private.issue_oauth2_tokens(
  p_family_id uuid, p_scopes text[], p_access_token_hash bytea, p_refresh_token_hash bytea
) returns timestamptz
language sql volatile set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.oauth2_refresh_tokens (token_hash, family_id, expires_at)
    values (p_refresh_token_hash, p_family_id, now() + interval '30 days');
  insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at, family_id)
    select p_access_token_hash, f.client_id, f.user_id, f.organization_id, p_scopes, now() + interval '1 hour', f.id
    from rowgate_private.oauth2_token_families f where f.id = p_family_id
    returning expires_at;
$$;

-- Deleting a client (its owner only) ends every grant made to it.
create function rowgate.delete_oauth2_client(p_id uuid) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_client_id text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.oauth2_clients c set deleted_at = now()
    where c.id = p_id and c.user_id = rowgate_hidden.current_user_id() and c.deleted_at is null
    returning c.client_id into v_client_id;
  if v_client_id is null then
    return false;
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
    where f.client_id = v_client_id and f.revoked_at is null;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now() where t.client_id = v_client_id and t.revoked_at is null;
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.client_id = v_client_id and c.used_at is null;
  delete from rowgate_private.oauth2_client_secrets s where s.client_id = v_client_id;
  return true;
end;
$$;
comment on function rowgate.delete_oauth2_client(uuid) is E'@behavior -*\nDeletes one of the current user''s OAuth2 clients and revokes its tokens.';

-- The checks of an authorization request, for the signed-in user: `ok` with
-- what the consent page shows, or an RFC 6749 §4.1.2.1 error. `invalid_client`
-- and `invalid_redirect_uri` are shown to the user (never redirected); the
-- others go back to the redirect URI. An organization grant follows the
-- access-token management policy and carries organization scopes only.
create function rowgate.check_oauth2_authorization(
  p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid,
  p_code_challenge text, p_code_challenge_method text
) returns table (status text, description text, client_name text, scopes text[], organization_name text)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients;
  v_scopes text[];
  v_unknown text;
  v_denial text;
  v_organization_name text;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Unknown client_id'::text, null::text, null::text[], null::text;
    return;
  elsif p_redirect_uri is null or not (p_redirect_uri = any (v_client.redirect_uris)) then
    return query select 'invalid_redirect_uri'::text, 'The redirect_uri is not one the client registered'::text,
      null::text, null::text[], null::text;
    return;
  end if;
  if rowgate_hidden.current_user_id() is null then
    return query select 'access_denied'::text, 'Only users can authorize clients'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- PKCE (RFC 7636): S256 only; required of public clients
  if p_code_challenge is null and (p_code_challenge_method is not null or v_client.token_endpoint_auth_method = 'none') then
    return query select 'invalid_request'::text,
      'PKCE is required: send code_challenge with code_challenge_method=S256'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge_method is distinct from 'S256' then
    return query select 'invalid_request'::text, 'Only code_challenge_method=S256 is supported'::text,
      v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge !~ '^[A-Za-z0-9_-]{43}$' then
    return query select 'invalid_request'::text,
      'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- scopes: those asked for (the client's own when none are named), within the client's
  v_scopes := (select array_agg(distinct s order by s) from unnest(coalesce(p_scopes, v_client.scopes)) s);
  v_unknown := rowgate_private.unknown_scope(v_scopes);
  if v_scopes is null then
    return query select 'invalid_scope'::text, 'No scope was requested'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif v_unknown is not null then
    return query select 'invalid_scope'::text, format('Unknown scope: %s', v_unknown), v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ v_client.scopes) then
    return query select 'invalid_scope'::text,
      format('The client did not register the scope %s', (select s from unnest(v_scopes) s where not (s = any (v_client.scopes)) limit 1)),
      v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ rowgate_hidden.current_scopes()) then
    return query select 'invalid_scope'::text, 'A grant cannot hold a scope its user does not hold'::text,
      v_client.client_name, null::text[], null::text;
    return;
  end if;
  if p_organization_id is not null then
    select o.name into v_organization_name from rowgate.organizations o
      where o.id = p_organization_id and o.id = any (rowgate_hidden.current_organization_ids());
    if v_organization_name is null then
      return query select 'invalid_request'::text, 'Unknown organization_id'::text, v_client.client_name, null::text[], null::text;
      return;
    end if;
    v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
    if v_denial is not null then
      return query select 'access_denied'::text, v_denial, v_client.client_name, null::text[], null::text;
      return;
    end if;
    if v_scopes && array['user:read', 'user:write', 'payouts:read', 'payouts:write'] then
      return query select 'invalid_scope'::text, 'Organization tokens carry organization scopes only'::text,
        v_client.client_name, null::text[], null::text;
      return;
    end if;
  end if;
  return query select 'ok'::text, null::text, v_client.client_name, v_scopes, v_organization_name;
end;
$$;
comment on function rowgate.check_oauth2_authorization(text, text, text[], uuid, text, text) is
  E'@behavior -*\nChecks an OAuth2 authorization request for the current user: ok, or the RFC 6749 error.';

-- The user consents: an authorization code, after the same checks.
create function rowgate.create_oauth2_authorization_code(
  p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid,
  p_code_challenge text, p_code_challenge_method text, p_code_hash bytea
) returns timestamptz
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_status text;
  v_description text;
  v_scopes text[];
  v_expires_at timestamptz := now() + interval '10 minutes';
begin
  perform rowgate_hidden.assert_scope('user:write');
  select c.status, c.description, c.scopes into v_status, v_description, v_scopes
    from rowgate.check_oauth2_authorization(p_client_id, p_redirect_uri, p_scopes, p_organization_id,
      p_code_challenge, p_code_challenge_method) c;
  if v_status <> 'ok' then
    raise exception '%', v_description using errcode = 'RG403';
  end if;
  insert into rowgate_private.oauth2_authorization_codes
      (code_hash, client_id, user_id, organization_id, scopes, redirect_uri, code_challenge, expires_at)
    values (p_code_hash, p_client_id, rowgate_hidden.current_user_id(), p_organization_id, v_scopes, p_redirect_uri,
      p_code_challenge, v_expires_at);
  return v_expires_at;
end;
$$;
comment on function rowgate.create_oauth2_authorization_code(text, text, text[], uuid, text, text, bytea) is
  E'@behavior -*\nIssues an authorization code to a client the current user authorizes.';

-- Whether a family may still issue tokens: its user live and, for an
-- organization grant, still allowed to manage the organization's tokens.
create function rowgate_private.oauth2_grant_holds(p_user_id uuid, p_organization_id uuid) returns boolean
language sql stable set search_path = pg_catalog, pg_temp as $$
  select exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null)
    and (p_organization_id is null or rowgate_private.user_manages_access_tokens(p_user_id, p_organization_id));
$$;

-- The token endpoint, authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.6).
-- The server sends the S256 challenge it computed from the code_verifier, and
-- the hashes of a user token, an organization token and a refresh token it
-- made; the grant decides which access token is issued. A replayed code
-- revokes the tokens issued from it.
create function rowgate.exchange_oauth2_authorization_code(
  p_client_id text, p_client_secret_hash bytea, p_code_hash bytea, p_redirect_uri text, p_code_challenge text,
  p_user_token_hash bytea, p_organization_token_hash bytea, p_refresh_token_hash bytea
) returns table (status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
  v_code rowgate_private.oauth2_authorization_codes;
  v_family rowgate_private.oauth2_token_families;
  v_failure text;
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select c.* into v_code from rowgate_private.oauth2_authorization_codes c
    where c.code_hash = p_code_hash and c.client_id = p_client_id for update;
  if v_code.id is null then
    return query select 'invalid_grant'::text, 'The authorization code is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_code.used_at is not null then
    -- whoever replays a code may have stolen it: what was issued from it ends
    perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
      where f.authorization_code_id = v_code.id;
    return query select 'invalid_grant'::text,
      'The authorization code was used already; the tokens issued from it are revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  -- one attempt per code: from here on it is spent, whatever the outcome
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.id = v_code.id;
  v_failure := case
    when v_code.expires_at <= now() then 'The authorization code has expired'
    when p_redirect_uri is distinct from v_code.redirect_uri then 'redirect_uri differs from the authorization request''s'
    when v_code.code_challenge is not null and p_code_challenge is null then 'code_verifier is required'
    when v_code.code_challenge is distinct from p_code_challenge then
      case when v_code.code_challenge is null then 'No code_challenge was sent with the authorization request'
        else 'The code_verifier does not match the code_challenge' end
  end;
  if v_failure is null and not rowgate_private.oauth2_grant_holds(v_code.user_id, v_code.organization_id) then
    v_failure := 'The user can no longer grant this authorization';
  end if;
  if v_failure is not null then
    return query select 'invalid_grant'::text, v_failure, null::text, null::text[], null::timestamptz;
    return;
  end if;
  insert into rowgate_private.oauth2_token_families (client_id, user_id, organization_id, scopes, authorization_code_id)
    values (v_code.client_id, v_code.user_id, v_code.organization_id, v_code.scopes, v_code.id)
    returning * into v_family;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_family.scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_family.scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_refresh_token_hash);
end;
$$;
comment on function rowgate.exchange_oauth2_authorization_code(text, bytea, bytea, text, text, bytea, bytea, bytea) is
  E'@behavior -*\nThe authorization_code grant of the token endpoint.';

-- The token endpoint, refresh_token grant (RFC 6749 §6) with rotation: the
-- presented refresh token is spent and a new one issued in the same family.
-- A spent refresh token presented again is reuse: the family is revoked.
-- `p_scopes` may narrow the new access token, never widen it.
create function rowgate.refresh_oauth2_token(
  p_client_id text, p_client_secret_hash bytea, p_refresh_token_hash bytea, p_scopes text[],
  p_user_token_hash bytea, p_organization_token_hash bytea, p_new_refresh_token_hash bytea
) returns table (status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
  v_token rowgate_private.oauth2_refresh_tokens;
  v_family rowgate_private.oauth2_token_families;
  v_scopes text[];
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select r.* into v_token from rowgate_private.oauth2_refresh_tokens r
    join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_refresh_token_hash and f.client_id = p_client_id
    for update of r;
  if v_token.id is not null then
    select f.* into v_family from rowgate_private.oauth2_token_families f where f.id = v_token.family_id for update;
  end if;
  if v_token.id is null then
    return query select 'invalid_grant'::text, 'The refresh token is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_family.revoked_at is not null then
    return query select 'invalid_grant'::text, 'The refresh token is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.used_at is not null then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text,
      'The refresh token was used already; every token of its grant is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.expires_at <= now() then
    return query select 'invalid_grant'::text, 'The refresh token has expired'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif not rowgate_private.oauth2_grant_holds(v_family.user_id, v_family.organization_id) then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text, 'The user can no longer grant this authorization'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  v_scopes := coalesce((select array_agg(distinct s order by s) from unnest(p_scopes) s), v_family.scopes);
  if not (v_scopes <@ v_family.scopes) then
    return query select 'invalid_scope'::text, 'A refresh cannot widen the scopes of the grant'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  update rowgate_private.oauth2_refresh_tokens r set used_at = now() where r.id = v_token.id;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_new_refresh_token_hash);
end;
$$;
comment on function rowgate.refresh_oauth2_token(text, bytea, bytea, text[], bytea, bytea, bytea) is
  E'@behavior -*\nThe refresh_token grant of the token endpoint, with rotation and reuse detection.';

-- Revocation (RFC 7009) by the client the token was issued to: a refresh
-- token ends its whole family, an access token itself. An unknown token, or
-- another client's, is not an error (`ok`, nothing changes).
create function rowgate.revoke_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_token_hash bytea) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
begin
  if v_client.client_id is null then
    return 'invalid_client';
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id)
    from rowgate_private.oauth2_refresh_tokens r join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now()
    where t.token_hash = p_token_hash and t.client_id = p_client_id and t.revoked_at is null;
  return 'ok';
end;
$$;
comment on function rowgate.revoke_oauth2_token(text, bytea, bytea) is E'@behavior -*\nRFC 7009 token revocation.';

-- Introspection (RFC 7662) by the client the token was issued to (any other
-- client learns only `active: false`). An access token is active exactly when
-- authentication accepts it.
create function rowgate.introspect_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_token_hash bytea)
returns table (
  status text, active boolean, token_type text, scopes text[], user_id uuid, username text,
  organization_id uuid, expires_at timestamptz, issued_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash);
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
    return;
  end if;
  return query
    select 'ok'::text, true, 'access_token'::text, t.scopes, t.user_id, u.email, t.organization_id, t.expires_at, t.created_at
    from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
    where t.token_hash = p_token_hash and t.client_id = p_client_id
      and exists (select 1 from rowgate_private.authenticate(
        case when t.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end, p_token_hash))
    union all
    select 'ok'::text, true, 'refresh_token'::text, f.scopes, f.user_id, u.email, f.organization_id, r.expires_at, r.created_at
    from rowgate_private.oauth2_refresh_tokens r
      join rowgate_private.oauth2_token_families f on f.id = r.family_id
      join rowgate.users u on u.id = f.user_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id and r.used_at is null and f.revoked_at is null
      and r.expires_at > now() and rowgate_private.oauth2_grant_holds(f.user_id, f.organization_id);
  if not found then
    return query select 'ok'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
  end if;
end;
$$;
comment on function rowgate.introspect_oauth2_token(text, bytea, bytea) is E'@behavior -*\nRFC 7662 token introspection.';

-- The scopes an OAuth2 client may register (RFC 8414 `scopes_supported`).
create function rowgate.oauth2_scopes_supported() returns text[]
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select rowgate_private.all_scopes();
$$;
comment on function rowgate.oauth2_scopes_supported() is E'@behavior -*\nThe scopes OAuth2 clients may ask for.';

-- Authentication: an OAuth2 organization token acts for its organization only
-- while the user who granted it still may manage the organization's tokens
-- (the comment of 000002 promised it; now the query keeps it). Otherwise as before.
create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
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
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    update rowgate.organization_access_tokens t set last_used_at = now()
      from rowgate_private.access_token_hashes h
      where h.token_hash = p_token_hash and t.id = h.organization_access_token_id
        and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute');
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;

-- Who calls what: requests without a credential run as rowgate_anonymous and
-- reach only sign-in, the outbox and the token endpoints; users manage their
-- clients, consent, and sign out.
grant execute on function
  rowgate.request_login_code(text, bytea),
  rowgate.authenticate_login_code(text, bytea, bytea),
  rowgate.record_outbox_mail(text, text, text),
  rowgate.exchange_oauth2_authorization_code(text, bytea, bytea, text, text, bytea, bytea, bytea),
  rowgate.refresh_oauth2_token(text, bytea, bytea, text[], bytea, bytea, bytea),
  rowgate.revoke_oauth2_token(text, bytea, bytea),
  rowgate.introspect_oauth2_token(text, bytea, bytea),
  rowgate.oauth2_scopes_supported()
  to rowgate_anonymous;
grant execute on function
  rowgate.revoke_current_session(),
  rowgate.register_oauth2_client(text, text, text[], text[], text, bytea),
  rowgate.delete_oauth2_client(uuid),
  rowgate.check_oauth2_authorization(text, text, text[], uuid, text, text),
  rowgate.create_oauth2_authorization_code(text, text, text[], uuid, text, text, bytea)
  to rowgate_user;
