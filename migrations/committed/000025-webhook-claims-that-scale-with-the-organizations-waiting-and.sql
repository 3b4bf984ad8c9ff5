--! Previous: sha1:dca7da970e9ff6693711f23b94ccdaf28e26cde7
--! Hash: sha1:fcaf9c99b5b00c726df97b9707b6eb25cbaef811
--! Message: Webhook claims that scale with the organizations waiting and let go of a lock that claimed nothing; a subject's expired idempotency key forgotten without waiting

--! split: 001-webhook-claims-that-scale-and-let-go.sql
-- Three faults of 000024's claim, found by reviewing it. (1) Its candidates were
-- read without a lock and the row claimed after the organization's lock was
-- taken was checked for `pending` only: a delivery another worker had just
-- failed (now due later), or whose endpoint had just been disabled, could be
-- attempted at once. The claimed row is now checked for everything the
-- candidates were (due, endpoint enabled and not deleted, first attempts in
-- event order). (2) An organization's lock taken for a candidate that then
-- claimed nothing was held until the claiming transaction ended, the whole
-- attempt on another organization's delivery: that organization waited on
-- every server. The lock and the row's claim now run in a subtransaction that
-- is rolled back, its lock with it, when nothing is claimed. (3) Every claim
-- read and sorted every due delivery (distinct on the organization before the
-- limit): a backlog of N made each claim O(N). Now the organizations with
-- pending deliveries are found one index probe each (a loose index scan on the
-- new index) and each one's earliest due delivery by one more.
create index webhook_deliveries_organization_pending on rowgate_private.webhook_deliveries (organization_id, next_attempt_at, event_id)
  where status = 'pending';

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

--! split: 002-a-subjects-expired-key-forgotten-without-waiting.sql
-- 000023 forgets a subject's own expired key before looking it up, but that
-- delete could wait for another claim's cleanup that had locked the same row
-- (another tenant's transaction). Another transaction holding the row is
-- cleaning it anyway; the lookup below then treats an expired row as absent.
create or replace function rowgate.claim_idempotency_key(p_key text, p_request_hash bytea)
returns table (status text, response_status integer, response_body text)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
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
$$;

-- The expired row left in place above (another transaction held it) is
-- replaced when the answer is stored, rather than failing the insert.
create or replace function rowgate.store_idempotent_answer(p_key text, p_request_hash bytea, p_status integer, p_body text) returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.idempotency_keys as k (subject_kind, subject_id, key, request_hash, response_status, response_body)
    values (rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), p_key, p_request_hash, p_status, p_body)
  on conflict (subject_kind, subject_id, key) do update
    set request_hash = excluded.request_hash, response_status = excluded.response_status,
      response_body = excluded.response_body, created_at = excluded.created_at
    where k.created_at < now() - rowgate_private.idempotency_key_lifetime();
$$;
