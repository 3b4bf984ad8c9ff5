-- A policy calling a helper whose arguments name no column, unwrapped: once per row.
create function lint_fixture.current_ids() returns uuid[] language sql stable as 'select array[]::uuid[]';
create function lint_fixture.denial(p_organization_id uuid) returns text language sql stable as 'select null::text';
revoke execute on function lint_fixture.current_ids(), lint_fixture.denial(uuid) from public;
create table lint_fixture.notes (id uuid primary key, organization_id uuid not null, body text);
alter table lint_fixture.notes enable row level security;
create policy select_member on lint_fixture.notes for select to rowgate_user
  using (organization_id = any (lint_fixture.current_ids()));
-- wrapped, or naming a column of the row: no finding
create policy select_wrapped on lint_fixture.notes for select to rowgate_user
  using (organization_id = any ((select lint_fixture.current_ids())::uuid[]) and lint_fixture.denial(organization_id) is null);
-- waived:
comment on policy select_member on lint_fixture.notes is '@lint-allow per-row-helper: the fixture shows the waiver';
