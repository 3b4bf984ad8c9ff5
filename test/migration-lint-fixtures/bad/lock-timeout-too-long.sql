-- A lock_timeout of a minute stalls the API for a minute.
set local lock_timeout = '1min';
alter table rowgate.products add column note text;
