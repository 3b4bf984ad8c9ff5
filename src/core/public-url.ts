// Where clients reach this server: the OAuth2 issuer and every URL of its
// metadata (SPEC §16). ROWGATE_PUBLIC_URL, else http://HOST:PORT, set once the
// server listens; the Host header never changes it (a metadata document that
// followed Host named whatever a request claimed, and a client that met the
// server under two names refused its authorization response: `unexpected "iss"`).
import type express from 'express';
import type { Request } from 'express';

/** Set once the server listens (src/server/api.ts). */
export function setPublicUrl(app: express.Express, url: string) {
  app.locals.publicUrl = url;
}

export function publicUrl(req: Request): string {
  const url = req.app.locals.publicUrl;
  if (typeof url !== 'string') throw new Error('the public URL is set when the server listens (setPublicUrl)');
  return url;
}
