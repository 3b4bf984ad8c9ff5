--! Previous: sha1:efebdcd9c59e9b5f770f637076d30b481d2c41f0
--! Hash: sha1:5aa1614642c9c1fb087d635e1d80c1b3d5d0dc86
--! Message: A check predicts the escalation rule of removing a member

--! split: 001-a-check-predicts-the-removal-escalation-rule.sql
-- A check of members:remove predicts the escalation rule of SPEC §21 as the
-- request meets it: a user who lacks a permission of the member's role may not
-- remove that member (the memberships trigger refuses it). The rule depends on
-- the member's role only, not on a body, so the explanation must say it too.
create function rowgate_hidden.member_removal_denial(p_organization_id uuid, p_user_id uuid) returns text
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_role text;
begin
  -- only a user is limited (as the trigger), never about itself (leaving), only where it reaches
  if v_user_id is null or p_user_id is null or p_user_id = v_user_id
      or not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    return null;
  end if;
  select m.role into v_role from rowgate.memberships m
    where m.organization_id = p_organization_id and m.user_id = p_user_id and m.deleted_at is null;
  if v_role is not null and not coalesce(rowgate_private.role_permissions(p_organization_id, v_role), '{}')
      <@ rowgate_hidden.current_permissions(p_organization_id) then
    return 'You can''t change or remove a member whose role has permissions you don''t have';
  end if;
  return null;
end;
$$;
comment on function rowgate_hidden.member_removal_denial(uuid, uuid) is
  'Why the current user may not remove this member of an organization it reaches (SPEC §21''s escalation rule), or null.';
revoke all on function rowgate_hidden.member_removal_denial(uuid, uuid) from public;
grant execute on function rowgate_hidden.member_removal_denial(uuid, uuid)
  to rowgate_user, rowgate_organization, rowgate_analyst, rowgate_customer, rowgate_member;

create or replace function rowgate_hidden.check_operation(
  p_operation text, p_params jsonb, p_organization_id uuid, p_as_web_session boolean default false
) returns jsonb
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_op rowgate_hidden.operations;
  v_kind text := case when p_as_web_session then 'web_session' else rowgate_hidden.current_credential_kind() end;
  v_scopes text[] := coalesce(case when p_as_web_session then rowgate_hidden.web_session_scopes() else rowgate_hidden.current_scopes() end, '{}');
  v_held text[];
  v_organization_id uuid;
  v_found boolean := false;
  v_denial text;
  v_where text;
  v_has_organization boolean;
begin
  select o.* into v_op from rowgate_hidden.operations o where o.operation = p_operation;
  if v_op.operation is null then
    raise exception 'Unknown operation: %', p_operation using errcode = 'RG422', detail = 'operation';
  end if;
  v_held := array(select s from unnest(v_op.scopes) s where s = any (v_scopes));

  -- 1. authentication: an operation that reads a credential accepts only its kinds
  if cardinality(v_op.credentials) > 0 and not coalesce(v_kind = any (v_op.credentials), false) then
    return rowgate_hidden.check_answer(v_op, false, 401, 'Unauthorized', 'authentication', null, v_kind, v_held, null, null);
  end if;
  -- 2. scopes: any of the operation's
  if cardinality(v_op.scopes) > 0 and cardinality(v_held) = 0 then
    return rowgate_hidden.check_answer(v_op, false, 403, 'InsufficientScope', 'scope', null, v_kind, v_held, null, null);
  end if;

  -- 3. and 4. the resource and its organization, as the operation finds them
  case v_op.lookup
  when 'none' then
    v_found := true;
  when 'list' then
    v_found := p_organization_id is null or p_organization_id = any (rowgate_hidden.current_organization_ids());
    v_organization_id := p_organization_id;
  when 'target' then
    v_organization_id := coalesce(p_organization_id,
      case when rowgate_hidden.current_subject_kind() = 'organization' then rowgate_hidden.current_subject_id() end);
    v_found := v_organization_id = any (rowgate_hidden.current_organization_ids());
  when 'authorize' then
    select a.organization_id, a.denial into v_organization_id, v_denial
      from rowgate_hidden.authorize(v_op.resource, (p_params ->> (select k from jsonb_object_keys(v_op.match) k limit 1))::uuid, v_op.policy_key) a;
    v_found := v_organization_id is not null;
  when 'visible' then
    select string_agg(format('%I = ($1 ->> %L)::%s', m.value, m.key, format_type(a.atttypid, a.atttypmod)), ' and ')
      into v_where
      from jsonb_each_text(v_op.match) m
      join pg_attribute a on a.attrelid = format('rowgate.%I', v_op.resource)::regclass and a.attname = m.value;
    v_has_organization := exists (select from pg_attribute a
      where a.attrelid = format('rowgate.%I', v_op.resource)::regclass and a.attname = 'organization_id' and not a.attisdropped);
    execute format('select true, %s from rowgate.%I where %s and ($2::uuid is null or %s = $2) limit 1',
        case when v_has_organization then 'organization_id' else 'null::uuid' end, v_op.resource, v_where,
        case when v_has_organization then 'organization_id' else '$2' end)
      into v_found, v_organization_id using p_params, p_organization_id;
    v_found := coalesce(v_found, false);
  end case;
  if not v_found then
    return rowgate_hidden.check_answer(v_op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, v_held, null, null);
  end if;

  -- 5. the policy
  if v_op.policy_key = 'platform_admin' then
    v_denial := case when not rowgate_hidden.current_user_is_platform_admin() then 'Only platform admins can impersonate users' end;
  elsif v_op.lookup <> 'authorize' and v_op.policy_key is not null and v_organization_id is not null then
    v_denial := rowgate_hidden.policy_denial(v_organization_id, v_op.policy_key);
  end if;
  -- removing another member: the teams' escalation rule depends on that member's role, not on a body
  if v_denial is null and v_op.operation = 'members:remove' then
    v_denial := rowgate_hidden.member_removal_denial(v_organization_id, (p_params ->> 'user_id')::uuid);
  end if;
  if v_denial is not null then
    return rowgate_hidden.check_answer(v_op, false, 403, 'NotPermitted', 'policy', v_denial, v_kind, v_held, v_organization_id,
      rowgate_hidden.current_role_in(v_organization_id));
  end if;
  return rowgate_hidden.check_answer(v_op, true, v_op.status, null, null, null, v_kind, v_held, v_organization_id,
    rowgate_hidden.current_role_in(v_organization_id));
end;
$$;
