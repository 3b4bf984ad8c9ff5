-- CONCURRENTLY cannot run in the transaction graphile-migrate opens: the migration needs --! no-transaction.
set local lock_timeout = '2s';
create index concurrently if not exists products_name on rowgate.products (name);
