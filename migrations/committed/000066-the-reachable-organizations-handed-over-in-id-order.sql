--! Previous: sha1:b56a1c610a88fdd7cf960fb918146679f5882a6c
--! Hash: sha1:658c191fa464d5a85ca9dad6fb6dcae947c37433
--! Message: The reachable organizations handed over in id order

--! split: 001-reachable-organizations-sorted.sql
-- A lookup by organization over many organizations (a per-organization list's lateral scans, an
-- export's chunks) rescans an index once per organization with this array as one of its keys, and
-- every rescan sorts the array again: handed over sorted, that sort only confirms the order. A lock
-- waited for past 2 s fails the migration, which is run again.
set local lock_timeout = '2s';

create or replace function rowgate_hidden.current_organization_ids(p_permission text DEFAULT NULL::text)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_user_id uuid;
  v_kept uuid[];
begin
  if v_kind = 'user' then
    v_user_id := rowgate_hidden.current_user_id();
    -- only a personal access token may be kept: other credentials skip the lookup (a setting
    -- read by hand can only narrow what this returns, never widen it)
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    return array(
      select m.organization_id
      from rowgate.memberships m
      where m.user_id = v_user_id and m.deleted_at is null
        and (v_kept is null or m.organization_id = any (v_kept))
        and (select o.deleted_at is null from rowgate.organizations o where o.id = m.organization_id)
        and (p_permission is null
          or exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
          or exists (select 1 from rowgate.organization_roles r
            where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null
              and p_permission = any (r.permissions)))
      order by m.organization_id);
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$function$;
comment on function rowgate_hidden.current_organization_ids(text) is 'The organizations the current subject reaches, in id order; with a permission, a User''s only where its role grants it (Organization subjects bypass the filter).';
