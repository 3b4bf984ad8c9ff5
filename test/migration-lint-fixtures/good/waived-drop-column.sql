-- A column the release before no longer reads is dropped, with the waiver saying so.
set local lock_timeout = '2s';
-- squawk-ignore ban-drop-column -- no release since the one before reads products.legacy_note
alter table rowgate.products drop column legacy_note;
