// What the servers send, seen or done by the operator: the development outbox's
// mail, and webhook deliveries sent by a process of their own.
import { type CommandSpec, count, email, UsageError } from './command-spec.ts';

export const deliveryCommands: Record<string, CommandSpec> = {
  'mail outbox': {
    description: 'the latest messages of the development outbox (kept when no SMTP_URL is set)',
    options: [{ flags: '--to <address>', description: 'only those to this address', parse: email }],
    run: async (db, o, _c, config) => {
      if (config.SMTP_URL) throw new UsageError('SMTP_URL is set: mail goes to that server, and the development outbox stays empty');
      // the readable messages only: what was recorded for a mail server is sealed, and erased once sent
      const { rows } = await db.query(
        `select recipient as "to", subject, body as text, created_at from rowgate_private.mail_outbox
         where body is not null and ($1::text is null or recipient = $1) order by created_at desc, id limit 20`,
        [o.to ?? null],
      );
      return rows;
    },
  },
  // the deployment's senders, apart from its API servers (ROWGATE_WEBHOOKS=off on those): any number of
  // them on any machines share the work through their leases in the database
  'webhooks work': {
    description: 'send webhook deliveries until SIGINT or SIGTERM, without the HTTP API; logs on stderr, {attempts} on stdout at the end',
    options: [
      { flags: '--concurrency <n>', description: 'attempts in flight at once (default 16)', parse: count },
      { flags: '--poll-ms <n>', description: 'the sleep between two looks at the queue when idle (default 250)', parse: count },
    ],
    run: async (_db, o, c, config) => {
      const { WebhookWorker } = await import('../webhooks/worker.ts');
      let attempts = 0;
      const worker = new WebhookWorker({
        connectionString: c.authenticatorUrl,
        secret: c.secret,
        allowLoopback: config.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK === '1',
        leaseMs: config.ROWGATE_WEBHOOKS_LEASE_SECONDS * 1000,
        concurrency: o.concurrency as number | undefined,
        pollMs: o.pollMs as number | undefined,
        log: (line) => process.stderr.write(`${line}\n`),
        onAttempt: () => attempts++,
      });
      await worker.start();
      process.stderr.write(`${JSON.stringify({ level: 'info', msg: 'webhooks: sending', pid: process.pid })}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await worker.stop();
      return { attempts };
    },
  },
};
