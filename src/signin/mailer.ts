// Sending mail (sign-in codes). With SMTP_URL set, through that server
// (nodemailer); otherwise nothing leaves the machine: the message is kept in
// the development outbox, which `npx rowgate mail outbox [--to EMAIL]` prints
// (SPEC §10), so that a newcomer can sign in locally. The log says where it
// went, never what it says: a sign-in code is a credential (SPEC §14).
import { loadConfig, type Config } from '../config.ts';
import type { Mailer } from '../core/mail.ts';

/** The development mailer: a row of the outbox (rowgate_private.mail_outbox), and a log line that shows no code. */
export function outboxMailer(log: (line: string) => void): Mailer {
  return {
    async send(mail, tx) {
      log(`mail to ${mail.to} kept in the development outbox (no SMTP_URL): npx rowgate mail outbox --to ${mail.to}`);
      await tx.rows('select rowgate.record_outbox_mail($1, $2, $3)', [mail.to, mail.subject, mail.text]);
    },
  };
}

/** Delivery through an SMTP server, `smtp://user:password@host:port` or `smtps://…`. */
function smtpMailer(url: string, from: string): Mailer {
  let transport: Promise<{ sendMail(message: object): Promise<unknown> }> | undefined;
  return {
    async send(mail) {
      // loaded on first use: a server without SMTP_URL never loads nodemailer
      transport ??= import('nodemailer').then((nodemailer) => nodemailer.createTransport(url));
      await (await transport).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}

export function createMailer(config: Pick<Config, 'SMTP_URL' | 'MAIL_FROM'>, log: (line: string) => void): Mailer {
  return config.SMTP_URL ? smtpMailer(config.SMTP_URL, config.MAIL_FROM) : outboxMailer(log);
}

/**
 * The mailer the environment configures (SMTP_URL, MAIL_FROM), chosen on the
 * first message: building an app reads no configuration.
 */
export function environmentMailer(log: (line: string) => void): Mailer {
  let mailer: Mailer | undefined;
  return {
    send: (mail, tx) => (mailer ??= createMailer(loadConfig(), log)).send(mail, tx),
  };
}
