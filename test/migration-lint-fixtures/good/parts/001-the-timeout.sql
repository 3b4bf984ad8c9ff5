-- The lock_timeout set here holds for every part: the parts run in one transaction.
set local lock_timeout = '2s';
alter table rowgate.products add column note text;
