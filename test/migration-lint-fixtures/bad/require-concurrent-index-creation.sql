-- An index built without CONCURRENTLY blocks every write to a table that already exists.
set local lock_timeout = '2s';
create index products_name on rowgate.products (name);
