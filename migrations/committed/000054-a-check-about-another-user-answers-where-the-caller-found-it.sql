--! Previous: sha1:2b4b44e767b06d12bd70509880ef125b417cae7d
--! Hash: sha1:a4b9bca68e899a2ec55d14b21a47438bc5214a49
--! Message: A check about another user answers where the caller found it

--! split: 001-another-user-asked-where-the-caller-found-it.sql
-- Asking about another user (SPEC §20's user_id) answers only for the organization
-- the caller found each item in: the user's own look at the item is pinned to it,
-- so a customer known by an external id that another of the user's organizations
-- also uses is never found there, and the user's role in an organization the caller
-- does not reach is never told. Every 404 of that answer has one shape.

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
$$;

-- The resources' organizations whoever asks, reached or not, are for the owner's
-- functions only: every role asks through the reached lookups.
revoke execute on function rowgate_hidden.resource_organization_ids(text, uuid[]) from rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
revoke execute on function rowgate_hidden.resource_organization_id(text, uuid) from rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- The subject's organizations, read once rather than once per resource.
create or replace function rowgate_hidden.reachable_resource_organization_ids(p_resource text, p_ids uuid[])
  returns table (id uuid, organization_id uuid)
  language plpgsql
  stable
  security definer
  set search_path to pg_catalog, pg_temp
as $$
declare
  v_reached uuid[] := rowgate_hidden.current_organization_ids();
begin
  return query
    select r.id, r.organization_id from rowgate_hidden.resource_organization_ids(p_resource, p_ids) r
    where r.organization_id = any (v_reached);
end;
$$;
