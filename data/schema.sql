-- rowgate's schema as the committed migrations make it, on PostgreSQL 18.
-- Written by `npm run db:schema`: do not edit (the migrations make the schema; this file shows it).
-- Order: the database, schemas, types, tables (each with its comments, row-level security, grants,
-- indexes, policies and triggers), sequences, views, functions. Grants are all there is: anything
-- not granted here is not allowed (functions are not executable by PUBLIC unless a line says so).

-- The database (whichever its name: :database), its extensions and default privileges
grant connect on database :database to rowgate_analyst, rowgate_authenticator, rowgate_sql_login;
alter default privileges for role rowgate_owner revoke execute on functions from public;

-- Schema public
comment on schema public is 'standard public schema';
grant usage on schema public to public;

-- Schema rowgate
create schema rowgate;
grant usage on schema rowgate to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Schema rowgate_hidden
create schema rowgate_hidden;
grant usage on schema rowgate_hidden to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Schema rowgate_partitions
create schema rowgate_partitions;
comment on schema rowgate_partitions is 'The daily partitions of rowgate.events, rowgate.event_clients and rowgate.webhook_attempts: reached only through those tables.';

-- Schema rowgate_private
create schema rowgate_private;
grant usage on schema rowgate_private to rowgate_authenticator, rowgate_sql_admin;

-- Table rowgate.accounts
create table rowgate.accounts (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  admin_id uuid not null,
  country text not null,
  currency text not null,
  status text default 'pending'::text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint accounts_pkey PRIMARY KEY (id),
  constraint accounts_admin_id_fkey FOREIGN KEY (admin_id) REFERENCES rowgate.users(id),
  constraint accounts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint accounts_country_check CHECK ((country ~ '^[A-Z]{2}$'::text)),
  constraint accounts_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
  constraint accounts_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'active'::text, 'disabled'::text])))
);
comment on table rowgate.accounts is '@foreignKey (admin_id) references rowgate.colleagues (id)';
alter table rowgate.accounts enable row level security;
grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at) on rowgate.accounts to rowgate_organization, rowgate_user;
grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at, deleted_at) on rowgate.accounts to rowgate_analyst, rowgate_sql_login;
grant update (country, currency) on rowgate.accounts to rowgate_user;
CREATE UNIQUE INDEX accounts_organization_live ON rowgate.accounts USING btree (organization_id) WHERE (deleted_at IS NULL);
create policy select_finance on rowgate.accounts as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (rowgate_hidden.finance_read_denial(organization_id) IS NULL) AND ( SELECT (rowgate_hidden.has_scope('transactions_read'::text) OR rowgate_hidden.has_scope('payouts_read'::text)))));
create policy update_finance on rowgate.accounts as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (rowgate_hidden.finance_write_denial(organization_id) IS NULL) AND ( SELECT (rowgate_hidden.has_scope('payouts_write'::text) OR rowgate_hidden.has_scope('transactions_write'::text)))));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.accounts FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.accounts FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('account', 'finance_policy', 'id,organization_id,admin_id,country,currency,status,created_at,updated_at', 'deleted_at');

-- Table rowgate.customer_members
create table rowgate.customer_members (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  customer_id uuid not null,
  email text not null,
  name text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  role text default 'member'::text not null,
  metadata jsonb default '{}'::jsonb not null,
  constraint customer_members_pkey PRIMARY KEY (id),
  constraint customer_members_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES rowgate.customers(id),
  constraint customer_members_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint customer_members_email_check CHECK (((email = lower(email)) AND (email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint customer_members_metadata_valid CHECK (rowgate_hidden.metadata_is_valid(metadata)),
  constraint customer_members_name_check CHECK ((length(name) <= 200)),
  constraint customer_members_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'billing_manager'::text, 'member'::text])))
);
comment on column rowgate.customer_members.role is 'owner, billing_manager or member.';
alter table rowgate.customer_members enable row level security;
grant insert (customer_id, email, name, role, metadata) on rowgate.customer_members to rowgate_organization, rowgate_user;
grant select (id, organization_id, customer_id, email, name, created_at, updated_at, deleted_at, role, metadata) on rowgate.customer_members to rowgate_analyst, rowgate_sql_login;
grant select (id, organization_id, customer_id, email, name, created_at, updated_at, role) on rowgate.customer_members to rowgate_member;
grant select (id, organization_id, customer_id, email, name, created_at, updated_at, role, metadata) on rowgate.customer_members to rowgate_organization, rowgate_user;
grant update (email, name, role, metadata) on rowgate.customer_members to rowgate_organization, rowgate_user;
CREATE INDEX customer_members_customer_created ON rowgate.customer_members USING btree (customer_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX customer_members_email_live ON rowgate.customer_members USING btree (customer_id, email) WHERE (deleted_at IS NULL);
CREATE INDEX customer_members_metadata ON rowgate.customer_members USING gin (metadata jsonb_path_ops) WHERE (deleted_at IS NULL);
CREATE INDEX customer_members_organization ON rowgate.customer_members USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX customer_members_organization_email ON rowgate.customer_members USING btree (organization_id, email, id) WHERE (deleted_at IS NULL);
create policy insert_write on rowgate.customer_members as permissive for insert to public
  with check (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('customers:write'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('customers_write'::text) AS has_scope)));
create policy select_member on rowgate.customer_members as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customers_read'::text) AS has_scope)));
create policy select_self on rowgate.customer_members as permissive for select to rowgate_member
  using (((id = ( SELECT rowgate_hidden.current_subject_id() AS current_subject_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customer_portal_read'::text) AS has_scope)));
create policy update_write on rowgate.customer_members as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('customers:write'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customers_write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.customer_members FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _200_organization BEFORE INSERT ON rowgate.customer_members FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_customer_members__organization();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.customer_members FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('member', 'members', 'id,organization_id,customer_id,email,name,role,metadata,created_at,updated_at', 'deleted_at');
CREATE TRIGGER _500_end_sessions AFTER UPDATE OF deleted_at ON rowgate.customer_members FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION rowgate_private.tg_customer_members__end_sessions();
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE OR UPDATE OF deleted_at ON rowgate.customer_members FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('customer_members', 'soft');

-- Table rowgate.customers
create table rowgate.customers (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  email text not null,
  first_name text,
  last_name text,
  status text default 'pending'::text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  metadata jsonb default '{}'::jsonb not null,
  external_id text,
  constraint customers_pkey PRIMARY KEY (id),
  constraint customers_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint customers_email_check CHECK (((email = lower(email)) AND (email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint customers_external_id_length CHECK (((length(external_id) >= 1) AND (length(external_id) <= 200))),
  constraint customers_first_name_check CHECK ((length(first_name) <= 200)),
  constraint customers_last_name_check CHECK ((length(last_name) <= 200)),
  constraint customers_metadata_valid CHECK (rowgate_hidden.metadata_is_valid(metadata)),
  constraint customers_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'active'::text])))
);
alter table rowgate.customers enable row level security;
grant insert (organization_id, email, first_name, last_name, status, metadata, external_id) on rowgate.customers to rowgate_organization, rowgate_user;
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at) on rowgate.customers to rowgate_customer, rowgate_member;
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at, deleted_at, metadata, external_id) on rowgate.customers to rowgate_analyst, rowgate_sql_login;
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at, metadata, external_id) on rowgate.customers to rowgate_organization, rowgate_user;
grant update (email, first_name, last_name, status, metadata, external_id) on rowgate.customers to rowgate_organization, rowgate_user;
grant update (first_name, last_name) on rowgate.customers to rowgate_customer;
CREATE UNIQUE INDEX customers_email_live ON rowgate.customers USING btree (organization_id, email) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX customers_external_id_live ON rowgate.customers USING btree (organization_id, external_id) WHERE ((deleted_at IS NULL) AND (external_id IS NOT NULL));
CREATE INDEX customers_metadata ON rowgate.customers USING gin (metadata jsonb_path_ops) WHERE (deleted_at IS NULL);
CREATE INDEX customers_organization_created ON rowgate.customers USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
create policy insert_write on rowgate.customers as permissive for insert to public
  with check (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('customers:write'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('customers_write'::text) AS has_scope)));
create policy select_member on rowgate.customers as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customers_read'::text) AS has_scope)));
create policy select_self on rowgate.customers as permissive for select to rowgate_customer, rowgate_member
  using (((id = ( SELECT rowgate_hidden.current_customer_id() AS current_customer_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customer_portal_read'::text) AS has_scope)));
create policy update_self on rowgate.customers as permissive for update to rowgate_customer
  using (((id = ( SELECT rowgate_hidden.current_customer_id() AS current_customer_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customer_portal_write'::text) AS has_scope)));
create policy update_write on rowgate.customers as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('customers:write'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('customers_write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.customers FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.customers FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('customer', 'members', 'id,organization_id,email,first_name,last_name,status,external_id,metadata,created_at,updated_at', 'deleted_at');
CREATE TRIGGER _500_remove_seats AFTER UPDATE OF deleted_at ON rowgate.customers FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION rowgate_private.tg_customers__remove_seats();
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE OR UPDATE OF deleted_at ON rowgate.customers FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('customers', 'soft');

-- Table rowgate.denials
create table rowgate.denials (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  request_id text,
  operation text,
  credential_kind text not null,
  credential_id uuid,
  user_id uuid,
  step text,
  error text,
  reason text,
  count integer default 1 not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  request_log_id uuid,
  constraint denials_pkey PRIMARY KEY (organization_id, id),
  constraint denials_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint denials_count_check CHECK ((count >= 1)),
  constraint denials_step_check CHECK ((step = ANY (ARRAY['scope'::text, 'resource'::text, 'organization'::text, 'policy'::text])))
);
comment on table rowgate.denials is '@behavior -*
The 403 answers on an organization''s data (SPEC §20), kept although the request rolled back; at most 1,000 rows per credential, organization and hour, then one row counting the rest.';
comment on column rowgate.denials.count is '1 for a denial; on the hour''s overflow row of a credential (operation null), how many denials past 1,000 it stands for.';
comment on column rowgate.denials.request_log_id is 'The request log row (SPEC §25) of the refused request; null on an overflow row.';
alter table rowgate.denials enable row level security;
grant select (id, organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason, count, created_at, updated_at, request_log_id) on rowgate.denials to rowgate_analyst, rowgate_user;
CREATE INDEX denials_created ON rowgate.denials USING btree (created_at);
CREATE INDEX denials_organization_created ON rowgate.denials USING btree (organization_id, created_at, id);
CREATE INDEX denials_organization_user ON rowgate.denials USING btree (organization_id, user_id, created_at, id);
CREATE INDEX denials_request_log ON rowgate.denials USING btree (request_log_id) WHERE (request_log_id IS NOT NULL);
create policy select_manage on rowgate.denials as permissive for select to rowgate_user, rowgate_analyst
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('organizations_read'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.denials FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _150_link_request BEFORE INSERT ON rowgate.denials FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_denials__link_request();

-- Table rowgate.event_clients
create table rowgate.event_clients (
  organization_id uuid not null,
  event_id uuid not null,
  audience text not null,
  user_id uuid,
  ip text,
  user_agent text,
  created_at timestamp with time zone default now() not null,
  constraint event_clients_pkey PRIMARY KEY (organization_id, event_id),
  constraint event_clients_ip_check CHECK ((length(ip) <= 100)),
  constraint event_clients_user_agent_check CHECK ((length(user_agent) <= 256))
) partition by range (event_id);
comment on table rowgate.event_clients is '@behavior -insert -update -delete
The client address and User-Agent of the request that wrote an event (SPEC §21): for users with organization:manage, 90 days.';
alter table rowgate.event_clients enable row level security;
grant select (organization_id, event_id, audience, user_id, ip, user_agent, created_at) on rowgate.event_clients to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
CREATE INDEX event_clients_created ON ONLY rowgate.event_clients USING btree (created_at);
CREATE INDEX event_clients_user ON ONLY rowgate.event_clients USING btree (user_id) WHERE (user_id IS NOT NULL);
create policy select_manage on rowgate.event_clients as permissive for select to rowgate_user, rowgate_organization, rowgate_analyst
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text) AND ( SELECT rowgate_hidden.has_scope('events_read'::text) AS has_scope) AND (created_at > (now() - '90 days'::interval)) AND
CASE audience
    WHEN 'members'::text THEN true
    WHEN 'organization_managers'::text THEN true
    WHEN 'finance_permission'::text THEN (organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('finance:read'::text) AS current_organization_ids)::uuid[]))
    WHEN 'finance_policy'::text THEN (rowgate_hidden.finance_read_denial(organization_id) IS NULL)
    WHEN 'payouts'::text THEN ((rowgate_hidden.finance_read_denial(organization_id) IS NULL) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('payouts:read'::text) AS has_scope))
    WHEN 'access_tokens'::text THEN (organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('access_tokens:manage'::text) AS current_organization_ids)::uuid[]))
    WHEN 'member_managers'::text THEN (organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('members:manage'::text) AS current_organization_ids)::uuid[]))
    ELSE false
END));

-- Table rowgate.events
create table rowgate.events (
  id uuid default uuidv7() not null,
  organization_id uuid not null,
  type text not null,
  resource_id uuid not null,
  data jsonb not null,
  actor jsonb not null,
  request_id text,
  audience text not null,
  created_at timestamp with time zone default now() not null,
  previous jsonb,
  feed_position bigint,
  constraint events_pkey PRIMARY KEY (organization_id, id),
  constraint events_audience_check CHECK ((audience = ANY (ARRAY['members'::text, 'finance_permission'::text, 'finance_policy'::text, 'payouts'::text, 'access_tokens'::text, 'organization_managers'::text, 'member_managers'::text, 'organization_manager_users'::text]))) NOT VALID,
  constraint events_type_check CHECK ((type ~ '^[a-z_]+\.[a-z_]+$'::text))
) partition by range (id);
comment on table rowgate.events is '@behavior -insert -update -delete
What happened to an organization''s data (SPEC §17): one row per change, written with the change.';
comment on column rowgate.events.previous is 'On a *.updated event, the changed fields'' values before the change; null otherwise.';
comment on column rowgate.events.feed_position is 'The event''s place in the feed (SPEC §17), given once its transaction has committed (null until then, at most about a second). Order by it to read events as the feed hands them out.';
alter table rowgate.events enable row level security;
grant select (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position) on rowgate.events to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
CREATE INDEX events_id ON ONLY rowgate.events USING btree (id);
CREATE INDEX events_organization_actor ON ONLY rowgate.events USING btree (organization_id, ((actor ->> 'id'::text)), created_at, id);
CREATE INDEX events_organization_created ON ONLY rowgate.events USING btree (organization_id, created_at, id);
CREATE INDEX events_organization_feed ON ONLY rowgate.events USING btree (organization_id, feed_position) WHERE (feed_position IS NOT NULL);
CREATE INDEX events_resource ON ONLY rowgate.events USING btree (resource_id, created_at, id);
CREATE INDEX events_unplaced ON ONLY rowgate.events USING btree (id) WHERE (feed_position IS NULL);
create policy select_audience on rowgate.events as permissive for select to rowgate_user, rowgate_organization, rowgate_analyst, rowgate_sql_login
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('events_read'::text) AS has_scope) AND
CASE audience
    WHEN 'members'::text THEN true
    WHEN 'finance_permission'::text THEN (organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('finance:read'::text) AS current_organization_ids)::uuid[]))
    WHEN 'finance_policy'::text THEN (rowgate_hidden.finance_read_denial(organization_id) IS NULL)
    WHEN 'payouts'::text THEN ((rowgate_hidden.finance_read_denial(organization_id) IS NULL) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('payouts:read'::text) AS has_scope))
    WHEN 'access_tokens'::text THEN ((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('access_tokens:manage'::text) AS current_organization_ids)::uuid[])) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text))
    WHEN 'organization_managers'::text THEN (organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[]))
    WHEN 'member_managers'::text THEN ((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('members:manage'::text) AS current_organization_ids)::uuid[])) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text))
    WHEN 'organization_manager_users'::text THEN ((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text))
    ELSE false
END));
CREATE TRIGGER _500_enqueue_deliveries AFTER INSERT ON rowgate.events REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION rowgate_private.tg_events__enqueue_deliveries();
CREATE TRIGGER _600_link_request AFTER INSERT ON rowgate.events REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION rowgate_private.tg_events__link_request();

-- Table rowgate.invitations
create table rowgate.invitations (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  email text not null,
  role text not null,
  status text default 'pending'::text not null,
  invited_by uuid not null,
  expires_at timestamp with time zone default (now() + rowgate_private.invitation_lifetime()) not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint invitations_pkey PRIMARY KEY (organization_id, id),
  constraint invitations_invited_by_fkey FOREIGN KEY (invited_by) REFERENCES rowgate.users(id),
  constraint invitations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint invitations_email_check CHECK (((email = lower(email)) AND (email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint invitations_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'accepted'::text, 'declined'::text, 'revoked'::text, 'expired'::text])))
);
comment on table rowgate.invitations is '@behavior -insert -update -delete
Invitations to join an organization (SPEC §21). A pending invitation past expires_at is expired.';
comment on column rowgate.invitations.status is 'pending, accepted, declined, revoked or expired (a pending row past expires_at is expired too).';
alter table rowgate.invitations enable row level security;
grant select (id, organization_id, email, role, status, invited_by, expires_at, created_at, updated_at) on rowgate.invitations to rowgate_analyst, rowgate_user;
CREATE INDEX invitations_email_pending ON rowgate.invitations USING btree (email, created_at) WHERE (status = 'pending'::text);
CREATE INDEX invitations_expiring ON rowgate.invitations USING btree (expires_at) WHERE (status = 'pending'::text);
CREATE INDEX invitations_id ON rowgate.invitations USING btree (id);
CREATE INDEX invitations_organization_created ON rowgate.invitations USING btree (organization_id, created_at, id);
CREATE UNIQUE INDEX invitations_pending_email ON rowgate.invitations USING btree (organization_id, email) WHERE (status = 'pending'::text);
create policy select_invitee_web_session on rowgate.invitations as permissive for select to rowgate_user, rowgate_analyst
  using (((email = ( SELECT rowgate_hidden.current_user_email() AS current_user_email)) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('user:read'::text) AS has_scope)));
create policy select_manage on rowgate.invitations as permissive for select to rowgate_user, rowgate_analyst
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('members:manage'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('members_read'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.invitations FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _200_check_role BEFORE INSERT OR UPDATE OF role ON rowgate.invitations FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__check_role();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.invitations FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('invitation', 'member_managers', 'id,organization_id,email,role,status,invited_by,expires_at,created_at,updated_at', '', 'status');

-- Table rowgate.memberships
create table rowgate.memberships (
  id uuid default gen_random_uuid() not null,
  user_id uuid not null,
  organization_id uuid not null,
  role text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint memberships_pkey PRIMARY KEY (id),
  constraint memberships_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id)
);
comment on table rowgate.memberships is '@foreignKey (user_id) references rowgate.colleagues (id)';
alter table rowgate.memberships enable row level security;
grant select (id, user_id, organization_id, role, created_at, updated_at) on rowgate.memberships to rowgate_organization, rowgate_user;
grant select (id, user_id, organization_id, role, created_at, updated_at, deleted_at) on rowgate.memberships to rowgate_analyst, rowgate_sql_login;
grant update (role) on rowgate.memberships to rowgate_user;
CREATE UNIQUE INDEX memberships_live ON rowgate.memberships USING btree (user_id, organization_id) WHERE (deleted_at IS NULL);
CREATE INDEX memberships_organization ON rowgate.memberships USING btree (organization_id, created_at) WHERE (deleted_at IS NULL);
create policy select_member on rowgate.memberships as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('members_read'::text) AS has_scope)));
create policy update_manage on rowgate.memberships as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('members:manage'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (rowgate_hidden.current_subject_kind() = 'user'::text) AND ( SELECT rowgate_hidden.has_scope('members_write'::text) AS has_scope)))
  with check ((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('members:manage'::text) AS current_organization_ids)::uuid[])));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _150_live_user BEFORE INSERT ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_memberships__live_user();
CREATE TRIGGER _200_check_role BEFORE INSERT OR UPDATE OF role ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__check_role();
CREATE TRIGGER _200_keep_an_admin BEFORE UPDATE ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_memberships__keep_an_admin();
CREATE TRIGGER _210_no_escalation BEFORE INSERT OR UPDATE ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_memberships__no_escalation();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.memberships FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('membership', 'members', 'user_id,organization_id,role,created_at,updated_at', 'id,deleted_at');

-- Table rowgate.oauth2_clients
create table rowgate.oauth2_clients (
  id uuid default gen_random_uuid() not null,
  client_id text not null,
  user_id uuid not null,
  client_name text not null,
  redirect_uris text[] not null,
  scopes text[] not null,
  token_endpoint_auth_method text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  api_version text default COALESCE(NULLIF(current_setting('rowgate.api_version'::text, true), ''::text), '2026-12-15'::text),
  constraint oauth2_clients_pkey PRIMARY KEY (id),
  constraint oauth2_clients_client_id_key UNIQUE (client_id),
  constraint oauth2_clients_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id),
  constraint oauth2_clients_client_id_check CHECK ((client_id ~ '^rg_ci_[0-9A-Za-z]{24,64}$'::text)),
  constraint oauth2_clients_client_name_check CHECK (((length(client_name) >= 1) AND (length(client_name) <= 200))),
  constraint oauth2_clients_redirect_uris_check CHECK (((cardinality(redirect_uris) >= 1) AND (cardinality(redirect_uris) <= 10))),
  constraint oauth2_clients_scopes_check CHECK (((cardinality(scopes) >= 1) AND (cardinality(scopes) <= 50))),
  constraint oauth2_clients_token_endpoint_auth_method_check CHECK ((token_endpoint_auth_method = ANY (ARRAY['client_secret_basic'::text, 'client_secret_post'::text, 'none'::text])))
);
comment on table rowgate.oauth2_clients is '@behavior -*
OAuth2 clients registered by users (REST only).';
comment on column rowgate.oauth2_clients.api_version is 'The API version its tokens use without Rowgate-Version (SPEC §23).';
alter table rowgate.oauth2_clients enable row level security;
grant select (id, client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method, created_at, updated_at, api_version) on rowgate.oauth2_clients to rowgate_user;
CREATE INDEX oauth2_clients_user_id ON rowgate.oauth2_clients USING btree (user_id, created_at) WHERE (deleted_at IS NULL);
create policy select_own on rowgate.oauth2_clients as permissive for select to rowgate_user
  using (((user_id = ( SELECT rowgate_hidden.current_user_id() AS current_user_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('user:read'::text) AS has_scope)));
CREATE TRIGGER _050_at_most BEFORE INSERT ON rowgate.oauth2_clients FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__at_most('user_id', '100', 'false', 'user', 'OAuth2 clients', 'delete');
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.oauth2_clients FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();

-- Table rowgate.orders
create table rowgate.orders (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  customer_id uuid not null,
  product_id uuid not null,
  amount bigint not null,
  currency text not null,
  status text default 'pending'::text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  metadata jsonb default '{}'::jsonb not null,
  refunded_amount bigint default 0 not null,
  constraint orders_pkey PRIMARY KEY (id),
  constraint orders_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES rowgate.customers(id),
  constraint orders_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint orders_product_id_fkey FOREIGN KEY (product_id) REFERENCES rowgate.products(id),
  constraint orders_amount_check CHECK (((amount >= 0) AND (amount <= '100000000000'::bigint))),
  constraint orders_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
  constraint orders_metadata_valid CHECK (rowgate_hidden.metadata_is_valid(metadata)),
  constraint orders_refunded_amount_check CHECK (((refunded_amount >= 0) AND (refunded_amount <= amount))),
  constraint orders_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'paid'::text, 'refunded'::text])))
);
comment on column rowgate.orders.refunded_amount is 'How much of the amount has been refunded (the sum of its refunds), in the minor unit.';
alter table rowgate.orders enable row level security;
grant insert (organization_id, customer_id, product_id, amount, currency, status, metadata) on rowgate.orders to rowgate_organization, rowgate_user;
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at, metadata, refunded_amount) on rowgate.orders to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at, refunded_amount) on rowgate.orders to rowgate_customer, rowgate_member;
grant update (status, metadata) on rowgate.orders to rowgate_organization, rowgate_user;
CREATE INDEX orders_customer ON rowgate.orders USING btree (customer_id, created_at, id);
CREATE INDEX orders_in_order ON rowgate.orders USING btree (created_at, id, organization_id) WHERE (id >= '00000000-0000-0000-0000-000000000000'::uuid);
CREATE INDEX orders_metadata ON rowgate.orders USING gin (metadata jsonb_path_ops);
CREATE INDEX orders_organization_amount ON rowgate.orders USING btree (organization_id, amount, id);
CREATE INDEX orders_organization_created ON rowgate.orders USING btree (organization_id, created_at, id);
CREATE UNIQUE INDEX orders_organization_id ON rowgate.orders USING btree (organization_id, id);
CREATE INDEX orders_product ON rowgate.orders USING btree (product_id);
create policy insert_write on rowgate.orders as permissive for insert to public
  with check (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('orders:write'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('orders_write'::text) AS has_scope)));
create policy select_member on rowgate.orders as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('orders_read'::text) AS has_scope)));
create policy select_own on rowgate.orders as permissive for select to rowgate_customer, rowgate_member
  using (((customer_id = ( SELECT rowgate_hidden.current_customer_id() AS current_customer_id)) AND ( SELECT rowgate_hidden.has_scope('customer_portal_read'::text) AS has_scope)));
create policy update_write on rowgate.orders as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('orders:write'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('orders_write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.orders FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _200_check BEFORE INSERT OR UPDATE ON rowgate.orders FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_orders__check();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.orders FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('order', 'members', 'id,organization_id,customer_id,product_id,amount,currency,status,refunded_amount,metadata,created_at,updated_at', '');
CREATE TRIGGER _500_transactions AFTER INSERT OR UPDATE OF status ON rowgate.orders FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_orders__transactions();
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE ON rowgate.orders FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('orders', 'hard');

-- Table rowgate.organization_access_tokens
create table rowgate.organization_access_tokens (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  comment text not null,
  scopes text[] not null,
  expires_at timestamp with time zone,
  last_used_at timestamp with time zone,
  created_by uuid,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  allowed_ips cidr[],
  api_version text default COALESCE(NULLIF(current_setting('rowgate.api_version'::text, true), ''::text), '2026-12-15'::text),
  constraint organization_access_tokens_pkey PRIMARY KEY (id),
  constraint organization_access_tokens_created_by_fkey FOREIGN KEY (created_by) REFERENCES rowgate.users(id),
  constraint organization_access_tokens_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint organization_access_tokens_allowed_ips_check CHECK (((allowed_ips IS NULL) OR (((cardinality(allowed_ips) >= 1) AND (cardinality(allowed_ips) <= 20)) AND (array_position(allowed_ips, NULL::cidr) IS NULL)))),
  constraint organization_access_tokens_comment_check CHECK (((length(comment) >= 1) AND (length(comment) <= 200)))
);
comment on table rowgate.organization_access_tokens is '@behavior -*
Organization access tokens (REST only).';
comment on column rowgate.organization_access_tokens.allowed_ips is 'The networks the token may be used from; null: any client address.';
comment on column rowgate.organization_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23).';
alter table rowgate.organization_access_tokens enable row level security;
grant select (id, organization_id, comment, scopes, expires_at, last_used_at, created_by, created_at, updated_at, allowed_ips, api_version) on rowgate.organization_access_tokens to rowgate_user;
grant select (id, organization_id, comment, scopes, expires_at, last_used_at, created_by, created_at, updated_at, deleted_at, allowed_ips, api_version) on rowgate.organization_access_tokens to rowgate_analyst;
CREATE INDEX organization_access_tokens_organization ON rowgate.organization_access_tokens USING btree (organization_id, created_at) WHERE (deleted_at IS NULL);
create policy select_manage on rowgate.organization_access_tokens as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('access_tokens:manage'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text) AND ( SELECT rowgate_hidden.has_scope('organization_access_tokens_read'::text) AS has_scope)));
CREATE TRIGGER _050_at_most BEFORE INSERT ON rowgate.organization_access_tokens FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__at_most('organization_id', '100', 'true', 'organization', 'organization access tokens', 'revoke');
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.organization_access_tokens FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.organization_access_tokens FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('organization_access_token', 'access_tokens', 'id,organization_id,comment,scopes,expires_at,last_used_at,allowed_ips,api_version,created_by,created_at,updated_at', 'deleted_at');

-- Table rowgate.organization_roles
create table rowgate.organization_roles (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  name text not null,
  description text,
  permissions text[] not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint organization_roles_pkey PRIMARY KEY (organization_id, id),
  constraint organization_roles_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint organization_roles_description_check CHECK ((length(description) <= 500)),
  constraint organization_roles_name_check CHECK ((name ~ '^[a-z][a-z0-9_-]{0,49}$'::text)),
  constraint organization_roles_permissions_check CHECK ((cardinality(permissions) <= 50))
);
comment on table rowgate.organization_roles is '@behavior -insert -update -delete
Roles an organization defines (SPEC §21): a name, a description and permissions; the built-in roles are rowgate.roles.';
alter table rowgate.organization_roles enable row level security;
grant select (id, organization_id, name, description, permissions, created_at, updated_at) on rowgate.organization_roles to rowgate_organization, rowgate_user;
grant select (id, organization_id, name, description, permissions, created_at, updated_at, deleted_at) on rowgate.organization_roles to rowgate_analyst, rowgate_sql_login;
CREATE UNIQUE INDEX organization_roles_name_live ON rowgate.organization_roles USING btree (organization_id, name) WHERE (deleted_at IS NULL);
CREATE INDEX organization_roles_organization ON rowgate.organization_roles USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
create policy select_member on rowgate.organization_roles as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('members_read'::text) AS has_scope)));
CREATE TRIGGER _050_at_most BEFORE INSERT ON rowgate.organization_roles FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__at_most('organization_id', '100', 'false', 'organization', 'roles', 'delete');
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.organization_roles FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _200_check BEFORE INSERT OR UPDATE ON rowgate.organization_roles FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_organization_roles__check();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.organization_roles FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('role', 'members', 'id,organization_id,name,description,permissions,created_at,updated_at', 'deleted_at');

-- Table rowgate.organizations
create table rowgate.organizations (
  id uuid default gen_random_uuid() not null,
  name text not null,
  slug text not null,
  account_id uuid,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  max_token_lifetime_days integer,
  constraint organizations_pkey PRIMARY KEY (id),
  constraint organizations_account_id_fkey FOREIGN KEY (account_id) REFERENCES rowgate.accounts(id),
  constraint organizations_max_token_lifetime_days_check CHECK (((max_token_lifetime_days >= 1) AND (max_token_lifetime_days <= 3650))),
  constraint organizations_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
  constraint organizations_slug_check CHECK (((slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'::text) AND ((length(slug) >= 2) AND (length(slug) <= 64))))
);
comment on column rowgate.organizations.max_token_lifetime_days is '@behavior -*
The longest an organization access token of this organization may live, in days; null: no cap (REST only).';
alter table rowgate.organizations enable row level security;
grant select (id, name, slug, account_id, created_at, updated_at, deleted_at, max_token_lifetime_days) on rowgate.organizations to rowgate_analyst, rowgate_sql_login;
grant select (id, name, slug, account_id, created_at, updated_at, max_token_lifetime_days) on rowgate.organizations to rowgate_organization, rowgate_user;
grant update (name, slug, max_token_lifetime_days) on rowgate.organizations to rowgate_organization, rowgate_user;
CREATE UNIQUE INDEX organizations_slug_live ON rowgate.organizations USING btree (slug) WHERE (deleted_at IS NULL);
create policy select_member on rowgate.organizations as permissive for select to public
  using (((id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('organizations_read'::text) AS has_scope)));
create policy update_manage on rowgate.organizations as permissive for update to public
  using (((id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('organizations_write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.organizations FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.organizations FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('organization', 'members', 'id,name,slug,account_id,max_token_lifetime_days,created_at,updated_at', 'deleted_at');

-- Table rowgate.payout_accounts
create table rowgate.payout_accounts (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  type text not null,
  country text not null,
  currency text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint payout_accounts_pkey PRIMARY KEY (id),
  constraint payout_accounts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint payout_accounts_country_check CHECK ((country ~ '^[A-Z]{2}$'::text)),
  constraint payout_accounts_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
  constraint payout_accounts_type_check CHECK ((type = ANY (ARRAY['bank_account'::text, 'stripe'::text, 'open_collective'::text])))
);
alter table rowgate.payout_accounts enable row level security;
grant insert (organization_id, type, country, currency) on rowgate.payout_accounts to rowgate_user;
grant select (id, organization_id, type, country, currency, created_at, updated_at) on rowgate.payout_accounts to rowgate_organization, rowgate_user;
grant select (id, organization_id, type, country, currency, created_at, updated_at, deleted_at) on rowgate.payout_accounts to rowgate_analyst, rowgate_sql_login;
CREATE INDEX payout_accounts_organization ON rowgate.payout_accounts USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
create policy insert_finance_web_session on rowgate.payout_accounts as permissive for insert to public
  with check (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (rowgate_hidden.finance_write_denial(organization_id) IS NULL) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('payouts:write'::text) AS has_scope)));
create policy select_finance_web_session on rowgate.payout_accounts as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (rowgate_hidden.finance_read_denial(organization_id) IS NULL) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('payouts:read'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.payout_accounts FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.payout_accounts FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('payout_account', 'payouts', 'id,organization_id,type,country,currency,created_at,updated_at', 'deleted_at');

-- Table rowgate.permissions
create table rowgate.permissions (
  name text not null,
  verb text not null,
  things text not null,
  constraint permissions_pkey PRIMARY KEY (name)
);
alter table rowgate.permissions enable row level security;
grant select (name, verb, things) on rowgate.permissions to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;
create policy select_all on rowgate.permissions as permissive for select to public
  using (true);

-- Table rowgate.personal_access_tokens
create table rowgate.personal_access_tokens (
  id uuid default gen_random_uuid() not null,
  user_id uuid not null,
  comment text not null,
  scopes text[] not null,
  expires_at timestamp with time zone,
  last_used_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  allowed_ips cidr[],
  api_version text default COALESCE(NULLIF(current_setting('rowgate.api_version'::text, true), ''::text), '2026-12-15'::text),
  organization_ids uuid[],
  constraint personal_access_tokens_pkey PRIMARY KEY (id),
  constraint personal_access_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id) ON DELETE CASCADE,
  constraint personal_access_tokens_allowed_ips_check CHECK (((allowed_ips IS NULL) OR (((cardinality(allowed_ips) >= 1) AND (cardinality(allowed_ips) <= 20)) AND (array_position(allowed_ips, NULL::cidr) IS NULL)))),
  constraint personal_access_tokens_comment_check CHECK (((length(comment) >= 1) AND (length(comment) <= 200))),
  constraint personal_access_tokens_organization_ids_check CHECK (((organization_ids IS NULL) OR (((cardinality(organization_ids) >= 1) AND (cardinality(organization_ids) <= 50)) AND (array_position(organization_ids, NULL::uuid) IS NULL))))
);
comment on table rowgate.personal_access_tokens is '@behavior -*
Personal access tokens (REST only).';
comment on column rowgate.personal_access_tokens.allowed_ips is 'The networks the token may be used from; null: any client address.';
comment on column rowgate.personal_access_tokens.api_version is 'The API version requests without Rowgate-Version use (SPEC §23).';
comment on column rowgate.personal_access_tokens.organization_ids is 'The only organizations the token reaches; null: every organization of its user.';
alter table rowgate.personal_access_tokens enable row level security;
grant select (id, user_id, comment, scopes, expires_at, last_used_at, created_at, updated_at, allowed_ips, api_version, organization_ids) on rowgate.personal_access_tokens to rowgate_user;
CREATE INDEX personal_access_tokens_live ON rowgate.personal_access_tokens USING btree (user_id) WHERE (deleted_at IS NULL);
CREATE INDEX personal_access_tokens_user_id ON rowgate.personal_access_tokens USING btree (user_id, created_at);
create policy select_own on rowgate.personal_access_tokens as permissive for select to rowgate_user
  using (((user_id = ( SELECT rowgate_hidden.current_user_id() AS current_user_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('user:read'::text) AS has_scope)));
CREATE TRIGGER _050_at_most BEFORE INSERT ON rowgate.personal_access_tokens FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__at_most('user_id', '100', 'true', 'user', 'personal access tokens', 'revoke');
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.personal_access_tokens FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();

-- Table rowgate.products
create table rowgate.products (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  name text not null,
  description text,
  price_amount bigint not null,
  price_currency text not null,
  is_archived boolean default false not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  metadata jsonb default '{}'::jsonb not null,
  constraint products_pkey PRIMARY KEY (id),
  constraint products_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint products_description_check CHECK ((length(description) <= 5000)),
  constraint products_metadata_valid CHECK (rowgate_hidden.metadata_is_valid(metadata)),
  constraint products_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
  constraint products_price_amount_check CHECK (((price_amount >= 0) AND (price_amount <= '100000000000'::bigint))),
  constraint products_price_currency_check CHECK ((price_currency ~ '^[a-z]{3}$'::text))
);
alter table rowgate.products enable row level security;
grant insert (organization_id, name, description, price_amount, price_currency, is_archived, metadata) on rowgate.products to rowgate_organization, rowgate_user;
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at, deleted_at, metadata) on rowgate.products to rowgate_analyst, rowgate_sql_login;
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at, metadata) on rowgate.products to rowgate_organization, rowgate_user;
grant update (name, description, price_amount, price_currency, is_archived, metadata) on rowgate.products to rowgate_organization, rowgate_user;
CREATE INDEX products_metadata ON rowgate.products USING gin (metadata jsonb_path_ops) WHERE (deleted_at IS NULL);
CREATE INDEX products_organization_created ON rowgate.products USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX products_organization_name ON rowgate.products USING btree (organization_id, name, id) WHERE (deleted_at IS NULL);
CREATE INDEX products_organization_price ON rowgate.products USING btree (organization_id, price_amount, id) WHERE (deleted_at IS NULL);
create policy insert_write on rowgate.products as permissive for insert to public
  with check (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('products:write'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('products_write'::text) AS has_scope)));
create policy select_member on rowgate.products as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('products_read'::text) AS has_scope)));
create policy update_write on rowgate.products as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('products:write'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('products_write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.products FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.products FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('product', 'members', 'id,organization_id,name,description,price_amount,price_currency,is_archived,metadata,created_at,updated_at', 'deleted_at');
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE OR UPDATE OF deleted_at ON rowgate.products FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('products', 'soft');

-- Table rowgate.refunds
create table rowgate.refunds (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  order_id uuid not null,
  amount bigint not null,
  currency text not null,
  reason text not null,
  comment text,
  metadata jsonb default '{}'::jsonb not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint refunds_pkey PRIMARY KEY (organization_id, id),
  constraint refunds_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint refunds_organization_id_order_id_fkey FOREIGN KEY (organization_id, order_id) REFERENCES rowgate.orders(organization_id, id),
  constraint refunds_amount_check CHECK (((amount >= 1) AND (amount <= '100000000000'::bigint))),
  constraint refunds_comment_check CHECK ((length(comment) <= 1000)),
  constraint refunds_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
  constraint refunds_metadata_valid CHECK (rowgate_hidden.metadata_is_valid(metadata)),
  constraint refunds_reason_check CHECK ((reason = ANY (ARRAY['duplicate'::text, 'fraudulent'::text, 'customer_request'::text, 'other'::text])))
);
comment on table rowgate.refunds is '@behavior -insert -update -delete
Money given back on a paid order (SPEC §18); created through rowgate.create_refund only.';
alter table rowgate.refunds enable row level security;
grant select (id, organization_id, order_id, amount, currency, reason, comment, metadata, created_at, updated_at) on rowgate.refunds to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
CREATE INDEX refunds_id ON rowgate.refunds USING btree (id);
CREATE INDEX refunds_metadata ON rowgate.refunds USING gin (metadata jsonb_path_ops);
CREATE INDEX refunds_order ON rowgate.refunds USING btree (organization_id, order_id, created_at, id);
CREATE INDEX refunds_organization_amount ON rowgate.refunds USING btree (organization_id, amount, id);
CREATE INDEX refunds_organization_created ON rowgate.refunds USING btree (organization_id, created_at, id);
create policy select_member on rowgate.refunds as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids() AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('refunds_read'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.refunds FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.refunds FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('refund', 'members', 'id,organization_id,order_id,amount,currency,reason,comment,metadata,created_at,updated_at', '');
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE ON rowgate.refunds FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('refunds', 'hard');

-- Table rowgate.request_log
create table rowgate.request_log (
  id uuid not null,
  organization_id uuid not null,
  request_id text not null,
  method text not null,
  route text not null,
  path text not null,
  status integer not null,
  error text,
  duration_ms integer not null,
  credential_kind text,
  credential_id uuid,
  user_id uuid,
  client_ip inet,
  user_agent text,
  api_version text,
  idempotent_replayed boolean default false not null,
  created_at timestamp with time zone not null,
  constraint request_log_pkey PRIMARY KEY (organization_id, id),
  constraint request_log_path_check CHECK ((length(path) <= 2000)),
  constraint request_log_user_agent_check CHECK ((length(user_agent) <= 256))
) partition by range (id);
comment on table rowgate.request_log is '@behavior -*
The /v1 requests about an organization of the last 30 days (SPEC §25), for users with organization:manage; written in batches after the answers, so a row appears within seconds or, when writing falls behind, not at all.';
alter table rowgate.request_log enable row level security;
grant select (id, organization_id, request_id, method, route, path, status, error, duration_ms, credential_kind, credential_id, user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at) on rowgate.request_log to rowgate_analyst, rowgate_user;
CREATE INDEX request_log_organization_created ON ONLY rowgate.request_log USING btree (organization_id, created_at, id);
CREATE INDEX request_log_user ON ONLY rowgate.request_log USING btree (user_id) WHERE ((client_ip IS NOT NULL) OR (user_agent IS NOT NULL));
create policy select_manage on rowgate.request_log as permissive for select to rowgate_user, rowgate_analyst
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('organizations_read'::text) AS has_scope)));

-- Table rowgate.role_permissions
create table rowgate.role_permissions (
  role text not null,
  permission text not null,
  constraint role_permissions_pkey PRIMARY KEY (role, permission),
  constraint role_permissions_permission_fkey FOREIGN KEY (permission) REFERENCES rowgate.permissions(name) ON UPDATE CASCADE,
  constraint role_permissions_role_fkey FOREIGN KEY (role) REFERENCES rowgate.roles(name) ON UPDATE CASCADE
);
alter table rowgate.role_permissions enable row level security;
grant select (role, permission) on rowgate.role_permissions to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
create policy select_signed_in on rowgate.role_permissions as permissive for select to public
  using ((( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = ANY (ARRAY['user'::text, 'organization'::text])));

-- Table rowgate.roles
create table rowgate.roles (
  name text not null,
  description text not null,
  constraint roles_pkey PRIMARY KEY (name)
);
alter table rowgate.roles enable row level security;
grant select (name, description) on rowgate.roles to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
create policy select_signed_in on rowgate.roles as permissive for select to public
  using ((( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = ANY (ARRAY['user'::text, 'organization'::text])));

-- Table rowgate.sql_credentials
create table rowgate.sql_credentials (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  login text not null,
  comment text not null,
  scopes text[] not null,
  created_by uuid,
  expires_at timestamp with time zone,
  last_used_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  login_dropped_at timestamp with time zone,
  constraint sql_credentials_pkey PRIMARY KEY (organization_id, id),
  constraint sql_credentials_login_key UNIQUE (login),
  constraint sql_credentials_created_by_fkey FOREIGN KEY (created_by) REFERENCES rowgate.users(id),
  constraint sql_credentials_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint sql_credentials_comment_check CHECK (((length(comment) >= 1) AND (length(comment) <= 200))),
  constraint sql_credentials_login_check CHECK ((login ~ '^rg_sql_[a-z2-7]{20}$'::text)),
  constraint sql_credentials_scopes_check CHECK ((cardinality(scopes) >= 1))
);
comment on table rowgate.sql_credentials is '@behavior -*
Organizations'' SQL logins (SPEC §24, REST only).';
alter table rowgate.sql_credentials enable row level security;
grant insert (organization_id, login, comment, scopes, created_by, expires_at) on rowgate.sql_credentials to rowgate_sql_admin;
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at) on rowgate.sql_credentials to rowgate_user;
grant select (id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at, deleted_at, login_dropped_at) on rowgate.sql_credentials to rowgate_analyst, rowgate_sql_admin;
grant update (last_used_at, deleted_at, login_dropped_at) on rowgate.sql_credentials to rowgate_sql_admin;
CREATE INDEX sql_credentials_organization ON rowgate.sql_credentials USING btree (organization_id, created_at) WHERE (deleted_at IS NULL);
create policy all_sql_admin on rowgate.sql_credentials as permissive for all to rowgate_sql_admin
  using (true)
  with check (true);
create policy select_manage on rowgate.sql_credentials as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND (( SELECT rowgate_hidden.current_subject_kind() AS current_subject_kind) = 'user'::text) AND ( SELECT rowgate_hidden.has_scope('organizations_read'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.sql_credentials FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.sql_credentials FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('sql_credential', 'organization_manager_users', 'id,organization_id,login,comment,scopes,created_by,expires_at,last_used_at,created_at,updated_at', 'deleted_at,login_dropped_at');

-- Table rowgate.transactions
create table rowgate.transactions (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  order_id uuid not null,
  type text not null,
  amount bigint not null,
  currency text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint transactions_pkey PRIMARY KEY (id),
  constraint transactions_order_id_fkey FOREIGN KEY (order_id) REFERENCES rowgate.orders(id),
  constraint transactions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint transactions_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
  constraint transactions_type_check CHECK ((type = ANY (ARRAY['payment'::text, 'refund'::text])))
);
alter table rowgate.transactions enable row level security;
grant select (id, organization_id, order_id, type, amount, currency, created_at, updated_at) on rowgate.transactions to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
CREATE INDEX transactions_order ON rowgate.transactions USING btree (order_id);
CREATE INDEX transactions_organization_amount ON rowgate.transactions USING btree (organization_id, amount, id);
CREATE INDEX transactions_organization_created ON rowgate.transactions USING btree (organization_id, created_at, id);
create policy select_finance on rowgate.transactions as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('finance:read'::text) AS current_organization_ids)::uuid[])) AND ( SELECT (rowgate_hidden.has_scope('transactions_read'::text) OR rowgate_hidden.has_scope('payouts_read'::text)))));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.transactions FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.transactions FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('transaction', 'finance_permission', 'id,organization_id,order_id,type,amount,currency,created_at,updated_at', '');
CREATE TRIGGER _900_count_rows AFTER INSERT OR DELETE ON rowgate.transactions FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__count_rows('transactions', 'hard');

-- Table rowgate.users
create table rowgate.users (
  id uuid default gen_random_uuid() not null,
  email text not null,
  name text,
  avatar_url text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint users_pkey PRIMARY KEY (id),
  constraint users_avatar_url_check CHECK (((avatar_url ~ '^https?://'::text) AND (length(avatar_url) <= 2000))),
  constraint users_email_check CHECK (((email = lower(email)) AND (email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint users_name_check CHECK ((length(name) <= 200))
);
alter table rowgate.users enable row level security;
grant select (id, email, name, avatar_url, created_at, updated_at) on rowgate.users to rowgate_organization, rowgate_user;
grant select (id, email, name, avatar_url, created_at, updated_at, deleted_at) on rowgate.users to rowgate_analyst;
grant update (name, avatar_url) on rowgate.users to rowgate_user;
CREATE UNIQUE INDEX users_email_live ON rowgate.users USING btree (email) WHERE (deleted_at IS NULL);
create policy select_self on rowgate.users as permissive for select to rowgate_user, rowgate_analyst
  using (((id = ( SELECT rowgate_hidden.current_user_id() AS current_user_id)) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('user:read'::text) AS has_scope)));
create policy update_self_web_session on rowgate.users as permissive for update to rowgate_user
  using (((id = ( SELECT rowgate_hidden.current_user_id() AS current_user_id)) AND (deleted_at IS NULL) AND (( SELECT rowgate_hidden.current_credential_kind() AS current_credential_kind) = 'web_session'::text) AND ( SELECT rowgate_hidden.has_scope('user:write'::text) AS has_scope)));
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.users FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _500_leave_organizations AFTER UPDATE OF deleted_at ON rowgate.users FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION rowgate_private.tg_users__leave_organizations();
CREATE TRIGGER _600_erase_clients AFTER UPDATE OF deleted_at ON rowgate.users FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION rowgate_private.tg_users__erase_clients();
CREATE TRIGGER _610_erase_request_clients AFTER UPDATE OF deleted_at ON rowgate.users FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION rowgate_private.tg_users__erase_request_clients();

-- Table rowgate.webhook_attempts
create table rowgate.webhook_attempts (
  id uuid default uuidv7() not null,
  organization_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  delivery_id bigint not null,
  attempt integer not null,
  status text not null,
  response_code integer,
  duration_ms integer not null,
  error text,
  created_at timestamp with time zone default now() not null,
  constraint webhook_attempts_pkey PRIMARY KEY (organization_id, id),
  constraint webhook_attempts_organization_id_endpoint_id_fkey FOREIGN KEY (organization_id, endpoint_id) REFERENCES rowgate.webhook_endpoints(organization_id, id),
  constraint webhook_attempts_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text])))
) partition by range (id);
comment on table rowgate.webhook_attempts is '@behavior -*
Webhook delivery attempts (REST only).';
alter table rowgate.webhook_attempts enable row level security;
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at) on rowgate.webhook_attempts to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;
CREATE INDEX webhook_attempts_endpoint ON ONLY rowgate.webhook_attempts USING btree (endpoint_id, created_at, id);
CREATE INDEX webhook_attempts_event ON ONLY rowgate.webhook_attempts USING btree (event_id);
create policy select_manage on rowgate.webhook_attempts as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND ( SELECT rowgate_hidden.has_scope('webhooks_read'::text) AS has_scope)));

-- Table rowgate.webhook_endpoints
create table rowgate.webhook_endpoints (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  url text not null,
  event_types text[] not null,
  description text,
  enabled boolean default true not null,
  consecutive_failures integer default 0 not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  api_version text default COALESCE(NULLIF(current_setting('rowgate.api_version'::text, true), ''::text), '2026-12-15'::text),
  secret_rotated_at timestamp with time zone,
  constraint webhook_endpoints_pkey PRIMARY KEY (organization_id, id),
  constraint webhook_endpoints_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint webhook_endpoints_description_check CHECK ((length(description) <= 500)),
  constraint webhook_endpoints_event_types_check CHECK (((cardinality(event_types) >= 1) AND (cardinality(event_types) <= 100))),
  constraint webhook_endpoints_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2000)))
);
comment on table rowgate.webhook_endpoints is '@behavior -*
Webhook endpoints (REST only: creating one makes a secret).';
comment on column rowgate.webhook_endpoints.api_version is 'The API version its webhook bodies are rendered in (SPEC §23).';
comment on column rowgate.webhook_endpoints.secret_rotated_at is 'When the signing secret was last rotated; null: never.';
alter table rowgate.webhook_endpoints enable row level security;
grant select (id, organization_id, url, event_types, description, enabled, consecutive_failures, created_at, updated_at, deleted_at) on rowgate.webhook_endpoints to rowgate_sql_login;
grant select (id, organization_id, url, event_types, description, enabled, consecutive_failures, created_at, updated_at, deleted_at, api_version, secret_rotated_at) on rowgate.webhook_endpoints to rowgate_analyst;
grant select (id, organization_id, url, event_types, description, enabled, created_at, updated_at, api_version, secret_rotated_at) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user;
grant update (url, event_types, description, enabled, api_version) on rowgate.webhook_endpoints to rowgate_organization, rowgate_user;
CREATE INDEX webhook_endpoints_id ON rowgate.webhook_endpoints USING btree (id);
CREATE INDEX webhook_endpoints_organization ON rowgate.webhook_endpoints USING btree (organization_id, created_at, id) WHERE (deleted_at IS NULL);
create policy select_manage on rowgate.webhook_endpoints as permissive for select to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('webhooks_read'::text) AS has_scope)));
create policy update_manage on rowgate.webhook_endpoints as permissive for update to public
  using (((organization_id = ANY (( SELECT rowgate_hidden.current_organization_ids('organization:manage'::text) AS current_organization_ids)::uuid[])) AND (deleted_at IS NULL) AND ( SELECT rowgate_hidden.has_scope('webhooks_write'::text) AS has_scope)));
CREATE TRIGGER _050_at_most BEFORE INSERT ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__at_most('organization_id', '16', 'false', 'organization', 'webhook endpoints', 'delete');
CREATE TRIGGER _100_timestamps BEFORE INSERT OR UPDATE ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__timestamps();
CREATE TRIGGER _200_reset BEFORE UPDATE ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_webhook_endpoints__reset();
CREATE TRIGGER _300_check_types BEFORE UPDATE ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_webhook_endpoints__check_types();
CREATE TRIGGER _400_events AFTER INSERT OR UPDATE ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg__events('webhook_endpoint', 'organization_managers', 'id,organization_id,url,event_types,description,enabled,secret_rotated_at,api_version,created_at,updated_at', 'consecutive_failures,deleted_at');
CREATE TRIGGER _500_hold_deliveries AFTER UPDATE OF enabled, deleted_at ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_webhook_endpoints__hold_deliveries();
CREATE TRIGGER _600_disabled_notice AFTER UPDATE OF enabled ON rowgate.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_webhook_endpoints__disabled_notice();

-- Table rowgate_hidden.operations
create table rowgate_hidden.operations (
  operation text not null,
  method text not null,
  path text not null,
  credentials text[] not null,
  scopes text[] not null,
  access_class text not null,
  policy text,
  permission text,
  status integer not null,
  lookup text not null,
  resource text,
  match jsonb,
  policy_key text,
  constraint operations_pkey PRIMARY KEY (operation),
  constraint operations_permission_fkey FOREIGN KEY (permission) REFERENCES rowgate.permissions(name),
  constraint operations_lookup_check CHECK ((lookup = ANY (ARRAY['none'::text, 'list'::text, 'target'::text, 'authorize'::text, 'visible'::text, 'invitee'::text]))),
  constraint operations_method_check CHECK ((method = ANY (ARRAY['GET'::text, 'POST'::text, 'PATCH'::text, 'DELETE'::text])))
);
comment on table rowgate_hidden.operations is 'Every /v1 operation of the route table (SPEC §20): its credentials and scopes, how its resource is found (lookup, resource, match) and the policy rowgate_hidden.policy_denial is asked (policy_key).';
alter table rowgate_hidden.operations enable row level security;
grant select on table rowgate_hidden.operations to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;
grant select (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) on rowgate_hidden.operations to rowgate_sql_login;
create policy select_all on rowgate_hidden.operations as permissive for select to public
  using (true);

-- Table rowgate_private.access_token_hashes
create table rowgate_private.access_token_hashes (
  token_hash bytea not null,
  personal_access_token_id uuid,
  organization_access_token_id uuid,
  constraint access_token_hashes_pkey PRIMARY KEY (token_hash),
  constraint access_token_hashes_organization_access_token_id_key UNIQUE (organization_access_token_id),
  constraint access_token_hashes_personal_access_token_id_key UNIQUE (personal_access_token_id),
  constraint access_token_hashes_organization_access_token_id_fkey FOREIGN KEY (organization_access_token_id) REFERENCES rowgate.organization_access_tokens(id) ON DELETE CASCADE,
  constraint access_token_hashes_personal_access_token_id_fkey FOREIGN KEY (personal_access_token_id) REFERENCES rowgate.personal_access_tokens(id) ON DELETE CASCADE,
  constraint access_token_hashes_check CHECK ((num_nonnulls(personal_access_token_id, organization_access_token_id) = 1))
);

-- Table rowgate_private.analysts
create table rowgate_private.analysts (
  login name not null,
  user_id uuid not null,
  created_at timestamp with time zone default now() not null,
  connection_limit integer default 5 not null,
  statement_timeout_ms integer default 60000 not null,
  idle_in_transaction_timeout_ms integer default 60000 not null,
  constraint analysts_pkey PRIMARY KEY (login),
  constraint analysts_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id),
  constraint analysts_connection_limit_check CHECK (((connection_limit >= 1) AND (connection_limit <= 1000))),
  constraint analysts_idle_in_transaction_timeout_ms_check CHECK (((idle_in_transaction_timeout_ms >= 100) AND (idle_in_transaction_timeout_ms <= 86400000))),
  constraint analysts_statement_timeout_ms_check CHECK (((statement_timeout_ms >= 100) AND (statement_timeout_ms <= 86400000)))
);
grant delete on table rowgate_private.analysts to rowgate_sql_admin;
grant insert (login, user_id, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms) on rowgate_private.analysts to rowgate_sql_admin;
grant select (login, user_id, created_at, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms) on rowgate_private.analysts to rowgate_sql_admin;

-- Table rowgate_private.denial_counts
create table rowgate_private.denial_counts (
  organization_id uuid not null,
  credential_id uuid not null,
  hour timestamp with time zone not null,
  recorded integer default 0 not null,
  overflow_id uuid,
  constraint denial_counts_pkey PRIMARY KEY (organization_id, credential_id, hour)
);
comment on table rowgate_private.denial_counts is 'Denials recorded per credential, organization and hour (SPEC §20: at most 1,000, then one overflow row).';
CREATE INDEX denial_counts_hour ON rowgate_private.denial_counts USING btree (hour);

-- Table rowgate_private.event_retention
create table rowgate_private.event_retention (
  singleton boolean default true not null,
  pruned_before timestamp with time zone not null,
  constraint event_retention_pkey PRIMARY KEY (singleton),
  constraint event_retention_singleton_check CHECK (singleton)
);
comment on table rowgate_private.event_retention is 'Events created before pruned_before may have been pruned: a feed cursor older than that has lost what came after it.';

-- Table rowgate_private.export_leases
create table rowgate_private.export_leases (
  id uuid default gen_random_uuid() not null,
  credential_id uuid not null,
  expires_at timestamp with time zone not null,
  created_at timestamp with time zone default now() not null,
  constraint export_leases_pkey PRIMARY KEY (id)
);
CREATE INDEX export_leases_credential ON rowgate_private.export_leases USING btree (credential_id, expires_at);

-- Table rowgate_private.idempotency_keys
create table rowgate_private.idempotency_keys (
  subject_kind text not null,
  subject_id uuid not null,
  key text not null,
  request_hash bytea not null,
  response_status integer not null,
  response_body text not null,
  created_at timestamp with time zone default now() not null,
  constraint idempotency_keys_pkey PRIMARY KEY (subject_kind, subject_id, key),
  constraint idempotency_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255))),
  constraint idempotency_keys_response_status_check CHECK (((response_status >= 200) AND (response_status <= 299)))
);
CREATE INDEX idempotency_keys_created ON rowgate_private.idempotency_keys USING btree (created_at);

-- Table rowgate_private.login_codes
create table rowgate_private.login_codes (
  id uuid default gen_random_uuid() not null,
  email text not null,
  code_hash bytea not null,
  wrong_codes integer default 0 not null,
  expires_at timestamp with time zone not null,
  used_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  attempt_hash bytea not null,
  client text not null,
  origin text default 'unknown'::text not null,
  mailed boolean default true not null,
  constraint login_codes_pkey PRIMARY KEY (id),
  constraint login_codes_client_check CHECK ((length(client) <= 64)),
  constraint login_codes_email_check CHECK (((email = lower(email)) AND (email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint login_codes_origin_check CHECK ((length(origin) <= 80)) NOT VALID
);
comment on column rowgate_private.login_codes.wrong_codes is 'Wrong codes tried with the attempt; at 5 the attempt is over.';
comment on column rowgate_private.login_codes.attempt_hash is 'The keyed hash of the attempt token the code was issued to: the code works with that attempt only.';
comment on column rowgate_private.login_codes.client is 'The client address (an IPv6 client''s /64) that asked for the code: its allowance paid for it.';
comment on column rowgate_private.login_codes.origin is 'Whose mailbox allowance the code spent: unknown, device:<its hash> or network:<cidr>.';
comment on column rowgate_private.login_codes.mailed is 'False when the mailbox allowance of its origin was spent: the code was stored (the client''s allowance paid for it) but never mailed.';
CREATE UNIQUE INDEX login_codes_attempt ON rowgate_private.login_codes USING btree (attempt_hash);
CREATE INDEX login_codes_client ON rowgate_private.login_codes USING btree (client, created_at);
CREATE INDEX login_codes_email ON rowgate_private.login_codes USING btree (email, created_at);
CREATE INDEX login_codes_mailbox ON rowgate_private.login_codes USING btree (email, origin, created_at) WHERE mailed;

-- Table rowgate_private.mail_outbox
create table rowgate_private.mail_outbox (
  id uuid default gen_random_uuid() not null,
  recipient text not null,
  subject text,
  body text,
  created_at timestamp with time zone default now() not null,
  sealed_body bytea,
  due_at timestamp with time zone default now() not null,
  attempts integer default 0 not null,
  lease uuid,
  leased_until timestamp with time zone,
  sent_at timestamp with time zone,
  failed_at timestamp with time zone,
  last_error text,
  constraint mail_outbox_pkey PRIMARY KEY (id),
  constraint mail_outbox_last_error_check CHECK ((length(last_error) <= 500)) NOT VALID,
  constraint mail_outbox_sealed_or_readable CHECK (((sealed_body IS NULL) OR ((subject IS NULL) AND (body IS NULL)))) NOT VALID
);
comment on column rowgate_private.mail_outbox.sealed_body is 'The message (recipient, subject, text) sealed under the server secret, bound to the row''s id; null once sent or given up, and for development messages.';
comment on column rowgate_private.mail_outbox.due_at is 'When the message may next be claimed (a failed attempt moves it by the sender''s backoff).';
comment on column rowgate_private.mail_outbox.lease is 'The claim of the sender sending it; its answer is recorded only with that lease.';
comment on column rowgate_private.mail_outbox.leased_until is 'Past this, a claim that was not recorded is void and the message is claimed again.';
comment on column rowgate_private.mail_outbox.sent_at is 'When the mail server accepted it.';
comment on column rowgate_private.mail_outbox.failed_at is 'When its sender gave up after its last attempt failed.';
CREATE INDEX mail_outbox_created_at ON rowgate_private.mail_outbox USING btree (created_at);
CREATE INDEX mail_outbox_due ON rowgate_private.mail_outbox USING btree (due_at) WHERE (sealed_body IS NOT NULL);

-- Table rowgate_private.oauth2_access_tokens
create table rowgate_private.oauth2_access_tokens (
  id uuid default gen_random_uuid() not null,
  token_hash bytea not null,
  client_id text not null,
  user_id uuid not null,
  organization_id uuid,
  scopes text[] not null,
  expires_at timestamp with time zone not null,
  revoked_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  family_id uuid,
  last_used_at timestamp with time zone,
  constraint oauth2_access_tokens_pkey PRIMARY KEY (id),
  constraint oauth2_access_tokens_token_hash_key UNIQUE (token_hash),
  constraint oauth2_access_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES rowgate_private.oauth2_token_families(id),
  constraint oauth2_access_tokens_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint oauth2_access_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id) ON DELETE CASCADE
);
CREATE INDEX oauth2_access_tokens_client_id ON rowgate_private.oauth2_access_tokens USING btree (client_id) WHERE (revoked_at IS NULL);
CREATE INDEX oauth2_access_tokens_expires_at ON rowgate_private.oauth2_access_tokens USING btree (expires_at);
CREATE INDEX oauth2_access_tokens_family_id ON rowgate_private.oauth2_access_tokens USING btree (family_id) WHERE (revoked_at IS NULL);
CREATE INDEX oauth2_access_tokens_user_id ON rowgate_private.oauth2_access_tokens USING btree (user_id) WHERE (revoked_at IS NULL);

-- Table rowgate_private.oauth2_authorization_codes
create table rowgate_private.oauth2_authorization_codes (
  id uuid default gen_random_uuid() not null,
  code_hash bytea not null,
  client_id text not null,
  user_id uuid not null,
  organization_id uuid,
  scopes text[] not null,
  redirect_uri text not null,
  code_challenge text,
  expires_at timestamp with time zone not null,
  used_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  constraint oauth2_authorization_codes_pkey PRIMARY KEY (id),
  constraint oauth2_authorization_codes_code_hash_key UNIQUE (code_hash),
  constraint oauth2_authorization_codes_client_id_fkey FOREIGN KEY (client_id) REFERENCES rowgate.oauth2_clients(client_id),
  constraint oauth2_authorization_codes_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint oauth2_authorization_codes_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id)
);
CREATE INDEX oauth2_authorization_codes_client_id ON rowgate_private.oauth2_authorization_codes USING btree (client_id);

-- Table rowgate_private.oauth2_client_secrets
create table rowgate_private.oauth2_client_secrets (
  client_id text not null,
  secret_hash bytea not null,
  constraint oauth2_client_secrets_pkey PRIMARY KEY (client_id),
  constraint oauth2_client_secrets_client_id_fkey FOREIGN KEY (client_id) REFERENCES rowgate.oauth2_clients(client_id)
);

-- Table rowgate_private.oauth2_refresh_tokens
create table rowgate_private.oauth2_refresh_tokens (
  id uuid default gen_random_uuid() not null,
  token_hash bytea not null,
  family_id uuid not null,
  expires_at timestamp with time zone not null,
  used_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  constraint oauth2_refresh_tokens_pkey PRIMARY KEY (id),
  constraint oauth2_refresh_tokens_token_hash_key UNIQUE (token_hash),
  constraint oauth2_refresh_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES rowgate_private.oauth2_token_families(id)
);
CREATE INDEX oauth2_refresh_tokens_expires_at ON rowgate_private.oauth2_refresh_tokens USING btree (expires_at);
CREATE INDEX oauth2_refresh_tokens_family_id ON rowgate_private.oauth2_refresh_tokens USING btree (family_id);

-- Table rowgate_private.oauth2_token_families
create table rowgate_private.oauth2_token_families (
  id uuid default gen_random_uuid() not null,
  client_id text not null,
  user_id uuid not null,
  organization_id uuid,
  scopes text[] not null,
  authorization_code_id uuid not null,
  revoked_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  constraint oauth2_token_families_pkey PRIMARY KEY (id),
  constraint oauth2_token_families_authorization_code_id_key UNIQUE (authorization_code_id),
  constraint oauth2_token_families_authorization_code_id_fkey FOREIGN KEY (authorization_code_id) REFERENCES rowgate_private.oauth2_authorization_codes(id),
  constraint oauth2_token_families_client_id_fkey FOREIGN KEY (client_id) REFERENCES rowgate.oauth2_clients(client_id),
  constraint oauth2_token_families_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id),
  constraint oauth2_token_families_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id)
);
CREATE INDEX oauth2_token_families_client_id ON rowgate_private.oauth2_token_families USING btree (client_id) WHERE (revoked_at IS NULL);
CREATE INDEX oauth2_token_families_organization_id ON rowgate_private.oauth2_token_families USING btree (organization_id) WHERE ((revoked_at IS NULL) AND (organization_id IS NOT NULL));
CREATE INDEX oauth2_token_families_user_id ON rowgate_private.oauth2_token_families USING btree (user_id) WHERE (revoked_at IS NULL);

-- Table rowgate_private.organization_row_counts
create table rowgate_private.organization_row_counts (
  organization_id uuid not null,
  resource text not null,
  row_count bigint default 0 not null,
  stripe smallint default 0 not null,
  constraint organization_row_counts_pkey PRIMARY KEY (organization_id, resource, stripe),
  constraint organization_row_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES rowgate.organizations(id)
);

-- Table rowgate_private.platform_admins
create table rowgate_private.platform_admins (
  user_id uuid not null,
  created_at timestamp with time zone default now() not null,
  constraint platform_admins_pkey PRIMARY KEY (user_id),
  constraint platform_admins_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id) ON DELETE CASCADE
);
CREATE TRIGGER _900_touch_user AFTER INSERT OR DELETE OR UPDATE ON rowgate_private.platform_admins FOR EACH ROW EXECUTE FUNCTION rowgate_private.tg_platform_admins__touch_user();

-- Table rowgate_private.rate_limit_counts
create table rowgate_private.rate_limit_counts (
  policy text not null,
  key text not null,
  window_number bigint not null,
  points integer not null,
  slice smallint not null,
  constraint rate_limit_counts_pkey PRIMARY KEY (policy, key, window_number, slice)
) partition by list (slice);
comment on table rowgate_private.rate_limit_counts is 'Requests let through per rate-limit policy, key (a credential''s hash or a client address) and window, summed over every server; in four slices of 15 seconds taken in turn, each emptied whole once its windows are over.';

-- Table rowgate_private.rate_limit_servers
create unlogged table rowgate_private.rate_limit_servers (
  id uuid not null,
  seen_at timestamp with time zone not null,
  constraint rate_limit_servers_pkey PRIMARY KEY (id)
);
comment on table rowgate_private.rate_limit_servers is 'Servers that exchanged rate-limit counts lately; their number bounds how far an allowance can be passed.';

-- Table rowgate_private.request_log_events
create table rowgate_private.request_log_events (
  request_log_id uuid not null,
  organization_id uuid not null,
  event_id uuid not null,
  created_at timestamp with time zone default now() not null
);
comment on table rowgate_private.request_log_events is 'The events each request wrote, linked by the request log id its transaction carried.';
CREATE INDEX request_log_events_created ON rowgate_private.request_log_events USING btree (created_at);
CREATE INDEX request_log_events_request ON rowgate_private.request_log_events USING btree (request_log_id);

-- Table rowgate_private.scopes
create table rowgate_private.scopes (
  name text not null,
  implies text,
  constraint scopes_pkey PRIMARY KEY (name),
  constraint scopes_implies_fkey FOREIGN KEY (implies) REFERENCES rowgate_private.scopes(name)
);
grant select (name) on rowgate_private.scopes to rowgate_sql_admin;

-- Table rowgate_private.sessions
create table rowgate_private.sessions (
  id uuid default gen_random_uuid() not null,
  token_hash bytea not null,
  kind text not null,
  user_id uuid,
  customer_id uuid,
  member_id uuid,
  is_impersonation boolean default false not null,
  impersonator_id uuid,
  expires_at timestamp with time zone not null,
  revoked_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  api_version text default COALESCE(NULLIF(current_setting('rowgate.api_version'::text, true), ''::text), '2026-12-15'::text),
  last_used_at timestamp with time zone,
  client_ip inet,
  user_agent text,
  constraint sessions_pkey PRIMARY KEY (id),
  constraint sessions_token_hash_key UNIQUE (token_hash),
  constraint sessions_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES rowgate.customers(id),
  constraint sessions_impersonator_id_fkey FOREIGN KEY (impersonator_id) REFERENCES rowgate.users(id) ON DELETE CASCADE,
  constraint sessions_member_id_fkey FOREIGN KEY (member_id) REFERENCES rowgate.customer_members(id),
  constraint sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES rowgate.users(id) ON DELETE CASCADE,
  constraint sessions_check CHECK (((kind = 'user'::text) = (user_id IS NOT NULL))),
  constraint sessions_check1 CHECK ((((kind = 'customer'::text) = ((customer_id IS NOT NULL) AND (member_id IS NULL))) OR (kind <> 'customer'::text))),
  constraint sessions_check2 CHECK ((((kind = 'member'::text) = (member_id IS NOT NULL)) OR (kind <> 'member'::text))),
  constraint sessions_check3 CHECK ((is_impersonation = (impersonator_id IS NOT NULL))),
  constraint sessions_kind_check CHECK ((kind = ANY (ARRAY['user'::text, 'customer'::text, 'member'::text])))
);
comment on column rowgate_private.sessions.api_version is 'Customer and member sessions: the version of the request that created them (SPEC §23); web sessions use the newest.';
CREATE INDEX sessions_portal_expires_at ON rowgate_private.sessions USING btree (expires_at) WHERE (kind <> 'user'::text);
CREATE INDEX sessions_user_id ON rowgate_private.sessions USING btree (user_id) WHERE (revoked_at IS NULL);

-- Table rowgate_private.sign_in_devices
create table rowgate_private.sign_in_devices (
  email text not null,
  device_hash bytea not null,
  signed_in_at timestamp with time zone default now() not null,
  constraint sign_in_devices_pkey PRIMARY KEY (email, device_hash)
);
comment on table rowgate_private.sign_in_devices is 'Browsers that signed in to an address (the keyed hash of their rowgate_device cookie), kept a year after their latest sign-in.';
CREATE INDEX sign_in_devices_signed_in_at ON rowgate_private.sign_in_devices USING btree (signed_in_at);

-- Table rowgate_private.sign_in_networks
create table rowgate_private.sign_in_networks (
  email text not null,
  network cidr not null,
  signed_in_at timestamp with time zone default now() not null,
  constraint sign_in_networks_pkey PRIMARY KEY (email, network)
);
comment on table rowgate_private.sign_in_networks is 'Client networks (IPv4 /24, IPv6 /64) that signed in to an address, kept 30 days after their latest sign-in.';
CREATE INDEX sign_in_networks_signed_in_at ON rowgate_private.sign_in_networks USING btree (signed_in_at);

-- Table rowgate_private.webhook_deliveries
create table rowgate_private.webhook_deliveries (
  id bigint generated always as identity not null,
  organization_id uuid not null,
  endpoint_id uuid not null,
  event_id uuid not null,
  status text default 'pending'::text not null,
  attempts integer default 0 not null,
  next_attempt_at timestamp with time zone default now() not null,
  created_at timestamp with time zone default now() not null,
  feed_position bigint,
  constraint webhook_deliveries_pkey PRIMARY KEY (organization_id, id),
  constraint webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'paused'::text, 'succeeded'::text, 'failed'::text])))
);
comment on column rowgate_private.webhook_deliveries.feed_position is 'Its event''s feed position, set when the sequencer takes the delivery into its endpoint''s lane (null until then); first attempts go out in this order.';
CREATE INDEX webhook_deliveries_endpoint_paused ON rowgate_private.webhook_deliveries USING btree (endpoint_id) WHERE (status = 'paused'::text);
CREATE INDEX webhook_deliveries_endpoint_pending ON rowgate_private.webhook_deliveries USING btree (endpoint_id, feed_position, id) WHERE ((status = 'pending'::text) AND (feed_position IS NOT NULL));
CREATE INDEX webhook_deliveries_endpoint_retry ON rowgate_private.webhook_deliveries USING btree (endpoint_id, next_attempt_at) WHERE ((status = 'pending'::text) AND (attempts > 0));
CREATE INDEX webhook_deliveries_event ON rowgate_private.webhook_deliveries USING btree (event_id);
CREATE INDEX webhook_deliveries_id ON rowgate_private.webhook_deliveries USING btree (id);
CREATE INDEX webhook_deliveries_waiting ON rowgate_private.webhook_deliveries USING btree (id) WHERE ((status = 'pending'::text) AND (feed_position IS NULL));

-- Table rowgate_private.webhook_disabled_notices
create table rowgate_private.webhook_disabled_notices (
  id uuid default gen_random_uuid() not null,
  organization_id uuid not null,
  endpoint_id uuid not null,
  created_at timestamp with time zone default now() not null,
  taken_at timestamp with time zone,
  constraint webhook_disabled_notices_pkey PRIMARY KEY (organization_id, id),
  constraint webhook_disabled_notices_organization_id_endpoint_id_fkey FOREIGN KEY (organization_id, endpoint_id) REFERENCES rowgate.webhook_endpoints(organization_id, id)
);
comment on table rowgate_private.webhook_disabled_notices is 'An endpoint its failures disabled, until the sender has recorded the mail to its organization''s managers.';
CREATE INDEX webhook_disabled_notices_endpoint ON rowgate_private.webhook_disabled_notices USING btree (organization_id, endpoint_id);
CREATE INDEX webhook_disabled_notices_pending ON rowgate_private.webhook_disabled_notices USING btree (created_at) WHERE (taken_at IS NULL);

-- Table rowgate_private.webhook_lanes
create table rowgate_private.webhook_lanes (
  organization_id uuid not null,
  endpoint_id uuid not null,
  due_at timestamp with time zone,
  delivery_id bigint,
  lease uuid,
  failures integer default 0 not null,
  constraint webhook_lanes_pkey PRIMARY KEY (organization_id, endpoint_id),
  constraint webhook_lanes_organization_id_endpoint_id_fkey FOREIGN KEY (organization_id, endpoint_id) REFERENCES rowgate.webhook_endpoints(organization_id, id),
  constraint webhook_lanes_check CHECK (((delivery_id IS NULL) = (lease IS NULL)))
);
comment on table rowgate_private.webhook_lanes is 'One endpoint''s delivery state: when a sender next has work for it (due_at; null: none until a delivery is taken in), the attempt in flight and its lease (due_at is then when the lease runs out), and its failed attempts in a row (more than 0: the breaker is open and due_at is the next probe).';
CREATE INDEX webhook_lanes_due ON rowgate_private.webhook_lanes USING btree (due_at) WHERE (due_at IS NOT NULL);

-- Table rowgate_private.webhook_secrets
create table rowgate_private.webhook_secrets (
  organization_id uuid not null,
  endpoint_id uuid not null,
  sealed_secret bytea not null,
  previous_sealed_secret bytea,
  previous_expires_at timestamp with time zone,
  constraint webhook_secrets_pkey PRIMARY KEY (organization_id, endpoint_id),
  constraint webhook_secrets_organization_id_endpoint_id_fkey FOREIGN KEY (organization_id, endpoint_id) REFERENCES rowgate.webhook_endpoints(organization_id, id)
);
comment on column rowgate_private.webhook_secrets.previous_sealed_secret is 'The secret a rotation replaced, still signing until previous_expires_at.';

-- Sequence rowgate_private.feed_positions
create sequence rowgate_private.feed_positions as bigint increment 1 minvalue 1 maxvalue 9223372036854775807 start 1 cache 1;
comment on sequence rowgate_private.feed_positions is 'The feed''s positions, handed out by the sequencer (place_events) alone.';

-- View rowgate.colleagues
create view rowgate.colleagues with (security_barrier=true) as
 SELECT id,
    email,
    name
   FROM rowgate.users u
  WHERE (id = ANY ((( SELECT rowgate_hidden.current_colleague_ids() AS current_colleague_ids))::uuid[])) AND deleted_at IS NULL AND ( SELECT rowgate_hidden.has_scope('members_read'::text) AS has_scope);
comment on view rowgate.colleagues is '@primaryKey id
The users who share an organization with the subject: their id, name and e-mail only (members_read).';
comment on column rowgate.colleagues.email is '@notNull
The colleague''s e-mail address.';
comment on column rowgate.colleagues.name is 'The colleague''s display name.';
grant select (id, email, name) on rowgate.colleagues to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;

-- View rowgate.orders_by_day
create view rowgate.orders_by_day with (security_invoker=true) as
 SELECT organization_id,
    (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    status,
    count(*) AS orders,
    sum(amount) AS amount
   FROM rowgate.orders
  GROUP BY organization_id, ((created_at AT TIME ZONE 'UTC'::text)::date), status;
comment on view rowgate.orders_by_day is 'Orders per organization, UTC day and status.';
grant select on table rowgate.orders_by_day to rowgate_analyst, rowgate_organization, rowgate_user;
grant select (organization_id, day, status, orders, amount) on rowgate.orders_by_day to rowgate_sql_login;

-- View rowgate.revenue_by_day
create view rowgate.revenue_by_day with (security_invoker=true) as
 SELECT organization_id,
    (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    currency,
    COALESCE(sum(amount) FILTER (WHERE type = 'payment'::text), 0::numeric) AS gross_amount,
    COALESCE(- sum(amount) FILTER (WHERE type = 'refund'::text), 0::numeric) AS refunded_amount,
    sum(amount) AS net_amount,
    count(*) FILTER (WHERE type = 'payment'::text) AS payments
   FROM rowgate.transactions
  GROUP BY organization_id, ((created_at AT TIME ZONE 'UTC'::text)::date), currency;
comment on view rowgate.revenue_by_day is 'Payments, refunds and net revenue per organization, UTC day and currency (finance:read).';
grant select on table rowgate.revenue_by_day to rowgate_analyst, rowgate_organization, rowgate_user;
grant select (organization_id, day, currency, gross_amount, refunded_amount, net_amount, payments) on rowgate.revenue_by_day to rowgate_sql_login;

-- Function rowgate.accept_invitation(uuid)
CREATE OR REPLACE FUNCTION rowgate.accept_invitation(p_id uuid)
 RETURNS rowgate.memberships
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_invitation rowgate.invitations := rowgate_private.invitee_invitation(p_id);
  v_membership rowgate.memberships;
begin
  if exists (select 1 from rowgate.memberships m where m.organization_id = v_invitation.organization_id
      and m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null) then
    raise exception 'You are a member of this organization already' using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.invitations set status = 'accepted' where id = v_invitation.id;
  insert into rowgate.memberships (user_id, organization_id, role)
    values (rowgate_hidden.current_user_id(), v_invitation.organization_id, v_invitation.role)
    returning * into v_membership;
  return v_membership;
end;
$function$;
comment on function rowgate.accept_invitation(uuid) is '@behavior -*
The invitee accepts: the membership is created in the same transaction.';
grant execute on function rowgate.accept_invitation(uuid) to rowgate_user;

-- Function rowgate.add_member(uuid,text,text)
CREATE OR REPLACE FUNCTION rowgate.add_member(p_organization_id uuid, p_email text, p_role text)
 RETURNS rowgate.memberships
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
  v_user_id uuid;
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  select id into v_user_id from rowgate.users where email = lower(p_email) and deleted_at is null;
  if v_user_id is null then
    raise exception 'No user has this e-mail address' using errcode = 'RG422', detail = 'body.email';
  end if;
  if exists (select 1 from rowgate.memberships where user_id = v_user_id and organization_id = p_organization_id and deleted_at is null) then
    raise exception 'This user is a member already' using errcode = 'RG422', detail = 'body.email';
  end if;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, p_organization_id, p_role)
    returning * into v_membership;
  return v_membership;
end;
$function$;
grant execute on function rowgate.add_member(uuid,text,text) to rowgate_organization, rowgate_user;

-- Function rowgate.authenticate_login_code(text,bytea,bytea,bytea,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.authenticate_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_session_token_hash bytea, p_client text, p_device_hash bytea)
 RETURNS TABLE(status text, id uuid, email text, name text, avatar_url text, is_admin boolean, created_at timestamp with time zone, updated_at timestamp with time zone, session_expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_email text := lower(p_email);
  v_code rowgate_private.login_codes;
  v_user rowgate.users;
  v_session rowgate_private.sessions;
  v_network cidr := rowgate_private.client_network(p_client);
begin
  -- the attempt's guesses are counted one after the other, from wherever they come
  select c.* into v_code from rowgate_private.login_codes c where c.attempt_hash = p_attempt_hash for update;
  if v_code.id is null or v_code.used_at is not null or v_code.expires_at <= now()
     or v_code.wrong_codes >= rowgate_private.login_code_wrong_codes_allowed() then
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  if v_code.email <> v_email or v_code.code_hash <> p_code_hash then
    update rowgate_private.login_codes c set wrong_codes = c.wrong_codes + 1 where c.id = v_code.id;
    return query select 'invalid'::text, null::uuid, null::text, null::text, null::text, null::boolean,
      null::timestamptz, null::timestamptz, null::timestamptz;
    return;
  end if;
  -- a code signs in once, and the other codes of the address die with it
  update rowgate_private.login_codes c set used_at = now() where c.email = v_email and c.used_at is null;
  select u.* into v_user from rowgate.users u where u.email = v_email and u.deleted_at is null;
  if v_user.id is null then
    insert into rowgate.users (email) values (v_email) returning * into v_user;
  end if;
  v_session := rowgate_private.issue_web_session(v_user.id, p_session_token_hash);
  -- where the owner signs in from: its later requests from there have their own mailbox allowance
  delete from rowgate_private.sign_in_devices d where d.signed_in_at < now() - interval '1 year';
  delete from rowgate_private.sign_in_networks n where n.signed_in_at < now() - interval '30 days';
  if p_device_hash is not null then
    insert into rowgate_private.sign_in_devices as d (email, device_hash) values (v_email, p_device_hash)
      on conflict (email, device_hash) do update set signed_in_at = now();
  end if;
  if v_network is not null then
    insert into rowgate_private.sign_in_networks as n (email, network) values (v_email, v_network)
      on conflict (email, network) do update set signed_in_at = now();
  end if;
  return query select 'ok'::text, v_user.id, v_user.email, v_user.name, v_user.avatar_url,
    exists (select 1 from rowgate_private.platform_admins a where a.user_id = v_user.id),
    v_user.created_at, v_user.updated_at, v_session.expires_at;
end;
$function$;
comment on function rowgate.authenticate_login_code(text,bytea,bytea,bytea,text,bytea) is '@behavior -*
Signs in with a login code and the attempt it was issued to: ok with the user and the new session''s expiry (and the browser''s device hash and the client''s network recorded as the account''s), or invalid (a wrong code counts against the attempt; 5 end it).';
grant execute on function rowgate.authenticate_login_code(text,bytea,bytea,bytea,text,bytea) to rowgate_anonymous;

-- Function rowgate."check"(text,jsonb,uuid)
CREATE OR REPLACE FUNCTION rowgate."check"(operation text, params jsonb DEFAULT '{}'::jsonb, organization_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select rowgate_hidden.check_operation(operation, coalesce(params, '{}'), organization_id,
    not pg_has_role(session_user, 'rowgate_sql_login', 'member')) - 'organization_id';
$function$;
comment on function rowgate."check"(text,jsonb,uuid) is '@behavior -*
Why an operation would be allowed or refused (SPEC §20): for an analyst, as its user''s web session; for an organization''s SQL login, as an organization access token with the login''s scopes.';
grant execute on function rowgate."check"(text,jsonb,uuid) to rowgate_analyst, rowgate_sql_login;

-- Function rowgate.check_oauth2_authorization(text,text,text[],uuid,text,text)
CREATE OR REPLACE FUNCTION rowgate.check_oauth2_authorization(p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid, p_code_challenge text, p_code_challenge_method text)
 RETURNS TABLE(status text, description text, client_name text, scopes text[], organization_name text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients;
  v_scopes text[];
  v_unknown text;
  v_denial text;
  v_organization_name text;
  v_withheld text[];
  v_first_denial text;
  v_note text;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Unknown client_id'::text, null::text, null::text[], null::text;
    return;
  elsif p_redirect_uri is null or not (p_redirect_uri = any (v_client.redirect_uris)) then
    return query select 'invalid_redirect_uri'::text, 'The redirect_uri is not one the client registered'::text,
      null::text, null::text[], null::text;
    return;
  end if;
  if rowgate_hidden.current_user_id() is null then
    return query select 'access_denied'::text, 'Only users can authorize clients'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- PKCE (RFC 7636): S256 only; required of public clients
  if p_code_challenge is null and (p_code_challenge_method is not null or v_client.token_endpoint_auth_method = 'none') then
    return query select 'invalid_request'::text,
      'PKCE is required: send code_challenge with code_challenge_method=S256'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge_method is distinct from 'S256' then
    return query select 'invalid_request'::text, 'Only code_challenge_method=S256 is supported'::text,
      v_client.client_name, null::text[], null::text;
    return;
  elsif p_code_challenge is not null and p_code_challenge !~ '^[A-Za-z0-9_-]{43}$' then
    return query select 'invalid_request'::text,
      'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)'::text, v_client.client_name, null::text[], null::text;
    return;
  end if;
  -- scopes: those asked for (the client's own when none are named), within the client's
  v_scopes := (select array_agg(distinct s order by s) from unnest(coalesce(p_scopes, v_client.scopes)) s);
  v_unknown := rowgate_private.unknown_scope(v_scopes);
  if v_scopes is null then
    return query select 'invalid_scope'::text, 'No scope was requested'::text, v_client.client_name, null::text[], null::text;
    return;
  elsif v_unknown is not null then
    return query select 'invalid_scope'::text, format('Unknown scope: %s', v_unknown), v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ v_client.scopes) then
    return query select 'invalid_scope'::text,
      format('The client did not register the scope %s', (select s from unnest(v_scopes) s where not (s = any (v_client.scopes)) limit 1)),
      v_client.client_name, null::text[], null::text;
    return;
  elsif not (v_scopes <@ rowgate_hidden.current_scopes()) then
    return query select 'invalid_scope'::text, 'A grant cannot hold a scope its user does not hold'::text,
      v_client.client_name, null::text[], null::text;
    return;
  end if;
  if p_organization_id is not null then
    select o.name into v_organization_name from rowgate.organizations o
      where o.id = p_organization_id and o.id = any (rowgate_hidden.current_organization_ids());
    if v_organization_name is null then
      return query select 'invalid_request'::text, 'Unknown organization_id'::text, v_client.client_name, null::text[], null::text;
      return;
    end if;
    v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
    if v_denial is not null then
      return query select 'access_denied'::text, v_denial, v_client.client_name, null::text[], null::text;
      return;
    end if;
    if v_scopes && array['user:read', 'user:write', 'payouts:read', 'payouts:write'] then
      return query select 'invalid_scope'::text, 'Organization tokens carry organization scopes only'::text,
        v_client.client_name, null::text[], null::text;
      return;
    end if;
    select array_agg(d.scope order by d.n), (array_agg(d.message order by d.n))[1] into v_withheld, v_first_denial
      from rowgate_private.token_scope_denials(p_organization_id, v_scopes, 'oauth2_organization_token') d;
    if v_withheld is not null then
      v_scopes := array(select s from unnest(v_scopes) s where not (s = any (v_withheld)) order by s);
      if cardinality(v_scopes) = 0 then
        return query select 'invalid_scope'::text, v_first_denial, v_client.client_name, null::text[], null::text;
        return;
      end if;
      v_note := format('%s of the requested scopes %s left out: your role in this organization does not let you use %s yourself',
        cardinality(v_withheld), case when cardinality(v_withheld) = 1 then 'is' else 'are' end,
        case when cardinality(v_withheld) = 1 then 'it' else 'them' end);
    end if;
  end if;
  return query select 'ok'::text, v_note, v_client.client_name, v_scopes, v_organization_name;
end;
$function$;
comment on function rowgate.check_oauth2_authorization(text,text,text[],uuid,text,text) is '@behavior -*
Checks an OAuth2 authorization request for the current user: ok, or the RFC 6749 error.';
grant execute on function rowgate.check_oauth2_authorization(text,text,text[],uuid,text,text) to rowgate_user;

-- Function rowgate.claim_idempotency_key(text,bytea)
CREATE OR REPLACE FUNCTION rowgate.claim_idempotency_key(p_key text, p_request_hash bytea)
 RETURNS TABLE(status text, response_status integer, response_body text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_id uuid := rowgate_hidden.current_subject_id();
  v_found rowgate_private.idempotency_keys;
begin
  if v_kind is null or v_id is null then
    raise exception 'Idempotency keys belong to a subject' using errcode = 'RG403';
  end if;
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate idempotency ' || v_kind || ' ' || v_id || ' ' || p_key, 0)) then
    return query select 'in_use'::text, null::integer, null::text;
    return;
  end if;
  delete from rowgate_private.idempotency_keys k
    where k.ctid = any (array(select k2.ctid from rowgate_private.idempotency_keys k2
      where k2.subject_kind = v_kind and k2.subject_id = v_id and k2.key = p_key
        and k2.created_at < now() - rowgate_private.idempotency_key_lifetime()
      for update skip locked));
  delete from rowgate_private.idempotency_keys k
    where k.ctid = any (array(select k2.ctid from rowgate_private.idempotency_keys k2
      where k2.created_at < now() - rowgate_private.idempotency_key_lifetime() limit 10 for update skip locked));
  select * into v_found from rowgate_private.idempotency_keys k
    where k.subject_kind = v_kind and k.subject_id = v_id and k.key = p_key
      and k.created_at >= now() - rowgate_private.idempotency_key_lifetime();
  if v_found.key is null then
    return query select 'new'::text, null::integer, null::text;
  elsif v_found.request_hash <> p_request_hash then
    return query select 'reused'::text, null::integer, null::text;
  else
    return query select 'replay'::text, v_found.response_status, v_found.response_body;
  end if;
end;
$function$;
comment on function rowgate.claim_idempotency_key(text,bytea) is '@behavior -*
What an Idempotency-Key says of a request: new (the key is held until the transaction ends), in_use, reused, or replay with the stored answer.';
grant execute on function rowgate.claim_idempotency_key(text,bytea) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate.create_account(uuid,text,text)
CREATE OR REPLACE FUNCTION rowgate.create_account(p_organization_id uuid, p_country text, p_currency text)
 RETURNS rowgate.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_denial text;
  v_account rowgate.accounts;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create accounts' using errcode = 'RG403';
  end if;
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if exists (select 1 from rowgate.accounts where organization_id = p_organization_id and deleted_at is null) then
    raise exception 'The organization has an account already' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  insert into rowgate.accounts (organization_id, admin_id, country, currency)
    values (p_organization_id, v_user_id, p_country, p_currency) returning * into v_account;
  update rowgate.organizations set account_id = v_account.id where id = p_organization_id;
  return v_account;
end;
$function$;
grant execute on function rowgate.create_account(uuid,text,text) to rowgate_user;

-- Function rowgate.create_customer_session(uuid,uuid,bytea)
CREATE OR REPLACE FUNCTION rowgate.create_customer_session(p_customer_id uuid, p_member_id uuid, p_token_hash bytea)
 RETURNS TABLE(customer_id uuid, member_id uuid, expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function rowgate.create_customer_session(uuid,uuid,bytea) is '@behavior -*';
grant execute on function rowgate.create_customer_session(uuid,uuid,bytea) to rowgate_organization, rowgate_user;

-- Function rowgate.create_impersonation_session(uuid,bytea)
CREATE OR REPLACE FUNCTION rowgate.create_impersonation_session(p_user_id uuid, p_token_hash bytea)
 RETURNS TABLE(user_id uuid, expires_at timestamp with time zone, scopes text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_admin_id uuid := rowgate_hidden.current_user_id();
begin
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Impersonation takes a platform admin''s web session' using errcode = 'RG403';
  end if;
  perform rowgate_hidden.assert_scope('user:write');
  if not exists (select 1 from rowgate_private.platform_admins a join rowgate.users u on u.id = a.user_id
      where a.user_id = v_admin_id and u.deleted_at is null) then
    raise exception 'Only platform admins can impersonate users' using errcode = 'RG403';
  end if;
  if not exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null) then
    raise exception 'No such user' using errcode = 'RG422', detail = 'body.user_id';
  end if;
  return query select s.user_id, s.expires_at, rowgate_private.read_scopes()
    from rowgate_private.issue_user_session(p_user_id, p_token_hash, interval '1 hour', v_admin_id) s;
end;
$function$;
comment on function rowgate.create_impersonation_session(uuid,bytea) is '@behavior -*';
grant execute on function rowgate.create_impersonation_session(uuid,bytea) to rowgate_user;

-- Function rowgate.create_invitation(uuid,text,text)
CREATE OR REPLACE FUNCTION rowgate.create_invitation(p_organization_id uuid, p_email text, p_role text)
 RETURNS rowgate.invitations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_email text := lower(p_email);
  v_denial text;
  v_permissions text[];
  v_invitation rowgate.invitations;
  v_oldest timestamptz;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  v_permissions := rowgate_private.role_permissions(p_organization_id, p_role);
  if v_permissions is null then
    raise exception 'Unknown role' using errcode = 'RG422', detail = 'body.role';
  end if;
  if not v_permissions <@ rowgate_hidden.current_permissions(p_organization_id) then
    raise exception 'You can''t invite with a role that has permissions you don''t have' using errcode = 'RG403';
  end if;
  if exists (select 1 from rowgate.memberships m join rowgate.users u on u.id = m.user_id
      where m.organization_id = p_organization_id and m.deleted_at is null and u.email = v_email and u.deleted_at is null) then
    raise exception 'This address belongs to a member already' using errcode = 'RG422', detail = 'body.email';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('rowgate invitations ' || p_organization_id::text, 0));
  update rowgate.invitations set status = 'expired'
    where organization_id = p_organization_id and email = v_email and status = 'pending' and expires_at <= now();
  if exists (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.email = v_email and i.status = 'pending') then
    raise exception 'This address has a pending invitation already: revoke it to invite it again'
      using errcode = 'RG422', detail = 'body.email';
  end if;
  if (select count(*) from (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.status = 'pending' and i.expires_at > now() limit 50) pending) >= 50 then
    raise exception 'At most 50 invitations may be pending in an organization: revoke one, or wait for answers'
      using errcode = 'RG429';
  end if;
  select min(created_at) into v_oldest from (select i.created_at from rowgate.invitations i
      where i.organization_id = p_organization_id and i.created_at > now() - interval '1 day'
      order by i.created_at desc limit 100) sent
    having count(*) >= 100;
  if v_oldest is not null then
    raise exception 'At most 100 invitation mails a day may leave an organization' using errcode = 'RG429',
      detail = greatest(1, ceil(extract(epoch from v_oldest + interval '1 day' - now())))::integer::text;
  end if;
  insert into rowgate.invitations (organization_id, email, role, invited_by)
    values (p_organization_id, v_email, p_role, rowgate_hidden.current_user_id())
    returning * into v_invitation;
  return v_invitation;
end;
$function$;
comment on function rowgate.create_invitation(uuid,text,text) is '@behavior -*
Invites an address to the organization (SPEC §21). Past a cap, RG429 (detail: the seconds to wait, when known).';
grant execute on function rowgate.create_invitation(uuid,text,text) to rowgate_organization, rowgate_user;

-- Function rowgate.create_oauth2_authorization_code(text,text,text[],uuid,text,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.create_oauth2_authorization_code(p_client_id text, p_redirect_uri text, p_scopes text[], p_organization_id uuid, p_code_challenge text, p_code_challenge_method text, p_code_hash bytea)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_status text;
  v_description text;
  v_scopes text[];
  v_expires_at timestamptz := now() + interval '10 minutes';
begin
  perform rowgate_hidden.assert_scope('user:write');
  select c.status, c.description, c.scopes into v_status, v_description, v_scopes
    from rowgate.check_oauth2_authorization(p_client_id, p_redirect_uri, p_scopes, p_organization_id,
      p_code_challenge, p_code_challenge_method) c;
  if v_status <> 'ok' then
    raise exception '%', v_description using errcode = 'RG403';
  end if;
  insert into rowgate_private.oauth2_authorization_codes
      (code_hash, client_id, user_id, organization_id, scopes, redirect_uri, code_challenge, expires_at)
    values (p_code_hash, p_client_id, rowgate_hidden.current_user_id(), p_organization_id, v_scopes, p_redirect_uri,
      p_code_challenge, v_expires_at);
  return v_expires_at;
end;
$function$;
comment on function rowgate.create_oauth2_authorization_code(text,text,text[],uuid,text,text,bytea) is '@behavior -*
Issues an authorization code to a client the current user authorizes.';
grant execute on function rowgate.create_oauth2_authorization_code(text,text,text[],uuid,text,text,bytea) to rowgate_user;

-- Function rowgate.create_order(uuid,uuid,bigint,text,text,jsonb)
CREATE OR REPLACE FUNCTION rowgate.create_order(p_product_id uuid, p_customer_id uuid, p_amount bigint, p_currency text, p_status text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS SETOF rowgate.orders
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_product record;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('orders_write');
  if p_currency is not null and p_amount is null then
    raise exception 'amount is required when currency is given' using errcode = 'RG422', detail = 'body.amount';
  end if;
  select p.organization_id, p.price_amount, p.price_currency into v_product from rowgate.products p
    where p.id = p_product_id and p.deleted_at is null
      and p.organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    raise exception 'Product not found' using errcode = 'RG422', detail = 'body.product_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_product.organization_id, 'orders:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return query insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status, metadata)
    values (v_product.organization_id, p_customer_id, p_product_id, coalesce(p_amount, v_product.price_amount),
      coalesce(p_currency, v_product.price_currency), coalesce(p_status, 'pending'), coalesce(p_metadata, '{}'))
    returning *;
end;
$function$;
grant execute on function rowgate.create_order(uuid,uuid,bigint,text,text,jsonb) to rowgate_organization, rowgate_user;

-- Function rowgate.create_organization(text,text)
CREATE OR REPLACE FUNCTION rowgate.create_organization(p_name text, p_slug text)
 RETURNS rowgate.organizations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_organization rowgate.organizations;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if v_user_id is null then
    raise exception 'Only users can create organizations' using errcode = 'RG403';
  end if;
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot create organizations' using errcode = 'RG403';
  end if;
  insert into rowgate.organizations (name, slug) values (p_name, p_slug) returning * into v_organization;
  insert into rowgate.memberships (user_id, organization_id, role) values (v_user_id, v_organization.id, 'admin');
  return v_organization;
end;
$function$;
grant execute on function rowgate.create_organization(text,text) to rowgate_user;

-- Function rowgate.create_organization_access_token(uuid,text,text[],timestamp with time zone,bytea,text[])
CREATE OR REPLACE FUNCTION rowgate.create_organization_access_token(p_organization_id uuid, p_comment text, p_scopes text[], p_expires_at timestamp with time zone, p_token_hash bytea, p_allowed_ips text[] DEFAULT NULL::text[])
 RETURNS rowgate.organization_access_tokens
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
  v_token rowgate.organization_access_tokens;
  v_max_days integer;
  v_escalation record;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if exists (select 1 from unnest(p_scopes) s where s in ('user:read', 'user:write', 'payouts:read', 'payouts:write')) then
    raise exception 'Organization tokens carry organization scopes only' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  select d.n, d.message into v_escalation
    from rowgate_private.token_scope_denials(p_organization_id, p_scopes, 'organization_access_token') d
    order by d.n limit 1;
  if found then
    raise exception '%', v_escalation.message using errcode = 'RG422', detail = 'body.scopes.' || (v_escalation.n - 1);
  end if;
  select o.max_token_lifetime_days into v_max_days from rowgate.organizations o where o.id = p_organization_id;
  if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
    raise exception 'The organization''s tokens live at most % days: expires_in is required, at most % seconds',
      v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
  end if;
  insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at, created_by, allowed_ips)
    values (p_organization_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at,
      rowgate_hidden.current_user_id(), rowgate_private.allowed_ips(p_allowed_ips))
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (p_token_hash, v_token.id);
  return v_token;
end;
$function$;
comment on function rowgate.create_organization_access_token(uuid,text,text[],timestamp with time zone,bytea,text[]) is '@behavior -*';
grant execute on function rowgate.create_organization_access_token(uuid,text,text[],timestamp with time zone,bytea,text[]) to rowgate_user;

-- Function rowgate.create_organization_role(uuid,text,text,text[])
CREATE OR REPLACE FUNCTION rowgate.create_organization_role(p_organization_id uuid, p_name text, p_description text, p_permissions text[])
 RETURNS rowgate.organization_roles
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_role rowgate.organization_roles;
begin
  perform rowgate_private.organization_role_for_change(p_organization_id, null, 'members_write');
  if exists (select 1 from rowgate.roles r where r.name = p_name) then
    raise exception 'A built-in role has this name' using errcode = 'RG422', detail = 'body.name';
  end if;
  if exists (select 1 from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_name and r.deleted_at is null) then
    raise exception 'The organization has a role with this name already' using errcode = 'RG422', detail = 'body.name';
  end if;
  perform rowgate_private.assert_grantable(p_organization_id, p_permissions);
  insert into rowgate.organization_roles (organization_id, name, description, permissions)
    values (p_organization_id, p_name, p_description, p_permissions)
    returning * into v_role;
  return v_role;
end;
$function$;
comment on function rowgate.create_organization_role(uuid,text,text,text[]) is '@behavior -*';
grant execute on function rowgate.create_organization_role(uuid,text,text,text[]) to rowgate_organization, rowgate_user;

-- Function rowgate.create_personal_access_token(text,text[],timestamp with time zone,bytea,text[],uuid[])
CREATE OR REPLACE FUNCTION rowgate.create_personal_access_token(p_comment text, p_scopes text[], p_expires_at timestamp with time zone, p_token_hash bytea, p_allowed_ips text[] DEFAULT NULL::text[], p_organization_ids uuid[] DEFAULT NULL::uuid[])
 RETURNS rowgate.personal_access_tokens
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_reached uuid[];
  v_kept uuid[];
  v_max_days integer;
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can create personal access tokens' using errcode = 'RG403';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  if not (p_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A token cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes';
  end if;
  if p_organization_ids is not null then
    if cardinality(p_organization_ids) not between 1 and 50 then
      raise exception 'From 1 to 50 organizations, or null for all' using errcode = 'RG422', detail = 'body.organization_ids';
    end if;
    v_reached := rowgate_hidden.current_organization_ids();
    for i in 1 .. cardinality(p_organization_ids) loop
      if p_organization_ids[i] is null or not p_organization_ids[i] = any (v_reached) then
        raise exception 'Not an organization you belong to' using errcode = 'RG422',
          detail = 'body.organization_ids.' || (i - 1);
      end if;
    end loop;
    v_kept := array(select k.id from unnest(p_organization_ids) with ordinality k(id, n) group by k.id order by min(k.n));
    select min(o.max_token_lifetime_days) into v_max_days from rowgate.organizations o where o.id = any (v_kept);
    if v_max_days is not null and (p_expires_at is null or p_expires_at > now() + make_interval(secs => v_max_days * 86400)) then
      raise exception 'Tokens of these organizations live at most % days: expires_in is required, at most % seconds',
        v_max_days, v_max_days * 86400 using errcode = 'RG422', detail = 'body.expires_in';
    end if;
  end if;
  v_token := rowgate_private.issue_personal_access_token(v_user_id, p_comment, p_scopes, p_expires_at, p_token_hash,
    rowgate_private.allowed_ips(p_allowed_ips));
  if v_kept is not null then
    update rowgate.personal_access_tokens set organization_ids = v_kept where id = v_token.id returning * into v_token;
  end if;
  return v_token;
end;
$function$;
comment on function rowgate.create_personal_access_token(text,text[],timestamp with time zone,bytea,text[],uuid[]) is '@behavior -*';
grant execute on function rowgate.create_personal_access_token(text,text[],timestamp with time zone,bytea,text[],uuid[]) to rowgate_user;

-- Function rowgate.create_refund(uuid,bigint,text,text,jsonb)
CREATE OR REPLACE FUNCTION rowgate.create_refund(p_order_id uuid, p_amount bigint, p_reason text, p_comment text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS rowgate.refunds
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_order rowgate.orders;
  v_denial text;
  v_remaining bigint;
  v_refund rowgate.refunds;
begin
  perform rowgate_hidden.assert_scope('refunds_write');
  select o.* into v_order from rowgate.orders o
    where o.id = p_order_id and o.organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    raise exception 'Order not found' using errcode = 'RG422', detail = 'body.order_id';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_order.organization_id, 'orders:write');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_reason is null or p_reason not in ('duplicate', 'fraudulent', 'customer_request', 'other') then
    raise exception 'The reason is one of duplicate, fraudulent, customer_request, other' using errcode = 'RG422', detail = 'body.reason';
  end if;
  if length(p_comment) > 1000 then
    raise exception 'A comment is at most 1000 characters' using errcode = 'RG422', detail = 'body.comment';
  end if;
  if p_metadata is not null and not rowgate_hidden.metadata_is_valid(p_metadata) then
    raise exception 'Metadata is an object of at most 50 keys of 1-40 characters of A-Z, a-z, 0-9, _ and -; values strings of at most 500 characters, integers or booleans'
      using errcode = 'RG422', detail = 'body.metadata';
  end if;
  if p_amount is null then
    raise exception 'A refund names its amount (in the currency''s minor unit); the rest of an order is refunded by setting its status to refunded'
      using errcode = 'RG422', detail = 'body.amount';
  end if;
  -- the order's row lock: what remains is read after any refund of the order still running has ended
  select o.* into v_order from rowgate.orders o where o.id = p_order_id for update;
  if v_order.status <> 'paid' then
    raise exception 'Only a paid order can be refunded; this one is %', v_order.status
      using errcode = 'RG422', detail = 'body.order_id';
  end if;
  v_remaining := v_order.amount - v_order.refunded_amount;
  if p_amount < 1 then
    raise exception 'A refund is at least 1 (in the currency''s minor unit)' using errcode = 'RG422', detail = 'body.amount';
  end if;
  if p_amount > v_remaining then
    raise exception 'The refund exceeds what remains to refund of the order: % of % %', v_remaining, v_order.amount, v_order.currency
      using errcode = 'RG422', detail = 'body.amount';
  end if;
  v_refund := rowgate_private.record_refund(v_order, p_amount, p_reason, p_comment, p_metadata);
  update rowgate.orders set refunded_amount = refunded_amount + p_amount,
      status = case when refunded_amount + p_amount = amount then 'refunded' else status end
    where id = v_order.id;
  return v_refund;
end;
$function$;
comment on function rowgate.create_refund(uuid,bigint,text,text,jsonb) is 'Refunds a paid order by an amount, at most what remains; the order''s status becomes refunded when nothing remains.';
grant execute on function rowgate.create_refund(uuid,bigint,text,text,jsonb) to rowgate_organization, rowgate_user;

-- Function rowgate.create_sql_credential(uuid,text,text[],timestamp with time zone,text,text)
CREATE OR REPLACE FUNCTION rowgate.create_sql_credential(p_organization_id uuid, p_comment text, p_scopes text[], p_expires_at timestamp with time zone, p_login text, p_verifier text)
 RETURNS rowgate.sql_credentials
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET createrole_self_grant TO 'inherit'
AS $function$
declare
  v_denial text;
  v_escalation record;
  v_credential rowgate.sql_credentials;
  v_place bigint;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG404';
  end if;
  v_denial := case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage SQL credentials'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage') end;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  -- the server makes both; anything else is refused before it reaches a statement
  if p_login is null or p_login !~ '^rg_sql_[a-z2-7]{20}$' then
    raise exception 'A SQL login is named rg_sql_ and 20 base32 characters' using errcode = '22023';
  end if;
  if p_verifier is null or p_verifier !~ '^SCRAM-SHA-256\$[0-9]{4,7}:[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$' then
    raise exception 'A SQL login takes a SCRAM-SHA-256 verifier' using errcode = '22023';
  end if;
  perform rowgate_private.assert_known_scopes(p_scopes);
  select s.n into v_place from unnest(p_scopes) with ordinality s(scope, n)
    where not (s.scope = any (rowgate_private.read_scopes())) or s.scope in ('user:read', 'payouts:read')
    order by s.n limit 1;
  if found then
    raise exception 'A SQL login carries organization read scopes only' using errcode = 'RG422', detail = 'body.scopes.' || (v_place - 1);
  end if;
  select s.n into v_place from unnest(p_scopes) with ordinality s(scope, n)
    where not (s.scope = any (coalesce(rowgate_hidden.current_scopes(), '{}')))
    order by s.n limit 1;
  if found then
    raise exception 'A credential cannot hold a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scopes.' || (v_place - 1);
  end if;
  select d.n, d.message into v_escalation
    from rowgate_private.token_scope_denials(p_organization_id, p_scopes, 'organization_access_token') d
    order by d.n limit 1;
  if found then
    raise exception '%', v_escalation.message using errcode = 'RG422', detail = 'body.scopes.' || (v_escalation.n - 1);
  end if;
  -- one organization's makers one at a time, so two at once cannot both take the tenth place
  perform pg_advisory_xact_lock(hashtextextended('rowgate sql credentials ' || p_organization_id::text, 0));
  if (select count(*) from rowgate.sql_credentials c where c.organization_id = p_organization_id and c.deleted_at is null
      and (c.expires_at is null or c.expires_at > now())) >= 10 then
    raise exception 'An organization has at most 10 live SQL credentials; revoke one to make room' using errcode = 'RG422', detail = 'body';
  end if;
  insert into rowgate.sql_credentials (organization_id, login, comment, scopes, created_by, expires_at)
    values (p_organization_id, p_login, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s),
      rowgate_hidden.current_user_id(), p_expires_at)
    returning * into v_credential;
  execute format('create role %I login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls connection limit 5 valid until %L password %L',
    p_login, coalesce(p_expires_at::text, 'infinity'), p_verifier);
  execute format('grant rowgate_sql_login to %I with inherit true, set false', p_login);
  -- bounded like an analyst (SPEC §15); rowgate_private.end_sql_login_sessions holds it to these whatever it SETs
  execute format('alter role %I set statement_timeout = %L', p_login, '60s');
  execute format('alter role %I set idle_in_transaction_session_timeout = %L', p_login, '60s');
  if current_setting('server_version_num')::int >= 170000 then
    execute format('alter role %I set transaction_timeout = %L', p_login, '15min');
  end if;
  return v_credential;
end;
$function$;
comment on function rowgate.create_sql_credential(uuid,text,text[],timestamp with time zone,text,text) is '@behavior -*
Makes an organization''s SQL login (SPEC §24) named p_login with the password whose SCRAM-SHA-256 verifier is p_verifier, and its credential row.';
grant execute on function rowgate.create_sql_credential(uuid,text,text[],timestamp with time zone,text,text) to rowgate_user;

-- Function rowgate.create_webhook_endpoint(uuid,text,text[],text,boolean,bytea)
CREATE OR REPLACE FUNCTION rowgate.create_webhook_endpoint(p_organization_id uuid, p_url text, p_event_types text[], p_description text, p_enabled boolean, p_sealed_secret bytea)
 RETURNS rowgate.webhook_endpoints
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid;
  v_endpoint rowgate.webhook_endpoints;
begin
  perform rowgate_hidden.assert_scope('webhooks_write');
  v_organization_id := rowgate_hidden.target_organization_id(p_organization_id, 'organization:manage');
  perform rowgate_hidden.assert_event_types(v_organization_id, p_event_types);
  insert into rowgate.webhook_endpoints (organization_id, url, event_types, description, enabled)
    values (v_organization_id, p_url, p_event_types, p_description, coalesce(p_enabled, true))
    returning * into v_endpoint;
  insert into rowgate_private.webhook_secrets (organization_id, endpoint_id, sealed_secret)
    values (v_endpoint.organization_id, v_endpoint.id, p_sealed_secret);
  return v_endpoint;
end;
$function$;
comment on function rowgate.create_webhook_endpoint(uuid,text,text[],text,boolean,bytea) is '@behavior -*';
grant execute on function rowgate.create_webhook_endpoint(uuid,text,text[],text,boolean,bytea) to rowgate_organization, rowgate_user;

-- Function rowgate.current_user_authorized_apps()
CREATE OR REPLACE FUNCTION rowgate.current_user_authorized_apps()
 RETURNS TABLE(app_key text, client_id text, client_name text, scopes text[], sub_type text, organization_id uuid, first_authorized_at timestamp with time zone, last_used_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select g.client_id || ':' || coalesce(g.organization_id::text, ''), g.client_id, c.client_name,
    array(select distinct s from unnest(array_agg(g.scopes)) s order by s),
    case when g.organization_id is null then 'user' else 'organization' end, g.organization_id,
    min(g.created_at), date_trunc('minute', max(g.last_used_at))
  from rowgate_private.live_oauth2_grants(rowgate_hidden.current_user_id(), null) g
    join rowgate.oauth2_clients c on c.client_id = g.client_id
  where rowgate_hidden.current_credential_kind() = 'web_session' and rowgate_hidden.has_scope('user:read')
  group by g.client_id, c.client_name, g.organization_id;
$function$;
comment on function rowgate.current_user_authorized_apps() is '@behavior -*
The OAuth2 clients holding live tokens of the signed-in user.';
grant execute on function rowgate.current_user_authorized_apps() to rowgate_user;

-- Function rowgate.current_user_sessions()
CREATE OR REPLACE FUNCTION rowgate.current_user_sessions()
 RETURNS TABLE(id uuid, created_at timestamp with time zone, last_used_at timestamp with time zone, client_ip text, user_agent text, current boolean, impersonated_by uuid)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s.id, s.created_at, date_trunc('minute', s.last_used_at), host(s.client_ip), s.user_agent,
    s.id::text = current_setting('rowgate.credential_id', true), s.impersonator_id
  from rowgate_private.sessions s
  where s.user_id = rowgate_hidden.current_user_id() and s.kind = 'user' and s.revoked_at is null and s.expires_at > now()
    and rowgate_hidden.current_credential_kind() = 'web_session' and rowgate_hidden.has_scope('user:read');
$function$;
comment on function rowgate.current_user_sessions() is '@behavior -*
The signed-in user''s live web sessions.';
grant execute on function rowgate.current_user_sessions() to rowgate_user;

-- Function rowgate.decline_invitation(uuid)
CREATE OR REPLACE FUNCTION rowgate.decline_invitation(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_invitation rowgate.invitations := rowgate_private.invitee_invitation(p_id);
begin
  update rowgate.invitations set status = 'declined' where id = v_invitation.id;
end;
$function$;
comment on function rowgate.decline_invitation(uuid) is '@behavior -*';
grant execute on function rowgate.decline_invitation(uuid) to rowgate_user;

-- Function rowgate.delete_current_user()
CREATE OR REPLACE FUNCTION rowgate.delete_current_user()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_orphaned text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_token_organization_ids() is not null then
    raise exception 'A token kept to some organizations cannot delete its user' using errcode = 'RG403';
  end if;
  -- the credentials before the memberships: a request made with one of this user's tokens
  -- holds the token's row (its last use, recorded as it authenticates) before it changes a
  -- membership, and this keeps that order
  update rowgate_private.sessions set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  update rowgate.personal_access_tokens set deleted_at = now() where user_id = v_user_id and deleted_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where user_id = v_user_id and revoked_at is null;
  perform rowgate.delete_oauth2_client(c.id) from rowgate.oauth2_clients c where c.user_id = v_user_id and c.deleted_at is null;
  perform rowgate_private.lock_user_memberships(v_user_id);
  select string_agg(format('%s (%s)', o.name, o.id), ', ' order by o.name, o.id) into v_orphaned
    from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.user_id = v_user_id and m.role = 'admin' and m.deleted_at is null and o.deleted_at is null
      and not exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.role = 'admin' and a.deleted_at is null and a.id <> m.id)
      and exists (select 1 from rowgate.memberships a where a.organization_id = m.organization_id
        and a.deleted_at is null and a.id <> m.id);
  if v_orphaned is not null then
    raise exception 'You are the last admin of organizations that have other members: %. Make another member admin, or delete those organizations, first', v_orphaned
      using errcode = 'RG422', detail = 'path';
  end if;
  update rowgate.users set deleted_at = now() where id = v_user_id and deleted_at is null;
  return found;
end;
$function$;
comment on function rowgate.delete_current_user() is '@behavior -*';
grant execute on function rowgate.delete_current_user() to rowgate_user;

-- Function rowgate.delete_customer_member(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.delete_customer_member(p_customer_id uuid, p_member_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('customers_write');
  select a.organization_id, a.denial into v_organization_id, v_denial
    from rowgate_hidden.authorize('customer', p_customer_id, 'customers:write') a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if not exists (select 1 from rowgate.customer_members m
      where m.id = p_member_id and m.customer_id = p_customer_id and m.deleted_at is null) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.customer_members set deleted_at = now() where id = p_member_id;
end;
$function$;
comment on function rowgate.delete_customer_member(uuid,uuid) is '@behavior -*';
grant execute on function rowgate.delete_customer_member(uuid,uuid) to rowgate_organization, rowgate_user;

-- Function rowgate.delete_oauth2_client(uuid)
CREATE OR REPLACE FUNCTION rowgate.delete_oauth2_client(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_client_id text;
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.oauth2_clients c set deleted_at = now()
    where c.id = p_id and c.user_id = rowgate_hidden.current_user_id() and c.deleted_at is null
    returning c.client_id into v_client_id;
  if v_client_id is null then
    return false;
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
    where f.client_id = v_client_id and f.revoked_at is null;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now() where t.client_id = v_client_id and t.revoked_at is null;
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.client_id = v_client_id and c.used_at is null;
  delete from rowgate_private.oauth2_client_secrets s where s.client_id = v_client_id;
  return true;
end;
$function$;
comment on function rowgate.delete_oauth2_client(uuid) is '@behavior -*
Deletes one of the current user''s OAuth2 clients and revokes its tokens.';
grant execute on function rowgate.delete_oauth2_client(uuid) to rowgate_user;

-- Function rowgate.delete_organization_role(uuid,text)
CREATE OR REPLACE FUNCTION rowgate.delete_organization_role(p_organization_id uuid, p_name text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_role rowgate.organization_roles := rowgate_private.organization_role_for_change(p_organization_id, p_name, 'members_write');
begin
  if exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = p_name and m.deleted_at is null) then
    raise exception 'The role is in use: a member has it' using errcode = 'RG422', detail = 'path.name';
  end if;
  if exists (select 1 from rowgate.invitations i
      where i.organization_id = p_organization_id and i.role = p_name and i.status = 'pending' and i.expires_at > now()) then
    raise exception 'The role is in use: a pending invitation names it' using errcode = 'RG422', detail = 'path.name';
  end if;
  update rowgate.organization_roles set deleted_at = now() where id = v_role.id;
end;
$function$;
comment on function rowgate.delete_organization_role(uuid,text) is '@behavior -*';
grant execute on function rowgate.delete_organization_role(uuid,text) to rowgate_organization, rowgate_user;

-- Function rowgate.delete_resource(text,uuid)
CREATE OR REPLACE FUNCTION rowgate.delete_resource(p_resource text, p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_policy text := case p_resource
    when 'organization' then 'organization:manage'
    when 'membership' then 'members_management'
    when 'organization_access_token' then 'access_token_management'
    when 'product' then 'products:write'
    when 'customer' then 'customers:write'
    when 'payout_account' then 'finance_write'
  end;
  v_scope text := case p_resource
    when 'organization' then 'organizations_write'
    when 'membership' then 'members_write'
    when 'organization_access_token' then 'organization_access_tokens_write'
    when 'product' then 'products_write'
    when 'customer' then 'customers_write'
    when 'payout_account' then 'payouts:write'
  end;
  v_organization_id uuid;
  v_denial text;
begin
  if v_policy is null then
    raise exception 'Unknown resource %', p_resource;
  end if;
  if p_resource = 'payout_account' and rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Payout accounts are managed with a web session only' using errcode = 'RG403';
  end if;
  perform rowgate_hidden.assert_scope(v_scope);
  select a.organization_id, a.denial into v_organization_id, v_denial from rowgate_hidden.authorize(p_resource, p_id, v_policy) a;
  if v_organization_id is null then
    raise exception 'Not found' using errcode = 'RG404';
  elsif v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  elsif p_resource = 'organization' and rowgate_hidden.current_subject_kind() is distinct from 'user' then
    raise exception 'Only users can delete organizations' using errcode = 'RG403';
  end if;
  case p_resource
    when 'organization' then update rowgate.organizations set deleted_at = now() where id = p_id;
    when 'membership' then update rowgate.memberships set deleted_at = now() where id = p_id;
    when 'organization_access_token' then update rowgate.organization_access_tokens set deleted_at = now() where id = p_id;
    when 'product' then update rowgate.products set deleted_at = now() where id = p_id;
    when 'customer' then update rowgate.customers set deleted_at = now() where id = p_id;
    when 'payout_account' then update rowgate.payout_accounts set deleted_at = now() where id = p_id;
  end case;
end;
$function$;
comment on function rowgate.delete_resource(text,uuid) is '@behavior -*';
grant execute on function rowgate.delete_resource(text,uuid) to rowgate_organization, rowgate_user;

-- Function rowgate.delete_sql_credential(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.delete_sql_credential(p_organization_id uuid, p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
  v_login text;
begin
  perform rowgate_hidden.assert_scope('organizations_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG404';
  end if;
  v_denial := case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage SQL credentials'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'organization:manage') end;
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.sql_credentials c set deleted_at = now()
    where c.id = p_id and c.organization_id = p_organization_id and c.deleted_at is null
    returning c.login into v_login;
  if v_login is null then
    raise exception 'SQL credential not found' using errcode = 'RG404';
  end if;
  -- from the commit on, it cannot log in again; its sessions read nothing (its identity is
  -- not live) and end within a second (rowgate_private.end_sql_login_sessions)
  execute format('alter role %I nologin', v_login);
  return;
end;
$function$;
comment on function rowgate.delete_sql_credential(uuid,uuid) is '@behavior -*
Revokes an organization''s SQL login (SPEC §24): it logs in no more, and its sessions end.';
grant execute on function rowgate.delete_sql_credential(uuid,uuid) to rowgate_user;

-- Function rowgate.delete_webhook_endpoint(uuid)
CREATE OR REPLACE FUNCTION rowgate.delete_webhook_endpoint(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  update rowgate.webhook_endpoints set deleted_at = now() where id = p_id;
end;
$function$;
comment on function rowgate.delete_webhook_endpoint(uuid) is '@behavior -*';
grant execute on function rowgate.delete_webhook_endpoint(uuid) to rowgate_organization, rowgate_user;

-- Function rowgate.end_other_sessions()
CREATE OR REPLACE FUNCTION rowgate.end_other_sessions()
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session ends sessions' using errcode = 'RG403';
  end if;
  update rowgate_private.sessions set revoked_at = now()
    where user_id = rowgate_hidden.current_user_id() and kind = 'user' and revoked_at is null
      and id::text is distinct from current_setting('rowgate.credential_id', true);
end;
$function$;
comment on function rowgate.end_other_sessions() is '@behavior -*';
grant execute on function rowgate.end_other_sessions() to rowgate_user;

-- Function rowgate.end_session(uuid)
CREATE OR REPLACE FUNCTION rowgate.end_session(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session ends sessions' using errcode = 'RG403';
  end if;
  update rowgate_private.sessions set revoked_at = now()
    where id = p_id and kind = 'user' and user_id = rowgate_hidden.current_user_id()
      and revoked_at is null and expires_at > now();
  return found;
end;
$function$;
comment on function rowgate.end_session(uuid) is '@behavior -*';
grant execute on function rowgate.end_session(uuid) to rowgate_user;

-- Function rowgate.exchange_oauth2_authorization_code(text,bytea,text,bytea,text,text,bytea,bytea,bytea)
CREATE OR REPLACE FUNCTION rowgate.exchange_oauth2_authorization_code(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_code_hash bytea, p_redirect_uri text, p_code_challenge text, p_user_token_hash bytea, p_organization_token_hash bytea, p_refresh_token_hash bytea)
 RETURNS TABLE(status text, description text, token_kind text, scopes text[], expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
  v_code rowgate_private.oauth2_authorization_codes;
  v_family rowgate_private.oauth2_token_families;
  v_failure text;
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select c.* into v_code from rowgate_private.oauth2_authorization_codes c
    where c.code_hash = p_code_hash and c.client_id = p_client_id for update;
  if v_code.id is null then
    return query select 'invalid_grant'::text, 'The authorization code is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_code.used_at is not null then
    -- whoever replays a code may have stolen it: what was issued from it ends
    perform rowgate_private.revoke_oauth2_family(f.id) from rowgate_private.oauth2_token_families f
      where f.authorization_code_id = v_code.id;
    return query select 'invalid_grant'::text,
      'The authorization code was used already; the tokens issued from it are revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  -- one attempt per code: from here on it is spent, whatever the outcome
  update rowgate_private.oauth2_authorization_codes c set used_at = now() where c.id = v_code.id;
  v_failure := case
    when v_code.expires_at <= now() then 'The authorization code has expired'
    when p_redirect_uri is distinct from v_code.redirect_uri then 'redirect_uri differs from the authorization request''s'
    when v_code.code_challenge is not null and p_code_challenge is null then 'code_verifier is required'
    when v_code.code_challenge is distinct from p_code_challenge then
      case when v_code.code_challenge is null then 'No code_challenge was sent with the authorization request'
        else 'The code_verifier does not match the code_challenge' end
  end;
  if v_failure is null and not rowgate_private.oauth2_grant_holds(v_code.user_id, v_code.organization_id) then
    v_failure := 'The user can no longer grant this authorization';
  end if;
  if v_failure is not null then
    return query select 'invalid_grant'::text, v_failure, null::text, null::text[], null::timestamptz;
    return;
  end if;
  insert into rowgate_private.oauth2_token_families (client_id, user_id, organization_id, scopes, authorization_code_id)
    values (v_code.client_id, v_code.user_id, v_code.organization_id, v_code.scopes, v_code.id)
    returning * into v_family;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_family.scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_family.scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_refresh_token_hash);
end;
$function$;
comment on function rowgate.exchange_oauth2_authorization_code(text,bytea,text,bytea,text,text,bytea,bytea,bytea) is '@behavior -*
The authorization_code grant of the token endpoint.';
grant execute on function rowgate.exchange_oauth2_authorization_code(text,bytea,text,bytea,text,text,bytea,bytea,bytea) to rowgate_anonymous;

-- Function rowgate.introspect_oauth2_token(text,bytea,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.introspect_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_token_hash bytea)
 RETURNS TABLE(status text, active boolean, token_type text, scopes text[], user_id uuid, username text, organization_id uuid, expires_at timestamp with time zone, issued_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
    return;
  end if;
  return query
    select 'ok'::text, true, 'access_token'::text, t.scopes, t.user_id, u.email, t.organization_id, t.expires_at, t.created_at
    from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
    where t.token_hash = p_token_hash and t.client_id = p_client_id
      and exists (select 1 from rowgate_private.authenticate(
        case when t.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end, p_token_hash))
    union all
    select 'ok'::text, true, 'refresh_token'::text, f.scopes, f.user_id, u.email, f.organization_id, r.expires_at, r.created_at
    from rowgate_private.oauth2_refresh_tokens r
      join rowgate_private.oauth2_token_families f on f.id = r.family_id
      join rowgate.users u on u.id = f.user_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id and r.used_at is null and f.revoked_at is null
      and r.expires_at > now() and rowgate_private.oauth2_grant_holds(f.user_id, f.organization_id);
  if not found then
    return query select 'ok'::text, false, null::text, null::text[], null::uuid, null::text, null::uuid,
      null::timestamptz, null::timestamptz;
  end if;
end;
$function$;
comment on function rowgate.introspect_oauth2_token(text,bytea,text,bytea) is '@behavior -*
RFC 7662 token introspection.';
grant execute on function rowgate.introspect_oauth2_token(text,bytea,text,bytea) to rowgate_anonymous;

-- Function rowgate.leave_organization(uuid)
CREATE OR REPLACE FUNCTION rowgate.leave_organization(p_organization_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Leaving an organization takes a web session' using errcode = 'RG403';
  end if;
  select m.* into v_membership from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
    where m.organization_id = p_organization_id and m.user_id = rowgate_hidden.current_user_id()
      and m.deleted_at is null and o.deleted_at is null
    for update of m;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  perform rowgate_private.lock_organization_admins(p_organization_id);
  if v_membership.role = 'admin' and not exists (select 1 from rowgate.memberships m
      where m.organization_id = p_organization_id and m.role = 'admin' and m.deleted_at is null and m.id <> v_membership.id) then
    raise exception 'The last admin cannot leave the organization: make another member admin first'
      using errcode = 'RG422', detail = 'path.id';
  end if;
  update rowgate.memberships set deleted_at = now() where id = v_membership.id;
end;
$function$;
comment on function rowgate.leave_organization(uuid) is '@behavior -*
The current user leaves an organization (SPEC §21).';
grant execute on function rowgate.leave_organization(uuid) to rowgate_user;

-- Function rowgate.oauth2_scopes_supported()
CREATE OR REPLACE FUNCTION rowgate.oauth2_scopes_supported()
 RETURNS text[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select rowgate_private.all_scopes();
$function$;
comment on function rowgate.oauth2_scopes_supported() is '@behavior -*
The scopes OAuth2 clients may ask for.';
grant execute on function rowgate.oauth2_scopes_supported() to rowgate_anonymous;

-- Function rowgate.organization_oauth2_grants(uuid)
CREATE OR REPLACE FUNCTION rowgate.organization_oauth2_grants(p_organization_id uuid)
 RETURNS TABLE(id uuid, organization_id uuid, client_id text, client_name text, scopes text[], user_id uuid, created_at timestamp with time zone, last_used_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_read');
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return query
    select g.id, g.organization_id, g.client_id, c.client_name, g.scopes, g.user_id, g.created_at,
      date_trunc('minute', g.last_used_at)
    from rowgate_private.live_oauth2_grants(null, p_organization_id) g
      join rowgate.oauth2_clients c on c.client_id = g.client_id;
end;
$function$;
comment on function rowgate.organization_oauth2_grants(uuid) is '@behavior -*
The live OAuth2 grants on an organization, for its token managers.';
grant execute on function rowgate.organization_oauth2_grants(uuid) to rowgate_user;

-- Function rowgate.record_mail(uuid,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.record_mail(p_id uuid, p_to text, p_sealed bytea)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- what was sent or given up a day ago has nothing left to tell
  delete from rowgate_private.mail_outbox m where m.created_at < now() - interval '1 day' and m.sealed_body is null;
  insert into rowgate_private.mail_outbox (id, recipient, sealed_body) values (p_id, lower(p_to), p_sealed);
$function$;
comment on function rowgate.record_mail(uuid,text,bytea) is '@behavior -*
Records a sealed message in the writing transaction; a sender sends it after the commit.';
grant execute on function rowgate.record_mail(uuid,text,bytea) to rowgate_anonymous, rowgate_organization, rowgate_user;

-- Function rowgate.record_outbox_mail(text,text,text)
CREATE OR REPLACE FUNCTION rowgate.record_outbox_mail(p_to text, p_subject text, p_text text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  delete from rowgate_private.mail_outbox where created_at < now() - interval '1 day';
  insert into rowgate_private.mail_outbox (recipient, subject, body) values (lower(p_to), p_subject, p_text);
$function$;
comment on function rowgate.record_outbox_mail(text,text,text) is '@behavior -*
Keeps a message in the development outbox (no mail server configured).';
grant execute on function rowgate.record_outbox_mail(text,text,text) to rowgate_anonymous, rowgate_user;

-- Function rowgate.redeliver_webhook_event(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.redeliver_webhook_event(p_endpoint_id uuid, p_event_id uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid;
  v_id bigint;
  v_status text;
begin
  v_organization_id := rowgate_hidden.authorize_webhook_endpoint(p_endpoint_id, 'webhooks_write');
  if not exists (select 1 from rowgate.events ev where ev.id = p_event_id and ev.organization_id = v_organization_id
      and rowgate_hidden.event_type_denial(v_organization_id, ev.type) is null) then
    raise exception 'No such event of this organization' using errcode = 'RG422', detail = 'body.event_id';
  end if;
  select case when e.enabled then 'pending' else 'paused' end into v_status
    from rowgate.webhook_endpoints e where e.organization_id = v_organization_id and e.id = p_endpoint_id
    for share;
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id, status)
    values (v_organization_id, p_endpoint_id, p_event_id, v_status) returning id into v_id;
  return v_id;
end;
$function$;
comment on function rowgate.redeliver_webhook_event(uuid,uuid) is '@behavior -*';
grant execute on function rowgate.redeliver_webhook_event(uuid,uuid) to rowgate_organization, rowgate_user;

-- Function rowgate.refresh_oauth2_token(text,bytea,text,bytea,text[],bytea,bytea,bytea)
CREATE OR REPLACE FUNCTION rowgate.refresh_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_refresh_token_hash bytea, p_scopes text[], p_user_token_hash bytea, p_organization_token_hash bytea, p_new_refresh_token_hash bytea)
 RETURNS TABLE(status text, description text, token_kind text, scopes text[], expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
  v_token rowgate_private.oauth2_refresh_tokens;
  v_family rowgate_private.oauth2_token_families;
  v_scopes text[];
begin
  if v_client.client_id is null then
    return query select 'invalid_client'::text, 'Client authentication failed'::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select r.* into v_token from rowgate_private.oauth2_refresh_tokens r
    join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_refresh_token_hash and f.client_id = p_client_id
    for update of r;
  if v_token.id is not null then
    select f.* into v_family from rowgate_private.oauth2_token_families f where f.id = v_token.family_id for update;
  end if;
  if v_token.id is null then
    return query select 'invalid_grant'::text, 'The refresh token is unknown or was issued to another client'::text,
      null::text, null::text[], null::timestamptz;
    return;
  elsif v_family.revoked_at is not null then
    return query select 'invalid_grant'::text, 'The refresh token is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.used_at is not null then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text,
      'The refresh token was used already; every token of its grant is revoked'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif v_token.expires_at <= now() then
    return query select 'invalid_grant'::text, 'The refresh token has expired'::text, null::text, null::text[], null::timestamptz;
    return;
  elsif not rowgate_private.oauth2_grant_holds(v_family.user_id, v_family.organization_id) then
    perform rowgate_private.revoke_oauth2_family(v_family.id);
    return query select 'invalid_grant'::text, 'The user can no longer grant this authorization'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  v_scopes := coalesce((select array_agg(distinct s order by s) from unnest(p_scopes) s), v_family.scopes);
  if not (v_scopes <@ v_family.scopes) then
    return query select 'invalid_scope'::text, 'A refresh cannot widen the scopes of the grant'::text,
      null::text, null::text[], null::timestamptz;
    return;
  end if;
  update rowgate_private.oauth2_refresh_tokens r set used_at = now() where r.id = v_token.id;
  return query select 'ok'::text, null::text,
    case when v_family.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end,
    v_scopes,
    rowgate_private.issue_oauth2_tokens(v_family.id, v_scopes,
      case when v_family.organization_id is null then p_user_token_hash else p_organization_token_hash end,
      p_new_refresh_token_hash);
end;
$function$;
comment on function rowgate.refresh_oauth2_token(text,bytea,text,bytea,text[],bytea,bytea,bytea) is '@behavior -*
The refresh_token grant of the token endpoint, with rotation and reuse detection.';
grant execute on function rowgate.refresh_oauth2_token(text,bytea,text,bytea,text[],bytea,bytea,bytea) to rowgate_anonymous;

-- Function rowgate.register_oauth2_client(text,text,text[],text[],text,bytea)
CREATE OR REPLACE FUNCTION rowgate.register_oauth2_client(p_client_id text, p_client_name text, p_redirect_uris text[], p_scopes text[], p_token_endpoint_auth_method text, p_secret_hash bytea)
 RETURNS rowgate.oauth2_clients
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_scopes text[] := coalesce(p_scopes, rowgate_private.all_scopes());
  v_unknown text := rowgate_private.unknown_scope(v_scopes);
  v_client rowgate.oauth2_clients;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if v_user_id is null then
    raise exception 'Only users can register OAuth2 clients' using errcode = 'RG403';
  end if;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scope';
  end if;
  if not (v_scopes <@ rowgate_hidden.current_scopes()) then
    raise exception 'A client cannot register a scope its creator does not hold' using errcode = 'RG422', detail = 'body.scope';
  end if;
  if (p_token_endpoint_auth_method = 'none') <> (p_secret_hash is null) then
    raise exception 'A confidential client has a secret, a public client none';
  end if;
  insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
    values (p_client_id, v_user_id, p_client_name, p_redirect_uris,
      (select array_agg(distinct s order by s) from unnest(v_scopes) s), p_token_endpoint_auth_method)
    returning * into v_client;
  if p_secret_hash is not null then
    insert into rowgate_private.oauth2_client_secrets (client_id, secret_hash) values (p_client_id, p_secret_hash);
  end if;
  return v_client;
end;
$function$;
comment on function rowgate.register_oauth2_client(text,text,text[],text[],text,bytea) is '@behavior -*
Registers an OAuth2 client owned by the current user (RFC 7591).';
grant execute on function rowgate.register_oauth2_client(text,text,text[],text[],text,bytea) to rowgate_user;

-- Function rowgate.request_log_event_ids(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.request_log_event_ids(p_organization_id uuid, p_id uuid)
 RETURNS uuid[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(array_agg(l.event_id order by l.event_id), '{}')
  from rowgate_private.request_log_events l
  where l.request_log_id = p_id and l.organization_id = p_organization_id
    and p_organization_id = any (rowgate_hidden.current_organization_ids('organization:manage'))
    and rowgate_hidden.has_scope('organizations_read');
$function$;
comment on function rowgate.request_log_event_ids(uuid,uuid) is '@behavior -*';
grant execute on function rowgate.request_log_event_ids(uuid,uuid) to rowgate_user;

-- Function rowgate.request_login_code(text,bytea,bytea,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.request_login_code(p_email text, p_code_hash bytea, p_attempt_hash bytea, p_client text, p_device_hash bytea)
 RETURNS TABLE(status text, expires_in integer, retry_after integer, mail boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_email text := lower(p_email);
  v_lifetime interval := rowgate_private.login_code_lifetime();
  v_network cidr := rowgate_private.client_network(p_client);
  v_for_address timestamptz;
  v_in_all timestamptz;
  v_origin text;
  v_mail boolean;
begin
  -- two requests of one client at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.login_code:' || p_client, 0));
  delete from rowgate_private.login_codes c where c.created_at < now() - interval '1 day';
  -- the fifth newest code for this address and the twentieth newest in all, within the hour
  select c.created_at into v_for_address from rowgate_private.login_codes c
    where c.client = p_client and c.email = v_email and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 4 limit 1;
  select c.created_at into v_in_all from rowgate_private.login_codes c
    where c.client = p_client and c.created_at > now() - interval '1 hour'
    order by c.created_at desc offset 19 limit 1;
  if v_for_address is not null or v_in_all is not null then
    return query select 'rate_limited'::text, null::integer,
      greatest(1, ceil(extract(epoch from
        greatest(v_for_address, v_in_all) + interval '1 hour' - now())))::integer, false;
    return;
  end if;
  -- whose mailbox allowance: the account's own browser, else a network it signed in from lately, else unknown
  v_origin := case
    when p_device_hash is not null and exists (
      select from rowgate_private.sign_in_devices d
      where d.email = v_email and d.device_hash = p_device_hash and d.signed_in_at > now() - interval '1 year')
      then 'device:' || encode(p_device_hash, 'hex')
    when v_network is not null and exists (
      select from rowgate_private.sign_in_networks n
      where n.email = v_email and n.network = v_network and n.signed_in_at > now() - interval '30 days')
      then 'network:' || v_network::text
    else 'unknown'
  end;
  -- requests of one origin from many clients at once are counted one after the other
  perform pg_advisory_xact_lock(hashtextextended('rowgate.mailbox:' || v_email || ':' || v_origin, 0));
  v_mail := (select count(*) from rowgate_private.login_codes c
    where c.email = v_email and c.origin = v_origin and c.mailed and c.created_at > now() - interval '1 hour')
    < rowgate_private.mailbox_codes_per_hour();
  insert into rowgate_private.login_codes (email, code_hash, attempt_hash, client, expires_at, origin, mailed)
    values (v_email, p_code_hash, p_attempt_hash, p_client, now() + v_lifetime, v_origin, v_mail);
  return query select 'created'::text, extract(epoch from v_lifetime)::integer, null::integer, v_mail;
end;
$function$;
comment on function rowgate.request_login_code(text,bytea,bytea,text,bytea) is '@behavior -*
Stores a login code''s hash for an address and the attempt that asked: created with the seconds it stays valid and whether to mail it (10 an hour per address and origin: unknown, the device cookie''s browser, a network that signed in lately), or rate_limited (5 codes an hour per client and address, 20 per client) with the seconds until the client may ask again.';
grant execute on function rowgate.request_login_code(text,bytea,bytea,text,bytea) to rowgate_anonymous;

-- Function rowgate.revoke_authorized_app(text)
CREATE OR REPLACE FUNCTION rowgate.revoke_authorized_app(p_client_id text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_revoked integer := 0;
  v_grant record;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Only a web session revokes authorized apps' using errcode = 'RG403';
  end if;
  for v_grant in select g.id, g.is_family from rowgate_private.live_oauth2_grants(rowgate_hidden.current_user_id(), null) g
      where g.client_id = p_client_id loop
    perform rowgate_private.revoke_oauth2_grant(v_grant.id, v_grant.is_family);
    v_revoked := v_revoked + 1;
  end loop;
  return v_revoked > 0;
end;
$function$;
comment on function rowgate.revoke_authorized_app(text) is '@behavior -*';
grant execute on function rowgate.revoke_authorized_app(text) to rowgate_user;

-- Function rowgate.revoke_current_session()
CREATE OR REPLACE FUNCTION rowgate.revoke_current_session()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform rowgate_hidden.assert_scope('user:read');
  update rowgate_private.sessions s set revoked_at = now()
    where s.id = rowgate_hidden.current_credential_id() and s.kind = 'user'
      and s.user_id = rowgate_hidden.current_user_id() and s.revoked_at is null;
  return found;
end;
$function$;
comment on function rowgate.revoke_current_session() is '@behavior -*
Signs out: revokes the web session of this request.';
grant execute on function rowgate.revoke_current_session() to rowgate_user;

-- Function rowgate.revoke_invitation(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.revoke_invitation(p_organization_id uuid, p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
begin
  perform rowgate_hidden.assert_scope('members_write');
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  update rowgate.invitations set status = 'revoked'
    where id = p_id and organization_id = p_organization_id and status = 'pending' and expires_at > now();
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
end;
$function$;
comment on function rowgate.revoke_invitation(uuid,uuid) is '@behavior -*';
grant execute on function rowgate.revoke_invitation(uuid,uuid) to rowgate_organization, rowgate_user;

-- Function rowgate.revoke_oauth2_token(text,bytea,text,bytea)
CREATE OR REPLACE FUNCTION rowgate.revoke_oauth2_token(p_client_id text, p_client_secret_hash bytea, p_client_auth_method text, p_token_hash bytea)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_client rowgate.oauth2_clients := rowgate_private.authenticate_oauth2_client(p_client_id, p_client_secret_hash, p_client_auth_method);
begin
  if v_client.client_id is null then
    return 'invalid_client';
  end if;
  perform rowgate_private.revoke_oauth2_family(f.id)
    from rowgate_private.oauth2_refresh_tokens r join rowgate_private.oauth2_token_families f on f.id = r.family_id
    where r.token_hash = p_token_hash and f.client_id = p_client_id;
  update rowgate_private.oauth2_access_tokens t set revoked_at = now()
    where t.token_hash = p_token_hash and t.client_id = p_client_id and t.revoked_at is null;
  return 'ok';
end;
$function$;
comment on function rowgate.revoke_oauth2_token(text,bytea,text,bytea) is '@behavior -*
RFC 7009 token revocation.';
grant execute on function rowgate.revoke_oauth2_token(text,bytea,text,bytea) to rowgate_anonymous;

-- Function rowgate.revoke_organization_oauth2_grant(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate.revoke_organization_oauth2_grant(p_organization_id uuid, p_grant_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
  v_is_family boolean;
begin
  perform rowgate_hidden.assert_scope('organization_access_tokens_write');
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.access_token_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  select g.is_family into v_is_family from rowgate_private.live_oauth2_grants(null, p_organization_id) g where g.id = p_grant_id;
  if v_is_family is null then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  perform rowgate_private.revoke_oauth2_grant(p_grant_id, v_is_family);
end;
$function$;
comment on function rowgate.revoke_organization_oauth2_grant(uuid,uuid) is '@behavior -*';
grant execute on function rowgate.revoke_organization_oauth2_grant(uuid,uuid) to rowgate_user;

-- Function rowgate.revoke_personal_access_token(uuid)
CREATE OR REPLACE FUNCTION rowgate.revoke_personal_access_token(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform rowgate_hidden.assert_scope('user:write');
  update rowgate.personal_access_tokens set deleted_at = now()
    where id = p_id and user_id = rowgate_hidden.current_user_id() and deleted_at is null;
  return found;
end;
$function$;
comment on function rowgate.revoke_personal_access_token(uuid) is '@behavior -*';
grant execute on function rowgate.revoke_personal_access_token(uuid) to rowgate_user;

-- Function rowgate.revoke_reported_tokens(text[],bytea[])
CREATE OR REPLACE FUNCTION rowgate.revoke_reported_tokens(p_kinds text[], p_token_hashes bytea[])
 RETURNS TABLE(token_kind text, token_id uuid, recipient text, label text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
begin
  if cardinality(p_kinds) is distinct from cardinality(p_token_hashes) or cardinality(p_kinds) > 100 then
    raise exception 'From 1 to 100 tokens, each with its kind' using errcode = 'RG422', detail = 'body.tokens';
  end if;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate.personal_access_tokens t set deleted_at = now()
        from rowgate_private.access_token_hashes h, reported r
        where r.kind = 'personal_access_token' and h.token_hash = r.token_hash and t.id = h.personal_access_token_id
          and t.deleted_at is null and (t.expires_at is null or t.expires_at > now())
        returning t.id, t.user_id, t.comment
    )
    select 'personal_access_token'::text, v.id, u.email, format('personal access token "%s"', v.comment)
      from revoked v join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate.organization_access_tokens t set deleted_at = now()
        from rowgate_private.access_token_hashes h, reported r
        where r.kind = 'organization_access_token' and h.token_hash = r.token_hash and t.id = h.organization_access_token_id
          and t.deleted_at is null and (t.expires_at is null or t.expires_at > now())
        returning t.id, t.organization_id, t.created_by, t.comment
    )
    select 'organization_access_token'::text, v.id, u.email,
        format('organization access token "%s" of the organization "%s"', v.comment, o.name)
      from revoked v
        join rowgate.organizations o on o.id = v.organization_id
        left join rowgate.users u on u.id = v.created_by and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate_private.oauth2_access_tokens t set revoked_at = now()
        from reported r
        where r.kind = case when t.organization_id is null then 'oauth2_user_token' else 'oauth2_organization_token' end
          and t.token_hash = r.token_hash and t.revoked_at is null and t.expires_at > now()
        returning t.id, t.user_id, t.client_id, r.kind
    )
    select v.kind, v.id, u.email,
        format('OAuth2 access token granted to the application "%s"', coalesce(c.client_name, v.client_id))
      from revoked v
        left join rowgate.oauth2_clients c on c.client_id = v.client_id
        join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash) where r.kind = 'oauth2_refresh_token'
    ), families as (
      select distinct f.id, f.user_id, f.client_id
        from reported r
          join rowgate_private.oauth2_refresh_tokens t on t.token_hash = r.token_hash
          join rowgate_private.oauth2_token_families f on f.id = t.family_id
        where t.used_at is null and t.expires_at > now() and f.revoked_at is null
    ), revoked as materialized (
      select f.*, rowgate_private.revoke_oauth2_family(f.id) from families f
    )
    select 'oauth2_refresh_token'::text, v.id, u.email,
        format('OAuth2 refresh token granted to the application "%s"', coalesce(c.client_name, v.client_id))
      from revoked v
        left join rowgate.oauth2_clients c on c.client_id = v.client_id
        join rowgate.users u on u.id = v.user_id and u.deleted_at is null;

  return query
    with reported as (
      select distinct r.kind, r.token_hash from unnest(p_kinds, p_token_hashes) as r(kind, token_hash)
    ), revoked as (
      update rowgate_private.sessions s set revoked_at = now()
        from reported r
        where r.kind = case s.kind when 'user' then 'web_session' when 'customer' then 'customer_session' else 'member_session' end
          and s.token_hash = r.token_hash and s.revoked_at is null and s.expires_at > now()
        returning s.id, r.kind, coalesce(s.impersonator_id, s.user_id) as user_id
    )
    select v.kind, v.id, u.email, case when v.kind = 'web_session' then 'web session (a signed-in browser)' end
      from revoked v left join rowgate.users u on u.id = v.user_id and u.deleted_at is null;
end;
$function$;
comment on function rowgate.revoke_reported_tokens(text[],bytea[]) is '@behavior -*
Revokes the live tokens among those reported (POST /v1/credentials/revoke); presenting a token is the right to revoke it.';
grant execute on function rowgate.revoke_reported_tokens(text[],bytea[]) to rowgate_anonymous;

-- Function rowgate.rotate_webhook_secret(uuid,bytea,integer)
CREATE OR REPLACE FUNCTION rowgate.rotate_webhook_secret(p_id uuid, p_sealed_secret bytea, p_expire_previous_in integer)
 RETURNS rowgate.webhook_endpoints
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid := rowgate_hidden.authorize_webhook_endpoint(p_id, 'webhooks_write');
  v_endpoint rowgate.webhook_endpoints;
begin
  if p_expire_previous_in is null or p_expire_previous_in not between 0 and 604800 then
    raise exception 'From 0 to 604800 seconds' using errcode = 'RG422', detail = 'body.expire_previous_in';
  end if;
  update rowgate_private.webhook_secrets s
    set previous_sealed_secret = s.sealed_secret,
      previous_expires_at = now() + make_interval(secs => p_expire_previous_in),
      sealed_secret = p_sealed_secret
    where s.organization_id = v_organization_id and s.endpoint_id = p_id;
  update rowgate.webhook_endpoints e set secret_rotated_at = now()
    where e.organization_id = v_organization_id and e.id = p_id
    returning * into v_endpoint;
  return v_endpoint;
end;
$function$;
comment on function rowgate.rotate_webhook_secret(uuid,bytea,integer) is '@behavior -*';
grant execute on function rowgate.rotate_webhook_secret(uuid,bytea,integer) to rowgate_organization, rowgate_user;

-- Function rowgate.store_idempotent_answer(text,bytea,integer,text)
CREATE OR REPLACE FUNCTION rowgate.store_idempotent_answer(p_key text, p_request_hash bytea, p_status integer, p_body text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into rowgate_private.idempotency_keys as k (subject_kind, subject_id, key, request_hash, response_status, response_body)
    values (rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), p_key, p_request_hash, p_status, p_body)
  on conflict (subject_kind, subject_id, key) do update
    set request_hash = excluded.request_hash, response_status = excluded.response_status,
      response_body = excluded.response_body, created_at = excluded.created_at
    where k.created_at < now() - rowgate_private.idempotency_key_lifetime();
$function$;
comment on function rowgate.store_idempotent_answer(text,bytea,integer,text) is '@behavior -*
Keeps a 2xx answer with its Idempotency-Key, in the transaction of its effect.';
grant execute on function rowgate.store_idempotent_answer(text,bytea,integer,text) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate.update_organization_role(uuid,text,boolean,text,text[])
CREATE OR REPLACE FUNCTION rowgate.update_organization_role(p_organization_id uuid, p_name text, p_set_description boolean, p_description text, p_permissions text[])
 RETURNS rowgate.organization_roles
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_role rowgate.organization_roles := rowgate_private.organization_role_for_change(p_organization_id, p_name, 'members_write');
begin
  if p_permissions is not null then
    perform rowgate_private.assert_grantable(p_organization_id, p_permissions);
  end if;
  update rowgate.organization_roles r set
      description = case when p_set_description then p_description else r.description end,
      permissions = coalesce(p_permissions, r.permissions)
    where r.id = v_role.id
    returning * into v_role;
  return v_role;
end;
$function$;
comment on function rowgate.update_organization_role(uuid,text,boolean,text,text[]) is '@behavior -*';
grant execute on function rowgate.update_organization_role(uuid,text,boolean,text,text[]) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.access_token_management_denial(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.access_token_management_denial(p_organization_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage access tokens'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'access_tokens:manage') end;
$function$;
grant execute on function rowgate_hidden.access_token_management_denial(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.analyst_scopes()
CREATE OR REPLACE FUNCTION rowgate_hidden.analyst_scopes()
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if rowgate_hidden.analyst_user_id() is null then
    return null;
  end if;
  return rowgate_private.read_scopes();
end;
$function$;
grant execute on function rowgate_hidden.analyst_scopes() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.analyst_user_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.analyst_user_id()
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select a.user_id from rowgate_private.analysts a join rowgate.users u on u.id = a.user_id
    where a.login = session_user and u.deleted_at is null);
end;
$function$;
grant execute on function rowgate_hidden.analyst_user_id() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.assert_event_types(uuid,text[])
CREATE OR REPLACE FUNCTION rowgate_hidden.assert_event_types(p_organization_id uuid, p_event_types text[])
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_type text;
  v_denial text;
begin
  if cardinality(p_event_types) <> (select count(distinct t) from unnest(p_event_types) t) then
    raise exception 'An event type is listed twice' using errcode = 'RG422', detail = 'body.event_types';
  end if;
  foreach v_type in array p_event_types loop
    v_denial := rowgate_hidden.event_type_denial(p_organization_id, v_type);
    if v_denial = 'Unknown event type' then
      raise exception 'Unknown event type: %', v_type using errcode = 'RG422', detail = 'body.event_types';
    elsif v_denial is not null then
      raise exception '%', v_denial using errcode = 'RG403';
    end if;
  end loop;
end;
$function$;
grant execute on function rowgate_hidden.assert_event_types(uuid,text[]) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.assert_scope(text)
CREATE OR REPLACE FUNCTION rowgate_hidden.assert_scope(p_scope text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if not rowgate_hidden.has_scope(p_scope) then
    raise exception 'The token lacks the required scope: %', p_scope using errcode = 'RGSCO', detail = p_scope;
  end if;
end;
$function$;
grant execute on function rowgate_hidden.assert_scope(text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_user;

-- Function rowgate_hidden.authorize(text,uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.authorize(p_resource text, p_id uuid, p_policy text)
 RETURNS TABLE(organization_id uuid, denial text)
 LANGUAGE sql
 STABLE
AS $function$
  with reachable as (
    select r.organization_id
    from (select rowgate_hidden.reachable_resource_organization_id(p_resource, p_id) as organization_id) r
    where r.organization_id is not null
  )
  select r.organization_id, rowgate_hidden.policy_denial(r.organization_id, p_policy)
  from (select 1) one left join reachable r on true;
$function$;
grant execute on function rowgate_hidden.authorize(text,uuid,text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.authorize_webhook_endpoint(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.authorize_webhook_endpoint(p_id uuid, p_scope text)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid;
  v_denial text;
begin
  perform rowgate_hidden.assert_scope(p_scope);
  select e.organization_id into v_organization_id from rowgate.webhook_endpoints e where e.id = p_id and e.deleted_at is null;
  if v_organization_id is null or not v_organization_id = any (rowgate_hidden.current_organization_ids()) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  v_denial := rowgate_hidden.role_permission_denial(v_organization_id, 'organization:manage');
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return v_organization_id;
end;
$function$;
grant execute on function rowgate_hidden.authorize_webhook_endpoint(uuid,text) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.become_web_session(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.become_web_session(p_user_id uuid)
 RETURNS text[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
begin
  perform set_config('rowgate.subject_kind', 'user', true), set_config('rowgate.subject_id', p_user_id::text, true),
    set_config('rowgate.credential_kind', 'web_session', true),
    set_config('rowgate.scopes', array_to_string(rowgate_hidden.web_session_scopes(), ' '), true);
  return v_saved;
end;
$function$;
grant execute on function rowgate_hidden.become_web_session(uuid) to rowgate_user;

-- Function rowgate_hidden.check_answer(rowgate_hidden.operations,boolean,integer,text,text,text,text,text[],uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.check_answer(p_op rowgate_hidden.operations, p_allowed boolean, p_status integer, p_error text, p_step text, p_reason text, p_credential_kind text, p_scopes text[], p_organization_id uuid, p_role text)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select jsonb_build_object(
    'allowed', p_allowed, 'status', p_status, 'error', p_error, 'step', p_step, 'reason', p_reason,
    'basis', jsonb_build_object('credential_kind', p_credential_kind, 'scopes', to_jsonb(p_scopes), 'role', p_role,
      'permission', p_op.permission, 'policy', p_op.policy),
    'organization_id', p_organization_id);
$function$;
grant execute on function rowgate_hidden.check_answer(rowgate_hidden.operations,boolean,integer,text,text,text,text,text[],uuid,text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.check_batch(jsonb,boolean)
CREATE OR REPLACE FUNCTION rowgate_hidden.check_batch(p_checks jsonb, p_as_web_session boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := case when p_as_web_session then 'web_session' else rowgate_hidden.current_credential_kind() end;
  v_scopes text[] := coalesce(case when p_as_web_session then rowgate_hidden.web_session_scopes() else rowgate_hidden.current_scopes() end, '{}');
  v_unknown record;
  v_lookup record;
  v_where text;
  -- the column of a looked-up row that names its organization: an organization is its own
  v_organization_column text;
  v_rows jsonb;
  -- the items a resource lookup found, by their place: the resource's organization (null when it has none)
  v_found jsonb := '{}';
  v_answers jsonb;
  -- an Organization subject's creates are in its own organization
  v_subject_organization_id uuid := case when rowgate_hidden.current_subject_kind() = 'organization'
    then rowgate_hidden.current_subject_id() end;
  v_platform_admin boolean;
begin
  select c.value ->> 'operation' as operation into v_unknown
    from jsonb_array_elements(p_checks) c
    where not exists (select from rowgate_hidden.operations o where o.operation = c.value ->> 'operation')
    limit 1;
  if found then
    raise exception 'Unknown operation: %', v_unknown.operation using errcode = 'RG422', detail = 'operation';
  end if;

  -- 3. the resources found by their columns: one statement per resource for every item past the scope step
  for v_lookup in
    select (i.op).resource, (i.op).match,
        jsonb_agg(jsonb_build_object('n', i.n, 'params', i.params, 'organization_id', i.named)) as items
      from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).lookup = 'visible'
      group by (i.op).resource, (i.op).match
  loop
    select string_agg(format('r.%I = (i.params ->> %L)::%s', m.value, m.key, format_type(a.atttypid, a.atttypmod)), ' and ')
      into v_where
      from jsonb_each_text(v_lookup.match) m
      join pg_attribute a on a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = m.value;
    v_organization_column := case
      when v_lookup.resource = 'organizations' then 'id'
      when exists (select from pg_attribute a
        where a.attrelid = format('rowgate.%I', v_lookup.resource)::regclass and a.attname = 'organization_id' and not a.attisdropped)
        then 'organization_id'
    end;
    execute format(
        'select coalesce(jsonb_object_agg(i.n, x.organization_id), ''{}'')
         from jsonb_to_recordset($1) i(n bigint, params jsonb, organization_id uuid)
           cross join lateral (select %s as organization_id from rowgate.%I r
             where %s and (i.organization_id is null or %s = i.organization_id) limit 1) x',
        coalesce('r.' || quote_ident(v_organization_column), 'null::uuid'), v_lookup.resource, v_where,
        coalesce('r.' || quote_ident(v_organization_column), 'i.organization_id'))
      into v_rows using v_lookup.items;
    v_found := v_found || v_rows;
  end loop;

  -- asked only where an item reaches the policy step: only the User roles may ask it
  if exists (select from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
      where i.step is null and (i.op).policy_key = 'platform_admin') then
    v_platform_admin := rowgate_hidden.current_user_is_platform_admin();
  end if;

  with items as materialized (
    select i.*, case when i.step is null and (i.op).lookup = 'authorize'
        then (i.params ->> (select k from jsonb_object_keys((i.op).match) k limit 1))::uuid end as target_id
    from rowgate_hidden.check_items(p_checks, v_kind, v_scopes) i
  ), authorized as materialized (
    -- the organizations of the resources named by their id, reached by the subject: one statement per resource
    select g.resource, r.id, r.organization_id
    from (select (i.op).resource, array_agg(i.target_id) as ids from items i where i.target_id is not null group by (i.op).resource) g
      cross join lateral rowgate_hidden.reachable_resource_organization_ids(g.resource, g.ids) r
  ), resolved as materialized (
    -- 3. and 4. the resource and its organization, as each operation finds them
    select i.n, i.op, i.params, i.step, i.held, null::boolean as found, null::uuid as organization_id
    from items i
    where i.step is not null
    union all
    select i.n, i.op, i.params, i.step, i.held,
      case (i.op).lookup
        when 'none' then true
        when 'list' then i.named is null or i.named = any ((select rowgate_hidden.current_organization_ids())::uuid[])
        when 'target' then coalesce(coalesce(i.named, v_subject_organization_id) = any ((select rowgate_hidden.current_organization_ids())::uuid[]), false)
        when 'visible' then v_found ? i.n::text
        -- an invitation is found only by its invitee, and concerns no organization the caller reaches
        when 'invitee' then rowgate_hidden.invitee_invitation_found((i.params ->> 'id')::uuid)
      end,
      case (i.op).lookup
        when 'list' then i.named
        when 'target' then coalesce(i.named, v_subject_organization_id)
        when 'visible' then (v_found ->> i.n::text)::uuid
      end
    from items i
    where i.step is null and (i.op).lookup <> 'authorize'
    union all
    select i.n, i.op, i.params, i.step, i.held, a.organization_id is not null, a.organization_id
    from items i
      left join authorized a on a.resource = (i.op).resource and a.id = i.target_id
    where i.step is null and (i.op).lookup = 'authorize'
  ), organizations as materialized (
    -- each organization's role once, and each of its policies once
    select o.organization_id, rowgate_hidden.current_role_in(o.organization_id) as role
    from (select distinct x.organization_id from resolved x where x.found and x.organization_id is not null) o
  ), policies as materialized (
    select p.organization_id, p.policy_key, rowgate_hidden.policy_denial(p.organization_id, p.policy_key) as denial
    from (select distinct x.organization_id, (x.op).policy_key from resolved x
      where x.found and x.organization_id is not null and (x.op).policy_key is not null and (x.op).policy_key <> 'platform_admin') p
  )
  select coalesce(jsonb_agg(
      case
        when x.step is not null then rowgate_hidden.check_answer(x.op, false, case x.step when 'authentication' then 401 else 403 end,
          case x.step when 'authentication' then 'Unauthorized' else 'InsufficientScope' end, x.step, null, v_kind, x.held, null, null)
        when not x.found then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        when d.denial is not null then rowgate_hidden.check_answer(x.op, false, 403, 'NotPermitted', 'policy', d.denial, v_kind, x.held,
          x.organization_id, o.role)
        -- an organization's account is the one resource found after its organization's policy
        when (x.op).operation = 'organizations:get_account' and not rowgate_hidden.organization_account_exists(x.organization_id)
          then rowgate_hidden.check_answer(x.op, false, 404, 'ResourceNotFound', 'resource', null, v_kind, x.held, null, null)
        else rowgate_hidden.check_answer(x.op, true, (x.op).status, null, null, null, v_kind, x.held, x.organization_id, o.role)
      end order by x.n), '[]')
    into v_answers
  from resolved x
    left join organizations o on o.organization_id = x.organization_id
    left join policies p on p.organization_id = x.organization_id and p.policy_key = (x.op).policy_key
    -- 5. the policy; removing another member also depends on that member's role (SPEC §21), not on a body
    cross join lateral (
      select coalesce(
        case
          when x.step is not null or not x.found then null
          when (x.op).policy_key = 'platform_admin' then
            case when not v_platform_admin then 'Only platform admins can impersonate users' end
          else p.denial
        end,
        case when x.step is null and x.found and (x.op).operation = 'members:remove'
          then rowgate_hidden.member_removal_denial(x.organization_id, (x.params ->> 'user_id')::uuid) end) as denial
    ) d;
  return v_answers;
end;
$function$;
comment on function rowgate_hidden.check_batch(jsonb,boolean) is 'What each request of p_checks ([{operation, params, organization_id}]) would answer for the current subject (SPEC §20), in their order, each with the organization it concerns; as for a web session when p_as_web_session.';
grant execute on function rowgate_hidden.check_batch(jsonb,boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.check_items(jsonb,text,text[])
CREATE OR REPLACE FUNCTION rowgate_hidden.check_items(p_checks jsonb, p_kind text, p_scopes text[])
 RETURNS TABLE(n bigint, op rowgate_hidden.operations, params jsonb, named uuid, step text, held text[])
 LANGUAGE sql
 STABLE
AS $function$
  select c.n, o, coalesce(c.value -> 'params', '{}'), (c.value ->> 'organization_id')::uuid,
    case
      -- 1. authentication: an operation that reads a credential accepts only its kinds
      when cardinality(o.credentials) > 0 and not coalesce(p_kind = any (o.credentials), false) then 'authentication'
      -- 2. scopes: any of the operation's
      when cardinality(o.scopes) > 0 and not (o.scopes && p_scopes) then 'scope'
    end,
    array(select s from unnest(o.scopes) s where s = any (p_scopes))
  from jsonb_array_elements(p_checks) with ordinality c(value, n)
    join rowgate_hidden.operations o on o.operation = c.value ->> 'operation';
$function$;
grant execute on function rowgate_hidden.check_items(jsonb,text,text[]) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.check_operation(text,jsonb,uuid,boolean)
CREATE OR REPLACE FUNCTION rowgate_hidden.check_operation(p_operation text, p_params jsonb, p_organization_id uuid, p_as_web_session boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select rowgate_hidden.check_batch(jsonb_build_array(jsonb_build_object('operation', p_operation, 'params', p_params,
    'organization_id', p_organization_id)), p_as_web_session) -> 0;
$function$;
grant execute on function rowgate_hidden.check_operation(text,jsonb,uuid,boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.check_operations(jsonb,uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.check_operations(p_checks jsonb, p_user_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_may boolean;
  v_first jsonb;
  -- the items asked about another user that the caller may ask (SPEC §20), by their place
  v_asked bigint[];
  v_second jsonb;
  v_saved text[];
begin
  if p_user_id is null then
    return coalesce((select jsonb_agg(a.value - 'organization_id' order by a.n)
      from jsonb_array_elements(rowgate_hidden.check_batch(p_checks)) with ordinality a(value, n)), '[]');
  end if;
  v_may := rowgate_hidden.current_subject_kind() = 'user' and rowgate_hidden.has_scope('members_read');
  -- any other subject may not ask: nothing is looked up for it (its role reads no user's data), every item is a 404
  if v_may then
    v_first := rowgate_hidden.check_batch(p_checks, true);
    select array_agg(a.n order by a.n) into v_asked
      from jsonb_array_elements(v_first) with ordinality a(value, n)
      where a.value ->> 'organization_id' is not null and (a.value ->> 'status')::int <> 404
        and rowgate_hidden.has_permission((a.value ->> 'organization_id')::uuid, 'members:manage')
        and exists (select from rowgate.memberships m
          where m.organization_id = (a.value ->> 'organization_id')::uuid and m.user_id = p_user_id);
  end if;
  if v_asked is not null then
    v_saved := rowgate_hidden.become_web_session(p_user_id);
    -- each item asked in the organization the caller's own look found, and nowhere else: a resource
    -- named by a column unique only within an organization must not be found in another of the user's
    v_second := rowgate_hidden.check_batch((
      select jsonb_agg(jsonb_set(p_checks -> (s.n - 1)::int, '{organization_id}', v_first -> (s.n - 1)::int -> 'organization_id')
        order by s.n)
      from unnest(v_asked) s(n)), true);
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return (
    select jsonb_agg(
        case when s.k is not null
            and (v_second -> (s.k - 1)::int ->> 'organization_id') is not distinct from (v_first -> (c.n - 1)::int ->> 'organization_id')
            and (v_second -> (s.k - 1)::int ->> 'status')::int <> 404
          then (v_second -> (s.k - 1)::int) - 'organization_id'
        -- every 404 alike: the one the user's own look would answer
        else rowgate_hidden.check_answer(o, false, 404, 'ResourceNotFound', 'resource', null, 'web_session',
          array(select x from unnest(o.scopes) x where x = any (rowgate_hidden.web_session_scopes())), null, null) - 'organization_id'
        end order by c.n)
    from jsonb_array_elements(p_checks) with ordinality c(value, n)
      left join unnest(v_asked) with ordinality s(n, k) on s.n = c.n
      left join rowgate_hidden.operations o on o.operation = c.value ->> 'operation');
end;
$function$;
grant execute on function rowgate_hidden.check_operations(jsonb,uuid) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.claim_export(integer,integer)
CREATE OR REPLACE FUNCTION rowgate_hidden.claim_export(p_per_credential integer, p_lease_seconds integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_credential uuid := rowgate_hidden.current_credential_id();
  v_id uuid;
begin
  if v_credential is null then
    raise exception 'An export needs a credential' using errcode = 'RG403';
  end if;
  -- one credential's claims one at a time, so two at once cannot both take the last slot
  perform pg_advisory_xact_lock(hashtextextended('rowgate exports ' || v_credential::text, 0));
  delete from rowgate_private.export_leases l where l.credential_id = v_credential and l.expires_at <= now();
  if (select count(*) from rowgate_private.export_leases l where l.credential_id = v_credential) >= p_per_credential then
    raise exception 'At most % exports run at once per credential', p_per_credential using errcode = 'RG429', detail = '1';
  end if;
  insert into rowgate_private.export_leases (credential_id, expires_at)
    values (v_credential, now() + make_interval(secs => p_lease_seconds))
    returning id into v_id;
  return v_id;
end;
$function$;
comment on function rowgate_hidden.claim_export(integer,integer) is 'Takes one of the credential''s export slots (SPEC §24) for p_lease_seconds, or refuses (RG429) when it holds p_per_credential already.';
grant execute on function rowgate_hidden.claim_export(integer,integer) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.credential_impersonator_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.credential_impersonator_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s.impersonator_id from rowgate_private.sessions s where s.id = rowgate_hidden.current_credential_id();
$function$;
comment on function rowgate_hidden.credential_impersonator_id() is 'The user impersonating through this transaction''s web session, looked up by its id, or null.';
grant execute on function rowgate_hidden.credential_impersonator_id() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.credential_oauth2_client_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.credential_oauth2_client_id()
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select t.client_id from rowgate_private.oauth2_access_tokens t where t.id = rowgate_hidden.current_credential_id();
$function$;
comment on function rowgate_hidden.credential_oauth2_client_id() is 'The OAuth2 client of this transaction''s access token, looked up by its id, or null.';
grant execute on function rowgate_hidden.credential_oauth2_client_id() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_actor()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_actor()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select case when rowgate_hidden.current_subject_kind() is null then
      '{"kind": "system", "id": null, "credential_kind": null, "credential_id": null, "impersonator_id": null, "oauth2_client_id": null, "ip": null, "user_agent": null}'::jsonb
    else jsonb_build_object('kind', rowgate_hidden.current_subject_kind(), 'id', rowgate_hidden.current_subject_id(),
      'credential_kind', case when rowgate_hidden.current_credential_kind() in ('oauth2_user_token', 'oauth2_organization_token')
        then 'oauth2_token' else rowgate_hidden.current_credential_kind() end,
      'credential_id', rowgate_hidden.current_credential_id(),
      'impersonator_id', rowgate_hidden.current_impersonator_id(),
      'oauth2_client_id', rowgate_hidden.current_oauth2_client_id(),
      'ip', null, 'user_agent', null) end;
$function$;
comment on function rowgate_hidden.current_actor() is 'Who is making the changes of this transaction, as events record it (SPEC §17).';
grant execute on function rowgate_hidden.current_actor() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_colleague_ids()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_colleague_ids()
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return array(
    select distinct m.user_id from rowgate.memberships m
    where m.organization_id = any (rowgate_hidden.current_organization_ids()) and m.deleted_at is null);
end;
$function$;
grant execute on function rowgate_hidden.current_colleague_ids() to rowgate_analyst, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_credential_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_credential_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.credential_id', true), '')::uuid end;
$function$;
comment on function rowgate_hidden.current_credential_id() is 'The id of the session or token that authenticated this transaction, or null.';
grant execute on function rowgate_hidden.current_credential_id() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_credential_kind()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_credential_kind()
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.credential_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'web_session'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization_access_token' end;
$function$;
comment on function rowgate_hidden.current_credential_kind() is 'The kind of the credential of this transaction (web_session, personal_access_token, …); an analyst''s login counts as web_session, an organization''s SQL login as organization_access_token; null without one.';
grant execute on function rowgate_hidden.current_credential_kind() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_customer_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_customer_id()
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
begin
  if v_kind = 'customer' then
    return rowgate_hidden.current_subject_id();
  elsif v_kind = 'member' then
    return (select customer_id from rowgate.customer_members where id = rowgate_hidden.current_subject_id() and deleted_at is null);
  end if;
  return null;
end;
$function$;
grant execute on function rowgate_hidden.current_customer_id() to rowgate_analyst, rowgate_customer, rowgate_member;

-- Function rowgate_hidden.current_impersonator_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_impersonator_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator' and rowgate_hidden.current_credential_kind() = 'web_session' then
    case when left(current_setting('rowgate.credential_impersonator', true), 37) = current_setting('rowgate.credential_id', true) || ':'
      then nullif(substr(current_setting('rowgate.credential_impersonator', true), 38), '')::uuid
      else rowgate_hidden.credential_impersonator_id() end end;
$function$;
comment on function rowgate_hidden.current_impersonator_id() is 'The user impersonating through this transaction''s web session, or null.';
grant execute on function rowgate_hidden.current_impersonator_id() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_oauth2_client_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_oauth2_client_id()
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
      and rowgate_hidden.current_credential_kind() in ('oauth2_user_token', 'oauth2_organization_token') then
    case when left(current_setting('rowgate.credential_client', true), 37) = current_setting('rowgate.credential_id', true) || ':'
      then nullif(substr(current_setting('rowgate.credential_client', true), 38), '')
      else rowgate_hidden.credential_oauth2_client_id() end end;
$function$;
comment on function rowgate_hidden.current_oauth2_client_id() is 'The OAuth2 client whose token authenticated this transaction, or null.';
grant execute on function rowgate_hidden.current_oauth2_client_id() to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_organization_ids(text)
CREATE OR REPLACE FUNCTION rowgate_hidden.current_organization_ids(p_permission text DEFAULT NULL::text)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_user_id uuid;
  v_kept uuid[];
begin
  if v_kind = 'user' then
    v_user_id := rowgate_hidden.current_user_id();
    -- only a personal access token may be kept: other credentials skip the lookup (a setting
    -- read by hand can only narrow what this returns, never widen it)
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    return array(
      select m.organization_id
      from rowgate.memberships m
      where m.user_id = v_user_id and m.deleted_at is null
        and (v_kept is null or m.organization_id = any (v_kept))
        and (select o.deleted_at is null from rowgate.organizations o where o.id = m.organization_id)
        and (p_permission is null
          or exists (select 1 from rowgate.role_permissions rp where rp.role = m.role and rp.permission = p_permission)
          or exists (select 1 from rowgate.organization_roles r
            where r.organization_id = m.organization_id and r.name = m.role and r.deleted_at is null
              and p_permission = any (r.permissions)))
      order by m.organization_id);
  elsif v_kind = 'organization' then
    return array(
      select o.id from rowgate.organizations o
      where o.id = rowgate_hidden.current_subject_id() and o.deleted_at is null);
  end if;
  return '{}';
end;
$function$;
comment on function rowgate_hidden.current_organization_ids(text) is 'The organizations the current subject reaches, in id order; with a permission, a User''s only where its role grants it (Organization subjects bypass the filter).';
grant execute on function rowgate_hidden.current_organization_ids(text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_permissions(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.current_permissions(p_organization_id uuid)
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_kept uuid[];
begin
  if v_kind = 'organization' and p_organization_id = rowgate_hidden.current_subject_id() then
    return array(select p.name from rowgate.permissions p order by 1);
  elsif v_kind = 'user' then
    if current_setting('rowgate.credential_kind', true) = 'personal_access_token' then
      v_kept := rowgate_hidden.current_token_organization_ids();
    end if;
    if v_kept is not null and not p_organization_id = any (v_kept) then
      return '{}';
    end if;
    return coalesce((select rowgate_private.role_permissions(m.organization_id, m.role)
      from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
      where m.user_id = rowgate_hidden.current_user_id() and m.organization_id = p_organization_id
        and m.deleted_at is null and o.deleted_at is null), '{}');
  end if;
  return '{}';
end;
$function$;
comment on function rowgate_hidden.current_permissions(uuid) is 'The permissions the current subject holds in an organization (its role''s; all of them for the organization itself); empty out of reach.';
grant execute on function rowgate_hidden.current_permissions(uuid) to rowgate_analyst, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_role_in(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.current_role_in(p_organization_id uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select m.role from rowgate.memberships m
    where m.organization_id = p_organization_id and m.user_id = rowgate_hidden.current_user_id() and m.deleted_at is null
      and p_organization_id = any (rowgate_hidden.current_organization_ids()));
end;
$function$;
grant execute on function rowgate_hidden.current_role_in(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_scopes()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_scopes()
 RETURNS text[]
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
      then string_to_array(nullif(current_setting('rowgate.scopes', true), ''), ' ')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_scopes()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_scopes() end;
$function$;
comment on function rowgate_hidden.current_scopes() is 'The scopes of the credential of this transaction, with the read scopes their write scopes imply.';
grant execute on function rowgate_hidden.current_scopes() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_subject_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_subject_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_id', true), '')::uuid
    when pg_has_role(session_user, 'rowgate_analyst', 'member') then rowgate_hidden.analyst_user_id()
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') then rowgate_hidden.sql_login_organization_id() end;
$function$;
comment on function rowgate_hidden.current_subject_id() is 'The id of the request''s subject, or null.';
grant execute on function rowgate_hidden.current_subject_id() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_subject_kind()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_subject_kind()
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case when session_user = 'rowgate_authenticator'
      then nullif(current_setting('rowgate.subject_kind', true), '')
    when pg_has_role(session_user, 'rowgate_analyst', 'member') and rowgate_hidden.analyst_user_id() is not null
      then 'user'
    when pg_has_role(session_user, 'rowgate_sql_login', 'member') and rowgate_hidden.sql_login_organization_id() is not null
      then 'organization' end;
$function$;
comment on function rowgate_hidden.current_subject_kind() is 'The kind of the request''s subject (user, organization, customer, member), or null.';
grant execute on function rowgate_hidden.current_subject_kind() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_token_organization_ids()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_token_organization_ids()
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if rowgate_hidden.current_credential_kind() is distinct from 'personal_access_token' then
    return null;
  end if;
  return (select t.organization_ids from rowgate.personal_access_tokens t
    where t.id = nullif(current_setting('rowgate.credential_id', true), '')::uuid);
end;
$function$;
comment on function rowgate_hidden.current_token_organization_ids() is 'The organizations the credential of this transaction is kept to (a personal access token naming some); null: no such bound.';
grant execute on function rowgate_hidden.current_token_organization_ids() to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.current_user_email()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_user_email()
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select u.email from rowgate.users u where u.id = rowgate_hidden.current_user_id() and u.deleted_at is null);
end;
$function$;
comment on function rowgate_hidden.current_user_email() is 'The e-mail address of the current User subject, or null.';
grant execute on function rowgate_hidden.current_user_email() to rowgate_analyst, rowgate_user;

-- Function rowgate_hidden.current_user_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_user_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select case when rowgate_hidden.current_subject_kind() = 'user' then rowgate_hidden.current_subject_id() end;
$function$;
comment on function rowgate_hidden.current_user_id() is 'The User subject of this transaction, or null.';
grant execute on function rowgate_hidden.current_user_id() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.current_user_is_platform_admin()
CREATE OR REPLACE FUNCTION rowgate_hidden.current_user_is_platform_admin()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return exists (select 1 from rowgate_private.platform_admins a where a.user_id = rowgate_hidden.current_user_id());
end;
$function$;
comment on function rowgate_hidden.current_user_is_platform_admin() is 'Is the User of this transaction a platform admin (SPEC §2)? Its own flag only.';
grant execute on function rowgate_hidden.current_user_is_platform_admin() to rowgate_user;

-- Function rowgate_hidden.customer_ids_by_external_id(text[])
CREATE OR REPLACE FUNCTION rowgate_hidden.customer_ids_by_external_id(p_external_ids text[])
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return array(select c.id from rowgate.customers c
    where c.external_id = any (p_external_ids) and c.deleted_at is null
      and c.organization_id = any (rowgate_hidden.current_organization_ids()));
end;
$function$;
grant execute on function rowgate_hidden.customer_ids_by_external_id(text[]) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.end_export(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.end_export(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  delete from rowgate_private.export_leases l where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$function$;
comment on function rowgate_hidden.end_export(uuid) is 'Gives the credential''s export slot p_id back.';
grant execute on function rowgate_hidden.end_export(uuid) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.event_type_denial(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.event_type_denial(p_organization_id uuid, p_type text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case
    when not (p_type ~ '^[a-z_]+\.(created|updated|deleted)$' or p_type in ('order.paid', 'order.refunded')
      or p_type in ('invitation.accepted', 'invitation.declined', 'invitation.revoked', 'invitation.expired')) then 'Unknown event type'
    else case split_part(p_type, '.', 1)
      when 'organization' then null when 'membership' then null when 'product' then null
      when 'customer' then null when 'order' then null when 'member' then null when 'refund' then null
      when 'webhook_endpoint' then null
      when 'role' then case when p_type = 'role.deleted' or p_type ~ '^role\.(created|updated)$' then null else 'Unknown event type' end
      when 'invitation' then case when p_type ~ '\.(updated|deleted)$' then 'Unknown event type'
        else rowgate_hidden.members_management_denial(p_organization_id) end
      when 'transaction' then case when p_organization_id = any (rowgate_hidden.current_organization_ids('finance:read')) then null
        else 'You don''t have permission to read transactions' end
      when 'account' then rowgate_hidden.finance_read_denial(p_organization_id)
      when 'payout_account' then coalesce(rowgate_hidden.finance_read_denial(p_organization_id),
        case when rowgate_hidden.current_credential_kind() is distinct from 'web_session' then 'Payout account events take a web session' end)
      when 'organization_access_token' then rowgate_hidden.access_token_management_denial(p_organization_id)
      else 'Unknown event type'
    end
  end;
$function$;
grant execute on function rowgate_hidden.event_type_denial(uuid,text) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.events_pruned_before()
CREATE OR REPLACE FUNCTION rowgate_hidden.events_pruned_before()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select pruned_before from rowgate_private.event_retention;
$function$;
comment on function rowgate_hidden.events_pruned_before() is 'Events created before this instant may have been pruned (null: none ever was); a feed cursor from before it has expired.';
grant execute on function rowgate_hidden.events_pruned_before() to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.finance_denial(uuid,boolean)
CREATE OR REPLACE FUNCTION rowgate_hidden.finance_denial(p_organization_id uuid, p_write boolean)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_kind text := rowgate_hidden.current_subject_kind();
  v_admin_id uuid;
begin
  if v_kind = 'organization' and not p_write then
    return null;
  elsif v_kind <> 'user' or v_kind is null then
    return 'Not permitted';
  end if;
  select a.admin_id into v_admin_id from rowgate.organizations o join rowgate.accounts a on a.id = o.account_id
    where o.id = p_organization_id and a.deleted_at is null
      and p_organization_id = any (rowgate_hidden.current_organization_ids());
  if not found then
    return 'Organization has no account';
  elsif v_admin_id is distinct from rowgate_hidden.current_user_id() then
    return case when p_write then 'Only the account admin can manage financial information'
      else 'Only the account admin can access financial information' end;
  end if;
  return null;
end;
$function$;
grant execute on function rowgate_hidden.finance_denial(uuid,boolean) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.finance_read_denial(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.finance_read_denial(p_organization_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$ select rowgate_hidden.finance_denial(p_organization_id, false); $function$;
grant execute on function rowgate_hidden.finance_read_denial(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.finance_write_denial(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.finance_write_denial(p_organization_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$ select rowgate_hidden.finance_denial(p_organization_id, true); $function$;
grant execute on function rowgate_hidden.finance_write_denial(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.has_permission(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.has_permission(p_organization_id uuid, p_permission text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  select p_organization_id = any (rowgate_hidden.current_organization_ids(p_permission));
$function$;
grant execute on function rowgate_hidden.has_permission(uuid,text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.has_scope(text)
CREATE OR REPLACE FUNCTION rowgate_hidden.has_scope(p_scope text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  select p_scope = any (coalesce(rowgate_hidden.current_scopes(), '{}'));
$function$;
comment on function rowgate_hidden.has_scope(text) is 'Does the credential of this transaction carry the scope?';
grant execute on function rowgate_hidden.has_scope(text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.invitation_names(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.invitation_names(p_id uuid)
 RETURNS TABLE(organization_name text, inviter_name text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return query
    select o.name, u.name from rowgate.invitations i
      join rowgate.organizations o on o.id = i.organization_id
      left join rowgate.users u on u.id = i.invited_by and u.deleted_at is null
    where i.id = p_id
      and ((i.email = rowgate_hidden.current_user_email() and rowgate_hidden.current_credential_kind() = 'web_session')
        or i.organization_id = any (rowgate_hidden.current_organization_ids('members:manage')));
end;
$function$;
comment on function rowgate_hidden.invitation_names(uuid) is '@behavior -*
The organization''s and the inviter''s names of an invitation the caller may see.';
grant execute on function rowgate_hidden.invitation_names(uuid) to rowgate_analyst, rowgate_user;

-- Function rowgate_hidden.invitee_invitation_found(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.invitee_invitation_found(p_id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select exists (select from rowgate.invitations i where i.id = p_id and rowgate_hidden.is_invitee_invitation(i));
$function$;
comment on function rowgate_hidden.invitee_invitation_found(uuid) is 'Whether the invitation p_id is the current user''s to accept or decline: the lookup `invitee` of a check (SPEC §20).';
grant execute on function rowgate_hidden.invitee_invitation_found(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.is_invitee_invitation(rowgate.invitations)
CREATE OR REPLACE FUNCTION rowgate_hidden.is_invitee_invitation(p_invitation rowgate.invitations)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select p_invitation.email = rowgate_hidden.current_user_email()
    and p_invitation.status = 'pending' and p_invitation.expires_at > now()
    and exists (select from rowgate.organizations o where o.id = p_invitation.organization_id and o.deleted_at is null);
$function$;
comment on function rowgate_hidden.is_invitee_invitation(rowgate.invitations) is 'Whether the invitation is the current user''s to answer: to its address, pending, unexpired, of a live organization (SPEC §21).';

-- Function rowgate_hidden.member_removal_denial(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.member_removal_denial(p_organization_id uuid, p_user_id uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_role text;
begin
  -- only a user is limited (as the trigger), never about itself (leaving), only where it reaches
  if v_user_id is null or p_user_id is null or p_user_id = v_user_id
      or not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    return null;
  end if;
  select m.role into v_role from rowgate.memberships m
    where m.organization_id = p_organization_id and m.user_id = p_user_id and m.deleted_at is null;
  if v_role is not null and not coalesce(rowgate_private.role_permissions(p_organization_id, v_role), '{}')
      <@ rowgate_hidden.current_permissions(p_organization_id) then
    return 'You can''t change or remove a member whose role has permissions you don''t have';
  end if;
  return null;
end;
$function$;
comment on function rowgate_hidden.member_removal_denial(uuid,uuid) is 'Why the current user may not remove this member of an organization it reaches (SPEC §21''s escalation rule), or null.';
grant execute on function rowgate_hidden.member_removal_denial(uuid,uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.members_management_denial(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.members_management_denial(p_organization_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case when rowgate_hidden.current_subject_kind() is distinct from 'user' then 'Only users can manage members'
    else rowgate_hidden.role_permission_denial(p_organization_id, 'members:manage') end;
$function$;
grant execute on function rowgate_hidden.members_management_denial(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.metadata_ids(text,jsonb,integer,bigint)
CREATE OR REPLACE FUNCTION rowgate_hidden.metadata_ids(p_table text, p_filter jsonb, p_limit integer DEFAULT 500, p_min_rows bigint DEFAULT 5000)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
AS $function$
declare
  v_scope text;
  v_live text;
  v_conditions text := '';
  v_group jsonb;
  v_ids uuid[];
  v_organization_ids uuid[] := rowgate_hidden.current_organization_ids();
begin
  case p_table
    when 'products' then v_scope := 'products_read'; v_live := ' and t.deleted_at is null';
    when 'customers' then v_scope := 'customers_read'; v_live := ' and t.deleted_at is null';
    when 'customer_members' then v_scope := 'customers_read'; v_live := ' and t.deleted_at is null';
    when 'orders' then v_scope := 'orders_read'; v_live := '';
    when 'refunds' then v_scope := 'refunds_read'; v_live := '';
    else raise exception 'No metadata filter on %', p_table using errcode = '22023';
  end case;
  if jsonb_typeof(p_filter) is distinct from 'array' or jsonb_array_length(p_filter) = 0 then
    raise exception 'The metadata filter is an array of arrays of documents' using errcode = '22023';
  end if;
  if not rowgate_hidden.has_scope(v_scope) then
    return '{}';
  end if;
  if rowgate_hidden.organization_row_count(p_table, v_organization_ids) < p_min_rows then
    return null;
  end if;
  for v_group in select g from jsonb_array_elements(p_filter) g loop
    v_conditions := v_conditions || format(' and t.metadata @> any (%L::jsonb[])',
      array(select d from jsonb_array_elements(v_group) d));
  end loop;
  execute format('select array(select t.id from rowgate.%I t where t.organization_id = any ($1)%s%s limit $2)',
      p_table, v_live, v_conditions)
    into v_ids using v_organization_ids, p_limit + 1;
  return case when cardinality(v_ids) > p_limit then null else v_ids end;
end;
$function$;
comment on function rowgate_hidden.metadata_ids(text,jsonb,integer,bigint) is 'The ids of the rows of a table with metadata that match a metadata filter (one array of documents per key), within the subject''s organizations and read scope; null past p_limit of them, or when the subject sees fewer than p_min_rows rows (a scan is then cheap).';
grant execute on function rowgate_hidden.metadata_ids(text,jsonb,integer,bigint) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.metadata_is_valid(jsonb)
CREATE OR REPLACE FUNCTION rowgate_hidden.metadata_is_valid(p_metadata jsonb)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select jsonb_typeof(p_metadata) = 'object'
    and (select count(*) from jsonb_object_keys(p_metadata)) <= 50
    and not (p_metadata ? '__proto__')
    and not exists (
      select 1 from jsonb_each(p_metadata) e
      where e.key !~ '^[A-Za-z0-9_-]{1,40}$'
        or not coalesce(case jsonb_typeof(e.value)
          when 'string' then length(e.value #>> '{}') <= 500
          when 'boolean' then true
          when 'number' then (e.value #>> '{}') ~ '^-?[0-9]{1,16}$'
            and abs((e.value #>> '{}')::numeric) <= 9007199254740991
          else false end, false));
$function$;
comment on function rowgate_hidden.metadata_is_valid(jsonb) is 'At most 50 keys of 1-40 characters of [A-Za-z0-9_-], not __proto__; values strings of at most 500 characters, integers within ±(2^53-1), or booleans.';
grant execute on function rowgate_hidden.metadata_is_valid(jsonb) to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.organization_account_exists(uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.organization_account_exists(p_organization_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- only where the subject may read the organization's finances; elsewhere it learns nothing
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())
      and rowgate_hidden.finance_read_denial(p_organization_id) is null) then
    return null;
  end if;
  return exists (select from rowgate.accounts a where a.organization_id = p_organization_id and a.deleted_at is null);
end;
$function$;
comment on function rowgate_hidden.organization_account_exists(uuid) is 'Whether an organization whose finances the subject may read has a live account; null where it may not read them.';
grant execute on function rowgate_hidden.organization_account_exists(uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.organization_permissions(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.organization_permissions(p_organization_id uuid, p_user_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_saved text[];
  v_checks jsonb;
  v_answer jsonb;
begin
  if not p_organization_id = any (rowgate_hidden.current_organization_ids()) then
    return null;
  end if;
  if p_user_id is not null then
    if not (rowgate_hidden.current_subject_kind() = 'user' and rowgate_hidden.has_scope('members_read')
        and rowgate_hidden.has_permission(p_organization_id, 'members:manage')
        and exists (select from rowgate.memberships m
          where m.organization_id = p_organization_id and m.user_id = p_user_id)) then
      return null;
    end if;
    v_saved := rowgate_hidden.become_web_session(p_user_id);
  end if;
  -- every operation that takes an organization, asked in this one
  select jsonb_agg(jsonb_build_object('operation', o.operation,
      'params', case when o.lookup = 'authorize' then jsonb_build_object('id', p_organization_id) else '{}' end,
      'organization_id', p_organization_id) order by o.operation)
    into v_checks
    from rowgate_hidden.operations o
    where o.lookup in ('list', 'target') or (o.lookup = 'authorize' and o.resource = 'organization');
  select jsonb_build_object(
      'organization_id', p_organization_id,
      'user_id', rowgate_hidden.current_user_id(),
      'role', rowgate_hidden.current_role_in(p_organization_id),
      'permissions', coalesce((select jsonb_agg(p.name order by p.name) from rowgate.permissions p
        where rowgate_hidden.has_permission(p_organization_id, p.name)), '[]'),
      'operations', coalesce((
        select jsonb_agg(jsonb_build_object('operation', c.value ->> 'operation', 'allowed', a.value -> 'allowed',
            'status', a.value -> 'status', 'reason', a.value -> 'reason') order by c.n)
        from jsonb_array_elements(v_checks) with ordinality c(value, n)
          join jsonb_array_elements(rowgate_hidden.check_batch(coalesce(v_checks, '[]'), p_user_id is not null))
            with ordinality a(value, n) on a.n = c.n), '[]'))
    into v_answer;
  if v_saved is not null then
    perform rowgate_hidden.restore_subject(v_saved);
  end if;
  return v_answer;
end;
$function$;
grant execute on function rowgate_hidden.organization_permissions(uuid,uuid) to rowgate_analyst, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.organization_row_count(text,uuid[])
CREATE OR REPLACE FUNCTION rowgate_hidden.organization_row_count(p_resource text, p_organization_ids uuid[])
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select coalesce(sum(c.row_count), 0)::bigint from rowgate_private.organization_row_counts c
    where c.resource = p_resource and c.organization_id = any (p_organization_ids)
      and c.organization_id = any (rowgate_hidden.current_organization_ids(
        case p_resource when 'transactions' then 'finance:read' end)));
end;
$function$;
comment on function rowgate_hidden.organization_row_count(text,uuid[]) is '@behavior -*
The number of live rows of a tenant list over the given organizations the subject reaches.';
grant execute on function rowgate_hidden.organization_row_count(text,uuid[]) to rowgate_analyst, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.policy_denial(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.policy_denial(p_organization_id uuid, p_policy text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case p_policy
    when 'read' then null
    when 'finance_read' then rowgate_hidden.finance_read_denial(p_organization_id)
    when 'finance_write' then rowgate_hidden.finance_write_denial(p_organization_id)
    when 'members_management' then rowgate_hidden.members_management_denial(p_organization_id)
    when 'access_token_management' then rowgate_hidden.access_token_management_denial(p_organization_id)
    else rowgate_hidden.role_permission_denial(p_organization_id, p_policy)
  end;
$function$;
grant execute on function rowgate_hidden.policy_denial(uuid,text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.portal_write_denial()
CREATE OR REPLACE FUNCTION rowgate_hidden.portal_write_denial()
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case rowgate_hidden.current_subject_kind()
    when 'customer' then null
    when 'member' then 'Members have read-only access to the customer portal'
    else 'Not permitted' end;
$function$;
grant execute on function rowgate_hidden.portal_write_denial() to rowgate_customer, rowgate_member;

-- Function rowgate_hidden.reachable_resource_organization_id(text,uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.reachable_resource_organization_id(p_resource text, p_id uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid := rowgate_hidden.resource_organization_id(p_resource, p_id);
begin
  return case when v_organization_id = any (rowgate_hidden.current_organization_ids()) then v_organization_id end;
end;
$function$;
comment on function rowgate_hidden.reachable_resource_organization_id(text,uuid) is 'The organization of a resource, only when the subject reaches it; null otherwise.';
grant execute on function rowgate_hidden.reachable_resource_organization_id(text,uuid) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.reachable_resource_organization_ids(text,uuid[])
CREATE OR REPLACE FUNCTION rowgate_hidden.reachable_resource_organization_ids(p_resource text, p_ids uuid[])
 RETURNS TABLE(id uuid, organization_id uuid)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_reached uuid[] := rowgate_hidden.current_organization_ids();
begin
  return query
    select r.id, r.organization_id from rowgate_hidden.resource_organization_ids(p_resource, p_ids) r
    where r.organization_id = any (v_reached);
end;
$function$;
comment on function rowgate_hidden.reachable_resource_organization_ids(text,uuid[]) is 'The organization of each live resource of a kind among p_ids that the subject reaches.';
grant execute on function rowgate_hidden.reachable_resource_organization_ids(text,uuid[]) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.renew_export(uuid,integer)
CREATE OR REPLACE FUNCTION rowgate_hidden.renew_export(p_id uuid, p_lease_seconds integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  update rowgate_private.export_leases l set expires_at = now() + make_interval(secs => p_lease_seconds)
    where l.id = p_id and l.credential_id = rowgate_hidden.current_credential_id();
end;
$function$;
comment on function rowgate_hidden.renew_export(uuid,integer) is 'Keeps the credential''s export slot p_id for p_lease_seconds more.';
grant execute on function rowgate_hidden.renew_export(uuid,integer) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.resource_organization_id(text,uuid)
CREATE OR REPLACE FUNCTION rowgate_hidden.resource_organization_id(p_resource text, p_id uuid)
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select (select r.organization_id from rowgate_hidden.resource_organization_ids(p_resource, array[p_id]) r);
$function$;

-- Function rowgate_hidden.resource_organization_ids(text,uuid[])
CREATE OR REPLACE FUNCTION rowgate_hidden.resource_organization_ids(p_resource text, p_ids uuid[])
 RETURNS TABLE(id uuid, organization_id uuid)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  case p_resource
  when 'organization' then
    return query select o.id, o.id from rowgate.organizations o where o.id = any (p_ids) and o.deleted_at is null;
  when 'account' then
    return query select a.id, a.organization_id from rowgate.accounts a where a.id = any (p_ids) and a.deleted_at is null;
  when 'membership' then
    return query select m.id, m.organization_id from rowgate.memberships m where m.id = any (p_ids) and m.deleted_at is null;
  when 'organization_access_token' then
    return query select t.id, t.organization_id from rowgate.organization_access_tokens t where t.id = any (p_ids) and t.deleted_at is null;
  when 'product' then
    return query select p.id, p.organization_id from rowgate.products p where p.id = any (p_ids) and p.deleted_at is null;
  when 'customer' then
    return query select c.id, c.organization_id from rowgate.customers c where c.id = any (p_ids) and c.deleted_at is null;
  when 'order' then
    return query select o.id, o.organization_id from rowgate.orders o where o.id = any (p_ids);
  when 'payout_account' then
    return query select p.id, p.organization_id from rowgate.payout_accounts p where p.id = any (p_ids) and p.deleted_at is null;
  when 'webhook_endpoint' then
    return query select e.id, e.organization_id from rowgate.webhook_endpoints e where e.id = any (p_ids) and e.deleted_at is null;
  else
    null;
  end case;
end;
$function$;
comment on function rowgate_hidden.resource_organization_ids(text,uuid[]) is 'The organization of each live resource of a kind among p_ids, whether or not the subject reaches it.';

-- Function rowgate_hidden.restore_subject(text[])
CREATE OR REPLACE FUNCTION rowgate_hidden.restore_subject(p_saved text[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform set_config('rowgate.subject_kind', coalesce(p_saved[1], ''), true), set_config('rowgate.subject_id', coalesce(p_saved[2], ''), true),
    set_config('rowgate.credential_kind', coalesce(p_saved[3], ''), true), set_config('rowgate.scopes', coalesce(p_saved[4], ''), true);
end;
$function$;
grant execute on function rowgate_hidden.restore_subject(text[]) to rowgate_user;

-- Function rowgate_hidden.role_permission_denial(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.role_permission_denial(p_organization_id uuid, p_permission text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  select case rowgate_hidden.current_subject_kind()
    when 'organization' then null
    when 'user' then case when rowgate_hidden.has_permission(p_organization_id, p_permission) then null
      else (select format('You don''t have permission to %s %s', verb, things) from rowgate.permissions where name = p_permission) end
    else 'Not permitted'
  end;
$function$;
grant execute on function rowgate_hidden.role_permission_denial(uuid,text) to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.sql_login_organization_id()
CREATE OR REPLACE FUNCTION rowgate_hidden.sql_login_organization_id()
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select c.organization_id from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$function$;
comment on function rowgate_hidden.sql_login_organization_id() is 'The organization of this session''s SQL login (SPEC §24) while its credential is live, else null.';
grant execute on function rowgate_hidden.sql_login_organization_id() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.sql_login_scopes()
CREATE OR REPLACE FUNCTION rowgate_hidden.sql_login_scopes()
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select c.scopes from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login = session_user and c.deleted_at is null and o.deleted_at is null
      and (c.expires_at is null or c.expires_at > statement_timestamp()));
end;
$function$;
comment on function rowgate_hidden.sql_login_scopes() is 'The read scopes of this session''s SQL login (SPEC §24) while its credential is live, else null.';
grant execute on function rowgate_hidden.sql_login_scopes() to rowgate_analyst, rowgate_anonymous, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_admin, rowgate_sql_login, rowgate_user;

-- Function rowgate_hidden.target_organization_id(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_hidden.target_organization_id(p_organization_id uuid, p_permission text)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_organization_id uuid := coalesce(p_organization_id,
    case when rowgate_hidden.current_subject_kind() = 'organization' then rowgate_hidden.current_subject_id() end);
  v_denial text;
begin
  if v_organization_id is null then
    raise exception 'organization_id is required' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  if not (v_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Organization not found' using errcode = 'RG422', detail = 'body.organization_id';
  end if;
  v_denial := rowgate_hidden.policy_denial(v_organization_id, p_permission);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  return v_organization_id;
end;
$function$;
grant execute on function rowgate_hidden.target_organization_id(uuid,text) to rowgate_organization, rowgate_user;

-- Function rowgate_hidden.visible_by_organization(text)
CREATE OR REPLACE FUNCTION rowgate_hidden.visible_by_organization(p_resource text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select current_user in ('rowgate_user', 'rowgate_organization')
    and coalesce(rowgate_hidden.has_scope(case p_resource when 'orders' then 'orders_read' when 'customers' then 'customers_read' end), false);
$function$;
comment on function rowgate_hidden.visible_by_organization(text) is '@behavior -*
Are the rows of rowgate.<resource> (orders, customers) the current role sees exactly those of current_organization_ids()?';
grant execute on function rowgate_hidden.visible_by_organization(text) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.visible_row_count(text)
CREATE OR REPLACE FUNCTION rowgate_hidden.visible_row_count(p_resource text)
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if not rowgate_hidden.visible_by_organization(p_resource) then
    return null;
  end if;
  return rowgate_hidden.organization_row_count(p_resource, rowgate_hidden.current_organization_ids());
end;
$function$;
comment on function rowgate_hidden.visible_row_count(text) is '@behavior -*
The rows of rowgate.<resource> (orders, customers) the current role sees, from the row counters; null when the counters cannot say.';
grant execute on function rowgate_hidden.visible_row_count(text) to rowgate_customer, rowgate_member, rowgate_organization, rowgate_user;

-- Function rowgate_hidden.web_session_scopes()
CREATE OR REPLACE FUNCTION rowgate_hidden.web_session_scopes()
 RETURNS text[]
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return rowgate_private.all_scopes();
end;
$function$;
grant execute on function rowgate_hidden.web_session_scopes() to rowgate_analyst, rowgate_customer, rowgate_member, rowgate_organization, rowgate_sql_login, rowgate_user;

-- Function rowgate_private.add_event_partitions()
CREATE OR REPLACE FUNCTION rowgate_private.add_event_partitions()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '5s'
AS $function$
declare
  v_table record;
  v_day timestamptz;
  v_until timestamptz := now() + interval '7 days';
  v_added integer := 0;
begin
  -- one server at a time: the others find the partitions made
  perform pg_advisory_xact_lock(hashtext('rowgate_private.event_partitions'));
  for v_table in
    select t.parent, t.key, c.relname as name
    from (values ('rowgate.events'::regclass, 'id'), ('rowgate.event_clients'::regclass, 'event_id'),
                 ('rowgate.webhook_attempts'::regclass, 'id')) t (parent, key)
      join pg_class c on c.oid = t.parent
  loop
    v_day := coalesce(
      rowgate_private.uuidv7_time((select r.upper_id from rowgate_private.partition_ranges(v_table.parent) r order by r.upper_id desc limit 1)),
      date_trunc('day', now(), 'UTC'));
    while v_day < v_until loop
      perform rowgate_private.add_partition(v_table.parent, v_table.key,
        v_table.name || '_' || to_char(v_day at time zone 'UTC', 'YYYYMMDD'),
        rowgate_private.uuidv7_bound(v_day), rowgate_private.uuidv7_bound(v_day + interval '24 hours'));
      v_day := v_day + interval '24 hours';
      v_added := v_added + 1;
    end loop;
  end loop;
  return v_added;
end;
$function$;
comment on function rowgate_private.add_event_partitions() is 'Makes the daily partitions of events, their client addresses and webhook attempts up to a week ahead; returns how many it made.';
grant execute on function rowgate_private.add_event_partitions() to rowgate_authenticator;

-- Function rowgate_private.add_partition(regclass,text,text,uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.add_partition(p_parent regclass, p_key text, p_name text, p_from uuid, p_to uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_default regclass;
begin
  execute format('create table rowgate_partitions.%I (like %s including constraints)', p_name, p_parent);
  select p.partdefid::regclass into v_default from pg_partitioned_table p where p.partrelid = p_parent and p.partdefid <> 0;
  if v_default is not null then
    execute format('lock table %s in access exclusive mode', v_default);
    execute format('with moved as (delete from %s where %I >= $1 and %I < $2 returning *) insert into rowgate_partitions.%I select * from moved',
      v_default, p_key, p_key, p_name) using p_from, p_to;
  end if;
  execute format('alter table %s attach partition rowgate_partitions.%I for values from (%L) to (%L)', p_parent, p_name, p_from, p_to);
end;
$function$;
comment on function rowgate_private.add_partition(regclass,text,text,uuid,uuid) is 'Attaches a partition [p_from, p_to) named p_name to p_parent, with the rows its default partition held in that range.';

-- Function rowgate_private.add_request_log_partitions()
CREATE OR REPLACE FUNCTION rowgate_private.add_request_log_partitions()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '5s'
AS $function$
declare
  v_day timestamptz;
  v_until timestamptz := now() + interval '7 days';
  v_added integer := 0;
begin
  perform pg_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions'));
  v_day := coalesce(
    rowgate_private.uuidv7_time((select r.upper_id from rowgate_private.partition_ranges('rowgate.request_log') r
      order by r.upper_id desc limit 1)),
    date_trunc('day', now(), 'UTC'));
  while v_day < v_until loop
    perform rowgate_private.add_partition('rowgate.request_log', 'id', 'request_log_' || to_char(v_day at time zone 'UTC', 'YYYYMMDD'),
      rowgate_private.uuidv7_bound(v_day), rowgate_private.uuidv7_bound(v_day + interval '24 hours'));
    v_day := v_day + interval '24 hours';
    v_added := v_added + 1;
  end loop;
  return v_added;
end;
$function$;
comment on function rowgate_private.add_request_log_partitions() is 'Makes the daily partitions of the request log up to a week ahead; returns how many it made.';
grant execute on function rowgate_private.add_request_log_partitions() to rowgate_authenticator;

-- Function rowgate_private.all_scopes()
CREATE OR REPLACE FUNCTION rowgate_private.all_scopes()
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select array_agg(name order by name) from rowgate_private.scopes
  where name not like 'customer_portal_%';
$function$;

-- Function rowgate_private.allowed_ips(text[])
CREATE OR REPLACE FUNCTION rowgate_private.allowed_ips(p_entries text[])
 RETURNS cidr[]
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_networks cidr[] := '{}';
  v_network cidr;
begin
  if p_entries is null then
    return null;
  end if;
  if cardinality(p_entries) not between 1 and 20 then
    raise exception 'From 1 to 20 addresses or CIDRs (null: any address)' using errcode = 'RG422', detail = 'body.allowed_ips';
  end if;
  for i in 1 .. cardinality(p_entries) loop
    begin
      v_network := p_entries[i]::cidr;
    exception when invalid_text_representation or invalid_parameter_value then
      v_network := null;
    end;
    if v_network is null then
      raise exception 'Not an IP address or CIDR (host bits right of the mask must be zero): %', left(coalesce(p_entries[i], 'null'), 64)
        using errcode = 'RG422', detail = 'body.allowed_ips.' || (i - 1);
    end if;
    if not v_network = any (v_networks) then
      v_networks := v_networks || v_network;
    end if;
  end loop;
  return v_networks;
end;
$function$;

-- Function rowgate_private.analyst_login_denial(text)
CREATE OR REPLACE FUNCTION rowgate_private.analyst_login_denial(p_login text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_login is null or p_login !~ '^[a-z_][a-z0-9_]{0,62}$' then
    return 'An analyst''s login is a lower-case identifier of 1 to 63 characters (a-z, 0-9, _; not starting with a digit)';
  elsif starts_with(p_login, 'pg_') then
    return 'Names starting with pg_ are reserved by PostgreSQL';
  elsif p_login = 'rowgate' or starts_with(p_login, 'rowgate_') then
    return 'Names starting with rowgate_ belong to the API''s own roles';
  elsif starts_with(p_login, 'rg_sql_') then
    return 'Names starting with rg_sql_ belong to organizations'' SQL logins';
  elsif p_login in ('public', 'none') or exists (select from pg_catalog.pg_get_keywords() k where k.word = p_login and k.catcode = 'R') then
    return 'A reserved word is not a login';
  end if;
  return null;
end;
$function$;
comment on function rowgate_private.analyst_login_denial(text) is 'Why p_login cannot name an analyst''s login (SPEC §15), or null when it can.';
grant execute on function rowgate_private.analyst_login_denial(text) to rowgate_sql_admin;

-- Function rowgate_private.assert_client_allowed(cidr[],inet)
CREATE OR REPLACE FUNCTION rowgate_private.assert_client_allowed(p_allowed_ips cidr[], p_client_address inet)
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_allowed_ips is not null and not coalesce(p_client_address <<= any (p_allowed_ips), false) then
    raise exception 'The token may not be used from this client address (%): it is bound to other networks',
      coalesce(host(p_client_address), 'unknown') using errcode = 'RG401';
  end if;
end;
$function$;

-- Function rowgate_private.assert_grantable(uuid,text[])
CREATE OR REPLACE FUNCTION rowgate_private.assert_grantable(p_organization_id uuid, p_permissions text[])
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_lacking text;
begin
  select p into v_lacking from unnest(p_permissions) p
    where p is null or not exists (select 1 from rowgate.permissions k where k.name = p) limit 1;
  if found then
    raise exception 'Unknown permission: %', coalesce(v_lacking, 'null') using errcode = 'RG422', detail = 'body.permissions';
  end if;
  select p into v_lacking from unnest(p_permissions) p
    where not p = any (rowgate_hidden.current_permissions(p_organization_id)) limit 1;
  if found then
    raise exception 'You can''t give a role a permission you don''t have: %', v_lacking
      using errcode = 'RG422', detail = 'body.permissions';
  end if;
end;
$function$;
comment on function rowgate_private.assert_grantable(uuid,text[]) is 'Refuses permissions that are unknown or that the current subject does not hold in the organization (RG422 at body.permissions).';

-- Function rowgate_private.assert_known_scopes(text[])
CREATE OR REPLACE FUNCTION rowgate_private.assert_known_scopes(p_scopes text[])
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_unknown text;
begin
  select s into v_unknown from unnest(p_scopes) s
    where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
  if v_unknown is not null then
    raise exception 'Unknown scope: %', v_unknown using errcode = 'RG422', detail = 'body.scopes';
  end if;
end;
$function$;
grant execute on function rowgate_private.assert_known_scopes(text[]) to rowgate_sql_admin;

-- Function rowgate_private.authenticate(text,bytea,inet,text)
CREATE OR REPLACE FUNCTION rowgate_private.authenticate(p_kind text, p_token_hash bytea, p_client_address inet DEFAULT NULL::inet, p_user_agent text DEFAULT NULL::text)
 RETURNS TABLE(credential_id uuid, subject_kind text, subject_id uuid, scopes text[], is_impersonation boolean, expires_at timestamp with time zone, impersonator_id uuid, oauth2_client_id text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_subject_id uuid;
  v_scopes text[];
  v_expires_at timestamptz;
  v_allowed_ips cidr[];
begin
  if p_kind = 'web_session' then
    return query
      select s.id, 'user'::text, s.user_id,
        case when s.is_impersonation then rowgate_private.read_scopes() else rowgate_private.all_scopes() end,
        s.is_impersonation, s.expires_at, s.impersonator_id, null::text
      from rowgate_private.sessions s join rowgate.users u on u.id = s.user_id
      where s.token_hash = p_token_hash and s.kind = 'user' and s.revoked_at is null
        and s.expires_at > now() and u.deleted_at is null;
    if found then
      perform rowgate_private.record_session_use(p_token_hash, p_client_address, p_user_agent);
    end if;
  elsif p_kind = 'personal_access_token' then
    select t.id, t.user_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.personal_access_tokens t on t.id = h.personal_access_token_id
        join rowgate.users u on u.id = t.user_id
      where h.token_hash = p_token_hash and u.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'user'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at, null::uuid, null::text;
  elsif p_kind = 'organization_access_token' then
    select t.id, t.organization_id, t.scopes, t.expires_at, t.allowed_ips into v_id, v_subject_id, v_scopes, v_expires_at, v_allowed_ips
      from rowgate_private.access_token_hashes h
        join rowgate.organization_access_tokens t on t.id = h.organization_access_token_id
        join rowgate.organizations o on o.id = t.organization_id
      where h.token_hash = p_token_hash and o.deleted_at is null
        and t.deleted_at is null and (t.expires_at is null or t.expires_at > now());
    if v_id is null then
      return;
    end if;
    perform rowgate_private.assert_client_allowed(v_allowed_ips, p_client_address);
    perform rowgate_private.record_token_use(p_kind, p_token_hash);
    return query select v_id, 'organization'::text, v_subject_id, rowgate_private.expand_scopes(v_scopes), false, v_expires_at, null::uuid, null::text;
  elsif p_kind = 'oauth2_user_token' then
    return query
      select t.id, 'user'::text, t.user_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at, null::uuid, t.client_id
      from rowgate_private.oauth2_access_tokens t join rowgate.users u on u.id = t.user_id
      where t.token_hash = p_token_hash and t.organization_id is null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null;
    if found then
      perform rowgate_private.record_oauth2_token_use(p_token_hash);
    end if;
  elsif p_kind = 'oauth2_organization_token' then
    return query
      select t.id, 'organization'::text, t.organization_id, rowgate_private.expand_scopes(t.scopes), false, t.expires_at, null::uuid, t.client_id
      from rowgate_private.oauth2_access_tokens t
        join rowgate.users u on u.id = t.user_id
        join rowgate.organizations o on o.id = t.organization_id
      where t.token_hash = p_token_hash and t.organization_id is not null and t.revoked_at is null
        and t.expires_at > now() and u.deleted_at is null and o.deleted_at is null
        and rowgate_private.user_manages_access_tokens(t.user_id, t.organization_id);
    if found then
      perform rowgate_private.record_oauth2_token_use(p_token_hash);
    end if;
  elsif p_kind = 'customer_session' then
    return query
      select s.id, 'customer'::text, s.customer_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at, null::uuid, null::text
      from rowgate_private.sessions s
        join rowgate.customers c on c.id = s.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'customer' and s.revoked_at is null and s.expires_at > now()
        and c.deleted_at is null and o.deleted_at is null;
  elsif p_kind = 'member_session' then
    return query
      select s.id, 'member'::text, s.member_id, array['customer_portal_read', 'customer_portal_write'], false, s.expires_at, null::uuid, null::text
      from rowgate_private.sessions s
        join rowgate.customer_members m on m.id = s.member_id
        join rowgate.customers c on c.id = m.customer_id
        join rowgate.organizations o on o.id = c.organization_id
      where s.token_hash = p_token_hash and s.kind = 'member' and s.revoked_at is null and s.expires_at > now()
        and m.deleted_at is null and c.deleted_at is null and o.deleted_at is null;
  end if;
end;
$function$;
comment on function rowgate_private.authenticate(text,bytea,inet,text) is 'The credential''s subject, scopes and expiry when it is good (none otherwise), with the impersonator of a web session and the client of an OAuth2 token, which events record; records the use of a session (its address and agent) and of a token, to the minute.';
grant execute on function rowgate_private.authenticate(text,bytea,inet,text) to rowgate_authenticator;

-- Function rowgate_private.authenticate_oauth2_client(text,bytea,text)
CREATE OR REPLACE FUNCTION rowgate_private.authenticate_oauth2_client(p_client_id text, p_secret_hash bytea, p_method text)
 RETURNS rowgate.oauth2_clients
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_client rowgate.oauth2_clients;
begin
  select c.* into v_client from rowgate.oauth2_clients c join rowgate.users u on u.id = c.user_id
    where c.client_id = p_client_id and c.deleted_at is null and u.deleted_at is null;
  if v_client.client_id is null or v_client.token_endpoint_auth_method is distinct from p_method then
    return null;
  elsif v_client.token_endpoint_auth_method = 'none' then
    return case when p_secret_hash is null then v_client end;
  elsif p_secret_hash is null or not exists (select 1 from rowgate_private.oauth2_client_secrets s
      where s.client_id = p_client_id and s.secret_hash = p_secret_hash) then
    return null;
  end if;
  return v_client;
end;
$function$;

-- Function rowgate_private.claim_mail(integer,interval)
CREATE OR REPLACE FUNCTION rowgate_private.claim_mail(p_limit integer, p_lease interval)
 RETURNS TABLE(id uuid, lease uuid, attempts integer, sealed_body bytea)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with due as (
    select m.id from rowgate_private.mail_outbox m
    where m.sealed_body is not null and m.due_at <= now() and (m.leased_until is null or m.leased_until <= now())
    order by m.due_at
    limit p_limit
    for update skip locked
  )
  update rowgate_private.mail_outbox m
  set lease = gen_random_uuid(), leased_until = now() + p_lease, attempts = m.attempts + 1
  from due
  where m.id = due.id
  returning m.id, m.lease, m.attempts, m.sealed_body;
$function$;
comment on function rowgate_private.claim_mail(integer,interval) is 'Leases up to p_limit due messages for p_lease; commit before sending. Each outcome is recorded with record_mail_attempt and its lease.';
grant execute on function rowgate_private.claim_mail(integer,interval) to rowgate_authenticator;

-- Function rowgate_private.claim_webhook_deliveries(integer,interval)
CREATE OR REPLACE FUNCTION rowgate_private.claim_webhook_deliveries(p_limit integer, p_lease interval)
 RETURNS TABLE(delivery_id bigint, lease uuid, attempt integer, failures integer, organization_id uuid, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamp with time zone, previous jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_lane rowgate_private.webhook_lanes;
  v_endpoint record;
  v_secret bytea;
  v_delivery rowgate_private.webhook_deliveries;
  v_event rowgate.events;
  v_lease uuid;
  v_claimed integer := 0;
begin
  if p_lease < interval '1 second' then
    raise exception 'a lease lasts at least a second' using errcode = '22023';
  end if;
  -- a sender running alone (no API server beside it) still sees its deliveries placed; a
  -- sequencer kept waiting on a lane (lock_timeout) leaves the placing to its next run
  begin
    perform rowgate_private.place_events(1000);
  exception when lock_not_available then
    null;
  end;
  for v_lane in
    select l.* from rowgate_private.webhook_lanes l
    where l.due_at <= now()
    order by l.due_at
    limit greatest(p_limit, 1) + 20
    for update skip locked
  loop
    exit when v_claimed >= p_limit;
    begin
      select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
        where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id
        for no key update skip locked;
      continue when not found;
      if v_lane.delivery_id is not null then
        -- the lease ran out: its sender stopped or stalled before it recorded an answer
        perform rowgate_private.end_webhook_attempt(v_lane.organization_id, v_lane.delivery_id, false, null, 0,
          'No outcome was recorded: the sender stopped before its lease ran out', interval '0');
        update rowgate_private.webhook_lanes l set delivery_id = null, lease = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        select e.enabled, e.deleted_at, e.url into v_endpoint from rowgate.webhook_endpoints e
          where e.organization_id = v_lane.organization_id and e.id = v_lane.endpoint_id;
      end if;
      select s.sealed_secret into v_secret from rowgate_private.webhook_secrets s
        where s.organization_id = v_lane.organization_id and s.endpoint_id = v_lane.endpoint_id;
      if not v_endpoint.enabled or v_endpoint.deleted_at is not null or v_secret is null then
        if v_endpoint.deleted_at is not null or v_secret is null then
          delete from rowgate_private.webhook_deliveries d
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        else
          update rowgate_private.webhook_deliveries d set status = 'paused'
            where d.organization_id = v_lane.organization_id and d.endpoint_id = v_lane.endpoint_id and d.status = 'pending';
        end if;
        update rowgate_private.webhook_lanes l set due_at = null
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      loop
        v_delivery := null;
        select d.* into v_delivery from rowgate_private.webhook_deliveries d
          where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
            and d.status = 'pending' and d.attempts > 0 and d.next_attempt_at <= now()
          order by d.next_attempt_at
          limit 1;
        if v_delivery.id is null then
          select d.* into v_delivery from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts = 0 and d.feed_position is not null
            order by d.feed_position, d.id
            limit 1;
        end if;
        exit when v_delivery.id is null;
        select ev.* into v_event from rowgate.events ev where ev.organization_id = v_delivery.organization_id and ev.id = v_delivery.event_id;
        exit when v_event.id is not null;
        delete from rowgate_private.webhook_deliveries d where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      end loop;
      if v_delivery.id is null then
        -- nothing to send now: the lane falls due at its next retry, or when a delivery is taken in
        update rowgate_private.webhook_lanes l set due_at = (
            select min(d.next_attempt_at) from rowgate_private.webhook_deliveries d
            where d.endpoint_id = v_lane.endpoint_id and d.organization_id = v_lane.organization_id
              and d.status = 'pending' and d.attempts > 0)
          where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
        continue;
      end if;
      v_lease := gen_random_uuid();
      update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = now() + p_lease
        where d.organization_id = v_delivery.organization_id and d.id = v_delivery.id;
      update rowgate_private.webhook_lanes l set delivery_id = v_delivery.id, lease = v_lease, due_at = now() + p_lease
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
      v_claimed := v_claimed + 1;
      delivery_id := v_delivery.id;
      lease := v_lease;
      attempt := v_delivery.attempts + 1;
      failures := v_lane.failures;
      organization_id := v_lane.organization_id;
      endpoint_id := v_lane.endpoint_id;
      url := v_endpoint.url;
      sealed_secret := v_secret;
      event_id := v_event.id;
      type := v_event.type;
      resource_id := v_event.resource_id;
      data := v_event.data;
      -- the body is the event as its endpoint's managers read it: the actor's client address and user agent with it
      actor := v_event.actor || coalesce((select jsonb_build_object('ip', c.ip, 'user_agent', c.user_agent)
        from rowgate.event_clients c where c.organization_id = v_event.organization_id and c.event_id = v_event.id),
        jsonb_build_object('ip', null, 'user_agent', null));
      previous := v_event.previous;
      request_id := v_event.request_id;
      created_at := v_event.created_at;
      return next;
    exception when others then
      -- a lane that cannot be claimed (a fault in its rows) is set aside for a minute; the others go on
      raise warning 'webhook lane of endpoint % not claimed: %', v_lane.endpoint_id, sqlerrm;
      update rowgate_private.webhook_lanes l set due_at = now() + interval '1 minute'
        where l.organization_id = v_lane.organization_id and l.endpoint_id = v_lane.endpoint_id;
    end;
  end loop;
end;
$function$;
comment on function rowgate_private.claim_webhook_deliveries(integer,interval) is 'Leases up to p_limit due attempts, one per endpoint, for p_lease; commit before sending. Each answer is recorded with record_webhook_attempt and its lease.';
grant execute on function rowgate_private.claim_webhook_deliveries(integer,interval) to rowgate_authenticator;

-- Function rowgate_private.claim_webhook_delivery()
CREATE OR REPLACE FUNCTION rowgate_private.claim_webhook_delivery()
 RETURNS TABLE(delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid, organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamp with time zone, previous jsonb)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select null::bigint, null::integer, null::uuid, null::text, null::bytea, null::uuid, null::uuid, null::text, null::uuid,
    null::jsonb, null::jsonb, null::text, null::timestamptz, null::jsonb
  where false;
$function$;
grant execute on function rowgate_private.claim_webhook_delivery() to rowgate_authenticator;

-- Function rowgate_private.client_network(text)
CREATE OR REPLACE FUNCTION rowgate_private.client_network(p_client text)
 RETURNS cidr
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_address inet;
begin
  v_address := p_client::inet;
  return network(set_masklen(v_address, case when family(v_address) = 4 then 24 else 64 end))::cidr;
exception when invalid_text_representation then
  -- a client that is no IP address (a socket already closed) is of no network
  return null;
end;
$function$;
comment on function rowgate_private.client_network(text) is 'The network a client address belongs to for sign-in origins: its IPv4 /24 or IPv6 /64; null for what is no address.';

-- Function rowgate_private.create_analyst_login(uuid,text,text,integer,integer,integer)
CREATE OR REPLACE FUNCTION rowgate_private.create_analyst_login(p_user_id uuid, p_login text, p_verifier text, p_connection_limit integer DEFAULT 5, p_statement_timeout_ms integer DEFAULT 60000, p_idle_in_transaction_timeout_ms integer DEFAULT 60000)
 RETURNS rowgate_private.analysts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET createrole_self_grant TO 'inherit'
AS $function$
declare
  v_denial text := rowgate_private.analyst_login_denial(p_login);
  v_analyst boolean;
  v_binding rowgate_private.analysts;
begin
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG422', detail = 'login';
  end if;
  if p_verifier is null or p_verifier !~ '^SCRAM-SHA-256\$[0-9]{4,7}:[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$' then
    raise exception 'An analyst''s login takes a SCRAM-SHA-256 verifier, never a password' using errcode = 'RG422', detail = 'verifier';
  end if;
  if p_connection_limit is null or p_connection_limit not between 1 and 1000 then
    raise exception 'A connection limit is from 1 to 1000' using errcode = 'RG422', detail = 'connection_limit';
  end if;
  if p_statement_timeout_ms is null or p_statement_timeout_ms not between 1000 and 86400000 then
    raise exception 'A statement timeout is from 1 second to 1 day' using errcode = 'RG422', detail = 'statement_timeout';
  end if;
  if p_idle_in_transaction_timeout_ms is null or p_idle_in_transaction_timeout_ms not between 1000 and 86400000 then
    raise exception 'An idle-in-transaction timeout is from 1 second to 1 day' using errcode = 'RG422', detail = 'idle_in_transaction_timeout';
  end if;
  if not rowgate_private.is_live_user(p_user_id) then
    raise exception 'User % not found', p_user_id using errcode = 'RG404', detail = 'user_id';
  end if;
  -- one grant or revoke at a time per name, across sessions
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || p_login, 0));
  if exists (select from rowgate_private.analysts a where a.login = p_login) then
    raise exception '% is bound as an analyst already; revoke it first to rebind it', p_login using errcode = 'RG422', detail = 'login';
  end if;
  -- an existing role is never adopted, whatever it is
  select exists (select from pg_catalog.pg_auth_members m where m.member = r.oid and m.roleid = 'rowgate_analyst'::regrole)
    into v_analyst from pg_catalog.pg_roles r where r.rolname = p_login;
  if found then
    raise exception '%', case when v_analyst then format('Role %s is an analyst already; revoke it first to rebind it', p_login)
      else format('Role %s exists and is not an analyst; choose another login', p_login) end
      using errcode = 'RG422', detail = 'login';
  end if;
  execute format('create role %I login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls connection limit %s password %L',
    p_login, p_connection_limit, p_verifier);
  execute format('grant rowgate_analyst to %I with inherit true, set false', p_login);
  -- the session's defaults; rowgate_private.enforce_analyst_limits holds it to the binding's whatever it SETs
  execute format('alter role %I set statement_timeout = %L', p_login, p_statement_timeout_ms);
  execute format('alter role %I set idle_in_transaction_session_timeout = %L', p_login, p_idle_in_transaction_timeout_ms);
  -- a whole transaction is bounded too where PostgreSQL can (17+), as db/roles.sql sets it
  if current_setting('server_version_num')::int >= 170000 then
    execute format('alter role %I set transaction_timeout = %L', p_login, '15min');
  end if;
  insert into rowgate_private.analysts (login, user_id, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms)
    values (p_login, p_user_id, p_connection_limit, p_statement_timeout_ms, p_idle_in_transaction_timeout_ms)
    returning * into v_binding;
  return v_binding;
end;
$function$;
comment on function rowgate_private.create_analyst_login(uuid,text,text,integer,integer,integer) is 'Makes the analyst''s login p_login (SPEC §15), whose password''s SCRAM-SHA-256 verifier is p_verifier, member of rowgate_analyst and bound to the user p_user_id, with its limits.';
grant execute on function rowgate_private.create_analyst_login(uuid,text,text,integer,integer,integer) to rowgate_owner;

-- Function rowgate_private.credential_api_version(text,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.credential_api_version(p_kind text, p_credential_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case
    when p_kind = 'web_session' then null
    else coalesce(
      case p_kind
        when 'personal_access_token' then (select t.api_version from rowgate.personal_access_tokens t where t.id = p_credential_id)
        when 'organization_access_token' then (select t.api_version from rowgate.organization_access_tokens t where t.id = p_credential_id)
        when 'oauth2_user_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        when 'oauth2_organization_token' then (select c.api_version from rowgate_private.oauth2_access_tokens t
          join rowgate.oauth2_clients c on c.client_id = t.client_id where t.id = p_credential_id)
        else (select s.api_version from rowgate_private.sessions s where s.id = p_credential_id)
      end,
      '2026-11-20')
  end
$function$;
comment on function rowgate_private.credential_api_version(text,uuid) is 'The API version a credential is pinned to (SPEC §23); null for a web session (the newest).';
grant execute on function rowgate_private.credential_api_version(text,uuid) to rowgate_authenticator;

-- Function rowgate_private.current_request_log_id()
CREATE OR REPLACE FUNCTION rowgate_private.current_request_log_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when session_user = 'rowgate_authenticator'
    then nullif(current_setting('rowgate.request_log_id', true), '')::uuid end;
$function$;

-- Function rowgate_private.disable_analyst_login(text)
CREATE OR REPLACE FUNCTION rowgate_private.disable_analyst_login(p_login text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_analyst record;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || coalesce(p_login, ''), 0));
  select * into v_analyst from rowgate_private.revocable_analyst_login(p_login);
  if v_analyst.role_exists then
    execute format('alter role %I nologin', p_login);
  end if;
end;
$function$;
comment on function rowgate_private.disable_analyst_login(text) is 'The first step of revoking the analyst''s login p_login (SPEC §15): it logs in no more.';
grant execute on function rowgate_private.disable_analyst_login(text) to rowgate_owner;

-- Function rowgate_private.drop_analyst_login(text)
CREATE OR REPLACE FUNCTION rowgate_private.drop_analyst_login(p_login text)
 RETURNS TABLE(login text, user_id uuid, role_dropped boolean, sessions_terminated integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_analyst record;
  v_terminated integer := 0;
  v_until timestamptz;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate analyst ' || coalesce(p_login, ''), 0));
  select * into v_analyst from rowgate_private.revocable_analyst_login(p_login);
  if v_analyst.role_exists then
    if v_analyst.can_login then
      raise exception 'Role % can still log in: rowgate_private.disable_analyst_login comes first, in its own transaction', p_login
        using errcode = '55000';
    end if;
    -- its sessions end in every database, and are waited for: a session's temporary
    -- tables go with its process, and until then the role cannot be dropped
    select count(*) filter (where pg_terminate_backend(s.pid))::integer into v_terminated
      from pg_catalog.pg_stat_activity s where s.usename = p_login;
    v_until := clock_timestamp() + interval '5 seconds';
    loop
      perform pg_stat_clear_snapshot();
      exit when not exists (select from pg_catalog.pg_stat_activity s where s.usename = p_login) or clock_timestamp() > v_until;
      perform pg_sleep(0.05);
    end loop;
    -- whatever it came to own or be granted in this database goes with it (nothing, unless a
    -- DBA granted it more); what it owns elsewhere keeps the role, and this raises
    execute format('drop owned by %I', p_login);
    execute format('drop role %I', p_login);
  end if;
  delete from rowgate_private.analysts a where a.login = p_login;
  return query select p_login, v_analyst.user_id, v_analyst.role_exists, v_terminated;
end;
$function$;
comment on function rowgate_private.drop_analyst_login(text) is 'The second step of revoking the analyst''s login p_login (SPEC §15): ends its sessions, drops its role and unbinds it.';
grant execute on function rowgate_private.drop_analyst_login(text) to rowgate_owner;

-- Function rowgate_private.end_sql_login_sessions()
CREATE OR REPLACE FUNCTION rowgate_private.end_sql_login_sessions()
 RETURNS TABLE(cancelled integer, terminated integer, dropped integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_cancelled integer := 0;
  v_terminated integer := 0;
  v_dropped integer := 0;
  v_login text;
begin
  if not exists (select from rowgate_private.sql_login_states()) then
    return query select 0, 0, 0;
    return;
  end if;
  with states as (
    select * from rowgate_private.sql_login_states()
  ), sessions as (
    select s.pid, s.state, s.query_start, s.state_change, st.live,
      row_number() over (partition by st.organization_id order by s.backend_start, s.pid) as place
    from pg_stat_activity s join states st on st.login = s.usename
    where s.backend_type = 'client backend' and s.pid <> pg_backend_pid()
  ), ended as (
    select pid from sessions
    where not live or place > 5
      or (state like 'idle in transaction%' and state_change < clock_timestamp() - interval '60 seconds')
      or (state = 'active' and query_start < clock_timestamp() - interval '65 seconds')
  )
  select (select count(*) filter (where pg_cancel_backend(s.pid))::integer from sessions s
        where s.state = 'active' and s.pid not in (select pid from ended) and s.query_start < clock_timestamp() - interval '60 seconds'),
      (select count(*) filter (where pg_terminate_backend(e.pid))::integer from ended e)
    into v_cancelled, v_terminated;

  -- the rest writes, so only the primary does it, and one server at a time
  if not pg_is_in_recovery() and pg_try_advisory_xact_lock(hashtextextended('rowgate sql logins sweep', 0)) then
    update rowgate.sql_credentials c set last_used_at = date_trunc('minute', now())
      where c.login in (select s.usename from pg_stat_activity s where s.backend_type = 'client backend')
        and c.login_dropped_at is null and c.deleted_at is null
        and (c.last_used_at is null or c.last_used_at < date_trunc('minute', now()));
    for v_login in
      select st.login from rowgate_private.sql_login_states() st
      where not st.live and not exists (select from pg_stat_activity s where s.usename = st.login)
    loop
      begin
        execute format('drop role if exists %I', v_login);
        update rowgate.sql_credentials c set login_dropped_at = now() where c.login = v_login;
        v_dropped := v_dropped + 1;
      exception when dependent_objects_still_exist or object_in_use then
        -- something a DBA granted it elsewhere holds it: the next sweep tries again
        null;
      end;
    end loop;
  end if;
  return query select v_cancelled, v_terminated, v_dropped;
end;
$function$;
comment on function rowgate_private.end_sql_login_sessions() is 'Holds organizations'' SQL logins (SPEC §24) to their credentials and bounds: ends what must end, and on the primary drops the roles of logins no longer live.';
grant execute on function rowgate_private.end_sql_login_sessions() to rowgate_authenticator;

-- Function rowgate_private.end_webhook_attempt(uuid,bigint,boolean,integer,integer,text,interval)
CREATE OR REPLACE FUNCTION rowgate_private.end_webhook_attempt(p_organization_id uuid, p_delivery_id bigint, p_succeeded boolean, p_response_code integer, p_duration_ms integer, p_error text, p_retry_delay interval)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_delivery rowgate_private.webhook_deliveries;
  v_endpoint record;
begin
  select e.id, e.enabled, e.deleted_at into v_endpoint
    from rowgate.webhook_endpoints e
    where e.organization_id = p_organization_id
      and e.id = (select d.endpoint_id from rowgate_private.webhook_deliveries d where d.organization_id = p_organization_id and d.id = p_delivery_id)
    for no key update;
  update rowgate_private.webhook_deliveries d set
      status = case
        when p_succeeded then 'succeeded'
        when d.attempts >= 10 or v_endpoint.deleted_at is not null then 'failed'
        when not v_endpoint.enabled then 'paused'
        else 'pending' end,
      next_attempt_at = now() + p_retry_delay
    where d.organization_id = p_organization_id and d.id = p_delivery_id
    returning d.* into v_delivery;
  if v_delivery.id is null then
    return;
  end if;
  insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error)
    values (p_organization_id, v_delivery.endpoint_id, v_delivery.event_id, v_delivery.id, v_delivery.attempts,
      case when p_succeeded then 'succeeded' else 'failed' end, p_response_code, p_duration_ms, left(p_error, 500));
  if v_endpoint.deleted_at is not null then
    return;
  end if;
  if p_succeeded then
    update rowgate.webhook_endpoints e set consecutive_failures = 0
      where e.organization_id = p_organization_id and e.id = v_delivery.endpoint_id and e.consecutive_failures > 0;
  elsif v_delivery.status = 'failed' then
    update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + 1,
        enabled = e.enabled and e.consecutive_failures + 1 < 10
      where e.organization_id = p_organization_id and e.id = v_delivery.endpoint_id;
  end if;
end;
$function$;
comment on function rowgate_private.end_webhook_attempt(uuid,bigint,boolean,integer,integer,text,interval) is 'Records an attempt''s outcome on its delivery, its endpoint and the attempts list.';

-- Function rowgate_private.enforce_analyst_limits()
CREATE OR REPLACE FUNCTION rowgate_private.enforce_analyst_limits()
 RETURNS TABLE(cancelled integer, terminated integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return query
    with sessions as (
      select s.pid, s.state, s.datname, s.query_start, s.state_change, s.xact_start,
        make_interval(secs => a.statement_timeout_ms / 1000.0) as statement_limit,
        make_interval(secs => a.idle_in_transaction_timeout_ms / 1000.0) as idle_limit,
        exists (select 1 from pg_locks l where l.pid = s.pid and l.locktype = 'advisory') as holds_advisory
      from pg_stat_activity s
        join rowgate_private.analysts a on a.login = s.usename
      where s.backend_type = 'client backend' and s.pid <> pg_backend_pid()
    ),
    ended as (
      select pid from sessions
      where holds_advisory
        or datname in ('postgres', 'template0', 'template1')
        or (state like 'idle in transaction%' and state_change < clock_timestamp() - idle_limit)
        or (state = 'active' and query_start < clock_timestamp() - statement_limit - interval '5 seconds')
        or xact_start < clock_timestamp() - statement_limit - idle_limit
    )
    select
      (select count(*) filter (where pg_cancel_backend(s.pid))::integer from sessions s
        where s.state = 'active' and s.pid not in (select pid from ended)
          and s.query_start < clock_timestamp() - s.statement_limit),
      (select count(*) filter (where pg_terminate_backend(e.pid))::integer from ended e);
end;
$function$;
grant execute on function rowgate_private.enforce_analyst_limits() to rowgate_authenticator;

-- Function rowgate_private.erase_event_clients(integer)
CREATE OR REPLACE FUNCTION rowgate_private.erase_event_clients(p_batch integer DEFAULT 5000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_erased integer;
begin
  delete from rowgate.event_clients c using (
    select organization_id, event_id from rowgate.event_clients
    where created_at <= now() - interval '90 days' limit greatest(p_batch, 1)) old
  where c.organization_id = old.organization_id and c.event_id = old.event_id;
  get diagnostics v_erased = row_count;
  return v_erased;
end;
$function$;
comment on function rowgate_private.erase_event_clients(integer) is 'Erases up to p_batch client addresses and user agents of events older than 90 days; returns how many.';
grant execute on function rowgate_private.erase_event_clients(integer) to rowgate_authenticator;

-- Function rowgate_private.exchange_rate_limit_counts(uuid,text[],text[],bigint[],integer[],integer[])
CREATE OR REPLACE FUNCTION rowgate_private.exchange_rate_limit_counts(p_server uuid, p_policies text[], p_keys text[], p_windows bigint[], p_points integer[], p_expires_in integer[])
 RETURNS TABLE(policy text, key text, window_number bigint, points integer, servers integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_servers integer;
begin
  insert into rowgate_private.rate_limit_servers (id, seen_at) values (p_server, now())
    on conflict (id) do update set seen_at = excluded.seen_at;
  select count(*)::integer into v_servers from rowgate_private.rate_limit_servers s
    where s.seen_at > now() - interval '10 seconds';
  insert into rowgate_private.rate_limit_counts as c (policy, key, window_number, points, slice)
    select d.policy, d.key, d.window_number, d.points, rowgate_private.rate_limit_slice(now())
    from unnest(p_policies, p_keys, p_windows, p_points) as d(policy, key, window_number, points)
    where d.points <> 0
    order by d.policy, d.key, d.window_number
    on conflict (policy, key, window_number, slice) do update set points = c.points + excluded.points;
  return query
    select d.policy, d.key, d.window_number,
      coalesce((select sum(c.points)::integer from rowgate_private.rate_limit_counts c
        where c.policy = d.policy and c.key = d.key and c.window_number = d.window_number), 0),
      v_servers
    from unnest(p_policies, p_keys, p_windows) with ordinality as d(policy, key, window_number, n)
    order by d.n;
  return query select null::text, null::text, null::bigint, null::integer, v_servers;
end;
$function$;
comment on function rowgate_private.exchange_rate_limit_counts(uuid,text[],text[],bigint[],integer[],integer[]) is 'Adds a server''s rate-limit points and answers the deployment''s sums for the same keys, with the number of servers alive.';
grant execute on function rowgate_private.exchange_rate_limit_counts(uuid,text[],text[],bigint[],integer[],integer[]) to rowgate_authenticator;

-- Function rowgate_private.expand_scopes(text[])
CREATE OR REPLACE FUNCTION rowgate_private.expand_scopes(p_scopes text[])
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(array_agg(distinct s order by s), '{}') from (
    select unnest(p_scopes) as s
    union all
    select implies from rowgate_private.scopes where name = any (p_scopes) and implies is not null
  ) t;
$function$;

-- Function rowgate_private.expire_invitations(integer)
CREATE OR REPLACE FUNCTION rowgate_private.expire_invitations(p_batch integer DEFAULT 1000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_expired integer;
begin
  with due as (
    select i.id from rowgate.invitations i where i.status = 'pending' and i.expires_at <= now()
    order by i.expires_at limit greatest(p_batch, 1) for update skip locked
  )
  update rowgate.invitations i set status = 'expired' from due where i.id = due.id;
  get diagnostics v_expired = row_count;
  return v_expired;
end;
$function$;
comment on function rowgate_private.expire_invitations(integer) is 'Marks up to p_batch pending invitations past expires_at expired; returns how many.';
grant execute on function rowgate_private.expire_invitations(integer) to rowgate_authenticator;

-- Function rowgate_private.idempotency_key_lifetime()
CREATE OR REPLACE FUNCTION rowgate_private.idempotency_key_lifetime()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select interval '24 hours';
$function$;

-- Function rowgate_private.invitation_lifetime()
CREATE OR REPLACE FUNCTION rowgate_private.invitation_lifetime()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$ select interval '7 days'; $function$;
comment on function rowgate_private.invitation_lifetime() is 'How long an invitation can be accepted.';

-- Function rowgate_private.invitee_invitation(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.invitee_invitation(p_id uuid)
 RETURNS rowgate.invitations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_invitation rowgate.invitations;
begin
  perform rowgate_hidden.assert_scope('user:write');
  if rowgate_hidden.current_credential_kind() is distinct from 'web_session' then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  select i.* into v_invitation from rowgate.invitations i
    where i.id = p_id and rowgate_hidden.is_invitee_invitation(i)
    for update of i;
  if not found then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  return v_invitation;
end;
$function$;

-- Function rowgate_private.is_live_user(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.is_live_user(p_user_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return exists (select from rowgate.users u where u.id = p_user_id and u.deleted_at is null);
end;
$function$;
comment on function rowgate_private.is_live_user(uuid) is 'Whether the user p_user_id exists and is not deleted.';
grant execute on function rowgate_private.is_live_user(uuid) to rowgate_sql_admin;

-- Function rowgate_private.issue_oauth2_tokens(uuid,text[],bytea,bytea)
CREATE OR REPLACE FUNCTION rowgate_private.issue_oauth2_tokens(p_family_id uuid, p_scopes text[], p_access_token_hash bytea, p_refresh_token_hash bytea)
 RETURNS timestamp with time zone
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;

-- Function rowgate_private.issue_personal_access_token(uuid,text,text[],timestamp with time zone,bytea,cidr[])
CREATE OR REPLACE FUNCTION rowgate_private.issue_personal_access_token(p_user_id uuid, p_comment text, p_scopes text[], p_expires_at timestamp with time zone, p_token_hash bytea, p_allowed_ips cidr[] DEFAULT NULL::cidr[])
 RETURNS rowgate.personal_access_tokens
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_token rowgate.personal_access_tokens;
begin
  perform rowgate_private.assert_known_scopes(p_scopes);
  insert into rowgate.personal_access_tokens (user_id, comment, scopes, expires_at, allowed_ips)
    values (p_user_id, p_comment, (select array_agg(distinct s order by s) from unnest(p_scopes) s), p_expires_at, p_allowed_ips)
    returning * into v_token;
  insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id)
    values (p_token_hash, v_token.id);
  return v_token;
end;
$function$;

-- Function rowgate_private.issue_user_session(uuid,bytea,interval,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.issue_user_session(p_user_id uuid, p_token_hash bytea, p_lifetime interval, p_impersonator_id uuid DEFAULT NULL::uuid)
 RETURNS rowgate_private.sessions
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into rowgate_private.sessions (token_hash, kind, user_id, is_impersonation, impersonator_id, expires_at)
    values (p_token_hash, 'user', p_user_id, p_impersonator_id is not null, p_impersonator_id, now() + p_lifetime)
    returning *;
$function$;

-- Function rowgate_private.issue_web_session(uuid,bytea)
CREATE OR REPLACE FUNCTION rowgate_private.issue_web_session(p_user_id uuid, p_token_hash bytea)
 RETURNS rowgate_private.sessions
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select * from rowgate_private.issue_user_session(p_user_id, p_token_hash, rowgate_private.web_session_lifetime());
$function$;
comment on function rowgate_private.issue_web_session(uuid,bytea) is 'A new web session for a user, lasting web_session_lifetime().';

-- Function rowgate_private.json_in_utc(anyelement)
CREATE OR REPLACE FUNCTION rowgate_private.json_in_utc(p_row anyelement)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET "TimeZone" TO 'UTC'
AS $function$
  select to_jsonb(p_row);
$function$;
comment on function rowgate_private.json_in_utc(anyelement) is 'A row as JSON with its timestamps in UTC, whatever the session''s time zone.';

-- Function rowgate_private.leave_rate_limit_counts(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.leave_rate_limit_counts(p_server uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  delete from rowgate_private.rate_limit_servers s where s.id = p_server;
end;
$function$;
comment on function rowgate_private.leave_rate_limit_counts(uuid) is 'Removes a stopping server from those sharing rate-limit allowances.';
grant execute on function rowgate_private.leave_rate_limit_counts(uuid) to rowgate_authenticator;

-- Function rowgate_private.live_oauth2_grants(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.live_oauth2_grants(p_user_id uuid, p_organization_id uuid)
 RETURNS TABLE(id uuid, client_id text, user_id uuid, organization_id uuid, scopes text[], created_at timestamp with time zone, last_used_at timestamp with time zone, is_family boolean)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select f.id, f.client_id, f.user_id, f.organization_id, f.scopes, f.created_at,
    (select max(t.last_used_at) from rowgate_private.oauth2_access_tokens t where t.family_id = f.id), true
  from rowgate_private.oauth2_token_families f
  where f.revoked_at is null
    and (p_user_id is null or f.user_id = p_user_id)
    and (p_organization_id is null or f.organization_id = p_organization_id)
    and (exists (select 1 from rowgate_private.oauth2_access_tokens t
          where t.family_id = f.id and t.revoked_at is null and t.expires_at > now())
      or exists (select 1 from rowgate_private.oauth2_refresh_tokens r
          where r.family_id = f.id and r.used_at is null and r.expires_at > now()))
  union all
  select t.id, t.client_id, t.user_id, t.organization_id, t.scopes, t.created_at, t.last_used_at, false
  from rowgate_private.oauth2_access_tokens t
  where t.family_id is null and t.revoked_at is null and t.expires_at > now()
    and (p_user_id is null or t.user_id = p_user_id)
    and (p_organization_id is null or t.organization_id = p_organization_id);
$function$;

-- Function rowgate_private.lock_organization_admins(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.lock_organization_admins(p_organization_id uuid)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('rowgate admins ' || p_organization_id::text, 0));
$function$;
comment on function rowgate_private.lock_organization_admins(uuid) is 'The organization''s admin lock: held by whoever decides that another admin remains.';

-- Function rowgate_private.lock_user_memberships(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.lock_user_memberships(p_user_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_organization_id uuid;
begin
  for v_organization_id in
    select m.organization_id from rowgate.memberships m
      where m.user_id = p_user_id and m.deleted_at is null order by m.organization_id
  loop
    perform 1 from rowgate.memberships m
      where m.user_id = p_user_id and m.organization_id = v_organization_id and m.deleted_at is null
      for update;
    perform rowgate_private.lock_organization_admins(v_organization_id);
  end loop;
end;
$function$;
comment on function rowgate_private.lock_user_memberships(uuid) is 'Locks a user''s memberships and their organizations'' admin locks in the one order (SPEC §21).';

-- Function rowgate_private.login_code_lifetime()
CREATE OR REPLACE FUNCTION rowgate_private.login_code_lifetime()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select interval '15 minutes';
$function$;
comment on function rowgate_private.login_code_lifetime() is 'How long a sign-in code stays valid, and the window in which an address may ask for at most 5 codes.';

-- Function rowgate_private.login_code_wrong_codes_allowed()
CREATE OR REPLACE FUNCTION rowgate_private.login_code_wrong_codes_allowed()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 5 $function$;
comment on function rowgate_private.login_code_wrong_codes_allowed() is 'Wrong codes an attempt allows before its code is dead.';

-- Function rowgate_private.mailbox_codes_per_hour()
CREATE OR REPLACE FUNCTION rowgate_private.mailbox_codes_per_hour()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$ select 10 $function$;
comment on function rowgate_private.mailbox_codes_per_hour() is 'Sign-in codes one address receives an hour from one origin (unknown, one device, one recent network).';

-- Function rowgate_private.member_credentials(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.member_credentials(p_organization_id uuid, p_user_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function rowgate_private.member_credentials(uuid,uuid) is 'The live organization credentials a user made in an organization (SPEC §21), as membership.deleted lists them.';

-- Function rowgate_private.next_webhook_delivery_at()
CREATE OR REPLACE FUNCTION rowgate_private.next_webhook_delivery_at()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select null::timestamptz;
$function$;
grant execute on function rowgate_private.next_webhook_delivery_at() to rowgate_authenticator;

-- Function rowgate_private.oauth2_grant_holds(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.oauth2_grant_holds(p_user_id uuid, p_organization_id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select exists (select 1 from rowgate.users u where u.id = p_user_id and u.deleted_at is null)
    and (p_organization_id is null or rowgate_private.user_manages_access_tokens(p_user_id, p_organization_id));
$function$;

-- Function rowgate_private.oldest_transaction()
CREATE OR REPLACE FUNCTION rowgate_private.oldest_transaction()
 RETURNS TABLE(age_seconds double precision, pid integer, database text, role text, application_name text, state text)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.age_seconds, o.pid, o.database, o.role, o.application_name, o.state from (
    select extract(epoch from clock_timestamp() - a.xact_start)::double precision as age_seconds, a.pid, a.datname::text as database,
      a.usename::text as role, a.application_name, a.state
    from pg_stat_activity a
    where (a.backend_xid is not null or a.backend_xmin is not null) and a.xact_start is not null and a.pid <> pg_backend_pid()
    union all
    select extract(epoch from clock_timestamp() - p.prepared)::double precision, null, p.database::text, p.owner::text,
      null, 'prepared: ' || p.gid
    from pg_prepared_xacts p
  ) o
  order by o.age_seconds desc
  limit 1;
$function$;
comment on function rowgate_private.oldest_transaction() is 'The oldest transaction of the server holding an xid or a snapshot (any database; prepared ones too): its age in seconds, its backend and database, its role and application; no row when none.';
grant execute on function rowgate_private.oldest_transaction() to rowgate_authenticator;

-- Function rowgate_private.organization_role_for_change(uuid,text,text)
CREATE OR REPLACE FUNCTION rowgate_private.organization_role_for_change(p_organization_id uuid, p_name text, p_scope text)
 RETURNS rowgate.organization_roles
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text;
  v_role rowgate.organization_roles;
begin
  perform rowgate_hidden.assert_scope(p_scope);
  if not (p_organization_id = any (rowgate_hidden.current_organization_ids())) then
    raise exception 'Not found' using errcode = 'RG404';
  end if;
  if p_name is not null then
    select * into v_role from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_name and r.deleted_at is null
      for update;
    if not found and not exists (select 1 from rowgate.roles r where r.name = p_name) then
      raise exception 'Not found' using errcode = 'RG404';
    end if;
  end if;
  v_denial := rowgate_hidden.members_management_denial(p_organization_id);
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG403';
  end if;
  if p_name is not null and v_role.id is null then
    raise exception 'Built-in roles cannot be changed or deleted' using errcode = 'RG403';
  end if;
  if p_name is not null and not v_role.permissions <@ rowgate_hidden.current_permissions(p_organization_id) then
    raise exception 'You can''t change a role that has permissions you don''t have' using errcode = 'RG403';
  end if;
  return v_role;
end;
$function$;
comment on function rowgate_private.organization_role_for_change(uuid,text,text) is 'The organization''s role a User may change (locked), after the checks of SPEC §5 and §21; with no name, only the checks.';

-- Function rowgate_private.partition_ranges(regclass)
CREATE OR REPLACE FUNCTION rowgate_private.partition_ranges(p_parent regclass)
 RETURNS TABLE(partition regclass, lower_id uuid, upper_id uuid)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.oid::regclass,
    case when b.bound ~ '^FOR VALUES FROM \(MINVALUE\)' then '00000000-0000-0000-0000-000000000000'::uuid
      else substring(b.bound from 'FROM \(''([0-9a-f-]+)''\)')::uuid end,
    substring(b.bound from ' TO \(''([0-9a-f-]+)''\)')::uuid
  from pg_inherits i
    join pg_class c on c.oid = i.inhrelid
    cross join lateral (select pg_get_expr(c.relpartbound, c.oid) as bound) b
  where i.inhparent = p_parent and b.bound <> 'DEFAULT'
$function$;
comment on function rowgate_private.partition_ranges(regclass) is 'The range partitions of p_parent (not its default one) and their bounds.';

-- Function rowgate_private.place_events(integer)
CREATE OR REPLACE FUNCTION rowgate_private.place_events(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '1s'
AS $function$
declare
  v_organizations uuid[];
  v_ids uuid[];
begin
  if not pg_try_advisory_xact_lock(hashtextextended('rowgate feed sequencer', 0)) then
    return 0;
  end if;
  with batch as (
    select e.organization_id, e.id from rowgate.events e
    where e.feed_position is null
    order by e.id
    limit greatest(p_limit, 1)
  ), numbered as (
    select b.organization_id, b.id, nextval('rowgate_private.feed_positions') as feed_position
    from (select * from batch order by id) b
  ), placed as (
    update rowgate.events e set feed_position = n.feed_position
      from numbered n
      where e.organization_id = n.organization_id and e.id = n.id
      returning e.organization_id, e.id
  )
  select array_agg(p.organization_id), array_agg(p.id) into v_organizations, v_ids from placed p;
  with taken as (
    update rowgate_private.webhook_deliveries d set feed_position = e.feed_position
      from rowgate.events e
      where d.event_id = any (v_ids) and d.feed_position is null and d.status = 'pending'
        and e.organization_id = d.organization_id and e.id = d.event_id
      returning d.organization_id, d.endpoint_id
  ), earlier as (
    -- a delivery whose event was placed before (or pruned since: the claim drops it)
    update rowgate_private.webhook_deliveries d set feed_position = coalesce(e.feed_position, 0)
      from rowgate_private.webhook_deliveries w
        left join rowgate.events e on e.organization_id = w.organization_id and e.id = w.event_id
      where w.id in (select q.id from rowgate_private.webhook_deliveries q
          where q.status = 'pending' and q.feed_position is null order by q.id limit 1000)
        and (e.id is null or e.feed_position is not null) and not w.event_id = any (coalesce(v_ids, '{}'))
        and d.organization_id = w.organization_id and d.id = w.id
      returning d.organization_id, d.endpoint_id
  )
  insert into rowgate_private.webhook_lanes as l (organization_id, endpoint_id, due_at)
    select distinct t.organization_id, t.endpoint_id, now() from (select * from taken union all select * from earlier) t order by 1, 2
    on conflict (organization_id, endpoint_id) do update set due_at = now()
      where l.delivery_id is null and (l.due_at is null or (l.failures = 0 and l.due_at > now()));
  return coalesce(cardinality(v_ids), 0);
end;
$function$;
comment on function rowgate_private.place_events(integer) is 'The feed''s sequencer: gives up to p_limit committed events their feed positions, takes their deliveries (and those queued for events placed earlier) into their endpoints'' lanes; returns the events placed (0 while another run holds the lock).';
grant execute on function rowgate_private.place_events(integer) to rowgate_authenticator;

-- Function rowgate_private.prune_events(interval,integer)
CREATE OR REPLACE FUNCTION rowgate_private.prune_events(p_older_than interval, p_batch integer DEFAULT 5000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '1s'
AS $function$
declare
  v_before timestamptz;
  v_before_id uuid;
  v_pruned integer;
  v_denials integer;
  v_deliveries integer;
  v_dropped bigint := 0;
  v_oldest_pending timestamptz;
  v_days text;
  v_day record;
begin
  if p_older_than < interval '1 day' then
    raise exception 'events are kept at least a day' using errcode = '22023';
  end if;
  v_before := date_trunc('day', now() - p_older_than, 'UTC');
  v_before_id := rowgate_private.uuidv7_bound(v_before);
  insert into rowgate_private.event_retention (singleton, pruned_before) values (true, v_before)
    on conflict (singleton) do update set pruned_before = greatest(excluded.pruned_before, rowgate_private.event_retention.pruned_before);
  -- whole days, by one server at a time (another one pruning now takes them)
  if pg_try_advisory_xact_lock(hashtext('rowgate_private.event_partitions')) then
    -- the days an earlier call detached: no parent is locked to drop them
    select string_agg(c.oid::regclass::text, ', ') into v_days from pg_class c
      where c.relnamespace = 'rowgate_partitions'::regnamespace and c.relkind = 'r' and not c.relispartition;
    if v_days is not null then
      execute 'drop table ' || v_days;
    end if;
    select min(d.created_at) into v_oldest_pending from rowgate_private.webhook_deliveries d where d.status = 'pending';
    begin
      for v_day in
        with pending as materialized (
          select d.event_id from rowgate_private.webhook_deliveries d where d.status = 'pending'
        )
        select r.parent, r.partition, r.parent = 'rowgate.events'::regclass as of_events
        from (select 'rowgate.events'::regclass as parent, * from rowgate_private.partition_ranges('rowgate.events')
              union all
              select 'rowgate.event_clients'::regclass, * from rowgate_private.partition_ranges('rowgate.event_clients')) r
        where r.upper_id <= v_before_id
          and not exists (select 1 from pending where pending.event_id >= r.lower_id and pending.event_id < r.upper_id)
        union all
        select 'rowgate.webhook_attempts'::regclass, r.partition, false from rowgate_private.partition_ranges('rowgate.webhook_attempts') r
        where r.upper_id <= v_before_id
          and (v_oldest_pending is null or rowgate_private.uuidv7_time(r.upper_id) <= v_oldest_pending)
      loop
        if v_day.of_events then
          v_dropped := v_dropped + (select greatest(c.reltuples, 0)::bigint from pg_class c where c.oid = v_day.partition);
        end if;
        execute format('alter table %s detach partition %s', v_day.parent, v_day.partition);
      end loop;
    exception when lock_not_available then
      v_dropped := 0;
    end;
  end if;
  with old as (
    select old_events.organization_id, old_events.id
    from rowgate.organizations o -- every event's organization is one (organizations are never removed, only marked deleted)
      cross join lateral (
        select e.organization_id, e.id from rowgate.events e
        where e.organization_id = o.id and e.created_at < v_before
          and not exists (
            select 1 from rowgate_private.webhook_deliveries d
            where d.organization_id = e.organization_id and d.event_id = e.id and d.status = 'pending')
        order by e.created_at
        limit greatest(p_batch, 1)
        for update of e skip locked
      ) old_events
    limit greatest(p_batch, 1)
  ), attempts as (
    delete from rowgate.webhook_attempts a using old
    where a.organization_id = old.organization_id and a.event_id = old.id
  ), deliveries as (
    delete from rowgate_private.webhook_deliveries d using old
    where d.organization_id = old.organization_id and d.event_id = old.id
  ), clients as (
    delete from rowgate.event_clients c using old
    where c.organization_id = old.organization_id and c.event_id = old.id
  ), pruned as (
    delete from rowgate.events e using old
    where e.organization_id = old.organization_id and e.id = old.id
    returning 1
  )
  select count(*)::integer into v_pruned from pruned;
  -- deliveries whose event went with its partition
  with orphaned as (
    select d.organization_id, d.id from rowgate_private.webhook_deliveries d
    where d.event_id < v_before_id and d.status <> 'pending'
      and not exists (select 1 from rowgate.events e where e.organization_id = d.organization_id and e.id = d.event_id)
    limit greatest(p_batch, 1)
    for update of d skip locked
  ), swept as (
    delete from rowgate_private.webhook_deliveries d using orphaned
    where d.organization_id = orphaned.organization_id and d.id = orphaned.id
    returning 1
  )
  select count(*)::integer into v_deliveries from swept;
  with old as (
    select d.organization_id, d.id from rowgate.denials d
    where d.created_at < now() - p_older_than
    order by d.created_at
    limit greatest(p_batch, 1)
    for update skip locked
  ), pruned as (
    delete from rowgate.denials d using old
    where d.organization_id = old.organization_id and d.id = old.id
    returning 1
  )
  select count(*)::integer into v_denials from pruned;
  delete from rowgate_private.denial_counts c where c.hour < date_trunc('hour', now()) - interval '1 hour';
  return least(v_pruned + v_denials + v_deliveries + v_dropped, 2147483647)::integer;
end;
$function$;
comment on function rowgate_private.prune_events(interval,integer) is 'Prunes what is older than the UTC day of now() - p_older_than (at least a day), never an event with a pending delivery: detaches whole days of events, their client addresses and webhook attempts (dropped by the next call), and deletes up to p_batch older events left in other partitions (with their deliveries and attempts), p_batch finished deliveries of dropped events and p_batch denials (SPEC §20); returns how many rows went, a detached partition''s by its statistics.';
grant execute on function rowgate_private.prune_events(interval,integer) to rowgate_authenticator;

-- Function rowgate_private.prune_rate_limit_counts()
CREATE OR REPLACE FUNCTION rowgate_private.prune_rate_limit_counts()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '50ms'
AS $function$
declare
  v_slice smallint := (rowgate_private.rate_limit_slice(now()) + 2) % 4;
  v_partition text := format('rowgate_private.rate_limit_counts_%s', v_slice);
  v_full boolean;
begin
  delete from rowgate_private.rate_limit_servers s where s.seen_at < now() - interval '1 hour';
  execute format('select exists (select from %s)', v_partition) into v_full;
  if not v_full then
    return 0;
  end if;
  execute format('truncate %s', v_partition);
  return 1;
exception when lock_not_available then
  return 0;
end;
$function$;
comment on function rowgate_private.prune_rate_limit_counts() is 'Empties the slice of the rate limits'' counts whose windows are all over (unless an exchange holds it: then a later call does), and forgets servers gone for an hour; returns the slices emptied.';
grant execute on function rowgate_private.prune_rate_limit_counts() to rowgate_authenticator;

-- Function rowgate_private.prune_request_log()
CREATE OR REPLACE FUNCTION rowgate_private.prune_request_log()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '1s'
AS $function$
declare
  v_before uuid := rowgate_private.uuidv7_bound(date_trunc('day', now() - interval '30 days', 'UTC'));
  v_day record;
  v_dropped integer := 0;
begin
  if not pg_try_advisory_xact_lock(hashtext('rowgate_private.request_log_partitions')) then
    return 0;
  end if;
  for v_day in select r.partition from rowgate_private.partition_ranges('rowgate.request_log') r where r.upper_id <= v_before loop
    execute format('drop table %s', v_day.partition);
    v_dropped := v_dropped + 1;
  end loop;
  delete from rowgate.request_log where id < v_before;
  delete from rowgate_private.request_log_events where created_at < now() - interval '31 days';
  return v_dropped;
end;
$function$;
comment on function rowgate_private.prune_request_log() is 'Drops the request log''s days older than 30 days; returns how many.';
grant execute on function rowgate_private.prune_request_log() to rowgate_authenticator;

-- Function rowgate_private.rate_limit_slice(timestamp with time zone)
CREATE OR REPLACE FUNCTION rowgate_private.rate_limit_slice(p_at timestamp with time zone)
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (floor(extract(epoch from p_at) / 15)::bigint % 4)::smallint;
$function$;
comment on function rowgate_private.rate_limit_slice(timestamp with time zone) is 'The slice of the rate limits'' counts that is written at a time: 15-second slices of the clock, four taken in turn.';

-- Function rowgate_private.read_scopes()
CREATE OR REPLACE FUNCTION rowgate_private.read_scopes()
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select array_agg(name order by name) from rowgate_private.scopes
  where name like '%read' and name not like 'customer_portal_%';
$function$;
grant execute on function rowgate_private.read_scopes() to rowgate_sql_admin;

-- Function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text)
CREATE OR REPLACE FUNCTION rowgate_private.record_denial(p_subject_kind text, p_subject_id uuid, p_credential_kind text, p_credential_id uuid, p_scopes text, p_request_id text, p_operation text, p_params jsonb, p_organization_id uuid, p_named_organization_id uuid, p_step text, p_error text, p_reason text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_organization_id uuid := p_organization_id;
  v_reached boolean;
  v_credential_id uuid := coalesce(p_credential_id, p_subject_id);
  v_recorded integer;
  v_overflow_id uuid;
begin
  if p_subject_kind is null or p_subject_id is null or p_credential_kind is null then
    return false;
  end if;
  -- a scope refusal answered before anything was resolved (SPEC §5): its resource is resolved here, only to
  -- record it, as if the credential held the operation's scopes; the reach below is still the subject's
  perform set_config('rowgate.subject_kind', p_subject_kind, true), set_config('rowgate.subject_id', p_subject_id::text, true),
    set_config('rowgate.credential_kind', p_credential_kind, true),
    set_config('rowgate.scopes', concat_ws(' ', nullif(p_scopes, ''), case when p_step = 'scope' then
      (select nullif(array_to_string(o.scopes, ' '), '') from rowgate_hidden.operations o where o.operation = p_operation) end), true);
  if v_organization_id is null and p_operation is not null then
    begin
      v_organization_id := (rowgate_hidden.check_operation(p_operation, coalesce(p_params, '{}'), p_named_organization_id)
        ->> 'organization_id')::uuid;
    exception when others then
      v_organization_id := null;
    end;
  end if;
  v_reached := v_organization_id is not null and v_organization_id = any (rowgate_hidden.current_organization_ids());
  perform rowgate_hidden.restore_subject(v_saved);
  if not v_reached then
    return false;
  end if;

  insert into rowgate_private.denial_counts as c (organization_id, credential_id, hour, recorded)
    values (v_organization_id, v_credential_id, date_trunc('hour', now()), 1)
    on conflict (organization_id, credential_id, hour) do update set recorded = c.recorded + 1
    returning c.recorded, c.overflow_id into v_recorded, v_overflow_id;
  if v_recorded <= 1000 then
    insert into rowgate.denials (organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason)
      values (v_organization_id, nullif(p_request_id, ''), p_operation, p_credential_kind, p_credential_id,
        case when p_subject_kind = 'user' then p_subject_id end, p_step, p_error, p_reason);
  elsif v_overflow_id is null then
    insert into rowgate.denials (organization_id, credential_kind, credential_id, user_id)
      values (v_organization_id, p_credential_kind, p_credential_id, case when p_subject_kind = 'user' then p_subject_id end)
      returning id into v_overflow_id;
    update rowgate_private.denial_counts c set overflow_id = v_overflow_id
      where c.organization_id = v_organization_id and c.credential_id = v_credential_id and c.hour = date_trunc('hour', now());
  else
    update rowgate.denials d set count = d.count + 1 where d.organization_id = v_organization_id and d.id = v_overflow_id;
  end if;
  return true;
end;
$function$;
comment on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) is 'Keeps a 403 answer (SPEC §20) in the organization it concerns (for a scope refusal, the one its resource or organization_id resolves to), if the subject reaches it, within the cap of 1,000 rows per credential, organization and hour; the API calls it after the request rolled back.';
grant execute on function rowgate_private.record_denial(text,uuid,text,uuid,text,text,text,jsonb,uuid,uuid,text,text,text) to rowgate_authenticator;

-- Function rowgate_private.record_mail_attempt(uuid,uuid,boolean,text,interval,integer)
CREATE OR REPLACE FUNCTION rowgate_private.record_mail_attempt(p_id uuid, p_lease uuid, p_sent boolean, p_error text, p_retry_delay interval, p_attempts_allowed integer)
 RETURNS boolean
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with recorded as (
    update rowgate_private.mail_outbox m
    set sent_at = case when p_sent then now() end,
        failed_at = case when not p_sent and m.attempts >= p_attempts_allowed then now() end,
        -- sent or given up: the message is erased, only its envelope stays (a day)
        sealed_body = case when p_sent or m.attempts >= p_attempts_allowed then null else m.sealed_body end,
        due_at = case when p_sent then m.due_at else now() + p_retry_delay end,
        last_error = case when p_sent then null else left(p_error, 500) end,
        lease = null,
        leased_until = null
    where m.id = p_id and m.lease = p_lease
    returning 1
  )
  select exists (select from recorded);
$function$;
comment on function rowgate_private.record_mail_attempt(uuid,uuid,boolean,text,interval,integer) is 'Records a leased attempt''s outcome (false: the lease was lost, nothing recorded): sent, due again after p_retry_delay, or given up after p_attempts_allowed attempts.';
grant execute on function rowgate_private.record_mail_attempt(uuid,uuid,boolean,text,interval,integer) to rowgate_authenticator;

-- Function rowgate_private.record_oauth2_token_use(bytea)
CREATE OR REPLACE FUNCTION rowgate_private.record_oauth2_token_use(p_token_hash bytea)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if pg_is_in_recovery() then
    return;
  end if;
  update rowgate_private.oauth2_access_tokens set last_used_at = now()
    where id = (select t.id from rowgate_private.oauth2_access_tokens t
      where t.token_hash = p_token_hash and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
      for no key update skip locked);
end;
$function$;

-- Function rowgate_private.record_refund(rowgate.orders,bigint,text,text,jsonb)
CREATE OR REPLACE FUNCTION rowgate_private.record_refund(p_order rowgate.orders, p_amount bigint, p_reason text, p_comment text, p_metadata jsonb)
 RETURNS rowgate.refunds
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_refund rowgate.refunds;
begin
  insert into rowgate.refunds (organization_id, order_id, amount, currency, reason, comment, metadata)
    values (p_order.organization_id, p_order.id, p_amount, p_order.currency, p_reason, p_comment, coalesce(p_metadata, '{}'))
    returning * into v_refund;
  insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
    values (p_order.organization_id, p_order.id, 'refund', -p_amount, p_order.currency);
  return v_refund;
end;
$function$;
comment on function rowgate_private.record_refund(rowgate.orders,bigint,text,text,jsonb) is 'Writes a refund and its transaction; the caller holds the order''s row lock and checked the amount.';

-- Function rowgate_private.record_requests(jsonb)
CREATE OR REPLACE FUNCTION rowgate_private.record_requests(p_rows jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_written integer;
begin
  insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, error, duration_ms,
      credential_kind, credential_id, user_id, client_ip, user_agent, api_version, idempotent_replayed, created_at)
    select r.id, p.organization_id, left(r.request_id, 128), left(r.method, 10), left(r.route, 200), left(r.path, 2000),
      r.status, left(r.error, 100), greatest(r.duration_ms, 0), r.credential_kind, r.credential_id,
      case when r.subject_kind = 'user' then r.subject_id end,
      case when p.gone is not true then r.client_ip end,
      case when p.gone is not true then left(r.user_agent, 256) end,
      r.api_version, coalesce(r.idempotent_replayed, false), r.created_at
    from jsonb_to_recordset(p_rows) as r(id uuid, organization_id uuid, subject_kind text, subject_id uuid, request_id text,
        method text, route text, path text, status integer, error text, duration_ms integer, credential_kind text,
        credential_id uuid, client_ip inet, user_agent text, api_version text, idempotent_replayed boolean, created_at timestamptz)
      -- a refusal whose organization the server did not learn: the one its denial was recorded in; and
      -- whether its user is deleted (offset 0 keeps each one lookup a row, not one for each place it is
      -- used, and keeps the planner from turning the user's into a join over every user)
      cross join lateral (select coalesce(r.organization_id, (select d.organization_id from rowgate.denials d
          where d.request_log_id = r.id limit 1)) as organization_id,
        (select u.deleted_at is not null from rowgate.users u where r.subject_kind = 'user' and u.id = r.subject_id) as gone
        offset 0) p
    where p.organization_id is not null and r.id is not null
      and case r.subject_kind
        when 'organization' then p.organization_id = r.subject_id
        -- limit 1: a probe of the membership index a row, never a hashed read of all memberships
        when 'user' then coalesce((select true from rowgate.memberships m join rowgate.organizations o on o.id = m.organization_id
            where m.user_id = r.subject_id and m.organization_id = p.organization_id
              and m.deleted_at is null and o.deleted_at is null limit 1), false)
          and (r.credential_kind is distinct from 'personal_access_token' or coalesce((select true from rowgate.personal_access_tokens t
            where t.id = r.credential_id
              and (t.organization_ids is null or p.organization_id = any (t.organization_ids)) limit 1), false))
        else false end
    on conflict do nothing;
  get diagnostics v_written = row_count;
  return v_written;
end;
$function$;
grant execute on function rowgate_private.record_requests(jsonb) to rowgate_authenticator;

-- Function rowgate_private.record_session_use(bytea,inet,text)
CREATE OR REPLACE FUNCTION rowgate_private.record_session_use(p_token_hash bytea, p_client_address inet, p_user_agent text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- a standby records nothing: the next request served by the primary does
  if pg_is_in_recovery() then
    return;
  end if;
  update rowgate_private.sessions set last_used_at = now(), client_ip = p_client_address, user_agent = left(p_user_agent, 256)
    where id = (select s.id from rowgate_private.sessions s
      where s.token_hash = p_token_hash
        and (s.last_used_at is null or s.last_used_at < now() - interval '1 minute'
          or s.client_ip is distinct from p_client_address or s.user_agent is distinct from left(p_user_agent, 256))
      for no key update skip locked);
end;
$function$;

-- Function rowgate_private.record_token_use(text,bytea)
CREATE OR REPLACE FUNCTION rowgate_private.record_token_use(p_kind text, p_token_hash bytea)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if pg_is_in_recovery() then
    if exists (
        select 1 from rowgate_private.access_token_hashes h
          left join rowgate.personal_access_tokens p on p_kind = 'personal_access_token' and p.id = h.personal_access_token_id
          left join rowgate.organization_access_tokens o
            on p_kind = 'organization_access_token' and o.id = h.organization_access_token_id
        where h.token_hash = p_token_hash
          and coalesce(p.id, o.id) is not null
          and coalesce(p.last_used_at, o.last_used_at, '-infinity') < now() - interval '1 minute') then
      raise exception 'The use of this token is recorded on the primary' using errcode = 'read_only_sql_transaction';
    end if;
    return;
  end if;
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
$function$;

-- Function rowgate_private.record_webhook_attempt(bigint,boolean,integer,integer,text,interval)
CREATE OR REPLACE FUNCTION rowgate_private.record_webhook_attempt(p_delivery_id bigint, p_succeeded boolean, p_response_code integer, p_duration_ms integer, p_error text, p_retry_delay interval)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_delivery rowgate_private.webhook_deliveries;
  v_endpoint record;
begin
  select e.id, e.enabled, e.deleted_at into v_endpoint
    from rowgate.webhook_endpoints e
    where e.id = (select d.endpoint_id from rowgate_private.webhook_deliveries d where d.id = p_delivery_id)
    for no key update;
  update rowgate_private.webhook_deliveries d set attempts = d.attempts + 1,
      status = case
        when p_succeeded then 'succeeded'
        when d.attempts + 1 >= 10 or v_endpoint.deleted_at is not null then 'failed'
        when not v_endpoint.enabled then 'paused'
        else 'pending' end,
      next_attempt_at = now() + p_retry_delay
    where d.id = p_delivery_id
    returning d.* into v_delivery;
  insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error)
    select e.organization_id, e.id, v_delivery.event_id, v_delivery.id, v_delivery.attempts,
      case when p_succeeded then 'succeeded' else 'failed' end, p_response_code, p_duration_ms, left(p_error, 500)
    from rowgate.webhook_endpoints e where e.id = v_delivery.endpoint_id;
  if v_endpoint.deleted_at is not null then
    return;
  end if;
  if p_succeeded then
    update rowgate.webhook_endpoints e set consecutive_failures = 0 where e.id = v_delivery.endpoint_id and e.consecutive_failures > 0;
  elsif v_delivery.status = 'failed' then
    update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + 1,
        enabled = e.enabled and e.consecutive_failures + 1 < 10
      where e.id = v_delivery.endpoint_id;
  end if;
end;
$function$;
grant execute on function rowgate_private.record_webhook_attempt(bigint,boolean,integer,integer,text,interval) to rowgate_authenticator;

-- Function rowgate_private.record_webhook_attempt(uuid,uuid,bigint,uuid,boolean,integer,integer,text,interval,interval,interval)
CREATE OR REPLACE FUNCTION rowgate_private.record_webhook_attempt(p_organization_id uuid, p_endpoint_id uuid, p_delivery_id bigint, p_lease uuid, p_succeeded boolean, p_response_code integer, p_duration_ms integer, p_error text, p_retry_delay interval, p_breaker_delay interval, p_give_up_after interval)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_lane rowgate_private.webhook_lanes;
  v_endpoint record;
  v_given_up integer;
begin
  select l.* into v_lane from rowgate_private.webhook_lanes l
    where l.organization_id = p_organization_id and l.endpoint_id = p_endpoint_id
    for update;
  if v_lane.lease is distinct from p_lease or v_lane.delivery_id is distinct from p_delivery_id then
    return false;
  end if;
  perform rowgate_private.end_webhook_attempt(p_organization_id, p_delivery_id, p_succeeded, p_response_code, p_duration_ms, p_error,
    p_retry_delay);
  select e.enabled, e.deleted_at into v_endpoint from rowgate.webhook_endpoints e
    where e.organization_id = p_organization_id and e.id = p_endpoint_id;
  if not p_succeeded and v_lane.failures + 1 >= 10 and v_endpoint.enabled and v_endpoint.deleted_at is null then
    with given_up as (
      update rowgate_private.webhook_deliveries d set status = 'failed'
        where d.organization_id = p_organization_id and d.endpoint_id = p_endpoint_id and d.status = 'pending'
          and d.id <> p_delivery_id and d.created_at < now() - p_give_up_after
        returning 1
    )
    select count(*)::integer into v_given_up from given_up;
    if v_given_up > 0 then
      update rowgate.webhook_endpoints e set consecutive_failures = e.consecutive_failures + v_given_up,
          enabled = e.enabled and e.consecutive_failures + v_given_up < 10
        where e.organization_id = p_organization_id and e.id = p_endpoint_id;
      select e.enabled, e.deleted_at into v_endpoint from rowgate.webhook_endpoints e
        where e.organization_id = p_organization_id and e.id = p_endpoint_id;
    end if;
  end if;
  update rowgate_private.webhook_lanes l set delivery_id = null, lease = null,
      failures = case when p_succeeded then 0 else l.failures + 1 end,
      due_at = case
        when not v_endpoint.enabled or v_endpoint.deleted_at is not null then null
        when not p_succeeded and l.failures + 1 >= 3 then now() + p_breaker_delay
        when exists (select 1 from rowgate_private.webhook_deliveries d
            where d.endpoint_id = p_endpoint_id and d.organization_id = p_organization_id and d.status = 'pending' and d.attempts = 0)
          then now()
        else (select min(d.next_attempt_at) from rowgate_private.webhook_deliveries d
            where d.endpoint_id = p_endpoint_id and d.organization_id = p_organization_id and d.status = 'pending' and d.attempts > 0)
      end
    where l.organization_id = p_organization_id and l.endpoint_id = p_endpoint_id;
  return true;
end;
$function$;
comment on function rowgate_private.record_webhook_attempt(uuid,uuid,bigint,uuid,boolean,integer,integer,text,interval,interval,interval) is 'Records a leased attempt''s answer (false: the lease was lost, nothing recorded), moves the endpoint''s breaker and sets when its lane is next due.';
grant execute on function rowgate_private.record_webhook_attempt(uuid,uuid,bigint,uuid,boolean,integer,integer,text,interval,interval,interval) to rowgate_authenticator;

-- Function rowgate_private.revocable_analyst_login(text)
CREATE OR REPLACE FUNCTION rowgate_private.revocable_analyst_login(p_login text, OUT user_id uuid, OUT role_exists boolean, OUT can_login boolean)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_denial text := rowgate_private.analyst_login_denial(p_login);
  v_role record;
begin
  if v_denial is not null then
    raise exception '%', v_denial using errcode = 'RG422', detail = 'login';
  end if;
  select r.rolsuper, r.rolcanlogin,
      exists (select from pg_catalog.pg_auth_members m where m.member = r.oid and m.roleid = 'rowgate_analyst'::regrole) as analyst,
      exists (select from pg_catalog.pg_auth_members m where m.roleid = r.oid and m.member = 'rowgate_sql_admin'::regrole and m.admin_option) as administered
    into v_role
    from pg_catalog.pg_roles r where r.rolname = p_login;
  role_exists := found;
  if role_exists and (v_role.rolsuper or not v_role.analyst) then
    raise exception 'Role % is not an analyst; only analysts'' logins are revoked here', p_login using errcode = 'RG422', detail = 'login';
  end if;
  if role_exists and not v_role.administered then
    raise exception 'Role % is an analyst that rowgate_sql_admin does not administer; a superuser running db/roles.sql hands it over', p_login
      using errcode = 'RG422', detail = 'login';
  end if;
  select a.user_id into user_id from rowgate_private.analysts a where a.login = p_login;
  if not found then
    raise exception '% is not an analyst of this database', p_login using errcode = 'RG422', detail = 'login';
  end if;
  can_login := coalesce(v_role.rolcanlogin, false);
end;
$function$;
comment on function rowgate_private.revocable_analyst_login(text) is 'The bound analyst''s login p_login that rowgate_sql_admin may revoke (SPEC §15): its user and its role''s state; refuses any other role.';
grant execute on function rowgate_private.revocable_analyst_login(text) to rowgate_sql_admin;

-- Function rowgate_private.revoke_oauth2_family(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.revoke_oauth2_family(p_family_id uuid)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update rowgate_private.oauth2_token_families set revoked_at = now() where id = p_family_id and revoked_at is null;
  update rowgate_private.oauth2_access_tokens set revoked_at = now() where family_id = p_family_id and revoked_at is null;
$function$;

-- Function rowgate_private.revoke_oauth2_grant(uuid,boolean)
CREATE OR REPLACE FUNCTION rowgate_private.revoke_oauth2_grant(p_id uuid, p_is_family boolean)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_is_family then
    perform rowgate_private.revoke_oauth2_family(p_id);
  else
    update rowgate_private.oauth2_access_tokens set revoked_at = now() where id = p_id and revoked_at is null;
  end if;
end;
$function$;

-- Function rowgate_private.role_permissions(uuid,text)
CREATE OR REPLACE FUNCTION rowgate_private.role_permissions(p_organization_id uuid, p_role text)
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when exists (select 1 from rowgate.roles r where r.name = p_role)
    then array(select rp.permission from rowgate.role_permissions rp where rp.role = p_role order by 1)
    else (select r.permissions from rowgate.organization_roles r
      where r.organization_id = p_organization_id and r.name = p_role and r.deleted_at is null) end;
$function$;
comment on function rowgate_private.role_permissions(uuid,text) is 'The permissions of a built-in role, or of the organization''s own role of that name; null when neither exists.';

-- Function rowgate_private.sql_login_states()
CREATE OR REPLACE FUNCTION rowgate_private.sql_login_states()
 RETURNS TABLE(login text, organization_id uuid, live boolean, dropped boolean)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return query
    select c.login, c.organization_id,
      c.deleted_at is null and o.deleted_at is null and (c.expires_at is null or c.expires_at > statement_timestamp()),
      c.login_dropped_at is not null
    from rowgate.sql_credentials c join rowgate.organizations o on o.id = c.organization_id
    where c.login_dropped_at is null;
end;
$function$;
comment on function rowgate_private.sql_login_states() is 'The SQL logins (SPEC §24) whose roles exist: each one''s organization and whether its credential is live.';
grant execute on function rowgate_private.sql_login_states() to rowgate_sql_admin;

-- Function rowgate_private.take_webhook_disabled_notices(integer)
CREATE OR REPLACE FUNCTION rowgate_private.take_webhook_disabled_notices(p_limit integer DEFAULT 20)
 RETURNS TABLE(notice_id uuid, organization_id uuid, organization_name text, endpoint_id uuid, url text, email text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_notice rowgate_private.webhook_disabled_notices;
begin
  for v_notice in
    select n.* from rowgate_private.webhook_disabled_notices n
    where n.taken_at is null order by n.created_at limit p_limit
    for update skip locked
  loop
    update rowgate_private.webhook_disabled_notices n set taken_at = now()
      where n.organization_id = v_notice.organization_id and n.id = v_notice.id;
    return query
      select v_notice.id, o.id, o.name, e.id, e.url, u.email
      from rowgate.webhook_endpoints e
        join rowgate.organizations o on o.id = e.organization_id
        join rowgate.memberships m on m.organization_id = o.id and m.deleted_at is null
        join rowgate.users u on u.id = m.user_id and u.deleted_at is null
      where e.organization_id = v_notice.organization_id and e.id = v_notice.endpoint_id and o.deleted_at is null
        and 'organization:manage' = any (rowgate_private.role_permissions(o.id, m.role))
      order by u.email;
  end loop;
end;
$function$;
grant execute on function rowgate_private.take_webhook_disabled_notices(integer) to rowgate_authenticator;

-- Function rowgate_private.tg__at_most()
CREATE OR REPLACE FUNCTION rowgate_private.tg__at_most()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_owner_column text := tg_argv[0];
  v_maximum int := tg_argv[1]::int;
  v_owner uuid := (to_jsonb(new) ->> v_owner_column)::uuid;
  v_held int;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate at most ' || tg_table_name || ' ' || v_owner, 0));
  execute format('select count(*) from (select 1 from %I.%I where %I = $1 and deleted_at is null limit $2) held',
      tg_table_schema, tg_table_name, v_owner_column)
    into v_held using v_owner, v_maximum;
  if v_held >= v_maximum then
    raise exception 'At most % % per %; % one to make room', v_maximum, tg_argv[4], tg_argv[3], tg_argv[5]
      using errcode = 'RG403';
  end if;
  return new;
end;
$function$;
comment on function rowgate_private.tg__at_most() is 'Refuses an insert past the owner''s number of rows not deleted (revoked), expired ones included (RG403, the reason as the message).';

-- Function rowgate_private.tg__check_role()
CREATE OR REPLACE FUNCTION rowgate_private.tg__check_role()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if exists (select 1 from rowgate.roles r where r.name = new.role) then
    return new;
  end if;
  perform 1 from rowgate.organization_roles r
    where r.organization_id = new.organization_id and r.name = new.role and r.deleted_at is null
    for share;
  if not found then
    raise exception 'Unknown role' using errcode = 'RG422', detail = 'body.role';
  end if;
  return new;
end;
$function$;
comment on function rowgate_private.tg__check_role() is 'Refuses a role that is neither built in nor one of the row''s organization''s (RG422 at body.role).';

-- Function rowgate_private.tg__count_rows()
CREATE OR REPLACE FUNCTION rowgate_private.tg__count_rows()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_soft boolean := tg_argv[1] = 'soft';
  v_delta integer;
  v_organization_id uuid;
begin
  -- (each branch names deleted_at only for tables that have it: PL/pgSQL
  -- compiles a statement when it first runs it)
  if tg_op = 'INSERT' then
    v_organization_id := new.organization_id;
    v_delta := 1;
    if v_soft then
      v_delta := case when new.deleted_at is null then 1 else 0 end;
    end if;
  elsif tg_op = 'UPDATE' then
    v_organization_id := new.organization_id;
    v_delta := (case when new.deleted_at is null then 1 else 0 end) - (case when old.deleted_at is null then 1 else 0 end);
  else
    v_organization_id := old.organization_id;
    v_delta := -1;
    if v_soft then
      v_delta := case when old.deleted_at is null then -1 else 0 end;
    end if;
  end if;
  if v_delta <> 0 then
    insert into rowgate_private.organization_row_counts as c (organization_id, resource, stripe, row_count)
      values (v_organization_id, tg_argv[0], pg_backend_pid() % 64, v_delta)
      on conflict (organization_id, resource, stripe) do update set row_count = c.row_count + excluded.row_count;
  end if;
  return null;
end;
$function$;

-- Function rowgate_private.tg__events()
CREATE OR REPLACE FUNCTION rowgate_private.tg__events()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_resource text := tg_argv[0];
  v_hidden text[] := string_to_array(tg_argv[3], ',');
  v_status_column text := case when tg_nargs > 4 then tg_argv[4] end;
  -- the data as REST renders it: timestamps in UTC, which the session's time zone usually is already
  v_utc boolean := current_setting('TimeZone') in ('UTC', 'Etc/UTC');
  v_row jsonb := case when v_utc then to_jsonb(case when tg_op = 'DELETE' then old else new end)
    else rowgate_private.json_in_utc(case when tg_op = 'DELETE' then old else new end) end;
  v_old jsonb := case when tg_op <> 'UPDATE' then null when v_utc then to_jsonb(old) else rowgate_private.json_in_utc(old) end;
  v_data jsonb := v_row - v_hidden;
  v_previous jsonb;
  v_types text[];
  v_resource_id uuid;
  v_ip text;
  v_user_agent text;
  -- read into variables: inlined into the statement below, their expressions are planned with it
  v_actor jsonb := rowgate_hidden.current_actor();
  v_user_id uuid := rowgate_hidden.current_user_id();
begin
  if tg_op = 'INSERT' then
    v_types := array[v_resource || '.created'];
  elsif tg_op = 'DELETE' then
    v_types := array[v_resource || '.deleted'];
  elsif v_old->>'deleted_at' is not null then
    return null; -- a deleted row stays deleted
  elsif v_row->>'deleted_at' is not null then
    v_types := array[v_resource || '.deleted'];
  elsif v_status_column is not null and v_row->v_status_column is distinct from v_old->v_status_column then
    v_types := array[v_resource || '.' || (v_row->>v_status_column)];
  elsif v_data - '{updated_at,last_used_at}'::text[] = (v_old - v_hidden) - '{updated_at,last_used_at}'::text[] then
    return null;
  else
    v_types := array[v_resource || '.updated'];
    select jsonb_object_agg(o.key, o.value) into v_previous from jsonb_each(v_old - v_hidden) o
      where o.key not in ('updated_at', 'last_used_at') and o.value is distinct from v_row->o.key;
  end if;
  if v_resource = 'order' and tg_op <> 'DELETE' and v_row->>'status' in ('paid', 'refunded')
      and v_row->>'status' is distinct from v_old->>'status' then
    v_types := v_types || ('order.' || (v_row->>'status'));
  end if;
  v_resource_id := (v_row->>'id')::uuid;
  if v_resource = 'membership' then
    -- a membership is known by its user (REST: /organizations/{id}/members/{user_id})
    v_resource_id := (v_row->>'user_id')::uuid;
    select v_data || jsonb_build_object('email', u.email, 'name', u.name) into v_data from rowgate.users u where u.id = v_resource_id;
    if v_types[1] = 'membership.deleted' then
      v_data := v_data || jsonb_build_object('credentials',
        rowgate_private.member_credentials((v_row->>'organization_id')::uuid, v_resource_id));
    end if;
  elsif v_resource = 'role' then
    v_data := v_data || jsonb_build_object('built_in', false);
  elsif v_resource = 'invitation' then
    select v_data || jsonb_build_object('organization_name', o.name, 'inviter_name', u.name) into v_data
      from rowgate.organizations o left join rowgate.users u on u.id = (v_row->>'invited_by')::uuid
      where o.id = (v_row->>'organization_id')::uuid;
  end if;
  if session_user = 'rowgate_authenticator' then
    v_ip := nullif(current_setting('rowgate.client_address', true), '');
    v_user_agent := left(nullif(current_setting('rowgate.user_agent', true), ''), 256);
  end if;
  with inserted as (
    insert into rowgate.events (organization_id, type, resource_id, data, previous, actor, request_id, audience)
    select coalesce((v_row->>'organization_id')::uuid, (v_row->>'id')::uuid), t.type, v_resource_id, v_data,
      case when t.type = v_resource || '.updated' then v_previous end,
      actor.value, nullif(current_setting('rowgate.request_id', true), ''), tg_argv[1]
    from unnest(v_types) with ordinality as t(type, n)
      cross join (select v_actor as value) actor
    order by t.n
    returning organization_id, id, audience
  )
  insert into rowgate.event_clients (organization_id, event_id, audience, user_id, ip, user_agent)
  select i.organization_id, i.id, i.audience, v_user_id, left(v_ip, 100), v_user_agent
  from inserted i
  where v_ip is not null or v_user_agent is not null;
  return null;
end;
$function$;
comment on function rowgate_private.tg__events() is 'Writes the events of a change (SPEC §17) with their client address and User-Agent (SPEC §21). Arguments: the resource, the audience, the columns the data shows, the columns it leaves out, and optionally the column whose new value names the event.';

-- Function rowgate_private.tg__timestamps()
CREATE OR REPLACE FUNCTION rowgate_private.tg__timestamps()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  new.created_at = case when tg_op = 'INSERT' then now() else old.created_at end;
  new.updated_at = case when tg_op = 'UPDATE' and old.updated_at >= now() then old.updated_at + interval '1 millisecond' else now() end;
  return new;
end;
$function$;

-- Function rowgate_private.tg_customer_members__end_sessions()
CREATE OR REPLACE FUNCTION rowgate_private.tg_customer_members__end_sessions()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  update rowgate_private.sessions set revoked_at = now() where member_id = new.id and revoked_at is null;
  return null;
end;
$function$;

-- Function rowgate_private.tg_customer_members__organization()
CREATE OR REPLACE FUNCTION rowgate_private.tg_customer_members__organization()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  select c.organization_id into new.organization_id from rowgate.customers c
    where c.id = new.customer_id and c.deleted_at is null
      and (rowgate_hidden.current_subject_kind() is null
        or c.organization_id = any (rowgate_hidden.current_organization_ids()));
  if new.organization_id is null then
    raise exception 'Customer not found' using errcode = 'RG422', detail = 'body.customer_id';
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_customers__remove_seats()
CREATE OR REPLACE FUNCTION rowgate_private.tg_customers__remove_seats()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  update rowgate.customer_members set deleted_at = new.deleted_at where customer_id = new.id and deleted_at is null;
  return null;
end;
$function$;

-- Function rowgate_private.tg_denials__link_request()
CREATE OR REPLACE FUNCTION rowgate_private.tg_denials__link_request()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.operation is not null then
    new.request_log_id := rowgate_private.current_request_log_id();
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_events__enqueue_deliveries()
CREATE OR REPLACE FUNCTION rowgate_private.tg_events__enqueue_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id)
    select e.organization_id, e.id, i.id
    from inserted i
      join rowgate.webhook_endpoints e on e.organization_id = i.organization_id
    where e.enabled and e.deleted_at is null and i.type = any (e.event_types)
    order by i.id, e.id;
  return null;
end;
$function$;

-- Function rowgate_private.tg_events__link_request()
CREATE OR REPLACE FUNCTION rowgate_private.tg_events__link_request()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_log_id uuid := rowgate_private.current_request_log_id();
begin
  if v_log_id is not null then
    insert into rowgate_private.request_log_events (request_log_id, organization_id, event_id)
      select v_log_id, i.organization_id, i.id from inserted i;
  end if;
  return null;
end;
$function$;

-- Function rowgate_private.tg_memberships__keep_an_admin()
CREATE OR REPLACE FUNCTION rowgate_private.tg_memberships__keep_an_admin()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if old.role = 'admin' and old.deleted_at is null and (new.role <> 'admin' or new.deleted_at is not null) then
    perform rowgate_private.lock_organization_admins(old.organization_id);
    if not exists (select 1 from rowgate.memberships m where m.organization_id = old.organization_id
        and m.role = 'admin' and m.deleted_at is null and m.id <> old.id)
      and exists (select 1 from rowgate.organizations o where o.id = old.organization_id and o.deleted_at is null) then
      raise exception 'An organization needs at least one admin' using errcode = 'RG422', detail = 'path.user_id';
    end if;
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_memberships__live_user()
CREATE OR REPLACE FUNCTION rowgate_private.tg_memberships__live_user()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- a request's membership (a User subject's, as the escalation rules read it); the system and an
  -- operator write what they write (`npx rowgate db verify` names a live membership of a deleted user)
  if new.deleted_at is not null or rowgate_hidden.current_user_id() is null then
    return new;
  end if;
  perform 1 from rowgate.users u where u.id = new.user_id and u.deleted_at is null for share;
  if not found then
    raise exception 'No user has this e-mail address' using errcode = 'RG422', detail = 'body.email';
  end if;
  return new;
end;
$function$;
comment on function rowgate_private.tg_memberships__live_user() is 'Refuses a membership of a deleted user, and holds the user''s row until the membership commits.';

-- Function rowgate_private.tg_memberships__no_escalation()
CREATE OR REPLACE FUNCTION rowgate_private.tg_memberships__no_escalation()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_user_id uuid := rowgate_hidden.current_user_id();
  v_mine text[];
begin
  if v_user_id is null then
    return new;
  end if;
  if tg_op = 'INSERT' then
    if new.user_id = v_user_id then
      return new; -- creating an organization, accepting an invitation
    end if;
    if not coalesce(rowgate_private.role_permissions(new.organization_id, new.role), '{}')
        <@ rowgate_hidden.current_permissions(new.organization_id) then
      raise exception 'You can''t give a member a role with permissions you don''t have' using errcode = 'RG403';
    end if;
    return new;
  end if;
  if new.role is not distinct from old.role and (new.deleted_at is null or old.deleted_at is not null) then
    return new;
  end if;
  if old.user_id = v_user_id then
    if new.role is distinct from old.role then
      raise exception 'You can''t change your own role' using errcode = 'RG403';
    end if;
    return new; -- leaving
  end if;
  v_mine := rowgate_hidden.current_permissions(old.organization_id);
  if not coalesce(rowgate_private.role_permissions(old.organization_id, old.role), '{}') <@ v_mine then
    raise exception 'You can''t change or remove a member whose role has permissions you don''t have' using errcode = 'RG403';
  end if;
  if new.role is distinct from old.role
      and not coalesce(rowgate_private.role_permissions(new.organization_id, new.role), '{}') <@ v_mine then
    raise exception 'You can''t give a member a role with permissions you don''t have' using errcode = 'RG403';
  end if;
  return new;
end;
$function$;
comment on function rowgate_private.tg_memberships__no_escalation() is 'SPEC §21''s escalation rules for a User''s changes of memberships (RG403 with the reason).';

-- Function rowgate_private.tg_orders__check()
CREATE OR REPLACE FUNCTION rowgate_private.tg_orders__check()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    if not exists (select 1 from rowgate.customers c where c.id = new.customer_id
        and c.organization_id = new.organization_id and c.deleted_at is null) then
      raise exception 'The customer does not belong to the product''s organization' using errcode = 'RG422', detail = 'body.customer_id';
    end if;
    if new.status = 'refunded' then
      if rowgate_hidden.current_subject_kind() is not null then
        raise exception 'An order is created pending or paid, and refunded afterwards' using errcode = 'RG422', detail = 'body.status';
      end if;
      new.refunded_amount := new.amount;
    end if;
  elsif new.status is distinct from old.status and not (
      (old.status = 'pending' and new.status = 'paid') or (old.status = 'paid' and new.status = 'refunded')) then
    raise exception 'An order goes from pending to paid to refunded; % to % is not allowed', old.status, new.status
      using errcode = 'RG422', detail = 'body.status';
  elsif old.status = 'paid' and new.status = 'refunded' then
    -- refunded: nothing remains (the refund of the rest is written after the update)
    new.refunded_amount := new.amount;
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_orders__transactions()
CREATE OR REPLACE FUNCTION rowgate_private.tg_orders__transactions()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_unrecorded bigint;
begin
  if new.status = 'paid' and (tg_op = 'INSERT' or old.status <> 'paid') then
    insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
      values (new.organization_id, new.id, 'payment', new.amount, new.currency);
  elsif new.status = 'refunded' and (tg_op = 'INSERT' or old.status <> 'refunded') then
    if tg_op = 'INSERT' then
      insert into rowgate.transactions (organization_id, order_id, type, amount, currency)
        values (new.organization_id, new.id, 'payment', new.amount, new.currency);
    end if;
    -- what the status change refunded that no refund row records: rowgate.create_refund
    -- writes its refund before it sets the status, so then nothing is left over
    v_unrecorded := new.refunded_amount - (select coalesce(sum(r.amount), 0) from rowgate.refunds r
      where r.organization_id = new.organization_id and r.order_id = new.id);
    if v_unrecorded > 0 then
      perform rowgate_private.record_refund(new, v_unrecorded, 'other',
        'The rest of the order, refunded when its status was set to refunded', '{}');
    end if;
  end if;
  return null;
end;
$function$;

-- Function rowgate_private.tg_organization_roles__check()
CREATE OR REPLACE FUNCTION rowgate_private.tg_organization_roles__check()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_unknown text;
begin
  select p into v_unknown from unnest(new.permissions) p
    where p is null or not exists (select 1 from rowgate.permissions k where k.name = p) limit 1;
  if found then
    raise exception 'Unknown permission: %', coalesce(v_unknown, 'null') using errcode = 'RG422', detail = 'body.permissions';
  end if;
  new.permissions := array(select distinct p from unnest(new.permissions) p order by p);
  if exists (select 1 from rowgate.roles r where r.name = new.name) then
    raise exception 'A built-in role has this name' using errcode = 'RG422', detail = 'body.name';
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_platform_admins__touch_user()
CREATE OR REPLACE FUNCTION rowgate_private.tg_platform_admins__touch_user()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  update rowgate.users u set updated_at = now()
    where u.id in (case when tg_op <> 'INSERT' then old.user_id end, case when tg_op <> 'DELETE' then new.user_id end)
      and u.updated_at < now();
  return null;
end;
$function$;

-- Function rowgate_private.tg_users__erase_clients()
CREATE OR REPLACE FUNCTION rowgate_private.tg_users__erase_clients()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  delete from rowgate.event_clients where user_id = new.id;
  return null;
end;
$function$;
comment on function rowgate_private.tg_users__erase_clients() is 'A deleted user''s client addresses and user agents are erased from the audit trail.';

-- Function rowgate_private.tg_users__erase_request_clients()
CREATE OR REPLACE FUNCTION rowgate_private.tg_users__erase_request_clients()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  update rowgate.request_log set client_ip = null, user_agent = null
    where user_id = new.id and (client_ip is not null or user_agent is not null);
  update rowgate_private.sessions set client_ip = null, user_agent = null where user_id = new.id;
  return null;
end;
$function$;

-- Function rowgate_private.tg_users__leave_organizations()
CREATE OR REPLACE FUNCTION rowgate_private.tg_users__leave_organizations()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_membership rowgate.memberships;
begin
  perform rowgate_private.lock_user_memberships(new.id);
  for v_membership in
    select m.* from rowgate.memberships m where m.user_id = new.id and m.deleted_at is null order by m.organization_id
  loop
    if not exists (select 1 from rowgate.memberships m where m.organization_id = v_membership.organization_id
        and m.deleted_at is null and m.id <> v_membership.id) then
      update rowgate.organizations set deleted_at = new.deleted_at where id = v_membership.organization_id and deleted_at is null;
    end if;
    update rowgate.memberships set deleted_at = new.deleted_at where id = v_membership.id;
  end loop;
  return null;
end;
$function$;
comment on function rowgate_private.tg_users__leave_organizations() is 'A deleted user is no longer a member of any organization.';

-- Function rowgate_private.tg_webhook_endpoints__check_types()
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__check_types()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if (new.event_types is distinct from old.event_types or new.url is distinct from old.url)
      and rowgate_hidden.current_subject_kind() is not null then
    perform rowgate_hidden.assert_event_types(new.organization_id, new.event_types);
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.tg_webhook_endpoints__disabled_notice()
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__disabled_notice()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- disabled by its failures, not by a manager's PATCH
  if old.enabled and not new.enabled and new.consecutive_failures >= 10 and new.deleted_at is null then
    insert into rowgate_private.webhook_disabled_notices (organization_id, endpoint_id) values (new.organization_id, new.id);
  end if;
  return null;
end;
$function$;

-- Function rowgate_private.tg_webhook_endpoints__hold_deliveries()
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__hold_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_in_flight bigint := (select l.delivery_id from rowgate_private.webhook_lanes l
    where l.organization_id = new.organization_id and l.endpoint_id = new.id);
begin
  if new.deleted_at is not null and old.deleted_at is null then
    delete from rowgate_private.webhook_deliveries d
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status in ('pending', 'paused')
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif old.enabled and not new.enabled then
    update rowgate_private.webhook_deliveries d set status = 'paused'
      where d.id in (select p.id from rowgate_private.webhook_deliveries p
        where p.organization_id = new.organization_id and p.endpoint_id = new.id and p.status = 'pending'
          and p.id is distinct from v_in_flight
        for update skip locked);
  elsif new.enabled and not old.enabled and new.deleted_at is null then
    update rowgate_private.webhook_deliveries d set status = 'pending', next_attempt_at = now(), feed_position = null
      where d.organization_id = new.organization_id and d.endpoint_id = new.id and d.status = 'paused';
  end if;
  return null;
end;
$function$;
comment on function rowgate_private.tg_webhook_endpoints__hold_deliveries() is 'A disabled endpoint''s deliveries are paused, an enabled one''s resumed, a deleted one''s removed; never waiting for an attempt in flight.';

-- Function rowgate_private.tg_webhook_endpoints__reset()
CREATE OR REPLACE FUNCTION rowgate_private.tg_webhook_endpoints__reset()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.enabled and not old.enabled then
    new.consecutive_failures := 0;
  end if;
  return new;
end;
$function$;

-- Function rowgate_private.token_scope_denials(uuid,text[],text)
CREATE OR REPLACE FUNCTION rowgate_private.token_scope_denials(p_organization_id uuid, p_scopes text[], p_credential_kind text)
 RETURNS TABLE(n bigint, scope text, operation text, policy text, permission text, reason text, message text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_saved text[] := array[current_setting('rowgate.subject_kind', true), current_setting('rowgate.subject_id', true),
    current_setting('rowgate.credential_kind', true), current_setting('rowgate.scopes', true)];
  v_user_only text[];
begin
  -- the policies that refuse the organization itself, asked as the token would be
  perform rowgate_hidden.restore_subject(array['organization', p_organization_id::text, p_credential_kind, '']);
  select coalesce(array_agg(k.policy_key), '{}') into v_user_only
    from (select distinct o.policy_key from rowgate_hidden.operations o where o.policy_key is not null) k
    where rowgate_hidden.policy_denial(p_organization_id, k.policy_key) is not null;
  perform rowgate_hidden.restore_subject(v_saved);
  return query
    with operations as (
      select o.operation, o.scopes, o.policy, o.policy_key,
        p_credential_kind = any (o.credentials) and not (o.policy_key = any (v_user_only)) as open_to_token,
        -- the policies that require a permission name it (members-management: members:manage)
        coalesce(o.permission, case o.policy when 'members_management' then 'members:manage'
          when 'access_token_management' then 'access_tokens:manage' end) as permission
      from rowgate_hidden.operations o
      where 'web_session' = any (o.credentials) and o.policy_key is not null
    ), scoped as (
      select s.n, s.scope, o.*, (sc.implies is null or not (sc.implies = any (o.scopes))) as own
      from unnest(p_scopes) with ordinality s(scope, n)
        left join rowgate_private.scopes sc on sc.name = s.scope
        join operations o on s.scope = any (o.scopes)
    ), asked as (
      -- the scope's operations open to the token; its own ones too when none of them is
      select x.* from scoped x
      where x.open_to_token
        or (x.own and not exists (select from scoped y where y.n = x.n and y.own and y.open_to_token))
    ), policies as materialized (
      -- each policy asked once, for the current user
      select k.policy_key, rowgate_hidden.policy_denial(p_organization_id, k.policy_key) as reason
      from (select distinct a.policy_key from asked a) k
    )
    select distinct on (a.n) a.n, a.scope, a.operation, a.policy, a.permission, p.reason,
      format('A token cannot hold %s: its operation %s needs %s, which you lack in this organization (%s)',
        a.scope, a.operation,
        case when a.permission is not null then format('the permission %s (policy %s)', a.permission, a.policy)
          else format('the policy %s', a.policy) end,
        p.reason)
    from asked a join policies p on p.policy_key = a.policy_key
    where p.reason is not null
    order by a.n, a.operation;
end;
$function$;
comment on function rowgate_private.token_scope_denials(uuid,text[],text) is 'The scopes of p_scopes (by their 1-based place) a token of p_credential_kind minted by the current user in the organization may not hold (SPEC §21): for each, the first operation open to such a token that the user could not perform there with a web session, its policy and permission, the denial reason and the message the API shows. No row: every scope may be minted.';
grant execute on function rowgate_private.token_scope_denials(uuid,text[],text) to rowgate_sql_admin;

-- Function rowgate_private.unknown_scope(text[])
CREATE OR REPLACE FUNCTION rowgate_private.unknown_scope(p_scopes text[])
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s from unnest(p_scopes) s
  where s not in (select name from rowgate_private.scopes where name not like 'customer_portal_%') limit 1;
$function$;

-- Function rowgate_private.user_manages_access_tokens(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.user_manages_access_tokens(p_user_id uuid, p_organization_id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select exists (
    select 1 from rowgate.memberships m
      join rowgate.organizations o on o.id = m.organization_id
      join rowgate.users u on u.id = m.user_id
    where m.user_id = p_user_id and m.organization_id = p_organization_id
      and m.deleted_at is null and o.deleted_at is null and u.deleted_at is null
      and 'access_tokens:manage' = any (rowgate_private.role_permissions(m.organization_id, m.role)));
$function$;

-- Function rowgate_private.uuidv7_bound(timestamp with time zone)
CREATE OR REPLACE FUNCTION rowgate_private.uuidv7_bound(p_at timestamp with time zone)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE STRICT
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (lpad(to_hex(floor(extract(epoch from p_at) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid
$function$;
comment on function rowgate_private.uuidv7_bound(timestamp with time zone) is 'The smallest UUIDv7 of p_at''s millisecond: ids at or after p_at sort at or after it.';

-- Function rowgate_private.uuidv7_time(uuid)
CREATE OR REPLACE FUNCTION rowgate_private.uuidv7_time(p_id uuid)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE STRICT
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select to_timestamp((('x' || left(replace(p_id::text, '-', ''), 12))::bit(48)::bigint) / 1000.0)
$function$;
comment on function rowgate_private.uuidv7_time(uuid) is 'The millisecond a UUIDv7 was made in.';

-- Function rowgate_private.web_session_lifetime()
CREATE OR REPLACE FUNCTION rowgate_private.web_session_lifetime()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select interval '31 days';
$function$;
comment on function rowgate_private.web_session_lifetime() is 'How long a web session made by signing in (or by `rowgate sessions create`) lasts.';

-- Function rowgate_private.webhook_endpoint_versions(uuid[])
CREATE OR REPLACE FUNCTION rowgate_private.webhook_endpoint_versions(p_endpoint_ids uuid[])
 RETURNS TABLE(endpoint_id uuid, api_version text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select e.id, coalesce(e.api_version, '2026-11-20') from rowgate.webhook_endpoints e where e.id = any(p_endpoint_ids)
$function$;
comment on function rowgate_private.webhook_endpoint_versions(uuid[]) is 'The API version each webhook endpoint''s bodies are rendered in (SPEC §23).';
grant execute on function rowgate_private.webhook_endpoint_versions(uuid[]) to rowgate_authenticator;

-- Function rowgate_private.webhook_previous_secret(uuid,uuid)
CREATE OR REPLACE FUNCTION rowgate_private.webhook_previous_secret(p_organization_id uuid, p_endpoint_id uuid)
 RETURNS TABLE(sealed_secret bytea, expires_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select s.previous_sealed_secret, s.previous_expires_at from rowgate_private.webhook_secrets s
  where s.organization_id = p_organization_id and s.endpoint_id = p_endpoint_id
    and s.previous_sealed_secret is not null and s.previous_expires_at > now();
$function$;
grant execute on function rowgate_private.webhook_previous_secret(uuid,uuid) to rowgate_authenticator;
