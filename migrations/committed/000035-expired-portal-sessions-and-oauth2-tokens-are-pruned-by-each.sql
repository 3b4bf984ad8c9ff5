--! Previous: sha1:15051564a76a57f17652ce4aa85c2b62112a430e
--! Hash: sha1:41f8e78034fa727aa77afc43557e34203e9a81f1
--! Message: Expired portal sessions and OAuth2 tokens are pruned by each new one (ten that expired more than a day ago)

--! split: 001-expired-portal-sessions-and-oauth2-tokens-are-pruned.sql
-- Why: nothing removed an expired credential's row. Customer and member
-- sessions last an hour and an organization's server makes one per portal
-- visit, at up to its rate limit (100 a second); an OAuth2 grant gets a new
-- access token every hour and a new refresh token with it: those tables grew
-- with every visit and every refresh, for good. Like the sign-in codes (pruned
-- a day after they were made, by the next request of one) and the
-- idempotency keys (ten expired ones pruned by every claim), each new one now
-- removes up to ten that expired more than a day ago, skipping rows another
-- transaction holds, so the tables hold about a day of them besides the live
-- ones. A day, so that an expired credential still answers as expired (not
-- unknown) to whoever is still presenting it; past it, a pruned one is
-- unknown, which authenticates nobody either (a used refresh token presented
-- then no longer revokes its grant: it had expired a day before). Web sessions stay until
-- revoked or a month old (they are a sign-in's, and deleting one announces
-- its user's change to every answer cache); so do the grants and their codes
-- (one per consent).
create index sessions_portal_expires_at on rowgate_private.sessions (expires_at) where kind <> 'user';
create index oauth2_access_tokens_expires_at on rowgate_private.oauth2_access_tokens (expires_at);
create index oauth2_refresh_tokens_expires_at on rowgate_private.oauth2_refresh_tokens (expires_at);

create or replace function rowgate.create_customer_session(p_customer_id uuid, p_member_id uuid, p_token_hash bytea)
returns table (customer_id uuid, member_id uuid, expires_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('customer_sessions_write');
  select c.organization_id into v_organization_id from rowgate.customers c
    where c.id = p_customer_id and c.deleted_at is null
      and c.organization_id = any (rowgate_hidden.current_organization_ids());
  if v_organization_id is null then
    raise exception 'Customer not found' using errcode = 'RG422', detail = 'body.customer_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_organization_id, 'customers:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_member_id is not null and not exists (select 1 from rowgate.customer_members m
      where m.id = p_member_id and m.customer_id = p_customer_id and m.deleted_at is null) then
    raise exception 'Member not found for this customer' using errcode = 'RG422', detail = 'body.member_id';
  end if;
  delete from rowgate_private.sessions s where s.id in (
    select x.id from rowgate_private.sessions x
    where x.kind <> 'user' and x.expires_at < now() - interval '1 day'
    order by x.expires_at limit 10
    for update skip locked);
  return query insert into rowgate_private.sessions as s (token_hash, kind, customer_id, member_id, expires_at)
    values (p_token_hash, case when p_member_id is null then 'customer' else 'member' end,
      case when p_member_id is null then p_customer_id end, p_member_id, now() + interval '1 hour')
    returning p_customer_id, s.member_id, s.expires_at;
end;
$$;

create or replace function rowgate_private.issue_oauth2_tokens(p_family_id uuid, p_scopes text[], p_access_token_hash bytea,
  p_refresh_token_hash bytea)
returns timestamptz
language sql volatile set search_path = pg_catalog, pg_temp as $$
  delete from rowgate_private.oauth2_access_tokens t where t.id in (
    select x.id from rowgate_private.oauth2_access_tokens x
    where x.expires_at < now() - interval '1 day' order by x.expires_at limit 10
    for update skip locked);
  delete from rowgate_private.oauth2_refresh_tokens t where t.id in (
    select x.id from rowgate_private.oauth2_refresh_tokens x
    where x.expires_at < now() - interval '1 day' order by x.expires_at limit 10
    for update skip locked);
  insert into rowgate_private.oauth2_refresh_tokens (token_hash, family_id, expires_at)
    values (p_refresh_token_hash, p_family_id, now() + interval '30 days');
  insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at, family_id)
    select p_access_token_hash, f.client_id, f.user_id, f.organization_id, p_scopes, now() + interval '1 hour', f.id
    from rowgate_private.oauth2_token_families f where f.id = p_family_id
    returning expires_at;
$$;
