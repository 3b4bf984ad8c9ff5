--! Previous: sha1:4398d83373d63ee45be361eaf6db1b99afe7ea52
--! Hash: sha1:8c264aac4b7e11fc7d0d9b4d1ddd6b4b080ddabb
--! Message: An OAuth2 client authenticates the way it registered (token_endpoint_auth_method)

--! split: 001-a-client-authenticates-the-way-it-registered.sql
-- A client registered with one way of authenticating at the token endpoint
-- (RFC 7591's token_endpoint_auth_method) could use any of them: a client
-- registered for HTTP Basic was accepted with its secret in the body, which
-- puts the secret where request bodies are kept and logged, and a client's
-- registration said nothing a server held it to. As RFC 7591 §2 and OAuth 2.1
-- (§2.4: one method, the registered one) intend, and as other authorization
-- servers do (oidc-provider refuses the mismatch), the client authenticates
-- the way it registered, or not at all: the same invalid_client as a wrong
-- secret. The server says which way a request used (src/oauth2/client-auth.ts)
-- and the database compares it with the registration, once, in
-- authenticate_oauth2_client, which the token, revocation and introspection
-- functions call.
create function rowgate_private.authenticate_oauth2_client(p_client_id text, p_secret_hash bytea, p_method text)
returns rowgate.oauth2_clients
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null or v_client.token_endpoint_auth_method is distinct from p_method then
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

-- The functions that authenticate a client take the way it authenticated
-- (their bodies are those of the migrations before this one but for that
-- argument).
drop function rowgate.exchange_oauth2_authorization_code(text,bytea,bytea,text,text,bytea,bytea,bytea);
create function rowgate.exchange_oauth2_authorization_code(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_code_hash bytea, p_redirect_uri text, p_code_challenge text, p_user_token_hash bytea, p_organization_token_hash bytea, p_refresh_token_hash bytea)
returns table(status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
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
comment on function rowgate.exchange_oauth2_authorization_code(text,bytea,text,bytea,text,text,bytea,bytea,bytea) is '@behavior -*
The authorization_code grant of the token endpoint.';
grant execute on function rowgate.exchange_oauth2_authorization_code(text,bytea,text,bytea,text,text,bytea,bytea,bytea) to rowgate_anonymous;

drop function rowgate.refresh_oauth2_token(text,bytea,bytea,text[],bytea,bytea,bytea);
create function rowgate.refresh_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_refresh_token_hash bytea, p_scopes text[], p_user_token_hash bytea, p_organization_token_hash bytea, p_new_refresh_token_hash bytea)
returns table(status text, description text, token_kind text, scopes text[], expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
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
comment on function rowgate.refresh_oauth2_token(text,bytea,text,bytea,text[],bytea,bytea,bytea) is '@behavior -*
The refresh_token grant of the token endpoint, with rotation and reuse detection.';
grant execute on function rowgate.refresh_oauth2_token(text,bytea,text,bytea,text[],bytea,bytea,bytea) to rowgate_anonymous;

drop function rowgate.revoke_oauth2_token(text,bytea,bytea);
create function rowgate.revoke_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_token_hash bytea)
returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
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
comment on function rowgate.revoke_oauth2_token(text,bytea,text,bytea) is '@behavior -*
RFC 7009 token revocation.';
grant execute on function rowgate.revoke_oauth2_token(text,bytea,text,bytea) to rowgate_anonymous;

drop function rowgate.introspect_oauth2_token(text,bytea,bytea);
create function rowgate.introspect_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_token_hash bytea)
returns table(status text, active boolean, token_type text, scopes text[], user_id uuid, username text, organization_id uuid, expires_at timestamptz, issued_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
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
comment on function rowgate.introspect_oauth2_token(text,bytea,text,bytea) is '@behavior -*
RFC 7662 token introspection.';
grant execute on function rowgate.introspect_oauth2_token(text,bytea,text,bytea) to rowgate_anonymous;

-- the two-argument check has no caller left
drop function rowgate_private.authenticate_oauth2_client(text, bytea);
