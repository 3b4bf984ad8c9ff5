--! Previous: sha1:0c9badee2424d66d975f6afe65efb56c49a9446e
--! Hash: sha1:86a6d5604c12558cf04606e668cddca015f0e4de
--! Message: A request log row's denial, indexed concurrently

--! no-transaction
-- A request log row shows its recorded denial (SPEC §25), found by the row's id. Built without
-- blocking the denial log's writes: every refused request may write it.
create index concurrently if not exists denials_request_log on rowgate.denials (request_log_id) where request_log_id is not null;
