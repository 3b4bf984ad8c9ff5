-- A new type rewrites the table and the release before may not read it.
set local lock_timeout = '2s';
alter table rowgate.orders alter column amount type numeric;
