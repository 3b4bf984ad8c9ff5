--! Previous: sha1:f4c2ac03d63c72399fdf51d9cf22791ef97b027d
--! Hash: sha1:207b052cff1343af692e9983f9cc467dc72f3627
--! Message: OAuth2 client registration without a scope: every scope the server supports (issue 15, SPEC §16, RFC 7591)

--! split: 001-registration-scope-optional.sql
-- Issue 15 (SPEC §16): client registration follows RFC 7591, where `scope` is
-- optional. A client registered without one may ask for any scope the server
-- supports (its consent page shows what it asks for): it is registered with
-- every scope of rowgate_private.all_scopes() at that time, within what its
-- creator holds, as an explicit list would be. Otherwise as before.
create or replace function rowgate.register_oauth2_client(
  p_client_id text, p_client_name text, p_redirect_uris text[], p_scopes text[], p_token_endpoint_auth_method text, p_secret_hash bytea
) returns rowgate.oauth2_clients
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_scopes text[] := coalesce(p_scopes, rowgate_private.all_scopes());
  v_unknown text := rowgate_private.unknown_scope(v_scopes);
  v_client rowgate.oauth2_clients;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can register OAuth2 clients' using errcode = 'RG403';
  end if;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scope';
  end if;
  if not (v_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A client cannot register a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scope';
  end if;
  if (p_token_endpoint_auth_method = 'none') <> (p_secret_hash is null) then
    raise exception 'A confidential client has a secret, a public client none';
  end if;
  insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
    values (p_client_id, v_user_id, p_client_name, p_redirect_uris,
      (select array_agg(distinct s order by s) from unnest(v_scopes) s), p_token_endpoint_auth_method)
    returning * into v_client;
  if p_secret_hash is not null then
    insert into rowgate_private.oauth2_client_secrets (client_id, secret_hash) values (p_client_id, p_secret_hash);
  end if;
  return v_client;
end;
$$;
