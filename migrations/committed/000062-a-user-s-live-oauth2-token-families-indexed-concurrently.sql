--! Previous: sha1:64c1d21690941e35c4fe96a23ebc916e71441c50
--! Hash: sha1:de3aaf4b3b6b433308888a8f47031019294d77ab
--! Message: A user's live OAuth2 token families, indexed concurrently

--! no-transaction
-- A user's authorized apps are its live OAuth2 token families (SPEC §25): the list and the
-- revocation find them by user. Built without blocking the families' writes: every OAuth2
-- grant and refresh writes them.
create index concurrently if not exists oauth2_token_families_user_id on rowgate_private.oauth2_token_families (user_id) where revoked_at is null;
