--! Previous: sha1:41f8e78034fa727aa77afc43557e34203e9a81f1
--! Hash: sha1:279bc7b813ad0ab584150532d90931a5f853d55d
--! Message: The webhook claim repairs what it cannot deliver; no stored metadata holds __proto__; tokens count against the cap until revoked

--! split: 001-the-claim-repairs-what-it-cannot-deliver.sql
-- Why: migration 000034 paused a disabled endpoint's deliveries when the
-- endpoint changed, but a delivery queued by a write that committed after
-- the change (the queueing read the endpoint as enabled; the change's pause
-- could not see the uncommitted row) stayed pending for a disabled or deleted
-- endpoint: its organization was a candidate for good, due first, and the
-- workers polled every 20 ms (a review found it; the automatic disabling
-- after 10 failed events does it under ordinary traffic). And a redelivery
-- of an event being pruned could commit after the prune: the claim took it,
-- found no event to send, and every claim stopped at it from then on.
--
-- So the claim repairs what it cannot deliver, whatever left it: a candidate
-- organization with nothing claimable has its pending deliveries of disabled
-- endpoints paused, and those of deleted endpoints, of events that are gone
-- or of an endpoint without its secret (none made through the API) removed
-- (rows another transaction holds are skipped: the next claim sees them). A
-- delivery is claimable only with its event and its endpoint's secret: the
-- claim took one without and sent nothing, for ever. A redelivery reads its
-- endpoint with a share lock, so that an enabling or disabling in progress
-- has committed before it chooses pending or paused.
create or replace function rowgate_private.claim_webhook_delivery()
returns table (delivery_id bigint, attempt integer, endpoint_id uuid, url text, sealed_secret bytea, event_id uuid,
  organization_id uuid, type text, resource_id uuid, data jsonb, actor jsonb, request_id text, created_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  v_candidate record;
  v_delivery rowgate_private.webhook_deliveries;
begin
  for v_candidate in
    with recursive organizations (id) as (
      (select d.organization_id from rowgate_private.webhook_deliveries d
        where d.status = 'pending' order by d.organization_id limit 1)
      union all
      select (select d.organization_id from rowgate_private.webhook_deliveries d
          where d.status = 'pending' and d.organization_id > o.id order by d.organization_id limit 1)
        from organizations o where o.id is not null
    )
    select o.id, due.next_attempt_at, due.event_id
    from organizations o
      cross join lateral (select d.next_attempt_at, d.event_id from rowgate_private.webhook_deliveries d
        where d.organization_id = o.id and d.status = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at, d.event_id limit 1) due
    where o.id is not null
    order by due.next_attempt_at, due.event_id
    limit 100
  loop
    begin
      continue when not pg_try_advisory_xact_lock(hashtextextended('rowgate webhook organization ' || v_candidate.id, 0));
      select d.* into v_delivery from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.id = d.endpoint_id
        where d.organization_id = v_candidate.id and d.status = 'pending' and d.next_attempt_at <= now()
          and e.enabled and e.deleted_at is null
          and exists (select 1 from rowgate.events ev where ev.organization_id = d.organization_id and ev.id = d.event_id)
          and exists (select 1 from rowgate_private.webhook_secrets s where s.endpoint_id = d.endpoint_id)
          and (d.attempts > 0 or not exists (
            select 1 from rowgate_private.webhook_deliveries p
            where p.endpoint_id = d.endpoint_id and p.status = 'pending' and p.attempts = 0 and p.event_id < d.event_id))
        order by d.next_attempt_at, d.event_id
        limit 1
        for update of d skip locked;
      if v_delivery.id is null then
        -- nothing of this organization's to claim: the subtransaction, and its lock, are undone
        raise exception 'nothing claimed' using errcode = 'RGNOC';
      end if;
      exit;
    exception when sqlstate 'RGNOC' then
      v_delivery := null;
    end;
    -- what kept the organization a candidate with nothing to claim, when it is undeliverable
    with stale as (
      select d.id, (e.deleted_at is not null or ev.id is null or s.endpoint_id is null) as gone
      from rowgate_private.webhook_deliveries d
        join rowgate.webhook_endpoints e on e.organization_id = d.organization_id and e.id = d.endpoint_id
        left join rowgate.events ev on ev.organization_id = d.organization_id and ev.id = d.event_id
        left join rowgate_private.webhook_secrets s on s.endpoint_id = d.endpoint_id
      where d.organization_id = v_candidate.id and d.status = 'pending'
        and (not e.enabled or e.deleted_at is not null or ev.id is null or s.endpoint_id is null)
      for update of d skip locked
    ), removed as (
      delete from rowgate_private.webhook_deliveries d using stale where d.id = stale.id and stale.gone
    )
    update rowgate_private.webhook_deliveries d set status = 'paused' from stale where d.id = stale.id and not stale.gone;
  end loop;
  if v_delivery.id is null then
    return;
  end if;
  return query
    select v_delivery.id, v_delivery.attempts + 1, e.id, e.url, s.sealed_secret,
      ev.id, ev.organization_id, ev.type, ev.resource_id, ev.data, ev.actor, ev.request_id, ev.created_at
    from rowgate.webhook_endpoints e
      join rowgate_private.webhook_secrets s on s.endpoint_id = e.id
      join rowgate.events ev on ev.id = v_delivery.event_id
    where e.id = v_delivery.endpoint_id;
end;
$$;

create or replace function rowgate.redeliver_webhook_event(p_endpoint_id uuid, p_event_id uuid) returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
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
  if v_status = 'pending' then
    perform pg_notify('rowgate_webhooks', '');
  end if;
  return v_id;
end;
$$;

--! split: 002-no-stored-metadata-holds-proto.sql
-- Why: migration 000033 refused a metadata key `__proto__` from then on, but
-- PostgreSQL checks a row's constraints on every update, so a row GraphQL had
-- stored with that key could no longer be updated at all (archived, paid,
-- refunded: each a 500, as a review found). The key is removed from the rows
-- that hold it: REST never showed it (zod dropped it) and its next PATCH of
-- that metadata lost it anyway.
update rowgate.products set metadata = metadata - '__proto__' where metadata ? '__proto__';
update rowgate.customers set metadata = metadata - '__proto__' where metadata ? '__proto__';
update rowgate.orders set metadata = metadata - '__proto__' where metadata ? '__proto__';
update rowgate.customer_members set metadata = metadata - '__proto__' where metadata ? '__proto__';
update rowgate.refunds set metadata = metadata - '__proto__' where metadata ? '__proto__';

--! split: 003-expired-tokens-count-until-revoked.sql
-- Why: migration 000032 counted live tokens only, and a token may expire a
-- minute after it is made: a user could make 100 a minute for ever, every one
-- kept and listed (a review found it). A token now counts until it is revoked,
-- expired or not, so an owner holds at most the number of rows; revoking an
-- expired token makes room. (The trigger's third argument, whether rows
-- expire, no longer changes the count.)
create or replace function rowgate_private.tg__at_most() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
drop trigger _050_at_most on rowgate.personal_access_tokens;
create trigger _050_at_most before insert on rowgate.personal_access_tokens
  for each row execute function rowgate_private.tg__at_most('user_id', '100', 'true', 'user', 'personal access tokens', 'revoke');
drop trigger _050_at_most on rowgate.organization_access_tokens;
create trigger _050_at_most before insert on rowgate.organization_access_tokens
  for each row execute function rowgate_private.tg__at_most('organization_id', '100', 'true', 'organization', 'organization access tokens', 'revoke');
