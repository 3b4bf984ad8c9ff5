-- Security definer functions: one with no pinned search_path, one executable by public.
create function lint_fixture.unpinned() returns int language sql stable security definer as 'select 1';
revoke execute on function lint_fixture.unpinned() from public;
grant execute on function lint_fixture.unpinned() to rowgate_user;
create function lint_fixture.for_everyone() returns int language sql stable security definer
  set search_path = pg_catalog, pg_temp as 'select 1';
-- pinned and granted by name: no finding
create function lint_fixture.fine() returns int language sql stable security definer
  set search_path = pg_catalog, pg_temp as 'select 1';
revoke execute on function lint_fixture.fine() from public;
-- waived:
comment on function lint_fixture.unpinned() is '@lint-allow security-definer: the fixture shows the waiver';
comment on function lint_fixture.for_everyone() is '@lint-allow security-definer: the fixture shows the waiver';
