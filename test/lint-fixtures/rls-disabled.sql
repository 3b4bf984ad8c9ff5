-- A table an API role reads with no row-level security: every row to every user.
create table lint_fixture.notes (id uuid primary key, organization_id uuid not null, body text);
grant usage on schema lint_fixture to rowgate_user;
grant select (id, organization_id, body) on lint_fixture.notes to rowgate_user;
-- waived:
comment on table lint_fixture.notes is e'A fixture.\n@lint-allow rls-disabled: the fixture shows the waiver';
