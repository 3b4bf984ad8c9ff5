-- A personal access token may name the organizations it reaches (SPEC §25, "Tokens kept to
-- some organizations"): the reach helpers every policy and function asks intersect the user's
-- organizations with the token's, so REST, GraphQL and the authorization check all answer 404
-- and leave the others out of lists. The set is fixed at creation: nothing updates it.
alter table rowgate.personal_access_tokens add column if not exists organization_ids uuid[]
  constraint personal_access_tokens_organization_ids_check check (organization_ids is null
    or (cardinality(organization_ids) between 1 and 50 and array_position(organization_ids, null) is null));
comment on column rowgate.personal_access_tokens.organization_ids is 'The only organizations the token reaches; null: every organization of its user.';
grant select (organization_ids) on rowgate.personal_access_tokens to rowgate_user;

create or replace function rowgate_hidden.current_token_organization_ids() returns uuid[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  if rowgate_hidden.current_credential_kind() is distinct from 'personal_access_token' then
    return null;
  end if;
  return (select t.organization_ids from rowgate.personal_access_tokens t
    where t.id = nullif(current_setting('rowgate.credential_id', true), '')::uuid);
end;
$$;
comment on function rowgate_hidden.current_token_organization_ids() is 'The organizations the credential of this transaction is kept to (a personal access token naming some); null: no such bound.';
grant execute on function rowgate_hidden.current_token_organization_ids() to rowgate_organization, rowgate_user;

-- Restated: a User's organizations are narrowed to those its token is kept to.
create or replace function rowgate_hidden.current_organization_ids(p_permission text default null) returns uuid[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_user_id uuid;
  v_kept uuid[];
begin
  if v_kind = 'user' then
    v_user_id := rowgate_hidden.current_user_id();
    -- only a personal access token may be kept: other credentials skip the lookup (a setting
    -- read by hand can only narrow what this returns, never widen it)
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    return array(
      select m.organization_id
      from rowgate.memberships m
      where m.user_id = v_user_id and m.deleted_at is null
        and (v_kept is null or m.organization_id = any (v_kept))
        and (select o.deleted_at is null from rowgate.organizations o where o.id = m.organization_id)
        and (p_permission is null
          or exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
          or exists (select 1 from rowgate.organization_roles r
            where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null
              and p_permission = any (r.permissions))));
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$$;

-- Restated: a token kept to some organizations holds no permission outside them.
create or replace function rowgate_hidden.current_permissions(p_organization_id uuid) returns text[]
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_kept uuid[];
begin
  if v_kind = 'organization' and p_organization_id = rowgate_hidden.current_subject_id() then
    return array(select p.name from rowgate.permissions p order by 1);
  elsif v_kind = 'user' then
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    if v_kept is not null and not p_organization_id = any (v_kept) then
      return '{}';
    end if;
    return coalesce((select rowgate_private.role_permissions(m.organization_id, m.role)
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.organization_id = p_organization_id
        and m.deleted_at is null and o.deleted_at is null), '{}');
  end if;
  return '{}';
end;
$$;

-- Replaced (a new parameter): the organizations a new token is kept to. Each must be one the
-- user reaches now (the same 422 for an unknown id), and the token lives no longer than the
-- shortest `max_token_lifetime_days` among them.
drop function if exists rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[]);
create or replace function rowgate.create_personal_access_token(p_comment text, p_scopes text[], p_expires_at timestamptz,
    p_token_hash bytea, p_allowed_ips text[] default null, p_organization_ids uuid[] default null)
  returns rowgate.personal_access_tokens
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_reached uuid[];
  v_kept uuid[];
  v_max_days integer;
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if p_organization_ids is not null then
    if cardinality(p_organization_ids) not between 1 and 50 then
      raise exception 'From 1 to 50 organizations, or null for all' using errcode = 'RG422', detail = 'body.organization_ids';
    end if;
    v_reached := rowgate_hidden.current_organization_ids();
    for i in 1 .. cardinality(p_organization_ids) loop
      if p_organization_ids[i] is null or not p_organization_ids[i] = any (v_reached) then
        raise exception 'Not an organization you belong to' using errcode = 'RG422',
          detail = 'body.organization_ids.' || (i - 1);
      end if;
    end loop;
    v_kept := array(select k.id from unnest(p_organization_ids) with ordinality k(id, n) group by k.id order by min(k.n));
    select min(o.max_token_lifetime_days) into v_max_days from rowgate.organizations o where o.id = any (v_kept);
    if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
      raise exception 'Tokens of these organizations live at most % days: expires_in is required, at most % seconds',
        v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
    end if;
  end if;
  v_token := rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash,
    rowgate_private.allowed_ips(p_allowed_ips));
  if v_kept is not null then
    update rowgate.personal_access_tokens set organization_ids = v_kept where id = v_token.id returning * into v_token;
  end if;
  return v_token;
end;
$$;
comment on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[], uuid[]) is '@behavior -*';
grant execute on function rowgate.create_personal_access_token(text, text[], timestamptz, bytea, text[], uuid[]) to rowgate_user;

-- Restated: a token kept to some organizations does not make another.
create or replace function rowgate.create_organization(p_name text, p_slug text) returns rowgate.organizations
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create organizations' using errcode = 'RG403';
  end if;
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot create organizations' using errcode = 'RG403';
  end if;
  insert into rowgate.organizations (name, slug) values (p_name, p_slug) returning * into v_organization;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, v_organization.id, 'admin');
  return v_organization;
end;
$$;

-- Restated: a token kept to some organizations cannot delete its user (the user reaches more than it).
create or replace function rowgate.delete_current_user()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_orphaned text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot delete its user' using errcode = 'RG403';
  end if;
  -- the credentials before the memberships: a request made with one of this user's tokens
  -- holds the token's row (its last use, recorded as it authenticates) before it changes a
  -- membership, and this keeps that order
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  perform rowgate.delete_oauth2_client(c.id) from rowgate.oauth2_clients c where c.user_id = v_user_id and c.deleted_at is null;
  perform rowgate_private.lock_user_memberships(v_user_id);
  select string_agg(format('%s (%s)', o.name, o.id), ', ' order by o.name, o.id) into v_orphaned
    from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.user_id = v_user_id and m.role = 'admin' and m.deleted_at is null and o.deleted_at is null
      and not exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.role = 'admin' and a.deleted_at is null and a.id <> m.id)
      and exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.deleted_at is null and a.id <> m.id);
  if v_orphaned is not null then
    raise exception 'You are the last admin of organizations that have other members: %. Make another member admin, or delete those organizations, first', v_orphaned
      using errcode = 'RG422', detail = 'path';
  end if;
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  return found;
end;
$function$;
