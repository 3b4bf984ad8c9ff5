-- A waiver must say why the statement is safe.
set local lock_timeout = '2s';
-- squawk-ignore ban-drop-column
alter table rowgate.products drop column description;
