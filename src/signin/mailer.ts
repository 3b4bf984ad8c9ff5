// Recording mail (sign-in codes, invitations, revocation notices) in the
// writing transaction (SPEC §14). With SMTP_URL set, the message is a row of
// the outbox sealed under the server secret, which a sender (mail-sender.ts)
// sends after the commit and then erases; otherwise nothing leaves the machine:
// the message is kept readable in the development outbox, which
// `npx rowgate mail outbox [--to EMAIL]` prints (SPEC §10), so that a newcomer
// can sign in locally. The log says where it went, never what it says: a
// sign-in code is a credential (SPEC §14).
import { randomUUID } from 'node:crypto';
import { seal } from '../auth/at-rest-encryption.ts';
import { loadConfig, type Config } from '../config.ts';
import type { Mail, Mailer } from '../core/mail.ts';
import { MAIL_PURPOSE, wakeMailSenders } from './mail-sender.ts';

/** The message sealed for its row: a copy moved to another row does not open there. */
export const sealMail = (mail: Mail, secret: string, id: string) => seal(JSON.stringify(mail), secret, MAIL_PURPOSE, id);

/** The development mailer: a row of the outbox (rowgate_private.mail_outbox), and a log line that shows no code. */
export function outboxMailer(log: (line: string) => void): Mailer {
  return {
    async send(mail, tx) {
      log(`mail to ${mail.to} kept in the development outbox (no SMTP_URL): npx rowgate mail outbox --to ${mail.to}`);
      await tx.rows('select rowgate.record_outbox_mail($1, $2, $3)', [mail.to, mail.subject, mail.text]);
    },
  };
}

/** For a mail server: the sealed message in the transaction, and this process's senders woken once it commits. */
export function sealedMailer(secret: string): Mailer {
  return {
    async send(mail, tx) {
      const id = randomUUID();
      await tx.rows('select rowgate.record_mail($1, $2, $3)', [id, mail.to, sealMail(mail, secret, id)]);
      tx.afterCommit?.(wakeMailSenders);
    },
  };
}

export function createMailer(config: Pick<Config, 'SMTP_URL'>, log: (line: string) => void, secret: string): Mailer {
  return config.SMTP_URL ? sealedMailer(secret) : outboxMailer(log);
}

/**
 * The mailer the environment configures (SMTP_URL), chosen on the first
 * message: building an app reads no configuration.
 */
export function environmentMailer(log: (line: string) => void, secret: string): Mailer {
  let mailer: Mailer | undefined;
  return {
    send: (mail, tx) => (mailer ??= createMailer(loadConfig(), log, secret)).send(mail, tx),
  };
}
