--! Previous: sha1:26091b552c0e0dc6ffd6190ecf127bf7986a9b7c
--! Hash: sha1:1971944dea8be041edd4a19039159ff46b701431
--! Message: A new membership waits for its user's deletion

--! split: 001-a-new-membership-waits-for-its-user-s-deletion.sql
-- A membership is made only for a user that is not being deleted. Deleting a user ends its
-- memberships in the trigger on its row (tg_users__leave_organizations); a membership added
-- at that moment by someone else (members:add, an invitation accepted) was not among them, and
-- stayed live for a deleted user. The new membership now takes its user's row for share: it
-- waits for a deletion under way and is refused once it committed, and a deletion waits for it
-- and then ends it with the others (the trigger reads after the wait). As the escalation rules,
-- it holds for requests: a change without a User subject is not checked.
set local lock_timeout = '2s';

create function rowgate_private.tg_memberships__live_user()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- a request's membership (a User subject's, as the escalation rules read it); the system and an
  -- operator write what they write (`npx rowgate db verify` names a live membership of a deleted user)
  if new.deleted_at is not null or rowgate_hidden.current_user_id() is null then
    return new;
  end if;
  perform 1 from rowgate.users u where u.id = new.user_id and u.deleted_at is null for share;
  if not found then
    raise exception 'No user has this e-mail address' using errcode = 'RG422', detail = 'body.email';
  end if;
  return new;
end;
$$;
comment on function rowgate_private.tg_memberships__live_user() is
  'Refuses a membership of a deleted user, and holds the user''s row until the membership commits.';

create trigger _150_live_user before insert on rowgate.memberships
  for each row execute function rowgate_private.tg_memberships__live_user();
