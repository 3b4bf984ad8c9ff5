--! Previous: sha1:b0ee7d008399766c89598e23a213bd1c149ad68d
--! Hash: sha1:91e98ce063c11ff71a9a3941cee3657e4fa22f53
--! Message: A request log row's denial, indexed concurrently

--! no-transaction
-- A request log row shows its recorded denial (SPEC §25), found by the row's id. Built without
-- blocking the denial log's writes: every refused request may write it.
create index concurrently if not exists denials_request_log on rowgate.denials (request_log_id) where request_log_id is not null;
