--! Previous: sha1:1c56410d59de43296975c2903b262e46ee38fd4a
--! Hash: sha1:b1877cb5cd122b45201568ed9c8490a8b6e26311
--! Message: Events are written without a time zone or foreign keys to set

--! split: 001-lighter-event-writes.sql
-- Writing an event is most of what a subscribed write costs beyond the write
-- itself, so the events' path does only what their rules need. A time zone set
-- on the trigger function is set and reset at every row; the event data needs
-- UTC only where it renders timestamps, so the trigger renders the row in UTC
-- itself, through a function that sets the time zone only when the session's is
-- another. Deliveries are written only by the queueing trigger, from the
-- endpoints it reads in the same statement, and endpoints are never deleted, so
-- their foreign key re-reads what the statement just read; likewise an event's
-- client row names the user who authenticated the request.

create or replace function rowgate_private.json_in_utc(p_row anyelement)
  returns jsonb
  language sql
  stable
  set "TimeZone" to 'UTC'
as $$
  select to_jsonb(p_row);
$$;
comment on function rowgate_private.json_in_utc(anyelement) is 'A row as JSON with its timestamps in UTC, whatever the session''s time zone.';

create or replace function rowgate_private.tg__events()
  returns trigger
  language plpgsql
  volatile
  security definer
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_resource text := tg_argv[0];
  v_columns text[] := string_to_array(tg_argv[2], ',');
  v_status_column text := case when tg_nargs > 3 then tg_argv[3] end;
  -- the data as REST renders it: timestamps in UTC, which the session's time zone usually is already
  v_utc boolean := current_setting('TimeZone') in ('UTC', 'Etc/UTC');
  v_row jsonb := case when v_utc then to_jsonb(case when tg_op = 'DELETE' then old else new end)
    else rowgate_private.json_in_utc(case when tg_op = 'DELETE' then old else new end) end;
  v_old jsonb := case when tg_op <> 'UPDATE' then null when v_utc then to_jsonb(old) else rowgate_private.json_in_utc(old) end;
  v_data jsonb;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
begin
  select jsonb_object_agg(key, value) into v_data from jsonb_each(v_row) where key = any (v_columns);
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
  elsif (v_data - '{updated_at,last_used_at}'::text[])
      = (select coalesce(jsonb_object_agg(key, value), '{}') from jsonb_each(v_old) where key = any (v_columns) and key not in ('updated_at', 'last_used_at')) then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old) o
      where o.key = any (v_columns) and o.key not in ('updated_at', 'last_used_at')
        and o.value is distinct from v_row->o.key;
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
      cross join (select rowgate_hidden.current_actor() as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, rowgate_hidden.current_user_id(), left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$$;

alter table rowgate_private.webhook_deliveries drop constraint if exists webhook_deliveries_organization_id_endpoint_id_fkey;
alter table rowgate.event_clients drop constraint if exists event_clients_user_id_fkey;
