// Access classes (SPEC §3, §4): every endpoint of the route table × every credential
// kind. The cases are generated from each route's declared access, so a route added
// to src/server/route-table.ts is covered without touching this file.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isAnonymous, type ApiRoute } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { credentialKinds, generateToken, type CredentialKind } from '../src/auth/tokens.ts';
import { expectInsufficientScope, expectUnauthorized } from './expect-api.ts';
import { startTestApp, type ApiResponse, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
/** every scope a token can hold, and the scope each implies */
let scopeUniverse: { name: string; implies: string | null }[];
/** the scopes of an impersonation session */
let readScopes: string[];
beforeAll(async () => {
  app = await startTestApp();
  scopeUniverse = await app.sql(`select name, implies from rowgate_private.scopes where name not like 'customer_portal_%' order by name`);
  [{ read_scopes: readScopes }] = (await app.sql('select rowgate_private.read_scopes()')) as [{ read_scopes: string[] }];
});
afterAll(async () => app?.close());

const routes = apiRoutes.filter((r): r is ApiRoute => r.access !== null && !isAnonymous(r.access));
/** the routes that take no credential (sign-in, the OAuth2 token endpoints): tested at the end */
const anonymousRoutes = apiRoutes.filter((r): r is ApiRoute => r.access !== null && isAnonymous(r.access));

/** How each kind names itself in a 401 detail. A new kind is a compile error here until it is added. */
const credentialWords: Record<CredentialKind, RegExp> = {
  web_session: /web session/i,
  personal_access_token: /personal access token/i,
  organization_access_token: /organization access token/i,
  oauth2_user_token: /OAuth2 user token/i,
  oauth2_organization_token: /OAuth2 organization token/i,
  customer_session: /customer session/i,
  member_session: /member session/i,
};

interface Minted {
  options: RequestOptions;
  /** the subject's user, to look at after the request */
  user: TestUser;
}
type Minter = (scopes: readonly string[]) => Promise<Minted>;

const bearer = (token: string): RequestOptions => ({ headers: { authorization: `Bearer ${token}` } });
const cookie = (token: string): RequestOptions => ({ headers: { cookie: `rowgate_session=${token}` } });

/**
 * The kinds the harness can mint, live, with chosen scopes (a web session carries
 * every scope whatever is asked). Kinds missing here get only the tests that need
 * no live token; the two lists asserted below say which.
 */
const minters: Partial<Record<CredentialKind, Minter>> = {
  web_session: async () => {
    const user = await app.user();
    return { user, options: cookie(user.session) };
  },
  personal_access_token: async (scopes) => {
    const user = await app.user();
    return { user, options: bearer(await app.pat(user.id, [...scopes])) };
  },
  oauth2_user_token: async (scopes) => {
    const user = await app.user();
    return { user, options: bearer(await app.oauthUserToken(user.id, [...scopes])) };
  },
};
const mintable = credentialKinds.filter((k) => minters[k]);

/**
 * Live credentials of the other kinds, for the refusals only (an organization's
 * tokens with the scopes asked; customer and member sessions carry theirs).
 */
const otherMinters: Partial<Record<CredentialKind, Minter>> = {
  organization_access_token: async (scopes) => {
    const user = await app.user();
    const org = await app.organization(user.id);
    return { user, options: bearer(await app.oat(org.id, [...scopes])) };
  },
  oauth2_organization_token: async (scopes) => {
    const user = await app.user();
    const org = await app.organization(user.id);
    return { user, options: bearer(await app.oauthOrganizationToken(user.id, org.id, [...scopes])) };
  },
  customer_session: async () => {
    const user = await app.user();
    const customer = await app.customer((await app.organization(user.id)).id);
    return { user, options: bearer(await app.customerSession(customer)) };
  },
  member_session: async () => {
    const user = await app.user();
    const customer = await app.customer((await app.organization(user.id)).id);
    return { user, options: bearer(await app.memberSession(await app.customerMember(customer))) };
  },
};
const liveMinter = (kind: CredentialKind) => minters[kind] ?? otherMinters[kind]!;

test('every kind can be minted live for the refusals', () => {
  expect(credentialKinds.filter((k) => !minters[k] && !otherMinters[k])).toEqual([]);
});

test('the kinds the harness can mint (adding one is a change here)', () => {
  expect(mintable).toEqual(['web_session', 'personal_access_token', 'oauth2_user_token']);
});

test('the kinds some route accepts that the harness cannot mint yet (their allowed/403 cases are not generated)', () => {
  const accepted = new Set(routes.flatMap((r) => r.access.credentials));
  expect(credentialKinds.filter((k) => accepted.has(k) && !minters[k])).toEqual([
    'organization_access_token',
    'oauth2_organization_token',
    'customer_session',
    'member_session',
  ]);
});

test('the route table has API routes, each with credentials and scopes (none: the explanations, SPEC §20)', () => {
  expect(routes.length).toBeGreaterThanOrEqual(6);
  for (const r of routes) {
    expect(r.access.credentials.length, r.operationId).toBeGreaterThan(0);
    if (!r.operationId.startsWith('authorization:')) expect(r.access.scopes.length, r.operationId).toBeGreaterThan(0);
  }
});

test.each(routes.map((r) => ({ route: r, name: `${r.method.toUpperCase()} ${r.path}` })))(
  '$name names only scopes that exist',
  async ({ route }) => {
    const known = new Set((await app.sql<{ name: string }>('select name from rowgate_private.scopes')).map((s) => s.name));
    expect(route.access.scopes.filter((s) => !known.has(s))).toEqual([]);
  },
);

/** Calls the route with made-up path parameters and, when it takes one, an empty JSON body. */
function callRoute(route: ApiRoute, options: RequestOptions): Promise<ApiResponse> {
  const path = route.path.replace(/\{\w+\}/g, () => randomUUID());
  return app.request(route.method.toUpperCase(), path, { ...options, ...(route.body ? { body: {} } : {}) });
}

/** Authenticated and past the scope check: anything but 401/403, and no server error. */
function expectAdmitted(res: ApiResponse) {
  expect([401, 403], JSON.stringify(res.body)).not.toContain(res.status);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
}

function expectNamesAccepted(res: ApiResponse, route: ApiRoute) {
  for (const kind of route.access.credentials) expect(res.body.detail).toMatch(credentialWords[kind]);
}

/** Whether a token holding `scopes` passes a check needing any of `anyOf`, write implying read. */
function holdsAny(scopes: readonly string[], anyOf: readonly string[]) {
  const implied = scopes.flatMap((s) => [s, ...scopeUniverse.filter((u) => u.name === s && u.implies).map((u) => u.implies!)]);
  return implied.some((s) => anyOf.includes(s));
}

for (const route of routes) {
  const { credentials, scopes } = route.access;
  describe(`${route.method.toUpperCase()} ${route.path} (${credentials.join(', ')}; ${scopes.join(' | ')})`, () => {
    test('no credential → 401 naming the accepted credentials', async () => {
      const res = await callRoute(route, {});
      expectUnauthorized(res, false);
      expectNamesAccepted(res, route);
      for (const kind of credentialKinds.filter((k) => !credentials.includes(k))) {
        expect(res.body.detail).not.toMatch(credentialWords[kind]);
      }
    });

    // a good token of another kind: 401 without error="invalid_token" (the token is
    // fine, the endpoint wants another kind: SPEC §16); one never issued: invalid_token
    const refused = credentialKinds.filter((k) => !credentials.includes(k));
    test.each(
      refused.flatMap((kind) => [
        { kind, live: true },
        { kind, live: false },
      ]),
    )('a $kind (live: $live) → 401 naming the accepted credentials, invalid_token only when not live', async ({ kind, live }) => {
      // as privileged as the kind can be: the route's scopes it can hold, or else every scope
      const holdable = scopes.filter((s) => scopeUniverse.some((u) => u.name === s));
      const minted = live ? await liveMinter(kind)(holdable.length ? holdable : scopeUniverse.map((u) => u.name)) : undefined;
      const neverIssued = kind === 'web_session' ? cookie(generateToken(kind)) : bearer(generateToken(kind));
      const res = await callRoute(route, minted?.options ?? neverIssued);
      expectUnauthorized(res, !live);
      expectNamesAccepted(res, route);
      expect(res.body.detail).toMatch(credentialWords[kind]);
      if (minted)
        expect((await app.sql('select deleted_at from rowgate.users where id = $1', [minted.user.id]))[0]).toEqual({ deleted_at: null });
    });

    const accepted = credentials.filter((k) => minters[k]);

    // a token holding every scope but those that satisfy the route
    // a route naming no scope (SPEC §20's explanations) takes any valid credential
    const chosenScopes = scopes.length ? accepted.filter((k) => k !== 'web_session') : [];
    test.each(chosenScopes)('a %s lacking every accepted scope → 403 InsufficientScope', async (kind) => {
      const lacking = scopeUniverse.map((s) => s.name).filter((s) => !holdsAny([s], scopes));
      expect(lacking.length).toBeGreaterThan(0);
      const minted = await minters[kind]!(lacking);
      const res = await callRoute(route, minted.options);
      expectInsufficientScope(res, scopes);
    });

    // a web session carries every scope; only an impersonation session (read scopes) can lack them
    if (credentials.includes('web_session')) {
      const readOnly = scopes.length > 0 && !scopes.some((s) => /read$/.test(s));
      test(`an impersonation session (read scopes only) → ${readOnly ? '403 InsufficientScope' : 'admitted'}`, async () => {
        if (scopes.length) expect(holdsAny(readScopes, scopes)).toBe(!readOnly);
        const admin = await app.user({ admin: true });
        const target = await app.user();
        const session = await app.session(target.id, { impersonatorId: admin.id, lifetime: '1 hour' });
        const res = await callRoute(route, cookie(session));
        if (readOnly) expectInsufficientScope(res, scopes);
        else expectAdmitted(res);
      });
    }

    const admitted = accepted.flatMap((kind): { kind: CredentialKind; scope: string }[] =>
      kind === 'web_session' ? [{ kind, scope: '(every scope)' }] : scopes.map((scope) => ({ kind, scope })),
    );
    test.each(admitted)('a $kind holding $scope → admitted', async ({ kind, scope }) => {
      const minted = await minters[kind]!([scope]);
      const res = await callRoute(route, minted.options);
      expectAdmitted(res);
    });
  });
}

describe.each(anonymousRoutes.map((r) => ({ route: r, name: `${r.method.toUpperCase()} ${r.path}` })))(
  '$name (no credential)',
  ({ route }) => {
    test('answers without a credential, never a 401 for the lack of one', async () => {
      const res = await callRoute(route, {});
      expect([401, 403], JSON.stringify(res.body)).not.toContain(res.status);
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
    });

    test.each(credentialKinds)('a %s sent along is never read: the same answer', async (kind) => {
      const minted = await minters[kind]?.(scopeUniverse.map((u) => u.name));
      const none = await callRoute(route, {});
      const sent = await callRoute(route, minted?.options ?? bearer(generateToken(kind)));
      expect(sent.status, JSON.stringify(sent.body)).toBe(none.status);
    });
  },
);
