// The OpenAPI document's security: the schemes (a bearer token, the session
// cookie, and OAuth2's authorization code flow with PKCE, whose scopes a client
// such as Swagger UI's Authorize dialog offers), and each operation's
// requirements. An endpoint takes any one of its scopes (SPEC §3), and one
// requirement listing several scopes would mean all of them, so each accepted
// scope is an OAuth2 requirement of its own.
import type { CredentialKind } from '../auth/tokens.ts';
import type { Access, Route } from './route-declaration.ts';

const oauth2Kinds: readonly CredentialKind[] = ['oauth2_user_token', 'oauth2_organization_token'];
/** the subjects an OAuth2 client may act for: users and organizations, never a customer portal's */
const grantableKinds: readonly CredentialKind[] = ['web_session', 'personal_access_token', 'organization_access_token', ...oauth2Kinds];

const fixedDescriptions: Record<string, string> = {
  'user:read': 'Read the signed-in user and its own resources (profile, tokens, clients).',
  'user:write': 'Change or delete the signed-in user and manage its own resources; includes `user:read`.',
  'payouts:read': "Read the payout accounts of the user's organizations (web sessions only).",
  'payouts:write': 'Create and delete payout accounts (web sessions only); includes `payouts:read`.',
  payouts_read: 'Read accounts and transactions as a finance reader of an organization.',
  payouts_write: 'Finance writes of an organization; includes `payouts_read`.',
};

/** What a scope lets a token do, for the reference and the Authorize dialog. */
function describeScope(scope: string, known: ReadonlySet<string>): string {
  const fixed = fixedDescriptions[scope];
  if (fixed) return fixed;
  const match = /^(.+)_(read|write)$/.exec(scope);
  if (!match) return `The \`${scope}\` scope.`;
  const things = match[1]!.replaceAll('_', ' ');
  if (match[2] === 'read') return `Read ${things}.`;
  const read = `${match[1]}_read`;
  return `Create, change and delete ${things}${known.has(read) ? `; includes \`${read}\`` : ''}.`;
}

/** The scopes an OAuth2 client may ask for: every scope of an endpoint that a user or organization credential reaches. */
function grantableScopes(routes: readonly Route[]): string[] {
  const scopes = new Set<string>();
  for (const route of routes) {
    if (route.access?.credentials.some((k) => grantableKinds.includes(k))) for (const s of route.access.scopes) scopes.add(s);
  }
  return [...scopes].sort();
}

export function securitySchemes(routes: readonly Route[]) {
  const scopes = grantableScopes(routes);
  const known = new Set(scopes);
  return {
    ...(routes.some((r) => r.clientAuthentication) ? { oauth2Client: OAUTH2_CLIENT_SCHEME } : {}),
    bearer: {
      type: 'http',
      scheme: 'bearer',
      description:
        'A token: rg_pat_, rg_oat_, rg_at_u_, rg_at_o_, rg_cst_ or rg_mst_. It must carry one of the scopes the operation lists.',
    },
    session: {
      type: 'apiKey',
      in: 'cookie',
      name: 'rowgate_session',
      description: 'The web session cookie (rg_us_); it carries every scope.',
    },
    oauth2: {
      type: 'oauth2',
      description:
        'OAuth2 authorization code with PKCE (S256, required for public clients). Register a client with `POST /v1/oauth2/register`; the authorization server metadata is at `/.well-known/oauth-authorization-server`. The authorization endpoint needs a signed-in browser (a web session).',
      flows: {
        authorizationCode: {
          authorizationUrl: '/v1/oauth2/authorize',
          tokenUrl: '/v1/oauth2/token',
          refreshUrl: '/v1/oauth2/token',
          scopes: Object.fromEntries(scopes.map((s) => [s, describeScope(s, known)])),
        },
      },
    },
  };
}

/** An OAuth2 client's own credentials at the token, revocation and introspection endpoints */
const OAUTH2_CLIENT_SCHEME = {
  type: 'http',
  scheme: 'basic',
  description:
    "An OAuth2 client's `client_id` and `client_secret` (`client_secret_basic`, the default). A client registered with `client_secret_post` sends them in the body instead, and a public client (`none`) its `client_id` alone: each only the way it registered.",
};

/** An endpoint where the OAuth2 client authenticates: HTTP Basic, or nothing in a header (the body carries it) */
export const clientAuthenticationRequirements = (): Record<string, string[]>[] => [{ oauth2Client: [] }, {}];

/** The sentence of the reference saying how the OAuth2 client authenticates */
export const CLIENT_AUTHENTICATION_SENTENCE =
  "**Credentials:** the OAuth2 client's own, only the way it registered: HTTP Basic (`client_secret_basic`), `client_id` and `client_secret` in the body (`client_secret_post`), or `client_id` alone (`none`, a public client); another way is 401 `invalid_client`.";

/** One OAuth2 requirement per accepted scope (any of them will do), a bearer token, a session. */
export function securityRequirements(access: Access): Record<string, string[]>[] {
  const { credentials, scopes } = access;
  const each = scopes.length ? scopes.map((s) => [s]) : [[]];
  return [
    ...(credentials.some((k) => oauth2Kinds.includes(k)) ? each.map((s) => ({ oauth2: s })) : []),
    // an http scheme cannot name scopes (spectral: "must be listed among scopes"); the description lists them
    ...(credentials.some((k) => k !== 'web_session') ? [{ bearer: [] }] : []),
    ...(credentials.includes('web_session') ? [{ session: [] }] : []),
  ];
}
