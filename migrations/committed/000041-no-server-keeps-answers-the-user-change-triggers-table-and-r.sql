--! Previous: sha1:6d1fdbf828f850eb7d4697343674df81d9b3bfcf
--! Hash: sha1:795a032ba2b2a781ead3d7576a889ab8f2962d82
--! Message: No server keeps answers: the user-change triggers, table and readers go

--! split: 001-no-server-keeps-answers-so-no-change-is-announced.sql
-- Why: no server keeps an answer between requests; every request asks the
-- database, so a change to a user, a session or the scopes is seen by every
-- instance on its next request and needs no announcement. The triggers that
-- record each such change, notify `rowgate_user_changes` and set
-- `rowgate.changed_users` in every writing transaction go, with their
-- function. (platform_admins' _900_touch_user stays: it moves the user's
-- updated_at, which GET /v1/users/me shows.)
drop trigger if exists _900_announce_update on rowgate.users;
drop trigger if exists _900_announce_delete on rowgate.users;
drop trigger if exists _900_announce_truncate on rowgate.users;
drop trigger if exists _900_announce_update on rowgate_private.sessions;
drop trigger if exists _900_announce_delete on rowgate_private.sessions;
drop trigger if exists _900_announce_truncate on rowgate_private.sessions;
drop trigger if exists _900_announce_truncate on rowgate_private.platform_admins;
drop trigger if exists _900_announce_change on rowgate_private.scopes;
drop function if exists rowgate_private.tg__announce_user_changes();

--! split: 002-nothing-reads-the-changes.sql
-- Why: with nothing announced, nothing reads what changed: the table of
-- changes, the trigger that stamps a change with its commit time, and the two
-- functions servers read it through go.
drop table if exists rowgate_private.user_changes;
drop function if exists rowgate_private.tg_user_changes__stamp_commit();
drop function if exists rowgate_private.user_changes_after(xid8);
drop function if exists rowgate_private.user_changes_since(bigint);
