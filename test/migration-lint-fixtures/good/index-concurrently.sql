--! no-transaction
-- An index on a table that exists is built concurrently, alone in its migration.
create index concurrently if not exists products_name on rowgate.products (name);
