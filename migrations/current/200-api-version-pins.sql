-- SPEC §23: tokens, OAuth2 clients, webhook endpoints and customer or member
-- sessions are pinned to the API version a request without Rowgate-Version is
-- answered in. The column is null on every row that existed before versions
-- did, and on rows a server of the previous release inserts during a rolling
-- deploy (it names no version): null reads as 2026-11-20. A new row takes the
-- version the request's transaction names (the setting rowgate.api_version),
-- which the API sets to the version the create body asks for, or the newest.
-- each ALTER waits at most this long for its brief lock: a deploy fails fast
-- and is retried rather than queueing every request behind a long reader
set local lock_timeout = '5s';
alter table rowgate.personal_access_tokens add column if not exists api_version text;
alter table rowgate.organization_access_tokens add column if not exists api_version text;
alter table rowgate.oauth2_clients add column if not exists api_version text;
alter table rowgate.webhook_endpoints add column if not exists api_version text;
alter table rowgate_private.sessions add column if not exists api_version text;

alter table rowgate.personal_access_tokens alter column api_version set default nullif(current_setting('rowgate.api_version', true), '');
alter table rowgate.organization_access_tokens alter column api_version set default nullif(current_setting('rowgate.api_version', true), '');
alter table rowgate.oauth2_clients alter column api_version set default nullif(current_setting('rowgate.api_version', true), '');
alter table rowgate.webhook_endpoints alter column api_version set default nullif(current_setting('rowgate.api_version', true), '');
alter table rowgate_private.sessions alter column api_version set default nullif(current_setting('rowgate.api_version', true), '');

comment on column rowgate.personal_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23); null: 2026-11-20.';
comment on column rowgate.organization_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23); null: 2026-11-20.';
comment on column rowgate.oauth2_clients.api_version is 'The API version its tokens use without Rowgate-Version (SPEC §23); null: 2026-11-20.';
comment on column rowgate.webhook_endpoints.api_version is 'The API version its webhook bodies are rendered in (SPEC §23); null: 2026-11-20.';
comment on column rowgate_private.sessions.api_version is 'Customer and member sessions: the version of the request that created them (SPEC §23); web sessions use the newest.';

-- The version a credential is pinned to, asked by the authentication
-- statement beside rowgate_private.authenticate; null for a web session,
-- which uses the newest version.
create or replace function rowgate_private.credential_api_version(p_kind text, p_credential_id uuid)
returns text
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_kind = 'web_session' then null
    else coalesce(
      case p_kind
        when 'personal_access_token' then (select t.api_version from rowgate.personal_access_tokens t where t.id = p_credential_id)
        when 'organization_access_token' then (select t.api_version from rowgate.organization_access_tokens t where t.id = p_credential_id)
        when 'oauth2_user_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        when 'oauth2_organization_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        else (select s.api_version from rowgate_private.sessions s where s.id = p_credential_id)
      end,
      '2026-11-20')
  end
$$;
comment on function rowgate_private.credential_api_version(text, uuid) is 'The API version a credential is pinned to (SPEC §23); null for a web session (the newest).';
revoke all on function rowgate_private.credential_api_version(text, uuid) from public;
grant execute on function rowgate_private.credential_api_version(text, uuid) to rowgate_authenticator;

-- Read schemas show api_version; a webhook endpoint's PATCH may change it.
grant select (api_version) on rowgate.personal_access_tokens to rowgate_user;
grant select (api_version) on rowgate.organization_access_tokens to rowgate_user, rowgate_analyst;
grant select (api_version) on rowgate.oauth2_clients to rowgate_user;
grant select (api_version) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user, rowgate_analyst;
grant update (api_version) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user;

-- The version each endpoint's webhook bodies are rendered in, for the
-- webhook sender, which runs as the authenticator and reads no endpoint.
create or replace function rowgate_private.webhook_endpoint_versions(p_endpoint_ids uuid[])
returns table (endpoint_id uuid, api_version text)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select e.id, coalesce(e.api_version, '2026-11-20') from rowgate.webhook_endpoints e where e.id = any(p_endpoint_ids)
$$;
comment on function rowgate_private.webhook_endpoint_versions(uuid[]) is 'The API version each webhook endpoint''s bodies are rendered in (SPEC §23).';
revoke all on function rowgate_private.webhook_endpoint_versions(uuid[]) from public;
grant execute on function rowgate_private.webhook_endpoint_versions(uuid[]) to rowgate_authenticator;
