// The consent page: what the signed-in user sees before a client gets a code, and the
// Content-Security-Policy that lets its form post here and the redirect reach the client.
import type { CheckedRequest } from './authorize-request.ts';
import { type AuthorizeParams, authorizeFields } from './schemas.ts';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The consent page's policy: its form may post here, and the redirect after it may go to the client. */
export function consentPolicy(redirect: string) {
  const url = new URL(redirect);
  const target = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${target}; frame-ancestors 'none'; base-uri 'none'`;
}

export function consentPage(p: AuthorizeParams, checked: CheckedRequest, userEmail: string) {
  const hidden = Object.keys(authorizeFields)
    .map((key) => [key, p[key as keyof AuthorizeParams]] as const)
    .filter(([, value]) => value !== undefined && value !== '')
    .map(([key, value]) => `<input type="hidden" name="${key}" value="${escapeHtml(value!)}">`)
    .join('\n      ');
  const who = checked.organizationName
    ? `the organization <strong>${escapeHtml(checked.organizationName)}</strong> (you are signed in as ${escapeHtml(userEmail)})`
    : `you, <strong>${escapeHtml(userEmail)}</strong>`;
  const client = escapeHtml(checked.clientName);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize ${client} — rowgate</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .25rem}button{font:inherit;padding:.4rem 1.2rem;margin-right:.5rem}</style>
</head><body><main>
  <h1>Authorize ${client}</h1>
  <p><strong>${client}</strong> asks for access to rowgate acting as ${who}, with these scopes:</p>
  <ul>${checked.scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>
  <p>You will be sent back to <code>${escapeHtml(p.redirect_uri)}</code>.</p>
  <form method="post" action="/v1/oauth2/consent">
      ${hidden}
      <button type="submit" name="action" value="allow">Allow</button>
      <button type="submit" name="action" value="deny">Deny</button>
  </form>
</main></body></html>`;
}
