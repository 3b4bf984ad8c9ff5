-- No mail is sent while a database transaction is open (SPEC §14): a message is a row of the
-- outbox, written in the transaction of the change it tells about, and a sender sends it after
-- that transaction commits, with no transaction open, under a lease (as the webhook senders do:
-- a sender that dies past its lease leaves the message to be claimed again: at least once).
-- The outbox that kept the development server's messages is that queue: a message for a mail
-- server is sealed under the server secret (sealed_body; subject and body stay null) until it is
-- sent, and its seal is erased once sent or given up; a development message (no mail server)
-- keeps its subject and body readable for `npx rowgate mail outbox` and is never sent.
alter table rowgate_private.mail_outbox
  -- squawk-ignore ban-drop-not-null -- the previous release writes the subject, and reads it only in development messages, which keep it
  alter column subject drop not null,
  -- squawk-ignore ban-drop-not-null -- the previous release writes the body, and reads it only in development messages, which keep it
  alter column body drop not null,
  add column sealed_body bytea,
  add column due_at timestamptz not null default now(),
  add column attempts integer not null default 0,
  add column lease uuid,
  add column leased_until timestamptz,
  add column sent_at timestamptz,
  add column failed_at timestamptz,
  add column last_error text;
-- The checks hold for every row written from now on; the rows before have both new columns null,
-- which they accept, so they are not scanned for (a scan would block the outbox's writes).
alter table rowgate_private.mail_outbox
  add constraint mail_outbox_sealed_or_readable check (sealed_body is null or (subject is null and body is null)) not valid,
  add constraint mail_outbox_last_error_check check (length(last_error) <= 500) not valid;
comment on column rowgate_private.mail_outbox.sealed_body is 'The message (recipient, subject, text) sealed under the server secret, bound to the row''s id; null once sent or given up, and for development messages.';
comment on column rowgate_private.mail_outbox.due_at is 'When the message may next be claimed (a failed attempt moves it by the sender''s backoff).';
comment on column rowgate_private.mail_outbox.lease is 'The claim of the sender sending it; its answer is recorded only with that lease.';
comment on column rowgate_private.mail_outbox.leased_until is 'Past this, a claim that was not recorded is void and the message is claimed again.';
comment on column rowgate_private.mail_outbox.sent_at is 'When the mail server accepted it.';
comment on column rowgate_private.mail_outbox.failed_at is 'When its sender gave up after its last attempt failed.';

create function rowgate.record_mail(p_id uuid, p_to text, p_sealed bytea)
returns void
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  -- what was sent or given up a day ago has nothing left to tell
  delete from rowgate_private.mail_outbox m where m.created_at < now() - interval '1 day' and m.sealed_body is null;
  insert into rowgate_private.mail_outbox (id, recipient, sealed_body) values (p_id, lower(p_to), p_sealed);
$$;
comment on function rowgate.record_mail(uuid, text, bytea) is '@behavior -*
Records a sealed message in the writing transaction; a sender sends it after the commit.';
grant execute on function rowgate.record_mail(uuid, text, bytea) to rowgate_anonymous, rowgate_organization, rowgate_user;

create function rowgate_private.claim_mail(p_limit integer, p_lease interval)
returns table (id uuid, lease uuid, attempts integer, sealed_body bytea)
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function rowgate_private.claim_mail(integer, interval) is 'Leases up to p_limit due messages for p_lease; commit before sending. Each outcome is recorded with record_mail_attempt and its lease.';
grant execute on function rowgate_private.claim_mail(integer, interval) to rowgate_authenticator;

create function rowgate_private.record_mail_attempt(p_id uuid, p_lease uuid, p_sent boolean, p_error text, p_retry_delay interval, p_attempts_allowed integer)
returns boolean
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function rowgate_private.record_mail_attempt(uuid, uuid, boolean, text, interval, integer) is 'Records a leased attempt''s outcome (false: the lease was lost, nothing recorded): sent, due again after p_retry_delay, or given up after p_attempts_allowed attempts.';
grant execute on function rowgate_private.record_mail_attempt(uuid, uuid, boolean, text, interval, integer) to rowgate_authenticator;
