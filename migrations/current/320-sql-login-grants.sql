-- What an organization's SQL login may read and run (SPEC §24): the group holds SELECT on
-- exactly the tables and views an organization access token reads (the analysts' columns
-- of them, so that `select *` works: the columns the token's API leaves out, `deleted_at`
-- and `consecutive_failures`, are of rows the policies hide or say nothing of another
-- tenant), nothing on rowgate.users, CONNECT on the database (which PUBLIC loses), and
-- EXECUTE on an allowlist of STABLE functions: the subject helpers the policies call and
-- the ones rowgate.check answers with, each of which reaches only the login's
-- organization whatever ids it is given (`db lint` keeps this list: src/db/lint.ts).
do $connect$
begin
  execute format('revoke connect on database %I from public', current_database());
  execute format('grant connect on database %I to rowgate_sql_login', current_database());
end
$connect$;
grant usage on schema rowgate, rowgate_hidden to rowgate_sql_login;

grant select (id, organization_id, admin_id, country, currency, status, created_at, updated_at, deleted_at) on rowgate.accounts to rowgate_sql_login;
grant select (id, email, name) on rowgate.colleagues to rowgate_sql_login;
grant select (id, organization_id, customer_id, email, name, created_at, updated_at, role, metadata, deleted_at) on rowgate.customer_members to rowgate_sql_login;
grant select (id, organization_id, email, first_name, last_name, status, created_at, updated_at, metadata, external_id, deleted_at) on rowgate.customers to rowgate_sql_login;
grant select (organization_id, event_id, audience, user_id, ip, user_agent, created_at) on rowgate.event_clients to rowgate_sql_login;
grant select (id, organization_id, type, resource_id, data, actor, request_id, audience, created_at, previous, feed_position) on rowgate.events to rowgate_sql_login;
grant select (id, user_id, organization_id, role, created_at, updated_at, deleted_at) on rowgate.memberships to rowgate_sql_login;
grant select (id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at, metadata, refunded_amount) on rowgate.orders to rowgate_sql_login;
grant select (organization_id, day, status, orders, amount) on rowgate.orders_by_day to rowgate_sql_login;
grant select (id, organization_id, name, description, permissions, created_at, updated_at, deleted_at) on rowgate.organization_roles to rowgate_sql_login;
grant select (id, name, slug, account_id, created_at, updated_at, max_token_lifetime_days, deleted_at) on rowgate.organizations to rowgate_sql_login;
grant select (id, organization_id, type, country, currency, created_at, updated_at, deleted_at) on rowgate.payout_accounts to rowgate_sql_login;
grant select (name, verb, things) on rowgate.permissions to rowgate_sql_login;
grant select (id, organization_id, name, description, price_amount, price_currency, is_archived, created_at, updated_at, metadata, deleted_at) on rowgate.products to rowgate_sql_login;
grant select (id, organization_id, order_id, amount, currency, reason, comment, metadata, created_at, updated_at) on rowgate.refunds to rowgate_sql_login;
grant select (organization_id, day, currency, gross_amount, refunded_amount, net_amount, payments) on rowgate.revenue_by_day to rowgate_sql_login;
grant select (role, permission) on rowgate.role_permissions to rowgate_sql_login;
grant select (name, description) on rowgate.roles to rowgate_sql_login;
grant select (id, organization_id, order_id, type, amount, currency, created_at, updated_at) on rowgate.transactions to rowgate_sql_login;
grant select (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, error, created_at) on rowgate.webhook_attempts to rowgate_sql_login;
grant select (id, organization_id, url, event_types, description, enabled, created_at, updated_at, consecutive_failures, deleted_at) on rowgate.webhook_endpoints to rowgate_sql_login;
grant select (operation, method, path, credentials, scopes, access_class, policy, permission, status, lookup, resource, match, policy_key) on rowgate_hidden.operations to rowgate_sql_login;

grant execute on function
  -- the subject helpers and what they call
  rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), rowgate_hidden.current_user_id(),
  rowgate_hidden.current_credential_kind(), rowgate_hidden.current_scopes(), rowgate_hidden.has_scope(text),
  rowgate_hidden.analyst_user_id(), rowgate_hidden.analyst_scopes(),
  rowgate_hidden.sql_login_organization_id(), rowgate_hidden.sql_login_scopes(),
  rowgate_hidden.current_organization_ids(text), rowgate_hidden.current_colleague_ids(),
  rowgate_hidden.has_permission(uuid, text),
  -- the policies' denials
  rowgate_hidden.finance_read_denial(uuid), rowgate_hidden.finance_write_denial(uuid), rowgate_hidden.finance_denial(uuid, boolean),
  rowgate_hidden.role_permission_denial(uuid, text), rowgate_hidden.members_management_denial(uuid),
  rowgate_hidden.access_token_management_denial(uuid), rowgate_hidden.policy_denial(uuid, text),
  -- rowgate.check (SPEC §20)
  rowgate."check"(text, jsonb, uuid), rowgate_hidden.check_operation(text, jsonb, uuid, boolean),
  rowgate_hidden.check_batch(jsonb, boolean), rowgate_hidden.check_items(jsonb, text, text[]),
  rowgate_hidden.check_answer(rowgate_hidden.operations, boolean, integer, text, text, text, text, text[], uuid, text),
  rowgate_hidden.web_session_scopes(), rowgate_hidden.current_role_in(uuid),
  rowgate_hidden.reachable_resource_organization_ids(text, uuid[]), rowgate_hidden.invitee_invitation_found(uuid),
  rowgate_hidden.member_removal_denial(uuid, uuid), rowgate_hidden.organization_account_exists(uuid)
  to rowgate_sql_login;
