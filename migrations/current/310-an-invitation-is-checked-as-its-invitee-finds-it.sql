-- Accepting or declining an invitation finds it only when it is the caller's (SPEC §21: anyone
-- else gets 404), and a check of either operation must answer the same (SPEC §20). The
-- invitee's predicate is one function that both ask: rowgate_private.invitee_invitation when
-- it locks the row (re-evaluated on the row it waited for, so a concurrent answer is seen) and
-- rowgate_hidden.check_batch through invitee_invitation_found(), a new lookup of the operations.
create or replace function rowgate_hidden.is_invitee_invitation(p_invitation rowgate.invitations)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p_invitation.email = rowgate_hidden.current_user_email()
    and p_invitation.status = 'pending' and p_invitation.expires_at > now()
    and exists (select from rowgate.organizations o where o.id = p_invitation.organization_id and o.deleted_at is null);
$$;
comment on function rowgate_hidden.is_invitee_invitation(rowgate.invitations) is
  'Whether the invitation is the current user''s to answer: to its address, pending, unexpired, of a live organization (SPEC §21).';

create or replace function rowgate_hidden.invitee_invitation_found(p_id uuid)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select exists (select from rowgate.invitations i where i.id = p_id and rowgate_hidden.is_invitee_invitation(i));
$$;
comment on function rowgate_hidden.invitee_invitation_found(uuid) is
  'Whether the invitation p_id is the current user''s to accept or decline: the lookup `invitee` of a check (SPEC §20).';
grant execute on function rowgate_hidden.invitee_invitation_found(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- restated: the invitee's predicate is is_invitee_invitation(), no longer written out here
create or replace function rowgate_private.invitee_invitation(p_id uuid)
  returns rowgate.invitations
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_invitation rowgate.invitations;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  select i.* into v_invitation from rowgate.invitations i
    where i.id = p_id and rowgate_hidden.is_invitee_invitation(i)
    for update of i;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  return v_invitation;
end;
$$;

alter table rowgate_hidden.operations drop constraint operations_lookup_check;
-- squawk-ignore constraint-missing-not-valid -- rowgate_hidden.operations holds one row per API operation: the scan reads about a hundred rows
alter table rowgate_hidden.operations add constraint operations_lookup_check
  check (lookup = any (array['none', 'list', 'target', 'authorize', 'visible', 'invitee']));
