--! Previous: sha1:9f93546e64e7e92930b34deabfb628b779fb5a58
--! Hash: sha1:efebdcd9c59e9b5f770f637076d30b481d2c41f0
--! Message: Recorded denials kept after the rollback; rowgate.check for analysts

--! split: 001-denials.sql
-- Recorded denials (SPEC §20): every 403 answer on an organization's data is kept as one
-- row, so that an organization's admin can see a token failing for a week. The request's
-- own transaction rolls back; the API writes the row afterwards, in a transaction of its
-- own, through rowgate_private.record_denial(). Only users with `organization:manage`
-- (scope `organizations_read`) and their analysts read them; no interface writes them.
-- `count` is 1 for a denial; the hour's one overflow row of a credential in an organization
-- (past 1,000 rows) counts the denials it stands for, with no operation, step, error or reason.
create table rowgate.denials (
  id uuid not null default gen_random_uuid(),
  organization_id uuid not null references rowgate.organizations,
  request_id text,
  operation text,
  credential_kind text not null,
  credential_id uuid,
  user_id uuid,
  step text check (step in ('scope', 'resource', 'organization', 'policy')),
  error text,
  reason text,
  count integer not null default 1 check (count >= 1),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id)
);
comment on table rowgate.denials is '@behavior -*
The 403 answers on an organization''s data (SPEC §20), kept although the request rolled back; at most 1,000 rows per credential, organization and hour, then one row counting the rest.';
comment on column rowgate.denials.count is '1 for a denial; on the hour''s overflow row of a credential (operation null), how many denials past 1,000 it stands for.';
create index denials_organization_created on rowgate.denials (organization_id, created_at, id);
create index denials_organization_user on rowgate.denials (organization_id, user_id, created_at, id);
create index denials_created on rowgate.denials (created_at);
alter table rowgate.denials enable row level security;
grant select (id, organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason, count,
  created_at, updated_at) on rowgate.denials to rowgate_user, rowgate_analyst;
create policy select_manage on rowgate.denials for select to rowgate_user, rowgate_analyst
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and (select rowgate_hidden.has_scope('organizations_read')));
create trigger _100_timestamps before insert or update on rowgate.denials
  for each row execute function rowgate_private.tg__timestamps();

-- How many denials each credential has had recorded in an organization this hour (the
-- cap of SPEC §20), and the hour's overflow row once past it. One row a credential,
-- organization and hour, locked by each recording, so the cap holds under concurrency.
create table rowgate_private.denial_counts (
  organization_id uuid not null,
  credential_id uuid not null,
  hour timestamptz not null,
  recorded integer not null default 0,
  overflow_id uuid,
  primary key (organization_id, credential_id, hour)
);
comment on table rowgate_private.denial_counts is 'Denials recorded per credential, organization and hour (SPEC §20: at most 1,000, then one overflow row).';
create index denial_counts_hour on rowgate_private.denial_counts (hour);

--! split: 002-record-denial.sql
-- Recording a denial (SPEC §20), after the request's transaction rolled back: the API calls
-- this on its pool, as rowgate_authenticator, with the request's subject settings as
-- parameters; they are set for this call only (the subject helpers trust them under the
-- authenticator), and restored before returning. The organization is the one the request
-- resolved (`p_organization_id`), else the one rowgate_hidden.check_operation() resolves
-- for the operation, its path parameters and the organization it named; a row is kept only
-- when the subject reaches that organization, so a refusal before the resource resolves
-- leaves no row in someone else's log. At most 1,000 rows per credential, organization and
-- hour; past that, the hour's one overflow row counts the rest. Returns whether it kept
-- anything. Only the authenticator (the API) may call it.
create function rowgate_private.record_denial(
  p_subject_kind text, p_subject_id uuid, p_credential_kind text, p_credential_id uuid, p_scopes text, p_request_id text,
  p_operation text, p_params jsonb, p_organization_id uuid, p_named_organization_id uuid,
  p_step text, p_error text, p_reason text
) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_organization_id uuid := p_organization_id;
  v_reached boolean;
  v_credential_id uuid := coalesce(p_credential_id, p_subject_id);
  v_recorded integer;
  v_overflow_id uuid;
