-- Webhook secrets are rolled without breaking the receiver (SPEC §25, "Webhook secret
-- rotation"): an endpoint holds its current secret and at most one previous one, live until
-- its expiry, and every attempt is signed with the secrets live when it is sent (Standard
-- Webhooks' space-separated signatures). The read schema shows when the secret last changed,
-- so a rotation is a `webhook_endpoint.updated` event. An endpoint its failures disable leaves
-- one notice, which the sender turns into a mail to the organization's managers.
alter table rowgate_private.webhook_secrets add column if not exists previous_sealed_secret bytea;
alter table rowgate_private.webhook_secrets add column if not exists previous_expires_at timestamptz;
comment on column rowgate_private.webhook_secrets.previous_sealed_secret is 'The secret a rotation replaced, still signing until previous_expires_at.';

alter table rowgate.webhook_endpoints add column if not exists secret_rotated_at timestamptz;
comment on column rowgate.webhook_endpoints.secret_rotated_at is 'When the signing secret was last rotated; null: never.';
grant select (secret_rotated_at) on rowgate.webhook_endpoints to rowgate_analyst, rowgate_organization, rowgate_user;

drop trigger if exists _400_events on rowgate.webhook_endpoints;
create trigger _400_events after insert or update on rowgate.webhook_endpoints for each row
  execute function rowgate_private.tg__events('webhook_endpoint', 'organization_managers',
    'id,organization_id,url,event_types,description,enabled,secret_rotated_at,created_at,updated_at', 'consecutive_failures,deleted_at');

-- Rotates an endpoint's secret: the new one (sealed by the server) signs from now on, the
-- current one keeps signing for p_expire_previous_in seconds, and any older one ends now.
create or replace function rowgate.rotate_webhook_secret(p_id uuid, p_sealed_secret bytea, p_expire_previous_in integer)
  returns rowgate.webhook_endpoints
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid := rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  v_endpoint rowgate.webhook_endpoints;
begin
  if p_expire_previous_in is null or p_expire_previous_in not between 0 and 604800 then
    raise exception 'From 0 to 604800 seconds' using errcode = 'RG422', detail = 'body.expire_previous_in';
  end if;
  update rowgate_private.webhook_secrets s
    set previous_sealed_secret = s.sealed_secret,
      previous_expires_at = now() + make_interval(secs => p_expire_previous_in),
      sealed_secret = p_sealed_secret
    where s.organization_id = v_organization_id and s.endpoint_id = p_id;
  update rowgate.webhook_endpoints e set secret_rotated_at = now()
    where e.organization_id = v_organization_id and e.id = p_id
    returning * into v_endpoint;
  return v_endpoint;
end;
$$;
comment on function rowgate.rotate_webhook_secret(uuid, bytea, integer) is '@behavior -*';
grant execute on function rowgate.rotate_webhook_secret(uuid, bytea, integer) to rowgate_organization, rowgate_user;

-- The previous secret of an endpoint while it is live (null otherwise), read by the sender as
-- it claims an attempt.
create or replace function rowgate_private.webhook_previous_secret(p_organization_id uuid, p_endpoint_id uuid)
  returns table (sealed_secret bytea, expires_at timestamptz)
  language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select s.previous_sealed_secret, s.previous_expires_at from rowgate_private.webhook_secrets s
  where s.organization_id = p_organization_id and s.endpoint_id = p_endpoint_id
    and s.previous_sealed_secret is not null and s.previous_expires_at > now();
$$;
grant execute on function rowgate_private.webhook_previous_secret(uuid, uuid) to rowgate_authenticator;

create table if not exists rowgate_private.webhook_disabled_notices (
  id uuid default gen_random_uuid() not null primary key,
  organization_id uuid not null,
  endpoint_id uuid not null,
  created_at timestamptz default now() not null,
  taken_at timestamptz,
  foreign key (organization_id, endpoint_id) references rowgate.webhook_endpoints (organization_id, id)
);
comment on table rowgate_private.webhook_disabled_notices is 'An endpoint its failures disabled, until the sender has recorded the mail to its organization''s managers.';
create index if not exists webhook_disabled_notices_pending on rowgate_private.webhook_disabled_notices (created_at) where taken_at is null;
create index if not exists webhook_disabled_notices_endpoint on rowgate_private.webhook_disabled_notices (organization_id, endpoint_id);

create or replace function rowgate_private.tg_webhook_endpoints__disabled_notice() returns trigger
  language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  -- disabled by its failures, not by a manager's PATCH
  if old.enabled and not new.enabled and new.consecutive_failures >= 10 and new.deleted_at is null then
    insert into rowgate_private.webhook_disabled_notices (organization_id, endpoint_id) values (new.organization_id, new.id);
  end if;
  return null;
end;
$$;
drop trigger if exists _600_disabled_notice on rowgate.webhook_endpoints;
create trigger _600_disabled_notice after update of enabled on rowgate.webhook_endpoints for each row
  execute function rowgate_private.tg_webhook_endpoints__disabled_notice();

-- Takes the pending notices (each once, whichever sender asks): one row per manager to mail.
create or replace function rowgate_private.take_webhook_disabled_notices(p_limit integer default 20)
  returns table (notice_id uuid, organization_id uuid, organization_name text, endpoint_id uuid, url text, email text)
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_notice rowgate_private.webhook_disabled_notices;
begin
  for v_notice in
    select n.* from rowgate_private.webhook_disabled_notices n
    where n.taken_at is null order by n.created_at limit p_limit
    for update skip locked
  loop
    update rowgate_private.webhook_disabled_notices n set taken_at = now() where n.id = v_notice.id;
    return query
      select v_notice.id, o.id, o.name, e.id, e.url, u.email
      from rowgate.webhook_endpoints e
        join rowgate.organizations o on o.id = e.organization_id
        join rowgate.memberships m on m.organization_id = o.id and m.deleted_at is null
        join rowgate.users u on u.id = m.user_id and u.deleted_at is null
      where e.organization_id = v_notice.organization_id and e.id = v_notice.endpoint_id and o.deleted_at is null
        and 'organization:manage' = any (rowgate_private.role_permissions(o.id, m.role))
      order by u.email;
  end loop;
end;
$$;
grant execute on function rowgate_private.take_webhook_disabled_notices(integer) to rowgate_authenticator;
