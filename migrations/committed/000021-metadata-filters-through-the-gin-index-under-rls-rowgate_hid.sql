--! Previous: sha1:18f493fa47dcd19f4570728cb1f55d7fba58f5bf
--! Hash: sha1:220caa4588d857e1b66ab0ebe79c524544caa58e
--! Message: Metadata filters through the GIN index under RLS: rowgate_hidden.metadata_ids finds the matching ids past RLS within the subject's organizations and read scope, null past 500 of them or below 5,000 visible rows

--! split: 001-metadata-ids.sql
-- Issue 17: a metadata filter (`metadata[<key>]=<value>`, SPEC §18) must use the
-- GIN indexes of migration 000014 for a subject under row-level security. Under
-- RLS PostgreSQL applies the policy's quals before any qual that is not
-- leakproof, and `jsonb @>` (jsonb_contains) is not: the list read every row of
-- the subject's organizations and tested its metadata (an admin of 50
-- organizations looking one order up by its ERP id: all 25,000 of their orders).
--
-- This function finds the rows past RLS, the way customer_ids_by_external_id
-- does for external ids: the ids of the table's rows whose metadata matches, in
-- the organizations of current_organization_ids() (the select policies of these
-- five tables use it without a permission), live where the policy wants them
-- live (products, customers, seats), and only when the credential carries the
-- table's read scope (as the policy). The list statement (src/resources/
-- list-statement.ts) narrows its rows to these ids with `id = any(…)` and still
-- applies the metadata filter and the policies itself: the function can only
-- narrow what a subject sees, never widen it.
--
-- p_filter is the filter as JSON documents, one array per key:
-- `[[{"erp_id": "INV-1"}, {"erp_id": 1}], [{"channel": "web"}]]` is
-- (erp_id is "INV-1" or 1) and channel is "web" (a repeated key: any of its
-- values; several keys: all of them). Each key is one `metadata @> any(…)`: a
-- GIN bitmap scan takes `@> any` with a constant array (one index search per
-- document), several keys a BitmapAnd. The statement is planned on each call
-- (EXECUTE) with the documents as constants, so the planner sees how common the
-- values are.
--
-- A common value would make the array long and the `id = any(…)` that follows
-- slower than the scan it replaces: past p_limit matching rows (default 500,
-- measured in docs/performance.md) it returns null, and the list falls back to
-- testing the metadata of the subject's rows. It also answers null when the
-- subject sees fewer than p_min_rows rows of the table (default 5,000, from
-- the row counters of 000011): such a scan costs a few milliseconds, where a
-- value common across all tenants makes the GIN index read a long posting list
-- (a user of 3 organizations, 168 matches of its 1,500 orders: 2.5 ms scanning,
-- 14 ms through the index). `enable_seqscan = off`: with the
-- LIMIT, a common value made the planner choose a sequential scan of the whole
-- table (expecting p_limit matches early; 21-195 ms measured at 1M orders); off,
-- it chooses between the GIN index and the organizations' index (0.9 ms for a
-- value on half of an admin's 25,000 orders).
create or replace function rowgate_hidden.metadata_ids(p_table text, p_filter jsonb, p_limit integer default 500, p_min_rows bigint default 5000) returns uuid[]
language plpgsql stable security definer set search_path = pg_catalog, pg_temp set enable_seqscan = off as $$
declare
  v_scope text;
  v_live text;
  v_conditions text := '';
  v_group jsonb;
  v_ids uuid[];
  v_organization_ids uuid[] := rowgate_hidden.current_organization_ids();
begin
  case p_table
    when 'products' then v_scope := 'products_read'; v_live := ' and t.deleted_at is null';
    when 'customers' then v_scope := 'customers_read'; v_live := ' and t.deleted_at is null';
    when 'customer_members' then v_scope := 'customers_read'; v_live := ' and t.deleted_at is null';
    when 'orders' then v_scope := 'orders_read'; v_live := '';
    when 'refunds' then v_scope := 'refunds_read'; v_live := '';
    else raise exception 'No metadata filter on %', p_table using errcode = '22023';
  end case;
  if jsonb_typeof(p_filter) is distinct from 'array' or jsonb_array_length(p_filter) = 0 then
    raise exception 'The metadata filter is an array of arrays of documents' using errcode = '22023';
  end if;
  if not rowgate_hidden.has_scope(v_scope) then
    return '{}';
  end if;
  if rowgate_hidden.organization_row_count(p_table, v_organization_ids) < p_min_rows then
    return null;
  end if;
  for v_group in select g from jsonb_array_elements(p_filter) g loop
    v_conditions := v_conditions || format(' and t.metadata @> any (%L::jsonb[])',
      array(select d from jsonb_array_elements(v_group) d));
  end loop;
  execute format('select array(select t.id from rowgate.%I t where t.organization_id = any ($1)%s%s limit $2)',
      p_table, v_live, v_conditions)
    into v_ids using v_organization_ids, p_limit + 1;
  return case when cardinality(v_ids) > p_limit then null else v_ids end;
end;
$$;
comment on function rowgate_hidden.metadata_ids(text, jsonb, integer, bigint) is 'The ids of the rows of a table with metadata that match a metadata filter (one array of documents per key), within the subject''s organizations and read scope; null past p_limit of them, or when the subject sees fewer than p_min_rows rows (a scan is then cheap).';
grant execute on function rowgate_hidden.metadata_ids(text, jsonb, integer, bigint) to rowgate_user, rowgate_organization;
