// POST /v1/credentials/revoke (SPEC §22): where whoever finds a leaked token (a
// secret scanner, a stranger reading a CI log) has it revoked. It takes no
// credential: presenting a token is the right to revoke it. Each token is
// hashed as the API stores it, with the kind its prefix names, and the database
// revokes every live one among them in the request's transaction
// (rowgate.revoke_reported_tokens), which also writes an organization token's
// event; a mail to the user who created each revoked token is recorded here and
// sent after the commit. The answer is
// 202 `{}` whatever the tokens were, and a 422 repeats none of them, so the
// endpoint tells nobody whether a string was a token. Requests are bounded by
// the anonymous (per client address) rate limit, like every request without a
// valid credential.
import { z } from 'zod';
import { type CredentialKind, hashToken, tokenKind } from '../auth/tokens.ts';
import { anonymousRoute } from '../http/route-declaration.ts';
import type { Mailer } from '../core/mail.ts';
import type { Tx } from '../db/pool.ts';
import { doc } from '../core/fields.ts';

/** At most this many tokens a request (SPEC §22) */
export const REPORTED_TOKENS_MAX = 100;

/** An OAuth2 refresh token (src/oauth2/token-endpoints.ts): revocable here too, though it is no credential of a request */
const REFRESH_TOKEN = /^rg_rt_[0-9A-Za-z]{32,64}$/;

type ReportedKind = CredentialKind | 'oauth2_refresh_token';

/** The kind a reported string names by its prefix and shape; null: it is no token of ours */
export function reportedKind(token: string): ReportedKind | null {
  return tokenKind(token) ?? (REFRESH_TOKEN.test(token) ? 'oauth2_refresh_token' : null);
}

const CredentialsRevoke = z
  .strictObject({
    tokens: doc(
      z
        .array(doc(z.string(), 'A token as it was found (any string: one that is no live token changes nothing).', 'rg_pat_…'))
        .min(1)
        .max(REPORTED_TOKENS_MAX),
      `1 to ${REPORTED_TOKENS_MAX} tokens to revoke.`,
      ['rg_pat_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS'],
    ),
  })
  .meta({ id: 'CredentialsRevoke', description: 'Tokens found where they should not be.' });

const CredentialsRevoked = z
  .strictObject({})
  .meta({ id: 'CredentialsRevoked', description: 'Always empty: the answer says nothing about the tokens.', example: {} });

interface Revoked {
  token_kind: string;
  token_id: string;
  recipient: string | null;
  label: string | null;
}

export const reportedCredentialRoutes = [
  anonymousRoute({
    method: 'post',
    effect: 'writes',
    path: '/v1/credentials/revoke',
    operationId: 'credentials:revoke',
    summary: 'Revoke leaked tokens',
    description: `Revokes every live token named, of any kind (personal and organization access tokens, OAuth2 access and refresh tokens, web, customer and member sessions), at once, and tells whoever created each: a mail to its user, and for an organization access token an \`organization_access_token.deleted\` event of its organization. No credential is needed: presenting a token is the right to revoke it (this is where a secret scanner reports a leaked one). The answer is 202 \`{}\` whatever the tokens were; a malformed body (no list, none or more than ${REPORTED_TOKENS_MAX} items, an item that is not a string) is a 422 that repeats none of them. Counted by the per-address rate limit of requests without a credential.`,
    tag: 'credentials',
    body: CredentialsRevoke,
    secretInput: true,
    status: 202,
    response: CredentialsRevoked,
    errors: [429],
    handler: async ({ tx, body, secret, mailer }) => {
      const kinds: ReportedKind[] = [];
      const hashes: Buffer[] = [];
      for (const token of body.tokens) {
        const kind = reportedKind(token);
        if (!kind) continue;
        kinds.push(kind);
        hashes.push(hashToken(secret, token));
      }
      // asked whatever was sent, so that the work done does not depend on the tokens' shapes
      const revoked = await tx.rows<Revoked>('select token_kind, token_id, recipient, label from rowgate.revoke_reported_tokens($1, $2)', [
        kinds,
        hashes,
      ]);
      await tellCreators(mailer, tx, revoked);
      return {};
    },
  }),
];

/** One mail to each creator, naming the tokens (never the token itself) */
async function tellCreators(mailer: Mailer, tx: Tx, revoked: Revoked[]) {
  const byRecipient = new Map<string, Revoked[]>();
  for (const row of revoked) {
    if (!row.recipient || !row.label) continue;
    byRecipient.set(row.recipient, [...(byRecipient.get(row.recipient) ?? []), row]);
  }
  for (const [to, rows] of byRecipient) {
    const list = rows.map((r) => `- your ${r.label} (id ${r.token_id})`).join('\n');
    const text = `These rowgate credentials were reported as exposed (for instance by a secret scanner that found them in a public place) and have been revoked:\n\n${list}\n\nRequests made with them are now refused. If you still need access, create a new token and keep it out of code, logs and chats.\n`;
    const subject = rows.length === 1 ? 'A rowgate token of yours was revoked' : 'rowgate tokens of yours were revoked';
    // recorded with the revocation and sent after it commits: a mail server that fails cannot bring a leaked token back to life
    await mailer.send({ to, subject, text }, tx);
  }
}
