--! Previous: sha1:00b2fe2f6a5fad5e38c98872c0d81cff8d4ff95e
--! Hash: sha1:804189ad06d52d86a4c874720252d77e815e4faf
--! Message: A user's live OAuth2 token families, indexed concurrently

--! no-transaction
-- A user's authorized apps are its live OAuth2 token families (SPEC §25): the list and the
-- revocation find them by user. Built without blocking the families' writes: every OAuth2
-- grant and refresh writes them.
create index concurrently if not exists oauth2_token_families_user_id on rowgate_private.oauth2_token_families (user_id) where revoked_at is null;
