-- A plain SET outlives the migration's transaction.
set lock_timeout = '2s';
alter table rowgate.products add column note text;