begin
  if p_subject_kind is null or p_subject_id is null or p_credential_kind is null then
    return false;
  end if;
  perform set_config('rowgate.subject_kind', p_subject_kind, true), set_config('rowgate.subject_id', p_subject_id::text, true),
    set_config('rowgate.credential_kind', p_credential_kind, true), set_config('rowgate.scopes', coalesce(p_scopes, ''), true);
  if v_organization_id is null and p_operation is not null then
    begin
      v_organization_id := (rowgate_hidden.check_operation(p_operation, coalesce(p_params, '{}'), p_named_organization_id)
        ->> 'organization_id')::uuid;
    exception when others then
      v_organization_id := null;
    end;
  end if;
  v_reached := v_organization_id is not null and v_organization_id = any (rowgate_hidden.current_organization_ids());
  perform rowgate_hidden.restore_subject(v_saved);
  if not v_reached then
    return false;
  end if;

  insert into rowgate_private.denial_counts as c (organization_id, credential_id, hour, recorded)
    values (v_organization_id, v_credential_id, date_trunc('hour', now()), 1)
    on conflict (organization_id, credential_id, hour) do update set recorded = c.recorded + 1
    returning c.recorded, c.overflow_id into v_recorded, v_overflow_id;
  if v_recorded <= 1000 then
    insert into rowgate.denials (organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason)
      values (v_organization_id, nullif(p_request_id, ''), p_operation, p_credential_kind, p_credential_id,
        case when p_subject_kind = 'user' then p_subject_id end, p_step, p_error, p_reason);
  elsif v_overflow_id is null then
    insert into rowgate.denials (organization_id, credential_kind, credential_id, user_id)
      values (v_organization_id, p_credential_kind, p_credential_id, case when p_subject_kind = 'user' then p_subject_id end)
      returning id into v_overflow_id;
    update rowgate_private.denial_counts c set overflow_id = v_overflow_id
      where c.organization_id = v_organization_id and c.credential_id = v_credential_id and c.hour = date_trunc('hour', now());
  else
    update rowgate.denials d set count = d.count + 1 where d.organization_id = v_organization_id and d.id = v_overflow_id;
  end if;
  return true;
end;
$$;
comment on function rowgate_private.record_denial(text, uuid, text, uuid, text, text, text, jsonb, uuid, uuid, text, text, text) is
  'Keeps a 403 answer (SPEC §20) in the organization it concerns, if the subject reaches it, within the cap of 1,000 rows per credential, organization and hour; the API calls it after the request rolled back.';
grant execute on function rowgate_private.record_denial(text, uuid, text, uuid, text, text, text, jsonb, uuid, uuid, text, text, text)
  to rowgate_authenticator;

--! split: 003-prune-denials.sql
-- Denials are pruned with events (SPEC §20): rowgate_private.prune_events() also deletes up
-- to p_batch denials older than p_older_than, and the hourly counts of the cap once their
-- hour is over. It now returns how many events and denials went, so that a caller pruning
-- until a batch comes back short prunes both.
create or replace function rowgate_private.prune_events(p_older_than interval, p_batch integer default 5000)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_pruned integer;
  v_denials integer;
begin
  if p_older_than < interval '1 day' then
    raise exception 'events are kept at least a day' using errcode = '22023';
  end if;
  insert into rowgate_private.event_retention (singleton, pruned_before) values (true, now() - p_older_than)
    on conflict (singleton) do update set pruned_before = greatest(excluded.pruned_before, rowgate_private.event_retention.pruned_before);
  with old as (
    select old_events.organization_id, old_events.id
    from rowgate.organizations o -- every event's organization is one (organizations are never removed, only marked deleted)
      cross join lateral (
        select e.organization_id, e.id from rowgate.events e
        where e.organization_id = o.id and e.created_at < now() - p_older_than
          and not exists (
            select 1 from rowgate_private.webhook_deliveries d
            where d.organization_id = e.organization_id and d.event_id = e.id and d.status = 'pending')
        order by e.created_at
        limit greatest(p_batch, 1)
        for update of e skip locked
      ) old_events
    limit greatest(p_batch, 1)
  ), attempts as (
    delete from rowgate.webhook_attempts a using old
    where a.organization_id = old.organization_id and a.event_id = old.id
  ), deliveries as (
    delete from rowgate_private.webhook_deliveries d using old
    where d.organization_id = old.organization_id and d.event_id = old.id
  ), pruned as (
    delete from rowgate.events e using old
    where e.organization_id = old.organization_id and e.id = old.id
    returning 1
  )
  select count(*)::integer into v_pruned from pruned;
  with old as (
    select d.organization_id, d.id from rowgate.denials d
    where d.created_at < now() - p_older_than
    order by d.created_at
    limit greatest(p_batch, 1)
    for update skip locked
  ), pruned as (
    delete from rowgate.denials d using old
    where d.organization_id = old.organization_id and d.id = old.id
    returning 1
  )
  select count(*)::integer into v_denials from pruned;
  delete from rowgate_private.denial_counts c where c.hour < date_trunc('hour', now()) - interval '1 hour';
  return v_pruned + v_denials;
