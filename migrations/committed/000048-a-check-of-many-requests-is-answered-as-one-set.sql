--! Previous: sha1:5aa1614642c9c1fb087d635e1d80c1b3d5d0dc86
--! Hash: sha1:1c56410d59de43296975c2903b262e46ee38fd4a
--! Message: A check of many requests is answered as one set

--! split: 001-resources-by-id.sql
-- A check of many requests finds the organizations of the resources it names by
-- their ids in one statement per resource; one resource's organization is the
-- same lookup of one id, so the list of resources is written once.
create or replace function rowgate_hidden.resource_organization_ids(p_resource text, p_ids uuid[])
  returns table (id uuid, organization_id uuid)
  language plpgsql
  stable
  security definer
  set search_path to pg_catalog, pg_temp
as $$
begin
  case p_resource
  when 'organization' then
    return query select o.id, o.id from rowgate.organizations o where o.id = any (p_ids) and o.deleted_at is null;
  when 'account' then
    return query select a.id, a.organization_id from rowgate.accounts a where a.id = any (p_ids) and a.deleted_at is null;
  when 'membership' then
    return query select m.id, m.organization_id from rowgate.memberships m where m.id = any (p_ids) and m.deleted_at is null;
  when 'organization_access_token' then
    return query select t.id, t.organization_id from rowgate.organization_access_tokens t where t.id = any (p_ids) and t.deleted_at is null;
  when 'product' then
    return query select p.id, p.organization_id from rowgate.products p where p.id = any (p_ids) and p.deleted_at is null;
  when 'customer' then
    return query select c.id, c.organization_id from rowgate.customers c where c.id = any (p_ids) and c.deleted_at is null;
  when 'order' then
    return query select o.id, o.organization_id from rowgate.orders o where o.id = any (p_ids);
  when 'payout_account' then
    return query select p.id, p.organization_id from rowgate.payout_accounts p where p.id = any (p_ids) and p.deleted_at is null;
  when 'webhook_endpoint' then
    return query select e.id, e.organization_id from rowgate.webhook_endpoints e where e.id = any (p_ids) and e.deleted_at is null;
  else
    null;
  end case;
end;
$$;
comment on function rowgate_hidden.resource_organization_ids(text, uuid[]) is
  'The organization of each live resource of a kind among p_ids, whether or not the subject reaches it.';
grant execute on function rowgate_hidden.resource_organization_ids(text, uuid[]) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

create or replace function rowgate_hidden.resource_organization_id(p_resource text, p_id uuid)
  returns uuid
  language sql
  stable
as $$
  select (select r.organization_id from rowgate_hidden.resource_organization_ids(p_resource, array[p_id]) r);
$$;

--! split: 002-checks-answered-as-a-set.sql
-- A check of many requests is answered as a set: the credential and its scopes are
-- read once, each resource's lookup is one statement for every item that asks for
-- it, and the policy and role of each organization are asked once. One request's
-- check (rowgate.check, the recorded denials, GraphQL) is a set of one, so every
-- interface explains with the same statement.

-- The answer's shape, built inline: a set of checks builds it once per item.
create or replace function rowgate_hidden.check_answer(p_op rowgate_hidden.operations, p_allowed boolean, p_status integer,
  p_error text, p_step text, p_reason text, p_credential_kind text, p_scopes text[], p_organization_id uuid, p_role text)
  returns jsonb
  language sql
  immutable
as $$
  select jsonb_build_object(
    'allowed', p_allowed, 'status', p_status, 'error', p_error, 'step', p_step, 'reason', p_reason,
    'basis', jsonb_build_object('credential_kind', p_credential_kind, 'scopes', to_jsonb(p_scopes), 'role', p_role,
      'permission', p_op.permission, 'policy', p_op.policy),
    'organization_id', p_organization_id);
$$;

