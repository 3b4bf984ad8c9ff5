-- Organization SQL logins (SPEC §24): a credential row per login, which the API lists and
-- revokes and whose liveness decides what the login reads. The login itself is a role
-- made by rowgate.create_sql_credential (part 310); its name is the row's `login`.
-- rowgate_sql_admin keeps these rows (it makes and drops the logins); users with
-- organization:manage read their organizations' live ones.
create table rowgate.sql_credentials (
  id uuid default gen_random_uuid() not null primary key,
  organization_id uuid not null references rowgate.organizations (id),
  login text not null unique check (login ~ '^rg_sql_[a-z2-7]{20}$'),
  comment text not null check (length(comment) between 1 and 200),
  scopes text[] not null check (cardinality(scopes) >= 1),
  created_by uuid references rowgate.users (id),
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz default now() not null,
  updated_at timestamptz default now() not null,
  deleted_at timestamptz,
  -- when the login's role was dropped (its sessions gone): machinery, shown to nobody
  login_dropped_at timestamptz
);
comment on table rowgate.sql_credentials is '@behavior -*
Organizations'' SQL logins (SPEC §24, REST only).';
create index sql_credentials_organization on rowgate.sql_credentials (organization_id, created_at) where deleted_at is null;
alter table rowgate.sql_credentials enable row level security;

grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at)
  on rowgate.sql_credentials to rowgate_user;
-- every column, so that an analyst's `select *` works (the policy shows live rows only)
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at, deleted_at,
    login_dropped_at)
  on rowgate.sql_credentials to rowgate_analyst;
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at,
    deleted_at, login_dropped_at),
  insert (organization_id, login, comment, scopes, created_by, expires_at),
  update (last_used_at, deleted_at, login_dropped_at)
  on rowgate.sql_credentials to rowgate_sql_admin;

create policy select_manage on rowgate.sql_credentials for select
  using (organization_id = any ((select rowgate_hidden.current_organization_ids('organization:manage'))::uuid[])
    and deleted_at is null and (select rowgate_hidden.current_subject_kind()) = 'user'
    and (select rowgate_hidden.has_scope('organizations_read')));
-- the maker of the logins keeps their records (it reaches them only through its functions)
create policy all_sql_admin on rowgate.sql_credentials for all to rowgate_sql_admin using (true) with check (true);

create trigger _100_timestamps before insert or update on rowgate.sql_credentials
  for each row execute function rowgate_private.tg__timestamps();

-- The login of the session (session_user alone: a setting names nobody here), when its
-- credential is live at this statement: not revoked, not expired, its organization not
-- deleted. Null otherwise, so every policy then finds no subject and no row.
create function rowgate_hidden.sql_login_organization_id() returns uuid
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select c.organization_id from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$$;
comment on function rowgate_hidden.sql_login_organization_id() is 'The organization of this session''s SQL login (SPEC §24) while its credential is live, else null.';

create function rowgate_hidden.sql_login_scopes() returns text[]
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select c.scopes from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$$;
comment on function rowgate_hidden.sql_login_scopes() is 'The read scopes of this session''s SQL login (SPEC §24) while its credential is live, else null.';
-- the subject helpers call them for every role they serve (part 305)
grant execute on function rowgate_hidden.sql_login_organization_id(), rowgate_hidden.sql_login_scopes()
  to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
