-- The release before reads the column by its old name.
set local lock_timeout = '2s';
alter table rowgate.customers rename column email to email_address;
