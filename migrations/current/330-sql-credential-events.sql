-- SQL credentials' events (SPEC §24: sql_credential.created|deleted) are read by those who
-- read the credentials: users with organization:manage, through a new audience. The
-- events policy also names the logins' group, so a login reads the events an
-- organization token with its scopes reads.
-- Every existing row passed the narrower check this one replaces, so it is not validated
-- again (that would read every partition): new rows are checked.
alter table rowgate.events drop constraint events_audience_check;
alter table rowgate.events add constraint events_audience_check check (audience in
  ('members', 'finance_permission', 'finance_policy', 'payouts', 'access_tokens', 'organization_managers', 'member_managers',
    'organization_manager_users')) not valid;
drop policy select_audience on rowgate.events;
create policy select_audience on rowgate.events for select to rowgate_user, rowgate_organization, rowgate_analyst, rowgate_sql_login
  using (organization_id = any ((select rowgate_hidden.current_organization_ids())::uuid[])
    and (select rowgate_hidden.has_scope('events_read'))
    and case audience
      when 'members' then true
      when 'finance_permission' then organization_id = any ((select rowgate_hidden.current_organization_ids('finance:read'))::uuid[])
      when 'finance_policy' then rowgate_hidden.finance_read_denial(organization_id) is null
      when 'payouts' then rowgate_hidden.finance_read_denial(organization_id) is null
        and (select rowgate_hidden.current_credential_kind()) = 'web_session'
        and (select rowgate_hidden.has_scope('payouts:read'))
      when 'access_tokens' then organization_id = any ((select rowgate_hidden.current_organization_ids('access_tokens:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      when 'organization_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
      when 'member_managers' then organization_id = any ((select rowgate_hidden.current_organization_ids('members:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      when 'organization_manager_users' then organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
        and (select rowgate_hidden.current_subject_kind()) = 'user'
      else false
    end);

create trigger _400_events after insert or update on rowgate.sql_credentials
  for each row execute function rowgate_private.tg__events('sql_credential', 'organization_manager_users',
    'id,organization_id,login,comment,scopes,created_by,expires_at,last_used_at,created_at,updated_at', 'deleted_at,login_dropped_at');

-- membership.deleted lists the live SQL logins the member made too (SPEC §21), so a manager
-- can revoke them.
create or replace function rowgate_private.member_credentials(p_organization_id uuid, p_user_id uuid)
  returns jsonb
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
    'organization_access_tokens', coalesce((
      select jsonb_agg(jsonb_build_object('id', t.id) order by t.created_at, t.id)
      from rowgate.organization_access_tokens t
      where t.organization_id = p_organization_id and t.created_by = p_user_id and t.deleted_at is null
        and (t.expires_at is null or t.expires_at > now())), '[]'),
    'sql_credentials', coalesce((
      select jsonb_agg(jsonb_build_object('id', c.id, 'login', c.login) order by c.created_at, c.id)
      from rowgate.sql_credentials c
      where c.organization_id = p_organization_id and c.created_by = p_user_id and c.deleted_at is null
        and (c.expires_at is null or c.expires_at > now())), '[]'),
    'oauth2_grants', coalesce((
      select jsonb_agg(jsonb_build_object('client_id', f.client_id, 'client_name', c.client_name, 'scopes', to_jsonb(f.scopes))
          order by f.created_at, f.id)
      from rowgate_private.oauth2_token_families f join rowgate.oauth2_clients c on c.client_id = f.client_id
      where f.organization_id = p_organization_id and f.user_id = p_user_id and f.revoked_at is null
        and (exists (select from rowgate_private.oauth2_refresh_tokens r
              where r.family_id = f.id and r.used_at is null and r.expires_at > now())
          or exists (select from rowgate_private.oauth2_access_tokens a
              where a.family_id = f.id and a.revoked_at is null and a.expires_at > now()))), '[]'));
$$;
