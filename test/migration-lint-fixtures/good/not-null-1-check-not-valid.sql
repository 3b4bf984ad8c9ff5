-- The first of two migrations that make a column NOT NULL: a check that holds for new rows.
set local lock_timeout = '2s';
alter table rowgate.products add constraint products_description_not_null check (description is not null) not valid;
