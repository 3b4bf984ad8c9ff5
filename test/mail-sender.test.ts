// Mail after commit (SPEC §14): sign-in codes are recorded in the request's
// transaction, sealed, and sent by a leasing sender once it commits; a mail
// server that stalls delays mail, never an answer or a pool connection; a
// sender that dies past its lease has its message sent again; a sent message's
// body is erased. Against a real database and a small SMTP server of the test.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { trustedProxies } from '../src/core/client-address.ts';
import { inTransaction } from '../src/db/pool.ts';
import { MailSender, type MailSenderOptions } from '../src/signin/mail-sender.ts';
import { sealedMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { smtpServer, type TestSmtpServer } from './smtp-server.ts';

let app: TestApp;
beforeAll(async () => {
  // the harness's pool has 4 connections: few, so that requests waiting on mail would exhaust it
  // loaded once here, so that the first test measures the wake, not the module's loading
  await import('nodemailer');
  app = await startTestApp({ operating: { trustedProxies: trustedProxies('127.0.0.1') }, mailer: (secret) => sealedMailer(secret) });
});
afterAll(async () => app?.close());

const started: { sender: MailSender; smtp: TestSmtpServer }[] = [];
afterEach(async () => {
  for (const { sender, smtp } of started.splice(0)) {
    smtp.release();
    await sender.stop();
    await smtp.close();
  }
});

async function sending(options: Partial<MailSenderOptions> & { stalled?: boolean } = {}) {
  const smtp = await smtpServer({ stalled: options.stalled });
  const sender = new MailSender({
    connectionString: app.authenticatorUrl,
    secret: app.secret,
    smtpUrl: smtp.url,
    from: 'rowgate <auth@example.com>',
    // a sender that is not woken looks rarely: what is prompt here is the wake after the commit
    pollMs: 5_000,
    log: () => {},
    ...options,
  });
  started.push({ sender, smtp });
  return { sender, smtp };
}

let clients = 0;
const newEmail = () => `mail.${randomUUID().slice(0, 8)}@example.com`;
const requestCode = (email: string) =>
  app.request('POST', '/v1/login-code/request', { body: { email }, headers: { 'x-forwarded-for': `198.51.${++clients}.7` } });

async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const codeIn = (message: string) => /code is ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(message)?.[1];
const outboxRow = async (email: string) =>
  (await app.sql<Record<string, unknown>>('select * from rowgate_private.mail_outbox where recipient = $1', [email]))[0]!;

test('a healthy mail server gets the code once the answer has committed it', async () => {
  const { sender, smtp } = await sending();
  await sender.start();
  const email = newEmail();
  const res = await requestCode(email);
  expect(res.status).toBe(202);
  await until('the code is mailed', () => smtp.messages.length === 1);
  expect(smtp.received.join('')).toContain(`RCPT TO:<${email}>`);
  expect(smtp.received.join('')).toContain('MAIL FROM:<auth@example.com>');
  expect(codeIn(smtp.messages[0]!)).toBeDefined();
});

test('a stalled mail server holds no answer and no pool connection; the mail goes out once it answers', async () => {
  // the server stays silent longer than the test may last: an answer that waited on it would never come in time
  const { sender, smtp } = await sending({ stalled: true, timeouts: { greetingMs: 60_000, messageMs: 65_000 }, leaseMs: 70_000 });
  await sender.start();
  const emails = Array.from({ length: 20 }, newEmail);
  // 20 requests on a pool of 4, answered while every message the sender has in flight waits on the server
  const answers = await Promise.all(emails.map(requestCode));
  expect(answers.map((r) => r.status)).toEqual(Array(20).fill(202));
  await until('the sender is waiting on the server', () => smtp.connections > 0);
  expect(smtp.messages).toEqual([]);
  expect((await app.request('GET', '/v1/users/me', { session: (await app.user()).session })).status).toBe(200);
  expect(app.pool.waitingCount).toBe(0);
  smtp.release();
  await until('every code is mailed', () => smtp.messages.length === 20, 15_000);
  const recipients = smtp.received.join('').match(/RCPT TO:<[^>]+>/g)!;
  expect(new Set(recipients)).toEqual(new Set(emails.map((e) => `RCPT TO:<${e}>`)));
});

test('a message is sealed until sent, then erased; the code it carried signs in', async () => {
  const email = newEmail();
  const asked = await requestCode(email);
  expect(asked.status).toBe(202);
  const before = await outboxRow(email);
  expect(before.subject).toBeNull();
  expect(before.body).toBeNull();
  expect(before.sealed_body).toBeInstanceOf(Buffer);
  const { sender, smtp } = await sending();
  await sender.start();
  await until('the code is mailed', () => smtp.messages.length === 1);
  const code = codeIn(smtp.messages[0]!)!;
  expect(code).toBeDefined();
  // nothing of the message was readable in the database
  const stored = JSON.stringify(before) + (before.sealed_body as Buffer).toString('latin1');
  expect(stored).not.toContain(code);
  expect(stored).not.toContain('sign-in code');
  await until('the outcome is recorded', async () => (await outboxRow(email)).sent_at !== null);
  const after = await outboxRow(email);
  expect(after).toMatchObject({ sealed_body: null, subject: null, body: null, lease: null, attempts: 1, failed_at: null });
  const signedIn = await app.request('POST', '/v1/login-code/authenticate', { body: { email, code, attempt: asked.body.attempt } });
  expect(signedIn.status).toBe(200);
});

test('a sender that dies with a message claimed: another sends it once the lease runs out (at least once)', async () => {
  const email = newEmail();
  expect((await requestCode(email)).status).toBe(202);
  // a sender claims it and dies before recording anything
  const claimed = await app.sql<{ id: string }>(
    `select id from rowgate_private.claim_mail(10, interval '1500 milliseconds') where id = (select id from rowgate_private.mail_outbox where recipient = $1)`,
    [email],
  );
  expect(claimed).toHaveLength(1);
  const { sender, smtp } = await sending({ pollMs: 100 });
  await sender.start();
  await new Promise((resolve) => setTimeout(resolve, 700));
  expect(smtp.messages).toEqual([]); // still leased
  await until('sent after the lease', () => smtp.messages.length === 1, 5_000);
  await until('the outcome is recorded', async () => (await outboxRow(email)).sent_at !== null);
  expect(await outboxRow(email)).toMatchObject({ attempts: 2, sealed_body: null });
});

test('a mail server that fails: tried again after the backoff, and sent when it answers', async () => {
  const { sender, smtp } = await sending({
    stalled: true,
    timeouts: { greetingMs: 300, messageMs: 1_000 },
    leaseMs: 3_000,
    retryDelayMs: () => 500,
    pollMs: 100,
  });
  await sender.start();
  const email = newEmail();
  expect((await requestCode(email)).status).toBe(202);
  await until('the first attempt fails', async () => (await outboxRow(email)).last_error !== null, 5_000);
  const failed = await outboxRow(email);
  expect(failed).toMatchObject({ attempts: 1, sent_at: null, lease: null });
  expect(failed.sealed_body).toBeInstanceOf(Buffer);
  expect(failed.last_error).toMatch(/greeting|timeout/i);
  smtp.release();
  await until('sent on a later attempt', () => smtp.messages.length === 1, 5_000);
  await until('the outcome is recorded', async () => (await outboxRow(email)).sent_at !== null);
  expect((await outboxRow(email)).sealed_body).toBeNull();
});

test('mail recorded in a transaction that rolls back is never sent', async () => {
  const { sender, smtp } = await sending({ pollMs: 100 });
  await sender.start();
  const email = newEmail();
  const mailer = sealedMailer(app.secret);
  await expect(
    inTransaction(app.pool, async (tx) => {
      await tx.rows(`select set_config('role', 'rowgate_anonymous', true)`);
      await mailer.send({ to: email, subject: 'Hello', text: 'never' }, tx);
      throw new Error('the change fails');
    }),
  ).rejects.toThrow('the change fails');
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect(smtp.connections).toBe(0);
  expect(await app.sql('select 1 from rowgate_private.mail_outbox where recipient = $1', [email])).toEqual([]);
});