-- Each item of a check with its operation, and the first of the steps 1 and 2 of SPEC §5 it fails.
create or replace function rowgate_hidden.check_items(p_checks jsonb, p_kind text, p_scopes text[])
  returns table (n bigint, op rowgate_hidden.operations, params jsonb, named uuid, step text, held text[])
  language sql
  stable
as $$
  select c.n, o, coalesce(c.value -> 'params', '{}'), (c.value ->> 'organization_id')::uuid,
    case
      -- 1. authentication: an operation that reads a credential accepts only its kinds
      when cardinality(o.credentials) > 0 and not coalesce(p_kind = any (o.credentials), false) then 'authentication'
      -- 2. scopes: any of the operation's
      when cardinality(o.scopes) > 0 and not (o.scopes && p_scopes) then 'scope'
    end,
    array(select s from unnest(o.scopes) s where s = any (p_scopes))
  from jsonb_array_elements(p_checks) with ordinality c(value, n)
    join rowgate_hidden.operations o on o.operation = c.value ->> 'operation';
$$;

create or replace function rowgate_hidden.check_batch(p_checks jsonb, p_as_web_session boolean default false)
  returns jsonb
  language plpgsql
  stable
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_kind text := case when p_as_web_session then 'web_session' else rowgate_hidden.current_credential_kind() end;
  v_scopes text[] := coalesce(case when p_as_web_session then rowgate_hidden.web_session_scopes() else rowgate_hidden.current_scopes() end, '{}');
  v_unknown record;
  v_lookup record;
  v_where text;
  v_has_organization boolean;
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
    v_has_organization := exists (select from pg_attribute a
      where a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = 'organization_id' and not a.attisdropped);
    execute format(
        'select coalesce(jsonb_object_agg(i.n, x.organization_id), ''{}'')
         from jsonb_to_recordset($1) i(n bigint, params jsonb, organization_id uuid)
           cross join lateral (select %s as organization_id from rowgate.%I r
             where %s and (i.organization_id is null or %s = i.organization_id) limit 1) x',
        case when v_has_organization then 'r.organization_id' else 'null::uuid' end, v_lookup.resource, v_where,
        case when v_has_organization then 'r.organization_id' else 'i.organization_id' end)
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
      cross join lateral rowgate_hidden.resource_organization_ids(g.resource, g.ids) r
    where r.organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
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
$$;
comment on function rowgate_hidden.check_batch(jsonb, boolean) is
  'What each request of p_checks ([{operation, params, organization_id}]) would answer for the current subject (SPEC §20), in their order, each with the organization it concerns; as for a web session when p_as_web_session.';

--! split: 003-one-statement-for-every-interface.sql
-- One request's check, a check of many and an organization's permissions are the
-- same set of checks, so each is answered by rowgate_hidden.check_batch.

create or replace function rowgate_hidden.check_operation(p_operation text, p_params jsonb, p_organization_id uuid,
  p_as_web_session boolean default false)
  returns jsonb
  language sql
  stable
  set search_path to pg_catalog, pg_temp
as $$
  select rowgate_hidden.check_batch(jsonb_build_array(jsonb_build_object('operation', p_operation, 'params', p_params,
    'organization_id', p_organization_id)), p_as_web_session) -> 0;
$$;

create or replace function rowgate_hidden.check_operations(p_checks jsonb, p_user_id uuid default null)
  returns jsonb
  language plpgsql
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_may boolean;
  v_first jsonb;
  -- the items asked about another user that the caller may ask (SPEC §20), by their place
  v_asked bigint[];
  v_second jsonb;
  v_saved text[];
