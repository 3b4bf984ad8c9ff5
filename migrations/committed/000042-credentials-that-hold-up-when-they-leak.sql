--! Previous: sha1:795a032ba2b2a781ead3d7576a889ab8f2962d82
--! Hash: sha1:cb868c3897229f9b6db5854e7983ebe634d3795f
--! Message: Credentials that hold up when they leak

--! split: 001-an-organization-caps-the-lifetime-of-its-tokens.sql
-- Why: an organization access token pasted somewhere public works until it
-- expires, and one made without an expiry works for ever. An organization may
-- cap how long its tokens live (SPEC §22: 1..3650 days, set by whoever may
-- manage the organization); creating an organization token checks the cap
-- (next part). The column joins the organization's read grants (analysts'
-- too, so that `select *` still works for them), its update grant (the
-- update_manage policy decides who) and its events' data, which is the read
-- schema REST renders.
alter table rowgate.organizations add column if not exists max_token_lifetime_days integer
  constraint organizations_max_token_lifetime_days_check check (max_token_lifetime_days between 1 and 3650);

grant select (max_token_lifetime_days) on rowgate.organizations to rowgate_organization, rowgate_user, rowgate_analyst;
grant update (max_token_lifetime_days) on rowgate.organizations to rowgate_organization, rowgate_user;

-- Token matters stay out of GraphQL (the token tables are REST only): the
-- smart tag hides the column there; REST reads and sets it.
comment on column rowgate.organizations.max_token_lifetime_days is '@behavior -*
The longest an organization access token of this organization may live, in days; null: no cap (REST only).';

drop trigger if exists _400_events on rowgate.organizations;
create trigger _400_events after insert or update on rowgate.organizations
  for each row execute function rowgate_private.tg__events('organization', 'members',
    'id,name,slug,account_id,max_token_lifetime_days,created_at,updated_at');

--! split: 002-a-token-may-be-bound-to-client-addresses.sql
-- Why: a leaked personal or organization access token works from anywhere. A
-- token may name the networks it is used from (SPEC §22: `allowed_ips`, at most
-- 20 CIDRs; null for any address); the authentication refuses it from any
-- other (part 003). The list is stored as cidr[]; the API hands over the text
-- its client sent and rowgate_private.allowed_ips reads it, so a bad entry is a
-- 422 at its own place in the body.
alter table rowgate.personal_access_tokens add column if not exists allowed_ips cidr[]
  constraint personal_access_tokens_allowed_ips_check
    check (allowed_ips is null or (cardinality(allowed_ips) between 1 and 20 and array_position(allowed_ips, null) is null));
alter table rowgate.organization_access_tokens add column if not exists allowed_ips cidr[]
  constraint organization_access_tokens_allowed_ips_check
    check (allowed_ips is null or (cardinality(allowed_ips) between 1 and 20 and array_position(allowed_ips, null) is null));

grant select (allowed_ips) on rowgate.personal_access_tokens to rowgate_user;
grant select (allowed_ips) on rowgate.organization_access_tokens to rowgate_user, rowgate_analyst;

comment on column rowgate.personal_access_tokens.allowed_ips is
  'The networks the token may be used from; null: any client address.';
comment on column rowgate.organization_access_tokens.allowed_ips is
  'The networks the token may be used from; null: any client address.';

-- an organization token's events carry its read schema, allow-list included
drop trigger if exists _400_events on rowgate.organization_access_tokens;
create trigger _400_events after insert or update on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__events('organization_access_token', 'access_tokens',
    'id,organization_id,comment,scopes,expires_at,last_used_at,allowed_ips,created_at,updated_at');

-- A client's allow-list as the API received it: null stays null (any address);
-- otherwise 1 to 20 addresses or CIDRs, each refused at its own place
-- (body.allowed_ips.<index>) when PostgreSQL cannot read it as a network (host
-- bits set right of the mask included), and every duplicate dropped.
create or replace function rowgate_private.allowed_ips(p_entries text[])
returns cidr[]
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_networks cidr[] := '{}';
  v_network cidr;
begin
  if p_entries is null then
    return null;
  end if;
  if cardinality(p_entries) not between 1 and 20 then
    raise exception 'From 1 to 20 addresses or CIDRs (null: any address)' using errcode = 'RG422', detail = 'body.allowed_ips';
  end if;
  for i in 1 .. cardinality(p_entries) loop
    begin
      v_network := p_entries[i]::cidr;
    exception when invalid_text_representation or invalid_parameter_value then
      v_network := null;
    end;
    if v_network is null then
      raise exception 'Not an IP address or CIDR (host bits right of the mask must be zero): %', left(coalesce(p_entries[i], 'null'), 64)
        using errcode = 'RG422', detail = 'body.allowed_ips.' || (i - 1);
    end if;
    if not v_network = any (v_networks) then
      v_networks := v_networks || v_network;
    end if;
  end loop;
  return v_networks;
