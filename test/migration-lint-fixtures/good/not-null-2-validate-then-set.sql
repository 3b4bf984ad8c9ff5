-- The second: the check is proven (writes go on meanwhile), so SET NOT NULL scans nothing.
set local lock_timeout = '2s';
alter table rowgate.products validate constraint products_description_not_null;
alter table rowgate.products alter column description set not null;
alter table rowgate.products drop constraint products_description_not_null;
