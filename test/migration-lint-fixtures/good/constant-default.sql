-- A constant default is stored in the catalog: no rewrite.
set local lock_timeout = '2s';
alter table rowgate.products add column note text not null default '';
