--! Previous: sha1:cd7c75de8389f55fe35664c267f14b9e7e8e0b6e
--! Hash: sha1:14c9bfee224237c7d58f2f3242efca2f4835cb1d
--! Message: The mail outbox's due messages, indexed concurrently

--! no-transaction
-- The mail sender's look at what is due reads the messages still sealed (not yet sent or given
-- up) by when they are due. Built without blocking the outbox's writes: sign-in requests write it.
create index concurrently if not exists mail_outbox_due on rowgate_private.mail_outbox (due_at) where sealed_body is not null;
