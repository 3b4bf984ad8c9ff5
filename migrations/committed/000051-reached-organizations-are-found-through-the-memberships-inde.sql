--! Previous: sha1:6f8613dfa13fcf7424b7d4eab4e40c0190778498
--! Hash: sha1:dcb03c7c37f7a6c4dcb67a91dcf75aeaacc639f4
--! Message: Reached organizations are found through the memberships index

--! split: 001-reach-by-index.sql
-- Every request asks which organizations its subject reaches (the row-level
-- policies' initplan, the routes' checks), so the question is answered through
-- the memberships' (user_id, organization_id) index and one primary-key probe
-- per membership. Joined to the organizations, the planner hashes every
-- organization for a user of a few dozen; the probe in the select list is never
-- turned into that join. The user is read once, not once per membership.
create or replace function rowgate_hidden.current_organization_ids(p_permission text default null)
  returns uuid[]
  language plpgsql
  stable
  security definer
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_user_id uuid;
begin
  if v_kind = 'user' then
    v_user_id := rowgate_hidden.current_user_id();
    return array(
      select m.organization_id
      from rowgate.memberships m
      where m.user_id = v_user_id and m.deleted_at is null
        and (select o.deleted_at is null from rowgate.organizations o where o.id = m.organization_id)
        and (p_permission is null
          or exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
          or exists (select 1 from rowgate.organization_roles r
            where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null
              and p_permission = any (r.permissions))));
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$$;
