// The consent page: what the signed-in user sees before a client gets a code, and the
// Content-Security-Policy that lets its form post here and the redirect reach the client.
import type { CheckedRequest } from './authorize-request.ts';
import { type AuthorizeParams, authorizeFields } from './schemas.ts';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Where a redirect URI leads: its origin, or a native app's private-use scheme. */
function destination(redirect: string) {
  const url = new URL(redirect);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/** The consent page's policy: its form may post here, and the redirect after it may go to the client. */
export function consentPolicy(redirect: string) {
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${destination(redirect)}; frame-ancestors 'none'; base-uri 'none'`;
}

/** The error page's policy: nothing but its own inline style; its one link leaves by the user's click. */
export const errorPagePolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * What the authorization endpoint shows instead of redirecting on an error (RFC
 * 9700 §4.11.2): any signed-in user can register a client, so its redirect URI
 * is not trusted to receive the user agent unasked; the user reads the error and
 * follows the link back (RFC 6749 §4.1.2.1's parameters, `iss` among them) or not.
 */
export function authorizationErrorPage(clientName: string, error: string, description: string, back: string) {
  const client = escapeHtml(clientName);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorization failed — rowgate</title>
<style>${STYLE}</style>
</head><body><main>
  <h1>${client} sent a request rowgate cannot grant</h1>
  <p><code>${escapeHtml(error)}</code>: ${escapeHtml(description)}</p>
  <p>No access was given. Return to <strong>${client}</strong> only if you trust it:</p>
  <p><a href="${escapeHtml(back)}" rel="noreferrer">Back to ${client}</a> (<code>${escapeHtml(destination(back))}</code>)</p>
</main></body></html>`;
}

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .25rem}button{font:inherit;padding:.4rem 1.2rem;margin-right:.5rem}';

export function consentPage(p: AuthorizeParams, checked: CheckedRequest, userEmail: string) {
  // the form asks for what the page offers: the scopes left out are not posted back
  const posted: AuthorizeParams = checked.withheld ? { ...p, scope: checked.scopes.join(' ') } : p;
  const hidden = Object.keys(authorizeFields)
    .map((key) => [key, posted[key as keyof AuthorizeParams]] as const)
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
<style>${STYLE}</style>
</head><body><main>
  <h1>Authorize ${client}</h1>
  <p><strong>${client}</strong> asks for access to rowgate acting as ${who}, with these scopes:</p>
  <ul>${checked.scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>
  ${checked.withheld ? `<p>${escapeHtml(checked.withheld)}.</p>` : ''}
  <p>You will be sent back to <code>${escapeHtml(p.redirect_uri)}</code>.</p>
  <form method="post" action="/v1/oauth2/consent">
      ${hidden}
      <button type="submit" name="action" value="allow">Allow</button>
      <button type="submit" name="action" value="deny">Deny</button>
  </form>
</main></body></html>`;
}
