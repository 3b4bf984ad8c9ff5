// Signing in by e-mail code, and signing out (SPEC §12). The code is made here
// and mailed; the database keeps only its keyed hash, bound to the address, and
// decides how long a code lasts and how many an address may ask for (migration
// 000008: request_login_code answers both). Wrong guesses are limited per
// guessing address by src/operating (docs/decisions.md).
import { z } from 'zod';
import { ApiError, unauthorized } from '../http/errors.ts';
import { access, anonymousRoute, route } from '../http/route.ts';
import { doc } from '../resources/fields.ts';
import { clearSessionCookie, setSessionCookie } from './session-cookie.ts';
import { generateToken, hashToken, randomCharacters } from '../auth/tokens.ts';
import { UserRead } from '../resources/users.ts';
import { codeChecked } from '../operating/code-attempts.ts';

/** 32 letters and digits without the look-alikes I, O, 0 and 1: 8 of them are 40 bits */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 8;

/** "15 minutes", "1 minute": how people read a duration the database gave in seconds */
const minutes = (seconds: number) => {
  const n = Math.max(1, Math.ceil(seconds / 60));
  return `${n} minute${n === 1 ? '' : 's'}`;
};

const generateLoginCode = () => randomCharacters(CODE_LENGTH, CODE_ALPHABET);

/** What a person types, as the code was made: case, spaces and dashes do not matter. */
const normalizeLoginCode = (typed: string) => typed.toUpperCase().replace(/[\s-]/g, '');

/** The keyed hash of a code, bound to its address (a code is good for that address only). */
const loginCodeHash = (secret: string, email: string, code: string) =>
  hashToken(secret, `login_code:${email.toLowerCase()}:${normalizeLoginCode(code)}`);

const email = doc(z.email().max(320), 'The e-mail address to sign in with (case does not matter).', 'ada@example.com');

const LoginCodeRequest = z.strictObject({ email }).meta({ id: 'LoginCodeRequest', description: 'Where to send a sign-in code.' });

const LoginCodeRequested = z
  .object({
    email: doc(z.string(), 'The address the code was sent to (lower-case).', 'ada@example.com'),
    expires_in: doc(z.number().int(), 'Seconds the code stays valid.', 900),
  })
  .meta({
    id: 'LoginCodeRequested',
    description: 'A code is on its way, whether or not a user has this address (the first sign-in creates the user).',
  });

const LoginCodeAuthenticate = z
  .strictObject({
    email,
    code: doc(z.string().min(1).max(64), 'The code from the e-mail (case, spaces and dashes do not matter).', 'K7QM-4XPA'),
  })
  .meta({ id: 'LoginCodeAuthenticate', description: 'An address and the code mailed to it.' });

const userColumns = ['id', 'email', 'name', 'avatar_url', 'is_admin', 'created_at', 'updated_at'] as const;

export const loginCodeRoutes = [
  anonymousRoute({
    method: 'post',
    path: '/v1/login-code/request',
    operationId: 'login_code:request',
    summary: 'Send a sign-in code by e-mail',
    description:
      'Mails a code valid 15 minutes to the address, whether or not a user has it (202 either way; the first sign-in creates the user). Without a configured mail server the code goes to the development outbox only (`npx rowgate mail outbox`). At most 5 codes per address per 15 minutes (429).',
    tag: 'sign-in',
    body: LoginCodeRequest,
    status: 202,
    response: LoginCodeRequested,
    errors: [429],
    handler: async ({ tx, body, secret, mailer }) => {
      const address = body.email.toLowerCase();
      const code = generateLoginCode();
      const row = await tx.one<{ status: 'created' | 'rate_limited'; expires_in: number; retry_after: number }>(
        'select status, expires_in, retry_after from rowgate.request_login_code($1, $2)',
        [address, loginCodeHash(secret, address, code)],
      );
      if (row!.status !== 'created') {
        throw new ApiError(
          429,
          'TooManyRequests',
          `Too many codes were asked for this address; try again in ${minutes(row!.retry_after)}`,
          {
            'Retry-After': String(row!.retry_after),
          },
        );
      }
      const shown = `${code.slice(0, 4)}-${code.slice(4)}`;
      await mailer.send(
        {
          to: address,
          subject: `Your rowgate sign-in code: ${shown}`,
          text: `Your rowgate sign-in code is ${shown}\n\nIt is valid for ${minutes(row!.expires_in)}. If you did not ask to sign in, ignore this message.\n`,
        },
        tx,
      );
      return { email: address, expires_in: row!.expires_in };
    },
  }),
  anonymousRoute({
    method: 'post',
    path: '/v1/login-code/authenticate',
    operationId: 'login_code:authenticate',
    summary: 'Sign in with an e-mail code',
    description:
      'Checks the code mailed to the address and signs in: answers the user (created on the first sign-in) and sets the `rowgate_session` cookie (a 31-day web session). A wrong, used or expired code is a 401; wrong codes cost the address that sends them (10 per 15 minutes, then 429) and never stop the codes mailed to the owner.',
    tag: 'sign-in',
    body: LoginCodeAuthenticate,
    status: 200,
    response: UserRead,
    errors: [401],
    handler: async ({ tx, body, secret, res }) => {
      const address = body.email.toLowerCase();
      const token = generateToken('web_session');
      const row = await tx.one<Record<(typeof userColumns)[number], unknown> & { status: string; session_expires_at: string }>(
        `select status, ${userColumns.join(', ')}, session_expires_at from rowgate.authenticate_login_code($1, $2, $3)`,
        [address, loginCodeHash(secret, address, body.code), hashToken(secret, token)],
      );
      // the attempt's wrong-code point stays spent only if the code was wrong (the rate limits reserved it)
      codeChecked(res, row?.status === 'ok');
      // returned, not thrown: the failed attempt is counted and committed
      if (row?.status !== 'ok') return unauthorized('The code is wrong, used or expired', false);
      setSessionCookie(res, token, row.session_expires_at);
      return Object.fromEntries(userColumns.map((c) => [c, row[c]]));
    },
  }),
  route({
    method: 'post',
    path: '/v1/auth/logout',
    operationId: 'auth:logout',
    summary: 'Sign out',
    description: 'Revokes the web session of this request server-side and clears the cookie.',
    tag: 'sign-in',
    access: access.webUserRead,
    actsOnCredential: true,
    status: 204,
    handler: async ({ tx, res }) => {
      await tx.one('select rowgate.revoke_current_session() as revoked');
      clearSessionCookie(res);
    },
  }),
];
