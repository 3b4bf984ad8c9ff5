--! Previous: sha1:ac66263425d87bbd97c05ffcc6184c50f5872edf
--! Hash: sha1:f43dd1b636b135bc7392d508ff218be29daebb8c
--! Message: the finance policy answers only for reachable organizations

-- The finance policy answered for any organization id, reachable or not, so a
-- SQL session (an analyst) could learn whether an organization exists and has
-- an account. An organization the subject does not reach now gets the same
-- answer as one without an account. (The API checks reach first, as a 404, so
-- its answers do not change.)
create or replace function rowgate_hidden.finance_denial(p_organization_id uuid, p_write boolean) returns text
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_admin_id uuid;
begin
  if v_kind = 'organization' and not p_write then
    return null;
  elsif v_kind <> 'user' or v_kind is null then
    return 'Not permitted';
  end if;
  select a.admin_id into v_admin_id from rowgate.organizations o join rowgate.accounts a on a.id = o.account_id
    where o.id = p_organization_id and a.deleted_at is null
      and p_organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    return 'Organization has no account';
  elsif v_admin_id is distinct from rowgate_hidden.current_user_id() then
    return case when p_write then 'Only the account admin can manage financial information'
      else 'Only the account admin can access financial information' end;
  end if;
  return null;
end;
$$;
