-- The subject helpers restated to know SQL logins (SPEC §24): in a session of a member of
-- rowgate_sql_login, the subject is the login's organization, its credential counts as an
-- organization access token and its scopes are the credential's, all looked up by
-- session_user, so the login reads exactly what such a token reads through the same RLS.
-- A login whose credential is not live has no subject, and so reads no rows.
create or replace function rowgate_hidden.current_subject_kind() returns text
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'user'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization' end;
$$;

create or replace function rowgate_hidden.current_subject_id() returns uuid
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_id', true), '')::uuid
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_user_id()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_organization_id() end;
$$;

create or replace function rowgate_hidden.current_credential_kind() returns text
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.credential_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'web_session'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization_access_token' end;
$$;
comment on function rowgate_hidden.current_credential_kind() is 'The kind of the credential of this transaction (web_session, personal_access_token, …); an analyst''s login counts as web_session, an organization''s SQL login as organization_access_token; null without one.';

create or replace function rowgate_hidden.current_scopes() returns text[]
  language sql stable
as $$
  select case when session_user = 'rowgate_authenticator'
      then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_scopes()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_scopes() end;
$$;

-- rowgate.check (SPEC §20) answers an analyst as its user's web session, and a SQL login
-- as an organization access token with the login's scopes (SPEC §24).
create or replace function rowgate."check"(operation text, params jsonb default '{}'::jsonb, organization_id uuid default null::uuid)
  returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select rowgate_hidden.check_operation(operation, coalesce(params, '{}'), organization_id,
    not pg_has_role(session_user, 'rowgate_sql_login', 'member')) - 'organization_id';
$$;
comment on function rowgate."check"(text,jsonb,uuid) is '@behavior -*
Why an operation would be allowed or refused (SPEC §20): for an analyst, as its user''s web session; for an organization''s SQL login, as an organization access token with the login''s scopes.';
