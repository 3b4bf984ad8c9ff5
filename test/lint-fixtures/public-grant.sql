-- Privileges granted to public: a table's, a column's, and a function's (by default).
create table lint_fixture.notes (id uuid primary key, organization_id uuid not null, body text);
alter table lint_fixture.notes enable row level security;
grant select on lint_fixture.notes to public;
create table lint_fixture.tags (id uuid primary key, name text);
alter table lint_fixture.tags enable row level security;
grant update (name) on lint_fixture.tags to public;
create function lint_fixture.twice(p int) returns int language sql immutable as 'select p * 2';
-- waived:
comment on table lint_fixture.notes is '@lint-allow public-grant: the fixture shows the waiver';
comment on table lint_fixture.tags is '@lint-allow public-grant: the fixture shows the waiver';
comment on function lint_fixture.twice(int) is '@lint-allow public-grant: the fixture shows the waiver';
