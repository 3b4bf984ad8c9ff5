--! Previous: sha1:c0410d18661feeff078cc857e2e5b945a35c9b12
--! Hash: sha1:8ba3a3856dbf35b3d877d8d5d073dcd082096d8f
--! Message: GraphQL totalCount from the row counters: rowgate_hidden.visible_row_count answers from them when they count exactly what the select policies show the role, null otherwise

--! split: 001-visible-row-count.sql
-- Issue 12: GraphQL's `totalCount` of a connection over every row a subject
-- may see (`allOrders`, `allCustomers` with no condition) ran `count(*)` over
-- the visible rows, where REST's lists sum the trigger-kept per-organization
-- counters (migration 000011, src/resources/lists.ts). This function answers
-- with those counters when they count exactly the rows the table's select
-- policies let the current role see, and with null otherwise (the caller then
-- counts): the rule of who sees what stays here, next to the policies, which
-- it restates.
--
-- - rowgate_customer and rowgate_member also see their own rows through a
--   second policy (select_own, select_self): null;
-- - the member policy: the organizations of current_organization_ids() and the
--   credential's read scope, as organization_row_count reads them; without the
--   scope no row is visible, and null leaves that to the count.
--
-- Security invoker: current_user and the scopes are the transaction's.
create or replace function rowgate_hidden.visible_row_count(p_resource text) returns bigint
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
declare
  v_scope text := case p_resource when 'orders' then 'orders_read' when 'customers' then 'customers_read' end;
begin
  if v_scope is null or current_user not in ('rowgate_user', 'rowgate_organization') or not rowgate_hidden.has_scope(v_scope) then
    return null;
  end if;
  return rowgate_hidden.organization_row_count(p_resource, rowgate_hidden.current_organization_ids());
end;
$$;
comment on function rowgate_hidden.visible_row_count(text) is
  E'@behavior -*\nThe rows of rowgate.<resource> (orders, customers) the current role sees, from the row counters; null when the counters cannot say.';
revoke execute on function rowgate_hidden.visible_row_count(text) from public;
grant execute on function rowgate_hidden.visible_row_count(text) to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;
