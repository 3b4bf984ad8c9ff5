// The web session cookie (SPEC §2): HttpOnly, SameSite=Lax, Secure over HTTPS.
import type { Response } from 'express';
import { SESSION_COOKIE } from './credentials.ts';

/** `expiresAt`: the session's expiry as the database answered it (RFC 3339) */
export function setSessionCookie(res: Response, token: string, expiresAt: string) {
  res.cookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: res.req.secure,
    path: '/',
    expires: new Date(expiresAt),
  });
}

export function clearSessionCookie(res: Response) {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: res.req.secure, path: '/' });
}
