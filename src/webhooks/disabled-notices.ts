// An endpoint its failures disabled is told to its organization's managers
// (SPEC §25), once: the database keeps a notice with the change
// (rowgate_private.webhook_disabled_notices), and the sender that recorded the
// failure takes the pending notices and records one mail per manager in the
// outbox, in one transaction; the mail leaves after the commit, like every mail.
import type pg from 'pg';
import type { Mailer } from '../core/mail.ts';

interface DisabledNotice {
  organization_id: string;
  organization_name: string;
  endpoint_id: string;
  url: string;
  email: string;
}

const TAKE = 'select organization_id, organization_name, endpoint_id, url, email from rowgate_private.take_webhook_disabled_notices()';

/** Takes the pending notices and records their mail; a failure leaves them for the next failed attempt of any sender. */
export async function mailDisabledNotices(pool: pg.Pool, mailer: Mailer, log: (line: string) => void): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<DisabledNotice>(TAKE);
    if (rows.length) {
      // the outbox is written as a request without a credential writes it
      await client.query(`select set_config('role', 'rowgate_anonymous', true)`);
      const tx = { rows: (text: string, values?: unknown[]) => client.query(text, values) };
      for (const notice of rows) {
        await mailer.send(
          {
            to: notice.email,
            subject: `A webhook endpoint of ${notice.organization_name} was disabled`,
            text: `The webhook endpoint ${notice.url} (${notice.endpoint_id}) of ${notice.organization_name} failed 10 events in a row and is disabled: no events are sent to it. Fix the receiver, then enable it again with PATCH /v1/webhook-endpoints/${notice.endpoint_id} {"enabled": true}.`,
          },
          tx,
        );
      }
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    log(JSON.stringify({ level: 'warn', msg: 'webhooks: a disabled endpoint could not be told', error: String(error) }));
  } finally {
    client.release();
  }
}
