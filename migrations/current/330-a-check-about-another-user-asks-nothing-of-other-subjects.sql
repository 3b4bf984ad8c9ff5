-- A check about another user (SPEC §20) is for a User subject whose credential holds
-- `members_read`; with any other credential (an organization token, a customer or member
-- session) each item answers 404, and nothing is looked up for it: its role may read none of
-- what the caller's look reads, so looking was a 5xx.
create or replace function rowgate_hidden.check_operations(p_checks jsonb, p_user_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
  -- any other subject may not ask: nothing is looked up for it (its role reads no user's data), every item is a 404
  if v_may then
    v_first := rowgate_hidden.check_batch(p_checks, true);
    select array_agg(a.n order by a.n) into v_asked
      from jsonb_array_elements(v_first) with ordinality a(value, n)
      where a.value ->> 'organization_id' is not null and (a.value ->> 'status')::int <> 404
        and rowgate_hidden.has_permission((a.value ->> 'organization_id')::uuid, 'members:manage')
        and exists (select from rowgate.memberships m
          where m.organization_id = (a.value ->> 'organization_id')::uuid and m.user_id = p_user_id);
  end if;
  if v_asked is not null then
    v_saved := rowgate_hidden.become_web_session(p_user_id);
    -- each item asked in the organization the caller's own look found, and nowhere else: a resource
    -- named by a column unique only within an organization must not be found in another of the user's
    v_second := rowgate_hidden.check_batch((
      select jsonb_agg(jsonb_set(p_checks -> (s.n - 1)::int, '{organization_id}', v_first -> (s.n - 1)::int -> 'organization_id')
        order by s.n)
      from unnest(v_asked) s(n)), true);
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return (
    select jsonb_agg(
        case when s.k is not null
            and (v_second -> (s.k - 1)::int ->> 'organization_id') is not distinct from (v_first -> (c.n - 1)::int ->> 'organization_id')
            and (v_second -> (s.k - 1)::int ->> 'status')::int <> 404
          then (v_second -> (s.k - 1)::int) - 'organization_id'
        -- every 404 alike: the one the user's own look would answer
        else rowgate_hidden.check_answer(o, false, 404, 'ResourceNotFound', 'resource', null, 'web_session',
          array(select x from unnest(o.scopes) x where x = any (rowgate_hidden.web_session_scopes())), null, null) - 'organization_id'
        end order by c.n)
    from jsonb_array_elements(p_checks) with ordinality c(value, n)
      left join unnest(v_asked) with ordinality s(n, k) on s.n = c.n
      left join rowgate_hidden.operations o on o.operation = c.value ->> 'operation');
end;
$function$;
grant execute on function rowgate_hidden.check_operations(jsonb,uuid) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
