// The `rowgate_device` cookie (SPEC §14): set at each successful sign-in and
// kept a year, it marks the owner's own browser, whose requests for sign-in
// codes have a mailbox allowance of their own. Its value is a random device
// token signed with the server secret; the database keeps only the token's
// keyed hash, recorded for the address by the sign-in (rowgate.authenticate_login_code)
// and looked up when a code is asked for (rowgate.request_login_code). A cookie
// whose signature does not verify is no cookie.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { parseCookie } from 'cookie';
import type { Request, Response } from 'express';
import { hashToken, randomToken } from '../auth/tokens.ts';

export const DEVICE_COOKIE = 'rowgate_device';
/** sent only where it counts: asking for a code, and signing in (which renews it) */
const DEVICE_COOKIE_PATH = '/v1/login-code';
const DEVICE_MAX_AGE_MS = 365 * 24 * 3_600_000;
const DEVICE_PREFIX = 'rg_dev_';

const signatureOf = (secret: string, device: string) => createHmac('sha256', secret).update(`rowgate_device:${device}`).digest('base64url');

/** The device token of the request's cookie, if it carries one whose signature verifies */
export function deviceOf(req: Request, secret: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const value = parseCookie(header)[DEVICE_COOKIE];
  if (!value || value.length > 200) return undefined;
  const dot = value.lastIndexOf('.');
  if (dot < 0) return undefined;
  const device = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(signatureOf(secret, device));
  return device.startsWith(DEVICE_PREFIX) && given.length === expected.length && timingSafeEqual(given, expected) ? device : undefined;
}

/** What the database knows a device by */
export const deviceHash = (secret: string, device: string) => hashToken(secret, `device:${device}`);

/** A device token for a browser that has none (or one that does not verify) */
export const newDevice = () => randomToken(DEVICE_PREFIX);

/** Sets (or renews for a year) the browser's device cookie. */
export function setDeviceCookie(req: Request, res: Response, secret: string, device: string) {
  res.cookie(DEVICE_COOKIE, `${device}.${signatureOf(secret, device)}`, {
    httpOnly: true,
    sameSite: 'lax',
    secure: req.secure,
    path: DEVICE_COOKIE_PATH,
    maxAge: DEVICE_MAX_AGE_MS,
  });
}
