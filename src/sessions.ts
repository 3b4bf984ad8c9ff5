// The web session cookie (SPEC §2): HttpOnly, SameSite=Lax, Secure over HTTPS.
import type { Response } from 'express';
import { SESSION_COOKIE } from './credentials.ts';

export function setSessionCookie(res: Response, token: string, expiresAt: Date) {
  res.cookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: res.req.secure,
    path: '/',
    expires: expiresAt,
  });
}

export function clearSessionCookie(res: Response) {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: res.req.secure, path: '/' });
}