end;
$$;
comment on function rowgate_private.prune_events(interval, integer) is 'Deletes up to p_batch events older than p_older_than (at least a day) whose deliveries are over, with those deliveries and their attempts, and up to p_batch denials as old (SPEC §20); returns how many events and denials went.';

--! split: 004-analyst-checks.sql
-- rowgate.check() for analysts (SPEC §20) failed for every operation that finds its resource
-- through rowgate_hidden.authorize(): analysts could not execute it. Analysts run any SQL,
-- so they are not given rowgate_hidden.resource_organization_id(), which names the
-- organization of any id; authorize() now asks it through reachable_resource_organization_id(),
-- which answers only for an organization the subject reaches (what authorize() kept anyway),
-- and analysts may call both. A check of impersonations:create is refused to analysts: it
-- would tell whether their own user is a platform admin, which analysts never learn.
create function rowgate_hidden.reachable_resource_organization_id(p_resource text, p_id uuid) returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid := rowgate_hidden.resource_organization_id(p_resource, p_id);
begin
  return case when v_organization_id = any (rowgate_hidden.current_organization_ids()) then v_organization_id end;
end;
$$;
comment on function rowgate_hidden.reachable_resource_organization_id(text, uuid) is
  'The organization of a resource, only when the subject reaches it; null otherwise.';
grant execute on function rowgate_hidden.reachable_resource_organization_id(text, uuid)
  to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

create or replace function rowgate_hidden.authorize(p_resource text, p_id uuid, p_policy text)
returns table (organization_id uuid, denial text)
language sql stable as $$
  with reachable as (
    select r.organization_id
    from (select rowgate_hidden.reachable_resource_organization_id(p_resource, p_id) as organization_id) r
    where r.organization_id is not null
  )
  select r.organization_id, rowgate_hidden.policy_denial(r.organization_id, p_policy)
  from (select 1) one left join reachable r on true;
$$;
grant execute on function rowgate_hidden.authorize(text, uuid, text) to rowgate_analyst;

