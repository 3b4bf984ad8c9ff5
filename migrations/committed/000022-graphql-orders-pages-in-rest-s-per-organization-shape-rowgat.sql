--! Previous: sha1:220caa4588d857e1b66ab0ebe79c524544caa58e
--! Hash: sha1:058b8414d50c3085aa8ba9342f044a527e8cc732
--! Message: GraphQL orders pages in REST's per-organization shape: rowgate_hidden.visible_by_organization says when a role's visible rows are exactly its organizations' (for the page and the counters)

--! split: 001-visible-by-organization.sql
-- Issue 12: GraphQL's root connection over orders takes REST's page shape
-- (each reachable organization's first rows from its index, merged:
-- src/graphql/organization-pages.ts) where that shape is exact, that is when
-- the rows the current role sees of a table are exactly the rows of
-- current_organization_ids(). visible_row_count (migration 000019) decided
-- that inline for the row counters; this function says it once, for both,
-- next to the policies it restates:
--
-- - rowgate_customer and rowgate_member also see their own rows through a
--   second policy (select_own, select_self): false;
-- - the member policy: the organizations of current_organization_ids() and the
--   credential's read scope; without the scope no row is visible, and false
--   leaves that to the policies.
--
-- Security invoker: current_user and the scopes are the transaction's.
create or replace function rowgate_hidden.visible_by_organization(p_resource text) returns boolean
language sql stable set search_path = pg_catalog, pg_temp as $$
  select current_user in ('rowgate_user', 'rowgate_organization')
    and coalesce(rowgate_hidden.has_scope(case p_resource when 'orders' then 'orders_read' when 'customers' then 'customers_read' end), false);
$$;
comment on function rowgate_hidden.visible_by_organization(text) is
  E'@behavior -*\nAre the rows of rowgate.<resource> (orders, customers) the current role sees exactly those of current_organization_ids()?';
revoke execute on function rowgate_hidden.visible_by_organization(text) from public;
grant execute on function rowgate_hidden.visible_by_organization(text) to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;

create or replace function rowgate_hidden.visible_row_count(p_resource text) returns bigint
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
begin
  if not rowgate_hidden.visible_by_organization(p_resource) then
    return null;
  end if;
  return rowgate_hidden.organization_row_count(p_resource, rowgate_hidden.current_organization_ids());
end;
$$;