end;
$$;

-- The functions that create tokens take the allow-list as their last
-- argument (default null: any address); their signatures change, so the old
-- ones go. The organization token's also checks its organization's cap on
-- token lifetimes (part 001): without an expiry, or past the cap, it is a 422
-- at body.expires_in.
drop function if exists rowgate.create_personal_access_token(text, text[], timestamptz, bytea);
drop function if exists rowgate_private.issue_personal_access_token(uuid, text, text[], timestamptz, bytea);
drop function if exists rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea);

create or replace function rowgate_private.issue_personal_access_token(p_user_id uuid, p_comment text, p_scopes text[],
  p_expires_at timestamptz, p_token_hash bytea, p_allowed_ips cidr[] default null)
returns rowgate.personal_access_tokens
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_private.assert_known_scopes(p_scopes);
  insert into rowgate.personal_access_tokens (user_id, comment, scopes, expires_at, allowed_ips)
    values (p_user_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at, p_allowed_ips)
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id)
    values (p_token_hash, v_token.id);
  return v_token;
end;
$$;

create or replace function rowgate.create_personal_access_token(p_comment text, p_scopes text[], p_expires_at timestamptz,
  p_token_hash bytea, p_allowed_ips text[] default null)
returns rowgate.personal_access_tokens
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  return rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash,
    rowgate_private.allowed_ips(p_allowed_ips));
end;
$$;
comment on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[]) is '@behavior -*';
grant execute on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[]) to rowgate_user;

create or replace function rowgate.create_organization_access_token(p_organization_id uuid, p_comment text, p_scopes text[],
  p_expires_at timestamptz, p_token_hash bytea, p_allowed_ips text[] default null)
returns rowgate.organization_access_tokens
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
  v_max_days integer;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if exists (select 1 from unnest(p_scopes) s where s in ('user:read', 'user:write', 'payouts:read', 'payouts:write')) then
    raise exception 'Organization tokens carry organization scopes only' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  select o.max_token_lifetime_days into v_max_days from rowgate.organizations o where o.id = p_organization_id;
  if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
    raise exception 'The organization''s tokens live at most % days: expires_in is required, at most % seconds',
      v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
  end if;
  insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at, created_by, allowed_ips)
    values (p_organization_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at,
      rowgate_hidden.current_user_id(), rowgate_private.allowed_ips(p_allowed_ips))
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (p_token_hash, v_token.id);
  return v_token;
end;
$$;
comment on function rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea, text[]) is '@behavior -*';
grant execute on function rowgate.create_organization_access_token(uuid, text, text[], timestamptz, bytea, text[]) to rowgate_user;

--! split: 003-the-authentication-checks-where-a-token-is-used-from.sql
-- Why: a token bound to client addresses (part 002) must be refused from any
-- other, by the database, so REST and GraphQL refuse it alike. The
-- authentication takes the client's address (SPEC §14: after the trusted
-- proxies, the full address) as a third argument, which only the API can give:
-- rowgate_authenticator alone may call the function. A live personal or
-- organization access token used from outside its networks raises RG401 (the
-- API's 401 invalid_token, with a detail that says why) before its use is
-- recorded, so its last_used_at does not move; an unknown, expired or revoked
-- token still authenticates nobody, as before, wherever it comes from. Without
-- an address (null) no allow-list admits the token. The rest is unchanged.
drop function if exists rowgate_private.authenticate(text, bytea);

create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea, p_client_address inet default null)
returns table (credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean, expires_at timestamptz)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id uuid;
  v_subject_id uuid;
  v_scopes text[];
  v_expires_at timestamptz;
  v_allowed_ips cidr[];
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
    select t.id, t.user_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'user'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at;
  elsif p_kind = 'organization_access_token' then
    select t.id, t.organization_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'organization'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at;
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
grant execute on function rowgate_private.authenticate(text, bytea, inet) to rowgate_authenticator;

-- The refusal itself: nothing when the token allows any address, RG401 when
-- the client's address is in none of its networks (or unknown).
create or replace function rowgate_private.assert_client_allowed(p_allowed_ips cidr[], p_client_address inet)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_allowed_ips is not null and not coalesce(p_client_address <<= any (p_allowed_ips), false) then
    raise exception 'The token may not be used from this client address (%): it is bound to other networks',
      coalesce(host(p_client_address), 'unknown') using errcode = 'RG401';
  end if;
end;
$$;

