--! Previous: sha1:1a8695529cf1ef2da9d17685b5c1eecbe0a3e3e0
--! Hash: sha1:eae9f3c5ca355d5d8e735d33f332dabc1bbd7a1f
--! Message: Analysts read the webhook endpoints, their delivery attempts and the organization access tokens their user reads (SPEC 15): the select grants were missing

--! split: 001-analysts-read-webhooks-and-organization-tokens.sql
-- Why: SPEC §15 says an analyst reads every table its user may read, with the
-- rows and columns its user sees; a hostile audit found that an organization
-- admin's analyst was refused ("permission denied") on the webhook endpoints,
-- their delivery attempts and the organization access tokens, which the API
-- lists for that user with read scopes (webhooks_read,
-- organization_access_tokens_read: both in rowgate_private.read_scopes, which
-- analysts carry), while the same analyst saw their events in rowgate.events.
-- The select policies are the API's (to public: reach, permission, scope, the
-- subject a user), so the grants are all that was missing. Every column, so
-- that `select *` works; none of them holds a secret (endpoint secrets and
-- token hashes live in rowgate_private). Personal access tokens stay the web
-- session's own (SPEC §4: user read through a web session only; their policy
-- names rowgate_user alone).
grant select (id, organization_id, url, event_types, description, enabled, consecutive_failures, created_at, updated_at, deleted_at)
  on rowgate.webhook_endpoints to rowgate_analyst;
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at)
  on rowgate.webhook_attempts to rowgate_analyst;
grant select (id, organization_id, comment, scopes, expires_at, last_used_at, created_by, created_at, updated_at, deleted_at)
  on rowgate.organization_access_tokens to rowgate_analyst;
