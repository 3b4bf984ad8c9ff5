--! Previous: sha1:804189ad06d52d86a4c874720252d77e815e4faf
--! Hash: sha1:0c9badee2424d66d975f6afe65efb56c49a9446e
--! Message: An organization's live OAuth2 token families, indexed concurrently

--! no-transaction
-- An organization's OAuth2 grants (SPEC §25) are its live token families: its token managers
-- list and revoke them by organization. Built without blocking the families' writes.
create index concurrently if not exists oauth2_token_families_organization_id on rowgate_private.oauth2_token_families (organization_id) where revoked_at is null and organization_id is not null;
