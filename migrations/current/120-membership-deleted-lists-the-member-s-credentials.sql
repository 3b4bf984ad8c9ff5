-- What a member made in an organization that outlives its membership (SPEC §21):
-- the membership.deleted event lists it so a manager can revoke it. The
-- organization access tokens the user minted there that still authenticate, and
-- its organization OAuth2 grants there that still hold a live access or refresh
-- token (those stop authenticating without the user's access_tokens:manage, but
-- start again if it comes back). Ids only: membership events reach every member,
-- while the tokens themselves are read by holders of access_tokens:manage.
-- Another kind of organization credential a user makes (SQL logins, SPEC §24)
-- is one more key of this object, read from its own table.
create function rowgate_private.member_credentials(p_organization_id uuid, p_user_id uuid) returns jsonb
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select jsonb_build_object(
    'organization_access_tokens', coalesce((
      select jsonb_agg(jsonb_build_object('id', t.id) order by t.created_at, t.id)
      from rowgate.organization_access_tokens t
      where t.organization_id = p_organization_id and t.created_by = p_user_id and t.deleted_at is null
        and (t.expires_at is null or t.expires_at > now())), '[]'),
    'oauth2_grants', coalesce((
      select jsonb_agg(jsonb_build_object('client_id', f.client_id, 'client_name', c.client_name, 'scopes', to_jsonb(f.scopes))
          order by f.created_at, f.id)
      from rowgate_private.oauth2_token_families f join rowgate.oauth2_clients c on c.client_id = f.client_id
      where f.organization_id = p_organization_id and f.user_id = p_user_id and f.revoked_at is null
        and (exists (select from rowgate_private.oauth2_refresh_tokens r
              where r.family_id = f.id and r.used_at is null and r.expires_at > now())
          or exists (select from rowgate_private.oauth2_access_tokens a
              where a.family_id = f.id and a.revoked_at is null and a.expires_at > now()))), '[]'));
$$;
comment on function rowgate_private.member_credentials(uuid, uuid) is
'The live organization credentials a user made in an organization (SPEC §21), as membership.deleted lists them.';

-- Restated from 000056 for one change: a membership.deleted event's data names
-- the credentials the member made in the organization (member_credentials).
create or replace function rowgate_private.tg__events() returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $function$
declare
  v_resource text := tg_argv[0];
  v_hidden text[] := string_to_array(tg_argv[3], ',');
  v_status_column text := case when tg_nargs > 4 then tg_argv[4] end;
  -- the data as REST renders it: timestamps in UTC, which the session's time zone usually is already
  v_utc boolean := current_setting('TimeZone') in ('UTC', 'Etc/UTC');
  v_row jsonb := case when v_utc then to_jsonb(case when tg_op = 'DELETE' then old else new end)
    else rowgate_private.json_in_utc(case when tg_op = 'DELETE' then old else new end) end;
  v_old jsonb := case when tg_op <> 'UPDATE' then null when v_utc then to_jsonb(old) else rowgate_private.json_in_utc(old) end;
  v_data jsonb := v_row - v_hidden;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
  -- read into variables: inlined into the statement below, their expressions are planned with it
  v_actor jsonb := rowgate_hidden.current_actor();
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif v_status_column is not null and v_row->v_status_column is distinct from v_old->v_status_column then
    v_types := array[v_resource || '.' || (v_row->>v_status_column)];
  elsif v_data - '{updated_at,last_used_at}'::text[] = (v_old - v_hidden) - '{updated_at,last_used_at}'::text[] then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old - v_hidden) o
      where o.key not in ('updated_at', 'last_used_at') and o.value is distinct from v_row->o.key;
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
    if v_types[1] = 'membership.deleted' then
      v_data := v_data || jsonb_build_object('credentials',
        rowgate_private.member_credentials((v_row->>'organization_id')::uuid, v_resource_id));
    end if;
  elsif v_resource = 'role' then
    v_data := v_data || jsonb_build_object('built_in', false);
  elsif v_resource = 'invitation' then
    select v_data || jsonb_build_object('organization_name', o.name, 'inviter_name', u.name) into v_data
      from rowgate.organizations o left join rowgate.users u on u.id = (v_row->>'invited_by')::uuid
      where o.id = (v_row->>'organization_id')::uuid;
  end if;
  if session_user = 'rowgate_authenticator' then
    v_ip := nullif(current_setting('rowgate.client_address', true), '');
    v_user_agent := left(nullif(current_setting('rowgate.user_agent', true), ''), 256);
  end if;
  with inserted as (
    insert into rowgate.events (organization_id, type, resource_id, data, previous, actor, request_id, audience)
    select coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), t.type, v_resource_id, v_data,
      case when t.type = v_resource || '.updated' then v_previous end,
      actor.value, nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]
    from unnest(v_types) with ordinality as t(type, n)
      cross join (select v_actor as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, v_user_id, left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$function$;
