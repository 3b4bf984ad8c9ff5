--! Previous: sha1:e33bc738081d8504f403ce609918af1b9c1aa5fb
--! Hash: sha1:b3c10f99bb162dfae041fe5fc1f7302df90699f3
--! Message: Idempotency keys: the 2xx answer of a POST or PATCH kept with its key in the transaction of its effect (issue 16, SPEC §17)

--! split: 001-idempotency-keys.sql
-- Issue 16 (SPEC §17): safe retries. A POST or PATCH under /v1 may carry an
-- Idempotency-Key; its 2xx answer is stored here in the same transaction as its
-- effect, so a retry with the same key either finds the answer (and gets it
-- again, byte for byte) or finds nothing because nothing was committed. Keys
-- belong to the subject (a user's key is the same through any of its
-- credentials) and are kept at least 24 hours. Private: only these functions,
-- which take the subject from the transaction's settings, read or write it.
create table rowgate_private.idempotency_keys (
  subject_kind text not null,
  subject_id uuid not null,
  key text not null check (length(key) between 1 and 255),
  -- sha256 of the method, the path and the body: the same key with another request is refused
  request_hash bytea not null,
  response_status integer not null check (response_status between 200 and 299),
  response_body text not null,
  created_at timestamptz not null default now(),
  primary key (subject_kind, subject_id, key)
);
create index idempotency_keys_created on rowgate_private.idempotency_keys (created_at);

-- How long a key is kept; older ones are forgotten (and may be used again).
create function rowgate_private.idempotency_key_lifetime() returns interval
language sql immutable set search_path = pg_catalog, pg_temp as $$
  select interval '24 hours';
$$;

--! split: 002-claiming-a-key.sql
-- Before a request runs: what its key says. `in_use` when a transaction holding
-- the same key of the same subject is still running (a transaction-scoped
-- advisory lock on the key, taken without waiting: SPEC's 409); `reused` when
-- the key answered another request; `replay` with the stored answer; `new`
-- otherwise, and the lock is held until this transaction ends, so a duplicate
-- sent meanwhile is `in_use` and one sent after the commit is a `replay`. A
-- subject's expired keys are forgotten here, and a few of anybody's.
create function rowgate.claim_idempotency_key(p_key text, p_request_hash bytea)
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
      where k2.created_at < now() - rowgate_private.idempotency_key_lifetime() limit 10));
  select * into v_found from rowgate_private.idempotency_keys k
    where k.subject_kind = v_kind and k.subject_id = v_id and k.key = p_key;
  if v_found.key is null then
    return query select 'new'::text, null::integer, null::text;
  elsif v_found.request_hash <> p_request_hash then
    return query select 'reused'::text, null::integer, null::text;
  else
    return query select 'replay'::text, v_found.response_status, v_found.response_body;
  end if;
end;
$$;
comment on function rowgate.claim_idempotency_key(text, bytea) is
  E'@behavior -*\nWhat an Idempotency-Key says of a request: new (the key is held until the transaction ends), in_use, reused, or replay with the stored answer.';

-- After the request ran, in its transaction: its 2xx answer, kept with the key.
create function rowgate.store_idempotent_answer(p_key text, p_request_hash bytea, p_status integer, p_body text) returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  insert into rowgate_private.idempotency_keys (subject_kind, subject_id, key, request_hash, response_status, response_body)
    values (rowgate_hidden.current_subject_kind(), rowgate_hidden.current_subject_id(), p_key, p_request_hash, p_status, p_body);
$$;
comment on function rowgate.store_idempotent_answer(text, bytea, integer, text) is
  E'@behavior -*\nKeeps a 2xx answer with its Idempotency-Key, in the transaction of its effect.';

grant execute on function rowgate.claim_idempotency_key(text, bytea), rowgate.store_idempotent_answer(text, bytea, integer, text)
  to rowgate_user, rowgate_organization, rowgate_customer, rowgate_member;
