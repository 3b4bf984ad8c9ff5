--! Previous: sha1:4dc3543fa8201c83fcd89d3e7ebe12a2fb4e92d0
--! Hash: sha1:651f3bd91c15a5107e169dd6ce62a80d40e3e352
--! Message: A change is kept ten minutes from its commit; changed users counted once

--! split: 001-a-change-is-kept-ten-minutes-from-its-commit.sql
-- Why: a change's row was pruned ten minutes after its transaction began
-- (created_at is now(), the transaction's start), so a change made by a
-- transaction that ran longer (a backfill, an operator's session) was prunable
-- the moment it committed: the next change's trigger could remove it before
-- any server had read it, and its users' answers were never forgotten (a
-- review of migration 000038). The row is stamped again when its transaction
-- commits, by a deferred trigger, so it is kept ten minutes from then.
create or replace function rowgate_private.tg_user_changes__stamp_commit()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  update rowgate_private.user_changes set created_at = clock_timestamp() where id = new.id;
  return null;
end;
$$;
comment on function rowgate_private.tg_user_changes__stamp_commit() is 'Stamps a change with the time its transaction commits: the prune keeps it ten minutes from then.';
revoke all on function rowgate_private.tg_user_changes__stamp_commit() from public;
create constraint trigger _900_stamp_commit after insert on rowgate_private.user_changes
  deferrable initially deferred for each row execute function rowgate_private.tg_user_changes__stamp_commit();

--! split: 002-changed-users-counted-once.sql
-- Why: while a transaction holding a transaction id runs (an analyst's, a
-- webhook attempt's claim), every read returns the changes since it again; the
-- threshold past which a read says "everybody" counted the ids with their
-- repeats, so one user changing often made every server forget every answer
-- (a review of migration 000038). Each user is now named once, and the
-- threshold counts users.
create or replace function rowgate_private.user_changes_after(p_horizon xid8)
returns table (horizon xid8, user_ids text)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  with changed as (
    select c.user_ids from rowgate_private.user_changes c
    where p_horizon is not null and c.xid >= p_horizon
  ), users as (
    select distinct u.id from changed, unnest(string_to_array(changed.user_ids, ' ')) as u(id)
  )
  select pg_snapshot_xmin(pg_current_snapshot()),
    case when p_horizon is null then null
      when exists (select 1 from changed where changed.user_ids = '*') or (select count(*) from users) > 2500 then '*'
      else (select string_agg(users.id, ' ') from users) end;
$$;
