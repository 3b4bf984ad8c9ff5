-- The release before still reads the column it drops.
set local lock_timeout = '2s';
alter table rowgate.products drop column description;
