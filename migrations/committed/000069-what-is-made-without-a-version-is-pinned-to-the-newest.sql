--! Previous: sha1:28372eb9f391481daa134eb639139e57c6962c9d
--! Hash: sha1:c55fea96212d631f40844b7d6e8a1ebca85e1135
--! Message: What is made without a version is pinned to the newest

--! split: 001-new-pins-name-the-newest-version.sql
-- A token, an OAuth2 client, a webhook endpoint or a session made without a version named in
-- the transaction (the operator CLI, GraphQL, an owner's SQL) is pinned to the newest version,
-- as the API pins one made without `api_version` (SPEC §23); rows that existed when versions
-- shipped keep the 2026-11-20 their column was filled with. The fallback names the newest
-- version, and a migration that ships a newer one moves it (docs/versions.md);
-- test/versions.test.ts fails when it and the server's newest differ. A lock waited for past
-- 2 s fails the migration, which is run again.
set local lock_timeout = '2s';

alter table rowgate.personal_access_tokens alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-12-15');
alter table rowgate.organization_access_tokens alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-12-15');
alter table rowgate.oauth2_clients alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-12-15');
alter table rowgate.webhook_endpoints alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-12-15');
alter table rowgate_private.sessions alter column api_version
  set default coalesce(nullif(current_setting('rowgate.api_version', true), ''), '2026-12-15');
