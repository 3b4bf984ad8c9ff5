--! Previous: sha1:fcaf9c99b5b00c726df97b9707b6eb25cbaef811
--! Hash: sha1:7745488766647a2d83c33fe3ce785eab14d1c083
--! Message: A deleted user's OAuth2 clients are deleted with the account, their tokens revoked

--! split: 001-a-deleted-users-oauth2-clients-go-with-it.sql
-- A user who deleted their account left their OAuth2 clients registered but
-- unusable: the clients could no longer authenticate to revoke or introspect,
-- and the access tokens they had been given by other users kept working until
-- they expired (found by a hostile review). Deleting the account now deletes
-- its clients as `delete_oauth2_client` does (their token families, access
-- tokens and pending codes revoked, their secrets dropped), and the clients
-- of accounts deleted before this migration are deleted the same way.
create or replace function rowgate.delete_current_user() returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  if not found then
    return false;
  end if;
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  perform rowgate.delete_oauth2_client(c.id) from rowgate.oauth2_clients c where c.user_id = v_user_id and c.deleted_at is null;
  return true;
end;
$$;

do $$
declare
  v_client record;
begin
  for v_client in
    select c.id, c.client_id from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.deleted_at is null and u.deleted_at is not null
  loop
    update rowgate.oauth2_clients set deleted_at = now() where id = v_client.id;
    perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
      where f.client_id = v_client.client_id and f.revoked_at is null;
    update rowgate_private.oauth2_access_tokens t set revoked_at = now() where t.client_id = v_client.client_id and t.revoked_at is null;
    update rowgate_private.oauth2_authorization_codes a set used_at = now() where a.client_id = v_client.client_id and a.used_at is null;
    delete from rowgate_private.oauth2_client_secrets s where s.client_id = v_client.client_id;
  end loop;
end;
$$;
