--! Previous: sha1:14c9bfee224237c7d58f2f3242efca2f4835cb1d
--! Hash: sha1:26091b552c0e0dc6ffd6190ecf127bf7986a9b7c
--! Message: A mailbox's sign-in codes by origin, indexed concurrently

--! no-transaction
-- A mailbox's sign-in codes of the last hour, by origin (rowgate.request_login_code's cap of 10 an
-- hour per origin). Built without blocking the sign-in requests that write the codes.
create index concurrently if not exists login_codes_mailbox on rowgate_private.login_codes (email, origin, created_at) where mailed;
