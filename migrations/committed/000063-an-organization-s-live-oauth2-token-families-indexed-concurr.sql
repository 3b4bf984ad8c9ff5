--! Previous: sha1:de3aaf4b3b6b433308888a8f47031019294d77ab
--! Hash: sha1:b0ee7d008399766c89598e23a213bd1c149ad68d
--! Message: An organization's live OAuth2 token families, indexed concurrently

--! no-transaction
-- An organization's OAuth2 grants (SPEC §25) are its live token families: its token managers
-- list and revoke them by organization. Built without blocking the families' writes.
create index concurrently if not exists oauth2_token_families_organization_id on rowgate_private.oauth2_token_families (organization_id) where revoked_at is null and organization_id is not null;
