// What a request handler sends mail through (sign-in codes, invitations,
// revocation notices). The interface sits here, below every layer that passes a
// mailer along; the mailers themselves (the sealed outbox a sender drains, the
// development outbox) are src/signin/mailer.ts, the sender src/signin/mail-sender.ts.

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** The request's transaction as a mailer sees it: the message is a row written there. */
export interface MailTransaction {
  rows(text: string, values?: unknown[]): Promise<unknown>;
  /** runs once the transaction committed (the sender is woken then); absent: the sender finds it at its next look */
  afterCommit?(task: () => void): void;
}

export interface Mailer {
  /**
   * Records the message in the request's transaction; it is sent after the
   * commit, never while the transaction is open (SPEC §14). A rollback takes it
   * back with the rest.
   */
  send(mail: Mail, tx: MailTransaction): Promise<void>;
}
