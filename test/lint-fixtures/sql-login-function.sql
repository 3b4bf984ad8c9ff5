-- A function organizations' SQL logins may execute that is not on the allowlist.
create function lint_fixture.organization_name(p_id uuid) returns text language sql stable as 'select null::text';
revoke all on function lint_fixture.organization_name(uuid) from public;
grant usage on schema lint_fixture to rowgate_sql_login;
grant execute on function lint_fixture.organization_name(uuid) to rowgate_sql_login;
-- waived:
comment on function lint_fixture.organization_name(uuid) is '@lint-allow sql-login-function: the fixture shows the waiver';
