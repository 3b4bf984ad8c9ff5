-- The lock_timeout set here holds for every part.
set local lock_timeout = '2s';
alter table rowgate.products add column note text;
