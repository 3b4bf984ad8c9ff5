--! Previous: sha1:03069f61046cc4908dc92100e76ea9cd859229aa
--! Hash: sha1:28372eb9f391481daa134eb639139e57c6962c9d
--! Message: The orders in the list's order, indexed concurrently for exports

--! no-transaction
-- An export of a caller whose organizations hold a large share of the orders reads them in the
-- list's default order, (created_at, id) descending, from one index rather than merging every
-- organization's rows chunk after chunk; the organization, last, lets the scan skip the rows of
-- organizations out of reach inside the index. Partial on a condition every id meets but only
-- that export states (`id >= nil`): a partial index serves only statements whose conditions imply
-- its predicate, so no other statement's plan turns to it (an estimate of a cursor's range made
-- from created_at alone, wrong when many rows share one instant, would otherwise draw a
-- per-organization scan onto it). Built without blocking the orders' writes.
create index concurrently if not exists orders_in_order on rowgate.orders (created_at, id, organization_id)
  where id >= '00000000-0000-0000-0000-000000000000';
