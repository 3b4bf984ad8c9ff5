-- SET NOT NULL with no valid check first scans the table under an ACCESS EXCLUSIVE lock.
set local lock_timeout = '2s';
alter table rowgate.products alter column description set not null;
