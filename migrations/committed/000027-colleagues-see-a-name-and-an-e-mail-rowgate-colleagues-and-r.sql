--! Previous: sha1:7745488766647a2d83c33fe3ce785eab14d1c083
--! Hash: sha1:0ac9a621c90171e440e3f9d33f71273434890f54
--! Message: Colleagues see a name and an e-mail: rowgate.colleagues, and rowgate.users shows the subject itself only

--! split: 001-colleagues-see-a-name-and-an-e-mail.sql
-- What REST shows of another user is what a members list names: the id, the
-- name and the e-mail. GraphQL and analysts read what the users table's
-- policies let them, and `select_colleague` let a colleague read the whole
-- row: the avatar, the sign-up time, and `updated_at`, which moves when the
-- platform-admin flag is given or taken (a side channel on the flag, found by
-- a parity attack). RLS chooses rows, not columns, so a colleague's view of a
-- user is a relation of its own:
-- - `rowgate.colleagues` (id, email, name): the live users who share an
--   organization with the subject, under `members_read`, the condition the
--   dropped policy had. The view runs as its owner (the table's owner, whom
--   RLS does not restrict), so its where clause is the rule, written once;
--   `security_barrier` keeps a caller's own conditions (a failing cast that
--   would print a value) from running before it.
-- - `rowgate.users` shows the subject itself only (`select_self`); an
--   organization, which is nobody's self, reads no row of it.
-- GraphQL publishes the view as `Colleague` (`allColleagues`) and relates a
-- membership and an account's admin to it, so a member's name and e-mail stay
-- one field away, as in REST.
create view rowgate.colleagues with (security_barrier) as
  select u.id, u.email, u.name
  from rowgate.users u
  where u.id = any ((select rowgate_hidden.current_colleague_ids())::uuid[])
    and u.deleted_at is null
    and (select rowgate_hidden.has_scope('members_read'));
comment on view rowgate.colleagues is E'@primaryKey id\nThe users who share an organization with the subject: their id, name and e-mail only (members_read).';
grant select (id, email, name) on rowgate.colleagues to rowgate_analyst, rowgate_organization, rowgate_user;

drop policy select_colleague on rowgate.users;

comment on table rowgate.memberships is E'@foreignKey (user_id) references rowgate.colleagues (id)';
comment on table rowgate.accounts is E'@foreignKey (admin_id) references rowgate.colleagues (id)';
comment on column rowgate.colleagues.email is E'@notNull\nThe colleague''s e-mail address.';
comment on column rowgate.colleagues.name is 'The colleague''s display name.';
