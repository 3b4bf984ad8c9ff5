-- A check answers what its request answers (SPEC §20), restated for three of its lookups:
-- - a looked-up organization is its own organization, so a check of `organizations:get` (or of
--   leaving) by a member finds it, names the member's role, and a check about a member asks there;
-- - `invitee`: accepting or declining an invitation is found only when the invitation is the
--   caller's (rowgate_hidden.invitee_invitation_found), as the request finds it (404 otherwise).
create or replace function rowgate_hidden.check_batch(p_checks jsonb, p_as_web_session boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := case when p_as_web_session then 'web_session' else rowgate_hidden.current_credential_kind() end;
  v_scopes text[] := coalesce(case when p_as_web_session then rowgate_hidden.web_session_scopes() else rowgate_hidden.current_scopes() end, '{}');
  v_unknown record;
  v_lookup record;
  v_where text;
  -- the column of a looked-up row that names its organization: an organization is its own
  v_organization_column text;
  v_rows jsonb;
  -- the items a resource lookup found, by their place: the resource's organization (null when it has none)
  v_found jsonb := '{}';
  v_answers jsonb;
  -- an Organization subject's creates are in its own organization
  v_subject_organization_id uuid := case when rowgate_hidden.current_subject_kind() = 'organization'
    then rowgate_hidden.current_subject_id() end;
  v_platform_admin boolean;
begin
  select c.value ->> 'operation' as operation into v_unknown
    from jsonb_array_elements(p_checks) c
    where not exists (select from rowgate_hidden.operations o where o.operation = c.value ->> 'operation')
    limit 1;
  if found then
    raise exception 'Unknown operation: %', v_unknown.operation using errcode = 'RG422', detail = 'operation';
  end if;

  -- 3. the resources found by their columns: one statement per resource for every item past the scope step
  for v_lookup in
    select (i.op).resource, (i.op).match,
        jsonb_agg(jsonb_build_object('n', i.n, 'params', i.params, 'organization_id', i.named)) as items
      from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).lookup = 'visible'
      group by (i.op).resource, (i.op).match
  loop
    select string_agg(format('r.%I = (i.params ->> %L)::%s', m.value, m.key, format_type(a.atttypid, a.atttypmod)), ' and ')
      into v_where
      from jsonb_each_text(v_lookup.match) m
      join pg_attribute a on a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = m.value;
    v_organization_column := case
      when v_lookup.resource = 'organizations' then 'id'
      when exists (select from pg_attribute a
        where a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = 'organization_id' and not a.attisdropped)
        then 'organization_id'
    end;
    execute format(
        'select coalesce(jsonb_object_agg(i.n, x.organization_id), ''{}'')
         from jsonb_to_recordset($1) i(n bigint, params jsonb, organization_id uuid)
           cross join lateral (select %s as organization_id from rowgate.%I r
             where %s and (i.organization_id is null or %s = i.organization_id) limit 1) x',
        coalesce('r.' || quote_ident(v_organization_column), 'null::uuid'), v_lookup.resource, v_where,
        coalesce('r.' || quote_ident(v_organization_column), 'i.organization_id'))
      into v_rows using v_lookup.items;
    v_found := v_found || v_rows;
  end loop;

  -- asked only where an item reaches the policy step: only the User roles may ask it
  if exists (select from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).policy_key = 'platform_admin') then
    v_platform_admin := rowgate_hidden.current_user_is_platform_admin();
  end if;

  with items as materialized (
    select i.*, case when i.step is null and (i.op).lookup = 'authorize'
        then (i.params ->> (select k from jsonb_object_keys((i.op).match) k limit 1))::uuid end as target_id
    from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
  ), authorized as materialized (
    -- the organizations of the resources named by their id, reached by the subject: one statement per resource
    select g.resource, r.id, r.organization_id
    from (select (i.op).resource, array_agg(i.target_id) as ids from items i where i.target_id is not null group by (i.op).resource) g
      cross join lateral rowgate_hidden.reachable_resource_organization_ids(g.resource, g.ids) r
  ), resolved as materialized (
    -- 3. and 4. the resource and its organization, as each operation finds them
    select i.n, i.op, i.params, i.step, i.held, null::boolean as found, null::uuid as organization_id
    from items i
    where i.step is not null
    union all
    select i.n, i.op, i.params, i.step, i.held,
      case (i.op).lookup
        when 'none' then true
        when 'list' then i.named is null or i.named = any ((select rowgate_hidden.current_organization_ids())::uuid[])
        when 'target' then coalesce(coalesce(i.named, v_subject_organization_id) = any ((select rowgate_hidden.current_organization_ids())::uuid[]), false)
        when 'visible' then v_found ? i.n::text
        -- an invitation is found only by its invitee, and concerns no organization the caller reaches
        when 'invitee' then rowgate_hidden.invitee_invitation_found((i.params ->> 'id')::uuid)
      end,
      case (i.op).lookup
        when 'list' then i.named
        when 'target' then coalesce(i.named, v_subject_organization_id)
        when 'visible' then (v_found ->> i.n::text)::uuid
      end
    from items i
    where i.step is null and (i.op).lookup <> 'authorize'
    union all
    select i.n, i.op, i.params, i.step, i.held, a.organization_id is not null, a.organization_id
    from items i
      left join authorized a on a.resource = (i.op).resource and a.id = i.target_id
    where i.step is null and (i.op).lookup = 'authorize'
  ), organizations as materialized (
    -- each organization's role once, and each of its policies once
    select o.organization_id, rowgate_hidden.current_role_in(o.organization_id) as role
    from (select distinct x.organization_id from resolved x where x.found and x.organization_id is not null) o
  ), policies as materialized (
    select p.organization_id, p.policy_key, rowgate_hidden.policy_denial(p.organization_id, p.policy_key) as denial
    from (select distinct x.organization_id, (x.op).policy_key from resolved x
      where x.found and x.organization_id is not null and (x.op).policy_key is not null and (x.op).policy_key <> 'platform_admin') p
  )
  select coalesce(jsonb_agg(
      case
        when x.step is not null then rowgate_hidden.check_answer(x.op, false, case x.step when 'authentication' then 401 else 403 end,
          case x.step when 'authentication' then 'Unauthorized' else 'InsufficientScope' end, x.step, null, v_kind, x.held, null, null)
        when not x.found then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        when d.denial is not null then rowgate_hidden.check_answer(x.op, false, 403, 'NotPermitted', 'policy', d.denial, v_kind, x.held,
          x.organization_id, o.role)
        -- an organization's account is the one resource found after its organization's policy
        when (x.op).operation = 'organizations:get_account' and not rowgate_hidden.organization_account_exists(x.organization_id)
          then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        else rowgate_hidden.check_answer(x.op, true, (x.op).status, null, null, null, v_kind, x.held, x.organization_id, o.role)
      end order by x.n), '[]')
    into v_answers
  from resolved x
    left join organizations o on o.organization_id = x.organization_id
    left join policies p on p.organization_id = x.organization_id and p.policy_key = (x.op).policy_key
    -- 5. the policy; removing another member also depends on that member's role (SPEC §21), not on a body
    cross join lateral (
      select coalesce(
        case
          when x.step is not null or not x.found then null
          when (x.op).policy_key = 'platform_admin' then
            case when not v_platform_admin then 'Only platform admins can impersonate users' end
          else p.denial
        end,
        case when x.step is null and x.found and (x.op).operation = 'members:remove'
          then rowgate_hidden.member_removal_denial(x.organization_id, (x.params ->> 'user_id')::uuid) end) as denial
    ) d;
  return v_answers;
end;
$function$;
comment on function rowgate_hidden.check_batch(jsonb,boolean) is 'What each request of p_checks ([{operation, params, organization_id}]) would answer for the current subject (SPEC §20), in their order, each with the organization it concerns; as for a web session when p_as_web_session.';
grant execute on function rowgate_hidden.check_batch(jsonb,boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
