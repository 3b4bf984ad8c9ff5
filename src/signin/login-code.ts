// Signing in by e-mail code, and signing out (SPEC §12). The code is made here
// and mailed; the database keeps only its keyed hash, bound to the address and
// to the attempt that asked for it, and decides every bound: how long a code
// lasts, how many codes a client may ask for, and how many wrong codes an
// attempt allows (rowgate.request_login_code, rowgate.authenticate_login_code).
// The attempt's token goes back in the body and in the `rowgate_signin` cookie;
// a code works only with its attempt, so a client that did not ask for it
// cannot guess it.
import { parseCookie } from 'cookie';
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, unauthorized } from '../core/errors.ts';
import { access, anonymousRoute, route } from '../http/route-declaration.ts';
import { doc } from '../core/fields.ts';
import { clearSessionCookie, setSessionCookie } from '../auth/session-cookie.ts';
import { generateToken, hashToken, randomCharacters, randomToken } from '../auth/tokens.ts';
import { UserRead } from '../resources/users.ts';
import { requestClient } from '../core/client-address.ts';
import { deviceHash, deviceOf, newDevice, setDeviceCookie } from './device-cookie.ts';
import { explain } from '../http/explanation.ts';

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

/** The cookie that carries a sign-in attempt from its request to its code, on the sign-in paths only */
export const SIGNIN_COOKIE = 'rowgate_signin';
const SIGNIN_COOKIE_PATH = '/v1/login-code';
const ATTEMPT_PREFIX = 'rg_sia_';

/** The keyed hash of an attempt token (the database keeps only that) */
const attemptHash = (secret: string, attempt: string) => hashToken(secret, `signin_attempt:${attempt}`);

const email = doc(z.email().max(320), 'The e-mail address to sign in with (case does not matter).', 'ada@example.com');

const LoginCodeRequest = z.strictObject({ email }).meta({ id: 'LoginCodeRequest', description: 'Where to send a sign-in code.' });

const LoginCodeRequested = z
  .object({
    attempt: doc(
      z.string(),
      'The sign-in attempt the code belongs to: send it back with the code (also set as the `rowgate_signin` cookie).',
      'rg_sia_3kTq9ZbW2xYhV7mN0pLr5sDcF8gJ1aQeUo4iK6tBnMz',
    ),
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
    attempt: doc(
      z.string().min(1).max(128).optional(),
      'The attempt answered when the code was asked for; without it, the `rowgate_signin` cookie.',
      'rg_sia_3kTq9ZbW2xYhV7mN0pLr5sDcF8gJ1aQeUo4iK6tBnMz',
    ),
  })
  .meta({ id: 'LoginCodeAuthenticate', description: 'An address, the code mailed to it and the attempt it was issued to.' });

/** The attempt of the `rowgate_signin` cookie, if the request carries one */
function signinCookie(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const value = parseCookie(header)[SIGNIN_COOKIE];
  return value && value.length <= 128 ? value : undefined;
}

const userColumns = ['id', 'email', 'name', 'avatar_url', 'is_admin', 'created_at', 'updated_at'] as const;

