// What a request handler sends mail through (sign-in codes). The interface sits
// here, below every layer that passes a mailer along; the mailers themselves
// (SMTP, the development outbox) are src/signin/mailer.ts.

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** The request's transaction as a mailer sees it: a mailer that keeps mail in the database writes there. */
export interface MailTransaction {
  rows(text: string, values?: unknown[]): Promise<unknown>;
}

export interface Mailer {
  /** Sends within the request's transaction: when sending fails, what the request stored is rolled back. */
  send(mail: Mail, tx: MailTransaction): Promise<void>;
}
