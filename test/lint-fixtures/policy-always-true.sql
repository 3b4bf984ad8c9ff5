-- Organization data behind a policy that lets every row through.
create table lint_fixture.notes (id uuid primary key, organization_id uuid not null, body text);
alter table lint_fixture.notes enable row level security;
create policy select_all on lint_fixture.notes for select to rowgate_user, rowgate_organization using (true);
-- a table without organization data may be read by all (reference data): no finding
create table lint_fixture.colours (name text primary key);
alter table lint_fixture.colours enable row level security;
create policy select_all on lint_fixture.colours for select using (true);
-- waived:
comment on policy select_all on lint_fixture.notes is '@lint-allow policy-always-true: the fixture shows the waiver';
