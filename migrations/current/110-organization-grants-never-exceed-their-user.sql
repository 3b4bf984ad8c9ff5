-- Restated from its last definition so an organization grant (sub_type=organization)
-- offers only the scopes its user could use itself (SPEC §21, the rule of
-- rowgate_private.token_scope_denials): a scope the user may not grant is left out
-- of the grant, which the consent page shows and the token answer's `scope`
-- names (RFC 6749 §3.3: the server may issue fewer scopes than asked for); a
-- request left with none is invalid_scope naming what is missing. For an `ok`
-- answer, description says what was left out (null: nothing).
create or replace function rowgate.check_oauth2_authorization(p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid, p_code_challenge text, p_code_challenge_method text)
returns table(status text, description text, client_name text, scopes text[], organization_name text)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients;
  v_scopes text[];
  v_unknown text;
  v_denial text;
  v_organization_name text;
  v_withheld text[];
  v_first_denial text;
  v_note text;
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
    select array_agg(d.scope order by d.n), (array_agg(d.message order by d.n))[1] into v_withheld, v_first_denial
      from rowgate_private.token_scope_denials(p_organization_id, v_scopes, 'oauth2_organization_token') d;
    if v_withheld is not null then
      v_scopes := array(select s from unnest(v_scopes) s where not (s = any (v_withheld)) order by s);
      if cardinality(v_scopes) = 0 then
        return query select 'invalid_scope'::text, v_first_denial, v_client.client_name, null::text[], null::text;
        return;
      end if;
      v_note := format('%s of the requested scopes %s left out: your role in this organization does not let you use %s yourself',
        cardinality(v_withheld), case when cardinality(v_withheld) = 1 then 'is' else 'are' end,
        case when cardinality(v_withheld) = 1 then 'it' else 'them' end);
    end if;
  end if;
  return query select 'ok'::text, v_note, v_client.client_name, v_scopes, v_organization_name;
end;
$function$;