export const loginCodeRoutes = [
  anonymousRoute({
    method: 'post',
    effect: 'writes',
    path: '/v1/login-code/request',
    operationId: 'login_code:request',
    summary: 'Send a sign-in code by e-mail',
    description:
      'Mails a code valid 15 minutes to the address, whether or not a user has it (202 either way; the first sign-in creates the user), and answers the attempt the code belongs to, also set as the `rowgate_signin` cookie. The mail leaves after the request commits; without a configured mail server the code goes to the development outbox only (`npx rowgate mail outbox`). A client address may ask for 5 codes an hour for one e-mail address and 20 an hour in all (429, the same for known and unknown addresses). One address receives at most 10 codes an hour from requests of unknown origin; the browser holding the `rowgate_device` cookie of the account, and each network (IPv4 /24, IPv6 /64) that signed in to the account in the last 30 days, have 10 an hour of their own. Past that the answer is the same 202 and nothing is mailed.',
    tag: 'sign-in',
    body: LoginCodeRequest,
    status: 202,
    response: LoginCodeRequested,
    errors: [429],
    handler: async ({ tx, body, secret, mailer, req, res }) => {
      const address = body.email.toLowerCase();
      const code = generateLoginCode();
      const attempt = randomToken(ATTEMPT_PREFIX);
      const device = deviceOf(req, secret);
      // the database decides whose mailbox allowance this is (the owner's browser, a network it
      // signed in from, or unknown) and whether the code is mailed: past the allowance the answer is the same
      const row = await tx.one<{ status: 'created' | 'rate_limited'; expires_in: number; retry_after: number; mail: boolean }>(
        'select status, expires_in, retry_after, mail from rowgate.request_login_code($1, $2, $3, $4, $5)',
        [
          address,
          loginCodeHash(secret, address, code),
          attemptHash(secret, attempt),
          requestClient(req),
          device ? deviceHash(secret, device) : null,
        ],
      );
      if (row!.status !== 'created') {
        throw new ApiError(
          429,
          'TooManyRequests',
          `Too many sign-in codes were asked for from this client; try again in ${minutes(row!.retry_after)}`,
          {
            'Retry-After': String(row!.retry_after),
          },
        );
      }
      const shown = `${code.slice(0, 4)}-${code.slice(4)}`;
      // recorded in this transaction, sent after it commits
      if (row!.mail)
        await mailer.send(
          {
            to: address,
            subject: `Your rowgate sign-in code: ${shown}`,
            text: `Your rowgate sign-in code is ${shown}\n\nIt is valid for ${minutes(row!.expires_in)}. If you did not ask to sign in, ignore this message.\n`,
          },
          tx,
        );
      res.cookie(SIGNIN_COOKIE, attempt, {
        httpOnly: true,
        sameSite: 'lax',
        secure: req.secure,
        path: SIGNIN_COOKIE_PATH,
        maxAge: row!.expires_in * 1000,
      });
      return { attempt, email: address, expires_in: row!.expires_in };
    },
  }),
  anonymousRoute({
    method: 'post',
    effect: 'writes',
    path: '/v1/login-code/authenticate',
    operationId: 'login_code:authenticate',
    summary: 'Sign in with an e-mail code',
    description:
      'Checks the code mailed to the address, with the attempt it was issued to (from the body, else the `rowgate_signin` cookie), and signs in: answers the user (created on the first sign-in) and sets the `rowgate_session` cookie (a 31-day web session) and the `rowgate_device` cookie (this browser, kept a year: its later requests for codes have a mailbox allowance of their own). A wrong, used or expired code, or a code with another attempt or none, is a 401; after 5 wrong codes the attempt is over (every later code is a 401, the right one too: ask for a new code).',
    tag: 'sign-in',
    body: LoginCodeAuthenticate,
    status: 200,
    response: UserRead,
    errors: [401],
    handler: async ({ tx, body, secret, req, res }) => {
      const address = body.email.toLowerCase();
      const attempt = body.attempt ?? signinCookie(req);
      // no attempt: nothing to count against, and no code can match
      if (!attempt) return unauthorized('The code is wrong, used or expired', false);
      const token = generateToken('web_session');
      // the browser keeps its device (renewed), or gets one: the sign-in records it, and the client's network, as the account's
      const device = deviceOf(req, secret) ?? newDevice();
      const row = await tx.one<Record<(typeof userColumns)[number], unknown> & { status: string; session_expires_at: string }>(
        `select status, ${userColumns.join(', ')}, session_expires_at from rowgate.authenticate_login_code($1, $2, $3, $4, $5, $6)`,
        [
          address,
          loginCodeHash(secret, address, body.code),
          attemptHash(secret, attempt),
          hashToken(secret, token),
          requestClient(req),
          deviceHash(secret, device),
        ],
      );
      // returned, not thrown: the wrong code is counted against its attempt and committed
      if (row?.status !== 'ok') return unauthorized('The code is wrong, used or expired', false);
      res.clearCookie(SIGNIN_COOKIE, { httpOnly: true, sameSite: 'lax', secure: req.secure, path: SIGNIN_COOKIE_PATH });
      setSessionCookie(res, token, row.session_expires_at);
      setDeviceCookie(req, res, secret, device);
      return Object.fromEntries(userColumns.map((c) => [c, row[c]]));
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/auth/logout',
    operationId: 'auth:logout',
    explanation: explain.none,
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
