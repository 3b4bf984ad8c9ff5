--! Previous: sha1:eae9f3c5ca355d5d8e735d33f332dabc1bbd7a1f
--! Hash: sha1:eb18f3ace8322e9fe47a0423ea18489a2eccaceb
--! Message: Live credentials and webhook endpoints are capped per owner (100 personal access tokens per user, 100 organization access tokens per organization, 100 OAuth2 clients per user, 16 webhook endpoints per organization)

--! split: 001-live-credentials-and-endpoints-are-capped.sql
-- Why: nothing bounded how many credentials or webhook endpoints one owner
-- holds. A hostile review created 12,000 personal access tokens for one user
-- through the API in 21 s and used them to push a victim's credential out of
-- the server's memory of credentials seen to authenticate (docs/decisions.md,
-- "Which credentials an address's limit reaches"); and every webhook endpoint
-- subscribed to an event's type is one more delivery row, queued in the
-- transaction of the change that wrote the event, and one more attempt in
-- the organization's queue (its attempts go out one at a time), so thousands
-- of endpoints make each of the organization's writes write thousands of
-- rows, and its deliveries wait behind thousands of attempts. SPEC §4 and §17 say nothing
-- of a number; a well-run API has one (Stripe: 16 webhook endpoints per
-- account). So each owner holds at most:
--   100 live personal access tokens per user,
--   100 live organization access tokens per organization,
--   100 OAuth2 clients per user,
--   16 webhook endpoints per organization.
-- Live: not revoked (deleted_at) and, for tokens, not expired. A request past
-- the number is a policy's denial (SPEC §7: 403 NotPermitted with the
-- reason), decided here, before the insert, whichever way the row comes (the
-- API, the operator's CLI, SQL), so every interface gets the same rule.
-- Rows already past a number are left alone: only new ones are refused.

-- Counts an owner's live rows of the trigger's table and refuses the insert
-- past the number. Arguments: the owner's column, the number, whether the
-- rows expire (expires_at), the owner's and the rows' names and what makes
-- room, for the sentence ("At most 16 webhook endpoints per organization;
-- delete one to make room"). Security definer: the count sees every row of the owner, whatever
-- the caller's policies and scopes show it. Concurrent inserts for one owner
-- wait for each other (a transaction-scoped advisory lock on the owner), so two
-- at once cannot both take the last place.
create function rowgate_private.tg__at_most() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_owner_column text := tg_argv[0];
  v_maximum int := tg_argv[1]::int;
  v_expires boolean := tg_argv[2]::boolean;
  v_owner uuid := (to_jsonb(new) ->> v_owner_column)::uuid;
  v_live int;
begin
  perform pg_advisory_xact_lock(hashtextextended('rowgate at most ' || tg_table_name || ' ' || v_owner, 0));
  execute format(
    'select count(*) from (select 1 from %I.%I where %I = $1 and deleted_at is null%s limit $2) live',
    tg_table_schema, tg_table_name, v_owner_column,
    case when v_expires then ' and (expires_at is null or expires_at > now())' else '' end)
    into v_live using v_owner, v_maximum;
  if v_live >= v_maximum then
    raise exception 'At most % % per %; % one to make room', v_maximum, tg_argv[4], tg_argv[3], tg_argv[5]
      using errcode = 'RG403';
  end if;
  return new;
end;
$$;
comment on function rowgate_private.tg__at_most() is
  'Refuses an insert past the owner''s number of live rows (RG403, the reason as the message).';

create trigger _050_at_most before insert on rowgate.personal_access_tokens
  for each row execute function rowgate_private.tg__at_most('user_id', '100', 'true', 'user', 'live personal access tokens', 'revoke');
create trigger _050_at_most before insert on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__at_most('organization_id', '100', 'true', 'organization', 'live organization access tokens', 'revoke');
create trigger _050_at_most before insert on rowgate.oauth2_clients
  for each row execute function rowgate_private.tg__at_most('user_id', '100', 'false', 'user', 'OAuth2 clients', 'delete');
create trigger _050_at_most before insert on rowgate.webhook_endpoints
  for each row execute function rowgate_private.tg__at_most('organization_id', '16', 'false', 'organization', 'webhook endpoints', 'delete');

-- The count reads an owner's live rows; personal access tokens had an index on
-- every token of a user, revoked ones included (the other three tables' are
-- partial already).
create index personal_access_tokens_live on rowgate.personal_access_tokens (user_id) where deleted_at is null;
