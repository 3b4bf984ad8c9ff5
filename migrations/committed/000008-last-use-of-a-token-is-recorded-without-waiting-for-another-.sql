--! Previous: sha1:f43dd1b636b135bc7392d508ff218be29daebb8c
--! Hash: sha1:e6ec6d3135c410fd69927be89cee4d1404c0fd2c
--! Message: last use of a token is recorded without waiting for another request's lock

-- Recording a token's last use took a row lock inside the request's transaction,
-- so every other request of the same token waited for that transaction to end
-- (a slow request held up its token's other requests, up to the statement
-- timeout). Last use is now recorded only when the row is free (SKIP LOCKED):
-- a concurrent request of the same token skips the record instead of waiting,
-- and the record stays at most a minute behind, as before.
create function rowgate_private.record_token_use(p_kind text, p_token_hash bytea) returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'personal_access_token' then
    update rowgate.personal_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  elsif p_kind = 'organization_access_token' then
    update rowgate.organization_access_tokens set last_used_at = now()
      where id = (select t.id from rowgate_private.access_token_hashes h
          join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        where h.token_hash = p_token_hash
          and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
        for no key update of t skip locked);
  end if;
end;
$$;

create or replace function rowgate_private.authenticate(p_kind text, p_token_hash bytea)
returns table (
  credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'personal_access_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'organization_access_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$$;