--! split: 005-operations.sql
-- The operations of the API (SPEC §20), as the route table declares them: written by
-- `node scripts/write-operations.ts` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in ('accounts:create', 'accounts:get', 'accounts:update', 'auth:logout', 'authorization:check', 'authorization:operations', 'credentials:revoke', 'customer_members:create', 'customer_members:delete', 'customer_members:get', 'customer_members:list', 'customer_members:list_all', 'customer_members:update', 'customer_portal:get_order', 'customer_portal:list_orders', 'customer_portal:me', 'customer_portal:update_me', 'customer_sessions:create', 'customers:create', 'customers:delete', 'customers:delete_external', 'customers:get', 'customers:get_external', 'customers:list', 'customers:update', 'customers:update_external', 'denials:list', 'events:feed', 'events:get', 'events:list', 'impersonations:create', 'invitations:accept', 'invitations:create', 'invitations:decline', 'invitations:list', 'invitations:mine', 'invitations:revoke', 'login_code:authenticate', 'login_code:request', 'members:add', 'members:leave', 'members:list', 'members:remove', 'members:update', 'oauth2:authorize', 'oauth2:consent', 'oauth2:introspect', 'oauth2:register', 'oauth2:revoke', 'oauth2:token', 'oauth2:userinfo', 'oauth2_clients:delete', 'oauth2_clients:get', 'oauth2_clients:list', 'openapi', 'orders:create', 'orders:get', 'orders:list', 'orders:update', 'organization_access_tokens:create', 'organization_access_tokens:delete', 'organization_access_tokens:list', 'organizations:create', 'organizations:delete', 'organizations:get', 'organizations:get_account', 'organizations:list', 'organizations:permissions', 'organizations:update', 'payout_accounts:create', 'payout_accounts:delete', 'payout_accounts:get', 'payout_accounts:list', 'personal_access_tokens:create', 'personal_access_tokens:delete', 'personal_access_tokens:list', 'products:create', 'products:delete', 'products:get', 'products:list', 'products:update', 'refunds:create', 'refunds:get', 'refunds:list', 'roles:create', 'roles:delete', 'roles:list', 'roles:update', 'transactions:get', 'transactions:list', 'users:delete_me', 'users:me', 'users:update_me', 'webhook_deliveries:list', 'webhook_endpoints:create', 'webhook_endpoints:delete', 'webhook_endpoints:get', 'webhook_endpoints:list', 'webhook_endpoints:redeliver', 'webhook_endpoints:update');
insert into rowgate_hidden.operations (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) values
  ('accounts:create', 'POST', '/v1/accounts/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('accounts:get', 'GET', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('accounts:update', 'PATCH', '/v1/accounts/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_write', 'payouts_write'], 'organization', 'finance_write', null, 200, 'authorize', 'account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('auth:logout', 'POST', '/v1/auth/logout', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 204, 'none', null, null, null),
  ('authorization:check', 'POST', '/v1/authorization/check', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('authorization:operations', 'GET', '/v1/authorization/operations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token', 'customer_session', 'member_session'], '{}'::text[], 'any_credential', null, null, 200, 'none', null, null, null),
  ('credentials:revoke', 'POST', '/v1/credentials/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('customer_members:create', 'POST', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:delete', 'DELETE', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_members:get', 'GET', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'read'),
  ('customer_members:list', 'GET', '/v1/customers/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'read'),
  ('customer_members:list_all', 'GET', '/v1/members/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customer_members:update', 'PATCH', '/v1/customers/{id}/members/{member_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customer_members', '{"id":"customer_id","member_id":"id"}'::jsonb, 'customers:write'),
  ('customer_portal:get_order', 'GET', '/v1/customer-portal/orders/{id}', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, null),
  ('customer_portal:list_orders', 'GET', '/v1/customer-portal/orders/', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:me', 'GET', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_read', 'customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_portal:update_me', 'PATCH', '/v1/customer-portal/customers/me', array['customer_session', 'member_session'], array['customer_portal_write'], 'customer_portal', null, null, 200, 'none', null, null, null),
  ('customer_sessions:create', 'POST', '/v1/customer-sessions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customer_sessions_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:create', 'POST', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 201, 'target', null, null, 'customers:write'),
  ('customers:delete', 'DELETE', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:delete_external', 'DELETE', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 204, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('customers:get', 'GET', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"id":"id"}'::jsonb, 'read'),
  ('customers:get_external', 'GET', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', 'read', null, 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'read'),
  ('customers:list', 'GET', '/v1/customers/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_read', 'customers_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('customers:update', 'PATCH', '/v1/customers/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'authorize', 'customer', '{"id":"id"}'::jsonb, 'customers:write'),
  ('customers:update_external', 'PATCH', '/v1/customers/external/{external_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['customers_write'], 'organization', 'role_permission', 'customers:write', 200, 'visible', 'customers', '{"external_id":"external_id"}'::jsonb, 'customers:write'),
  ('denials:list', 'GET', '/v1/organizations/{id}/denials', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_read', 'organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('events:feed', 'GET', '/v1/events/feed', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('events:get', 'GET', '/v1/events/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', 'read', null, 200, 'visible', 'events', '{"id":"id"}'::jsonb, 'read'),
  ('events:list', 'GET', '/v1/events/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['events_read'], 'organization', null, null, 200, 'list', null, null, null),
  ('impersonations:create', 'POST', '/v1/impersonations/', array['web_session'], array['user:write'], 'web_user_write', 'platform_admin', null, 201, 'none', null, null, 'platform_admin'),
  ('invitations:accept', 'POST', '/v1/invitations/{id}/accept', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('invitations:create', 'POST', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:decline', 'POST', '/v1/invitations/{id}/decline', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'none', null, null, null),
  ('invitations:list', 'GET', '/v1/organizations/{id}/invitations', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('invitations:mine', 'GET', '/v1/invitations/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('invitations:revoke', 'DELETE', '/v1/organizations/{id}/invitations/{invitation_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('login_code:authenticate', 'POST', '/v1/login-code/authenticate', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('login_code:request', 'POST', '/v1/login-code/request', '{}'::text[], '{}'::text[], 'anonymous', null, null, 202, 'none', null, null, null),
  ('members:add', 'POST', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('members:leave', 'DELETE', '/v1/organizations/{id}/members/me', array['web_session'], array['user:write'], 'web_user_write', 'read', null, 204, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('members:list', 'GET', '/v1/organizations/{id}/members', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('members:remove', 'DELETE', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('members:update', 'PATCH', '/v1/organizations/{id}/members/{user_id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'visible', 'memberships', '{"id":"organization_id","user_id":"user_id"}'::jsonb, 'members_management'),
  ('oauth2:authorize', 'GET', '/v1/oauth2/authorize', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('oauth2:consent', 'POST', '/v1/oauth2/consent', array['web_session'], array['user:write'], 'web_user_write', null, null, 302, 'none', null, null, null),
  ('oauth2:introspect', 'POST', '/v1/oauth2/introspect', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:register', 'POST', '/v1/oauth2/register', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('oauth2:revoke', 'POST', '/v1/oauth2/revoke', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:token', 'POST', '/v1/oauth2/token', '{}'::text[], '{}'::text[], 'anonymous', null, null, 200, 'none', null, null, null),
  ('oauth2:userinfo', 'GET', '/v1/oauth2/userinfo', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:read', 'user:write'], 'user_read', null, null, 200, 'none', null, null, null),
  ('oauth2_clients:delete', 'DELETE', '/v1/oauth2/clients/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:get', 'GET', '/v1/oauth2/clients/{id}', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'visible', 'oauth2_clients', '{"id":"id"}'::jsonb, null),
  ('oauth2_clients:list', 'GET', '/v1/oauth2/clients/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('openapi', 'GET', '/v1/openapi.json', '{}'::text[], '{}'::text[], 'public', null, null, 200, 'none', null, null, null),
  ('orders:create', 'POST', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('orders:get', 'GET', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', 'read', null, 200, 'visible', 'orders', '{"id":"id"}'::jsonb, 'read'),
  ('orders:list', 'GET', '/v1/orders/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_read', 'orders_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('orders:update', 'PATCH', '/v1/orders/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['orders_write'], 'organization', 'role_permission', 'orders:write', 200, 'authorize', 'order', '{"id":"id"}'::jsonb, 'orders:write'),
  ('organization_access_tokens:create', 'POST', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 201, 'target', null, null, 'access_token_management'),
  ('organization_access_tokens:delete', 'DELETE', '/v1/organization-access-tokens/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_write'], 'organization_user', 'access_token_management', null, 204, 'authorize', 'organization_access_token', '{"id":"id"}'::jsonb, 'access_token_management'),
  ('organization_access_tokens:list', 'GET', '/v1/organization-access-tokens/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organization_access_tokens_read', 'organization_access_tokens_write'], 'organization_user', null, null, 200, 'list', null, null, null),
  ('organizations:create', 'POST', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', null, null, 201, 'none', null, null, null),
  ('organizations:delete', 'DELETE', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['organizations_write'], 'organization_user', 'role_permission', 'organization:manage', 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('organizations:get', 'GET', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'visible', 'organizations', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:get_account', 'GET', '/v1/organizations/{id}/account', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'finance_read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'finance_read'),
  ('organizations:list', 'GET', '/v1/organizations/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('organizations:permissions', 'GET', '/v1/organizations/{id}/permissions', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_read', 'organizations_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('organizations:update', 'PATCH', '/v1/organizations/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['organizations_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('payout_accounts:create', 'POST', '/v1/payout-accounts/', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 201, 'target', null, null, 'finance_write'),
  ('payout_accounts:delete', 'DELETE', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:write'], 'web_payouts_write', 'finance_write', null, 204, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_write'),
  ('payout_accounts:get', 'GET', '/v1/payout-accounts/{id}', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', 'finance_read', null, 200, 'authorize', 'payout_account', '{"id":"id"}'::jsonb, 'finance_read'),
  ('payout_accounts:list', 'GET', '/v1/payout-accounts/', array['web_session'], array['payouts:read', 'payouts:write'], 'web_payouts_read', null, null, 200, 'list', null, null, null),
  ('personal_access_tokens:create', 'POST', '/v1/personal-access-tokens/', array['web_session'], array['user:write'], 'web_user_write', null, null, 201, 'none', null, null, null),
  ('personal_access_tokens:delete', 'DELETE', '/v1/personal-access-tokens/{id}', array['web_session'], array['user:write'], 'web_user_write', null, null, 204, 'visible', 'personal_access_tokens', '{"id":"id"}'::jsonb, null),
  ('personal_access_tokens:list', 'GET', '/v1/personal-access-tokens/', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('products:create', 'POST', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 201, 'target', null, null, 'products:write'),
  ('products:delete', 'DELETE', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 204, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('products:get', 'GET', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', 'read', null, 200, 'visible', 'products', '{"id":"id"}'::jsonb, 'read'),
  ('products:list', 'GET', '/v1/products/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_read', 'products_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('products:update', 'PATCH', '/v1/products/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['products_write'], 'organization', 'role_permission', 'products:write', 200, 'authorize', 'product', '{"id":"id"}'::jsonb, 'products:write'),
  ('refunds:create', 'POST', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_write'], 'organization', 'role_permission', 'orders:write', 201, 'target', null, null, 'orders:write'),
  ('refunds:get', 'GET', '/v1/refunds/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', 'read', null, 200, 'visible', 'refunds', '{"id":"id"}'::jsonb, 'read'),
  ('refunds:list', 'GET', '/v1/refunds/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['refunds_read', 'refunds_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('roles:create', 'POST', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 201, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:delete', 'DELETE', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 204, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('roles:list', 'GET', '/v1/organizations/{id}/roles', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_read', 'members_write'], 'organization', 'read', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'read'),
  ('roles:update', 'PATCH', '/v1/organizations/{id}/roles/{name}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['members_write'], 'organization', 'members_management', null, 200, 'authorize', 'organization', '{"id":"id"}'::jsonb, 'members_management'),
  ('transactions:get', 'GET', '/v1/transactions/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', 'read', null, 200, 'visible', 'transactions', '{"id":"id"}'::jsonb, 'read'),
  ('transactions:list', 'GET', '/v1/transactions/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('users:delete_me', 'DELETE', '/v1/users/me', array['web_session', 'personal_access_token', 'oauth2_user_token'], array['user:write'], 'user_write', null, null, 204, 'none', null, null, null),
  ('users:me', 'GET', '/v1/users/me', array['web_session'], array['user:read', 'user:write'], 'web_user_read', null, null, 200, 'none', null, null, null),
  ('users:update_me', 'PATCH', '/v1/users/me', array['web_session'], array['user:write'], 'web_user_write', null, null, 200, 'none', null, null, null),
  ('webhook_deliveries:list', 'GET', '/v1/webhook-endpoints/{id}/deliveries', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:create', 'POST', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 201, 'target', null, null, 'organization:manage'),
  ('webhook_endpoints:delete', 'DELETE', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 204, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:get', 'GET', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:list', 'GET', '/v1/webhook-endpoints/', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_read', 'webhooks_write'], 'organization', null, null, 200, 'list', null, null, null),
  ('webhook_endpoints:redeliver', 'POST', '/v1/webhook-endpoints/{id}/redeliver', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 202, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage'),
  ('webhook_endpoints:update', 'PATCH', '/v1/webhook-endpoints/{id}', array['web_session', 'personal_access_token', 'oauth2_user_token', 'organization_access_token', 'oauth2_organization_token'], array['webhooks_write'], 'organization', 'role_permission', 'organization:manage', 200, 'authorize', 'webhook_endpoint', '{"id":"id"}'::jsonb, 'organization:manage')
on conflict (operation) do update set method = excluded.method, path = excluded.path, credentials = excluded.credentials, scopes = excluded.scopes, access_class = excluded.access_class, policy = excluded.policy, permission = excluded.permission, status = excluded.status, lookup = excluded.lookup, resource = excluded.resource, match = excluded.match, policy_key = excluded.policy_key;
