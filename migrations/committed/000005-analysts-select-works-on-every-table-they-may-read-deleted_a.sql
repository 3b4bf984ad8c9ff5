--! Previous: sha1:5c7b9b33346ba21781ec4fb8d5e1f641cd7d2a81
--! Hash: sha1:dc1b8176405238e094cdad8962cfaa85c31ec99d
--! Message: Analysts: select * works on every table they may read (deleted_at granted)

-- Issue 15, item 4 (SPEC §15): `select * from rowgate.<table>` works for an
-- analyst on every table it may read. Column grants that left out deleted_at
-- made it fail with "permission denied for table" (LESSONS), the first query
-- most analysts type; rowgate.users got the column in migration 000003. The
-- select policies of these tables show live rows only, so the column reads
-- null: the analyst sees every column and learns nothing more. Only analysts
-- get it: the API roles name their columns, and GraphQL publishes no deleted_at.
grant select (deleted_at) on rowgate.organizations to rowgate_analyst;
grant select (deleted_at) on rowgate.memberships to rowgate_analyst;
grant select (deleted_at) on rowgate.accounts to rowgate_analyst;
grant select (deleted_at) on rowgate.products to rowgate_analyst;
grant select (deleted_at) on rowgate.customers to rowgate_analyst;
grant select (deleted_at) on rowgate.customer_members to rowgate_analyst;
grant select (deleted_at) on rowgate.payout_accounts to rowgate_analyst;