--! split: 004-a-reported-token-is-revoked.sql
-- Why: whoever finds a leaked token (a secret scanner, a stranger reading a CI
-- log) must be able to have it revoked at once, without an account and without
-- learning anything about it (SPEC §22: POST /v1/credentials/revoke). Presenting
-- a token is the right to revoke it, so the anonymous role may call this with
-- the keyed hashes of the tokens it was sent, each with the kind its prefix
-- names. Every live token among them is revoked in this one transaction, on
-- the primary, so every instance refuses it on its next request. Each row
-- returned is one revoked token and the user to tell (the creator: a personal
-- token's and an OAuth2 grant's user, an organization token's creator, a web
-- session's user or, for an impersonation, its administrator); no row names
-- anybody when nobody is to be told. An organization token's revocation is the
-- `organization_access_token.deleted` event of its organization (its events
-- trigger writes it; the actor is `system`). A refresh token revokes its whole
-- grant, as reusing one does.
create or replace function rowgate.revoke_reported_tokens(p_kinds text[], p_token_hashes bytea[])
returns table (token_kind text, token_id uuid, recipient text, label text)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
  if cardinality(p_kinds) is distinct from cardinality(p_token_hashes) or cardinality(p_kinds) > 100 then
    raise exception 'From 1 to 100 tokens, each with its kind' using errcode = 'RG422', detail = 'body.tokens';
  end if;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate.personal_access_tokens t set deleted_at = now()
        from rowgate_private.access_token_hashes h, reported r
        where r.kind = 'personal_access_token' and h.token_hash = r.token_hash and t.id = h.personal_access_token_id
          and t.deleted_at is null and (t.expires_at is null or t.expires_at > now())
        returning t.id, t.user_id, t.comment
    )
    select 'personal_access_token'::text, v.id, u.email, format('personal access token "%s"', v.comment)
      from revoked v join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate.organization_access_tokens t set deleted_at = now()
        from rowgate_private.access_token_hashes h, reported r
        where r.kind = 'organization_access_token' and h.token_hash = r.token_hash and t.id = h.organization_access_token_id
          and t.deleted_at is null and (t.expires_at is null or t.expires_at > now())
        returning t.id, t.organization_id, t.created_by, t.comment
    )
    select 'organization_access_token'::text, v.id, u.email,
        format('organization access token "%s" of the organization "%s"', v.comment, o.name)
      from revoked v
        join rowgate.organizations o on o.id = v.organization_id
        left join rowgate.users u on u.id = v.created_by and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate_private.oauth2_access_tokens t set revoked_at = now()
        from reported r
        where r.kind = case when t.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end
          and t.token_hash = r.token_hash and t.revoked_at is null and t.expires_at > now()
        returning t.id, t.user_id, t.client_id, r.kind
    )
    select v.kind, v.id, u.email,
        format('OAuth2 access token granted to the application "%s"', coalesce(c.client_name, v.client_id))
      from revoked v
        left join rowgate.oauth2_clients c on c.client_id = v.client_id
        join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash) where r.kind = 'oauth2_refresh_token'
    ), families as (
      select distinct f.id, f.user_id, f.client_id
        from reported r
          join rowgate_private.oauth2_refresh_tokens t on t.token_hash = r.token_hash
          join rowgate_private.oauth2_token_families f on f.id = t.family_id
        where t.used_at is null and t.expires_at > now() and f.revoked_at is null
    ), revoked as materialized (
      select f.*, rowgate_private.revoke_oauth2_family(f.id) from families f
    )
    select 'oauth2_refresh_token'::text, v.id, u.email,
        format('OAuth2 refresh token granted to the application "%s"', coalesce(c.client_name, v.client_id))
      from revoked v
        left join rowgate.oauth2_clients c on c.client_id = v.client_id
        join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate_private.sessions s set revoked_at = now()
        from reported r
        where r.kind = case s.kind when 'user' then 'web_session' when 'customer' then 'customer_session' else 'member_session' end
          and s.token_hash = r.token_hash and s.revoked_at is null and s.expires_at > now()
        returning s.id, r.kind, coalesce(s.impersonator_id, s.user_id) as user_id
    )
    select v.kind, v.id, u.email, case when v.kind = 'web_session' then 'web session (a signed-in browser)' end
      from revoked v left join rowgate.users u on u.id = v.user_id and u.deleted_at is null;
end;
$$;
comment on function rowgate.revoke_reported_tokens(text[], bytea[]) is '@behavior -*
Revokes the live tokens among those reported (POST /v1/credentials/revoke); presenting a token is the right to revoke it.';
grant execute on function rowgate.revoke_reported_tokens(text[], bytea[]) to rowgate_anonymous;