begin
  if p_user_id is null then
    return coalesce((select jsonb_agg(a.value - 'organization_id' order by a.n)
      from jsonb_array_elements(rowgate_hidden.check_batch(p_checks)) with ordinality a(value, n)), '[]');
  end if;
  v_may := rowgate_hidden.current_subject_kind() = 'user' and rowgate_hidden.has_scope('members_read');
  v_first := rowgate_hidden.check_batch(p_checks, true);
  select array_agg(a.n order by a.n) into v_asked
    from jsonb_array_elements(v_first) with ordinality a(value, n)
    where v_may and a.value ->> 'organization_id' is not null and (a.value ->> 'status')::int <> 404
      and rowgate_hidden.has_permission((a.value ->> 'organization_id')::uuid, 'members:manage')
      and exists (select from rowgate.memberships m
        where m.organization_id = (a.value ->> 'organization_id')::uuid and m.user_id = p_user_id);
  if v_asked is not null then
    v_saved := rowgate_hidden.become_web_session(p_user_id);
    v_second := rowgate_hidden.check_batch((select jsonb_agg(p_checks -> (s.n - 1)::int order by s.n) from unnest(v_asked) s(n)), true);
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return (
    select jsonb_agg(
        case when s.k is not null then (v_second -> (s.k - 1)::int) - 'organization_id'
        else jsonb_build_object('allowed', false, 'status', 404, 'error', 'ResourceNotFound', 'step', 'resource', 'reason', null,
          'basis', jsonb_build_object('credential_kind', 'web_session', 'scopes', '[]'::jsonb, 'role', null,
            'permission', o.permission, 'policy', o.policy))
        end order by c.n)
    from jsonb_array_elements(p_checks) with ordinality c(value, n)
      left join unnest(v_asked) with ordinality s(n, k) on s.n = c.n
      left join rowgate_hidden.operations o on o.operation = c.value ->> 'operation');
end;
$$;

create or replace function rowgate_hidden.organization_permissions(p_organization_id uuid, p_user_id uuid default null)
  returns jsonb
  language plpgsql
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_saved text[];
  v_checks jsonb;
  v_answer jsonb;
begin
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    return null;
  end if;
  if p_user_id is not null then
    if not (rowgate_hidden.current_subject_kind() = 'user' and rowgate_hidden.has_scope('members_read')
        and rowgate_hidden.has_permission(p_organization_id, 'members:manage')
        and exists (select from rowgate.memberships m
          where m.organization_id = p_organization_id and m.user_id = p_user_id)) then
      return null;
    end if;
    v_saved := rowgate_hidden.become_web_session(p_user_id);
  end if;
  -- every operation that takes an organization, asked in this one
  select jsonb_agg(jsonb_build_object('operation', o.operation,
      'params', case when o.lookup = 'authorize' then jsonb_build_object('id', p_organization_id) else '{}' end,
      'organization_id', p_organization_id) order by o.operation)
    into v_checks
    from rowgate_hidden.operations o
    where o.lookup in ('list', 'target') or (o.lookup = 'authorize' and o.resource = 'organization');
  select jsonb_build_object(
      'organization_id', p_organization_id,
      'user_id', rowgate_hidden.current_user_id(),
      'role', rowgate_hidden.current_role_in(p_organization_id),
      'permissions', coalesce((select jsonb_agg(p.name order by p.name) from rowgate.permissions p
        where rowgate_hidden.has_permission(p_organization_id, p.name)), '[]'),
      'operations', coalesce((
        select jsonb_agg(jsonb_build_object('operation', c.value ->> 'operation', 'allowed', a.value -> 'allowed',
            'status', a.value -> 'status', 'reason', a.value -> 'reason') order by c.n)
        from jsonb_array_elements(v_checks) with ordinality c(value, n)
          join jsonb_array_elements(rowgate_hidden.check_batch(coalesce(v_checks, '[]'), p_user_id is not null))
            with ordinality a(value, n) on a.n = c.n), '[]'))
    into v_answer;
  if v_saved is not null then
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return v_answer;
end;
$$;

-- the roles that ask one request's check ask the set
grant execute on function rowgate_hidden.check_items(jsonb, text, text[]) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
grant execute on function rowgate_hidden.check_batch(jsonb, boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
