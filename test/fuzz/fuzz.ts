// HTTP fuzzing from the published OpenAPI document: for every
// operation, fast-check generates requests with valid and invalid path, query
// and body values (wrong types, huge and negative numbers, long and odd unicode
// strings, SQL- and JSON-like payloads, missing and extra fields, duplicated
// parameters, wrong content types, truncated JSON) under a mix of credentials,
// and every answer must be below 500 and, when an error, in the shape SPEC §7
// fixes (`{error, detail}`; RFC 6749's `{error, error_description}` on the OAuth2
// protocol endpoints, as their documented responses say). A failing request is
// shrunk by fast-check and printed as a curl command.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import fc from 'fast-check';
import { generateToken, hashToken } from '../../src/auth/tokens.ts';
import { ECHOED_CHARACTERS } from '../../src/core/errors.ts';
import type { TestApp } from '../harness.ts';

type Schema = Record<string, any>;

interface Parameter {
  name: string;
  in: 'path' | 'query';
  schema: Schema;
}

export interface FuzzOperation {
  method: string;
  path: string;
  operationId: string;
  parameters: Parameter[];
  body?: { types: string[]; schema: Schema };
  /** the documented error body: SPEC §7's, or RFC 6749's on the OAuth2 protocol endpoints */
  errorShape: 'error' | 'oauth2';
  /** the fixture credentials (indices of Fixtures.credentials) of the kinds the operation accepts */
  accepts: number[];
}

/** The credential kinds the document names ("**Credentials:** a web session cookie, …"), as fixture indices. */
const CREDENTIAL_NAMES: [string, number][] = [
  ['a web session cookie', 1],
  ['a personal access token', 2],
  ['an organization access token', 3],
  ['a customer session token', 4],
  ['a member session token', 5],
  ['an OAuth2 user token', 12],
  ['an OAuth2 organization token', 13],
];

function accepted(description: string | undefined): number[] {
  const line = /\*\*Credentials:\*\* ([^*]*)\./.exec(description ?? '')?.[1] ?? '';
  const found = CREDENTIAL_NAMES.filter(([name]) => line.includes(name)).map(([, i]) => i);
  return found.length ? found : [0];
}

/** Every operation of the document, plus POST /graphql (checked for 5xx only). */
export function operationsOf(document: any): FuzzOperation[] {
  const ops: FuzzOperation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const content = op.requestBody?.content as Record<string, { schema: Schema }> | undefined;
      const responses = Object.values<any>(op.responses ?? {});
      const oauth2 = responses.some((r) => r.content?.['application/json']?.schema?.$ref === '#/components/schemas/OAuth2Error');
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        parameters: (op.parameters ?? []).filter((p: Parameter) => p.in === 'path' || p.in === 'query'),
        body: content ? { types: Object.keys(content), schema: Object.values(content)[0]!.schema } : undefined,
        errorShape: oauth2 ? 'oauth2' : 'error',
        accepts: accepted(op.description),
      });
    }
  }
  ops.push({
    method: 'POST',
    path: '/graphql',
    operationId: 'graphql',
    parameters: [],
    body: {
      types: ['application/json'],
      schema: {
        type: 'object',
        properties: { query: { type: 'string', example: '{ allProducts { nodes { rowId } } }' }, variables: { type: 'object' } },
        required: ['query'],
      },
    },
    errorShape: 'error',
    accepts: [1, 2, 3, 4, 12, 13],
  });
  return ops;
}

// ---------------------------------------------------------------------------
// Values.

/** A fixture id, resolved when the request is sent (the fixtures are renewed as the run goes). */
const FIXTURE = (n: number) => `\u0007fixture${n}\u0007`;
const FIXTURE_PATTERN = /\u0007fixture(\d+)\u0007/g;

const oddStrings = [
  "' OR '1'='1",
  "'; drop table rowgate.users; --",
  '1; select pg_sleep(30)',
  "1' and (select count(*) from pg_shadow) > 0 --",
  '$$; select 1; $$',
  '\\x00',
  '%00',
  '\u0000',
  '../../../../etc/passwd',
  '${jndi:ldap://example.com/a}',
  '<script>alert(1)</script>',
  '{"$gt": ""}',
  '{"__proto__": {"admin": true}}',
  'constructor',
  '__proto__',
  'null',
  'true',
  '[]',
  '{}',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  '0x7fffffff',
  '\u202e\u0644\u0627',
  '𝕏𝔂𝔷 👩‍👩‍👧‍👦',
  'Zalgo t̸̢̛̠͉e̷̢̛x̵t',
  '\ufeff',
  '\ud800',
  '\udfff\ud800',
  '\r\n\r\nHTTP/1.1 200 OK',
  ' ',
  '',
  '9'.repeat(400),
  `-${'9'.repeat(40)}`,
  'a'.repeat(5000),
  'é'.repeat(3000),
];

const junkString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...oddStrings) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 200, maxLength: 2000 }) },
);

const junkNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    -1,
    0,
    1,
    2 ** 31,
    2 ** 31 - 1,
    -(2 ** 31),
    2 ** 53 + 2,
    -(2 ** 63),
    1e21,
    1e308,
    -1e308,
    0.5,
    -0.000001,
    Number.MAX_SAFE_INTEGER,
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

const deep = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n));

const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: junkString },
  { weight: 3, arbitrary: junkNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.integer({ min: 50, max: 500 }).map(deep) },
  { weight: 1, arbitrary: fc.array(junkString, { maxLength: 5 }) },
);

function resolve(document: any, schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++) s = document.components.schemas[s.$ref.replace('#/components/schemas/', '')];
  return s;
}

/** Values the schema accepts (or nearly: patterns and formats are followed where cheap). */
function validValue(document: any, schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(document, schema);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((a: Schema) => validValue(document, a, depth + 1)));
  if ('const' in s) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const example = 'example' in s ? [fc.constant(s.example)] : [];
  switch (s.type) {
    case 'string': {
      if (s.format === 'uuid') return fc.oneof(fc.nat({ max: 11 }).map(FIXTURE), fc.uuid());
      if (s.format === 'email') return fc.oneof(fc.emailAddress(), ...example);
      if (s.format === 'date-time')
        return fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          rfc3339AtItsEdges,
        );
      if (s.format === 'uri') return fc.oneof(fc.webUrl(), ...example);
      if (s.pattern) {
        try {
          return fc.oneof(
            fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length <= (s.maxLength ?? 500)),
            ...example,
          );
        } catch {
          // a pattern fast-check cannot read: fall back to the example
        }
      }
      return fc.oneof(fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 40, 40) }), ...example);
    }
    case 'integer':
      return fc.integer({ min: Math.max(s.minimum ?? -1e6, -(2 ** 31)), max: Math.min(s.maximum ?? 1e6, 2 ** 31) });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      if (depth > 4) return fc.constant([]);
      return fc.array(validValue(document, s.items, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) });
    case 'object': {
      if (depth > 4 || !s.properties) return fc.constant({});
      const props = Object.fromEntries(Object.entries<Schema>(s.properties).map(([k, v]) => [k, validValue(document, v, depth + 1)]));
      return fc.record(props, { requiredKeys: s.required ?? [] });
    }
    default:
      if (Array.isArray(s.type)) return fc.oneof(...s.type.map((t: string) => validValue(document, { ...s, type: t }, depth + 1)));
      return example.length ? example[0]! : fc.jsonValue({ maxDepth: 2 });
  }
}

/** A query or path value: a valid one, junk, or (query only) repeated. */
function paramValue(document: any, p: Parameter): fc.Arbitrary<string | string[] | undefined> {
  const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const valid = validValue(document, p.schema).map((v) => (Array.isArray(v) ? v.map(asText) : asText(v)));
  const junk = junkValue.map(asText);
  if (p.in === 'path') {
    return fc.oneof({ weight: 5, arbitrary: valid.map((v) => (Array.isArray(v) ? (v[0] ?? '') : v)) }, { weight: 3, arbitrary: junk });
  }
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: valid },
    { weight: 3, arbitrary: junk },
    { weight: 1, arbitrary: fc.array(fc.oneof(valid.map(String), junk), { minLength: 2, maxLength: 4 }) },
  );
}

// ---------------------------------------------------------------------------
// Requests.

export type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; contentType: string }
  | { kind: 'raw'; text: string; contentType: string | null; encoding?: string };

export interface FuzzRequest {
  op: number;
  method: string;
  path: Record<string, string>;
  query: [string, string | string[] | undefined][];
  /** text appended to the query string as is (stray %, brackets, empty keys) */
  rawQuery: string;
  body: Body;
  /** one of the operation's own credential kinds (most requests), or any fixture credential */
  fitting: boolean;
  credential: number;
  headers: Record<string, string>;
}

const contentTypes = [
  'text/plain',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-16',
  'application/json; charset=bogus',
  'application/vnd.api+json',
  'application/octet-stream',
  '*/*',
  'application/json, text/plain',
];

/** RFC 3339 instants at the edges of what it allows: any offset up to ±23:59, fractions of up to 12 digits, years 1 to 9999 */
const rfc3339AtItsEdges = fc
  .tuple(
    fc.date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
    fc.integer({ min: -23, max: 23 }),
    fc.integer({ min: 0, max: 59 }),
    fc.nat({ max: 12 }),
  )
  .map(([date, hours, minutes, digits]) => {
    const offset = `${hours < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
    return `${date.toISOString().slice(0, 19)}${digits ? `.${'7'.repeat(digits)}` : ''}${offset}`;
  });

const rawJson = [
  '{',
  '{"a":}',
  "{'a': 1}",
  '{"a": 1,}',
  '[1, 2',
  'nul',
  '"\\ud800"',
  '{"a": "\\u0000"}',
  '\u0000',
  '{"name": "a", "name": 1}',
  '{"a": 1e99999}',
  '{"__proto__": {"polluted": true}}',
  '{"constructor": {"prototype": {"polluted": true}}}',
  '',
  ' ',
  '\ufeff{}',
  '[]',
  '1',
  'true',
  '"text"',
];

function bodyArb(document: any, op: FuzzOperation): fc.Arbitrary<Body> {
  if (!op.body) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant<Body>({ kind: 'none' }) },
      { weight: 1, arbitrary: junkValue.map((value): Body => ({ kind: 'json', value, contentType: 'application/json' })) },
      { weight: 1, arbitrary: fc.constantFrom(...rawJson).map((text): Body => ({ kind: 'raw', text, contentType: 'application/json' })) },
    );
  }
  const types = op.body.types;
  const valid = validValue(document, op.body.schema);
  const validObject = valid.map((v) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}));
  const json = (value: unknown, contentType = types.includes('application/json') ? 'application/json' : types[0]!) =>
    ({ kind: 'json', value, contentType }) as Body;
  return fc.oneof(
    { weight: 6, arbitrary: valid.map((v) => json(v)) },
    {
      // one field replaced by junk
      weight: 5,
      arbitrary: fc.tuple(validObject, fc.nat(), junkValue).map(([o, i, junk]) => {
        const keys = Object.keys(o);
        return json(keys.length ? { ...o, [keys[i % keys.length]!]: junk } : { value: junk });
      }),
    },
    {
      // one field missing
      weight: 2,
      arbitrary: fc.tuple(validObject, fc.nat()).map(([o, i]) => {
        const keys = Object.keys(o);
        const copy = { ...o };
        if (keys.length) delete copy[keys[i % keys.length]!];
        return json(copy);
      }),
    },
    // an unknown field
    { weight: 2, arbitrary: fc.tuple(validObject, junkString, junkValue).map(([o, k, v]) => json({ ...o, [k || 'extra']: v })) },
    // not an object at all
    { weight: 2, arbitrary: junkValue.map((v) => json(v)) },
    {
      // truncated JSON
      weight: 2,
      arbitrary: fc.tuple(valid, fc.nat()).map(([v, i]): Body => {
        const text = JSON.stringify(v) ?? '';
        return { kind: 'raw', text: text.slice(0, text.length ? i % text.length : 0), contentType: 'application/json' };
      }),
    },
    { weight: 2, arbitrary: fc.constantFrom(...rawJson).map((text): Body => ({ kind: 'raw', text, contentType: 'application/json' })) },
    {
      // a wrong (or odd) content type
      weight: 3,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...contentTypes))
        .map(([v, contentType]): Body => ({ kind: 'raw', text: JSON.stringify(v) ?? '', contentType })),
    },
    // a body without a content type
    { weight: 1, arbitrary: valid.map((v): Body => ({ kind: 'raw', text: JSON.stringify(v) ?? 'x', contentType: null })) },
    // form bodies with repeated and bracketed keys
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(fc.constantFrom('grant_type', 'code', 'name', 'a[b]', 'scopes[]', '', '%', 'email'), junkString), { maxLength: 6 })
        .map(
          (pairs): Body => ({
            kind: 'raw',
            text: pairs.map(([k, v]) => `${k}=${enc(v)}`).join('&'),
            contentType: 'application/x-www-form-urlencoded',
          }),
        ),
    },
    // compressed (wrongly)
    {
      weight: 1,
      arbitrary: valid.map(
        (v): Body => ({ kind: 'raw', text: JSON.stringify(v) ?? '{}', contentType: 'application/json', encoding: 'gzip' }),
      ),
    },
    // very deep nesting, and a body over 1 MiB
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1_000, max: 200_000 })
        .map((n): Body => ({ kind: 'raw', text: '['.repeat(n) + ']'.repeat(n), contentType: 'application/json' })),
    },
    {
      weight: 1,
      arbitrary: fc.constant<Body>({ kind: 'raw', text: `{"name": "${'x'.repeat(1_100_000)}"}`, contentType: 'application/json' }),
    },
  );
}

const CREDENTIALS = 14;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

export function requestArb(document: any, ops: FuzzOperation[]): fc.Arbitrary<FuzzRequest> {
  return fc.nat({ max: ops.length - 1 }).chain((i) => {
    const op = ops[i]!;
    const pathParams = op.parameters.filter((p) => p.in === 'path');
    const queryParams = op.parameters.filter((p) => p.in === 'query');
    return fc.record({
      op: fc.constant(i),
      method: fc.oneof({ weight: 12, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      path: fc.record(
        Object.fromEntries(
          pathParams.map((p) => [p.name, paramValue(document, p).map((v) => (Array.isArray(v) ? v.join(',') : (v ?? '')))]),
        ),
      ) as fc.Arbitrary<Record<string, string>>,
      query: fc
        .tuple(
          fc.tuple(...queryParams.map((p) => paramValue(document, p).map((v) => [p.name, v] as [string, string | string[] | undefined]))),
          fc.array(fc.tuple(fc.oneof(junkString, fc.constantFrom('extra', 'limit', 'page', 'sorting')), junkString), { maxLength: 2 }),
        )
        .map(([known, extra]) => [...known, ...extra]),
      rawQuery: fc.oneof(
        { weight: 10, arbitrary: fc.constant('') },
        {
          weight: 1,
          arbitrary: fc.constantFrom('%', '%zz', 'a[b]=1', 'a[]=1&a[]=2', '&&&', '=x', 'limit', 'page=%ff', 'x=%E0%A4%A', 'q=%00'),
        },
      ),
      body: bodyArb(document, op),
      fitting: fc.noBias(fc.integer({ min: 0, max: 9 })).map((n) => n < 7),
      credential: fc.nat({ max: CREDENTIALS - 1 }),
      headers: fc.oneof(
        { weight: 10, arbitrary: fc.constant({}) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<Record<string, string>>(
            { accept: 'text/html' },
            { accept: 'application/xml' },
            { 'accept-charset': 'utf-16' },
            { 'x-forwarded-for': '1.2.3.4, 5.6.7.8' },
            { 'x-http-method-override': 'DELETE' },
            { origin: 'https://evil.example' },
            { 'x-long': 'y'.repeat(4000) },
            // a write's key is read (its body hashed) before the body is validated
            { 'idempotency-key': 'fuzz-key' },
          ),
        },
      ),
    });
  });
}

// ---------------------------------------------------------------------------
// Fixtures: the things valid ids and credentials name, renewed every so often
// (a fuzzed DELETE /v1/users/me or sign-out ends the credentials it used).

export interface Fixtures {
  ids: string[];
  credentials: (Record<string, string> | null)[];
}

export async function makeFixtures(app: TestApp): Promise<Fixtures> {
  const t = randomUUID().slice(0, 8);
  const ids = Array.from({ length: 12 }, () => randomUUID());
  const [user, org, account, product, customer, seat, order, payout, pat, oat, other, membership] = ids as [string, ...string[]];
  const session = generateToken('web_session');
  const patToken = generateToken('personal_access_token');
  const oatToken = generateToken('organization_access_token');
  const customerToken = generateToken('customer_session');
  const memberToken = generateToken('member_session');
  const revokedPat = generateToken('personal_access_token');
  const revokedPatId = randomUUID();
  const oauthUser = generateToken('oauth2_user_token');
  const oauthOrganization = generateToken('oauth2_organization_token');
  const h = (token: string) => `'\\x${hashToken(app.secret, token).toString('hex')}'::bytea`;
  await app.owner.query(`
    insert into rowgate.users (id, email) values ('${user}', 'fuzz-${t}@example.com'), ('${other}', 'fuzz-other-${t}@example.com');
    insert into rowgate.organizations (id, name, slug) values ('${org}', 'Fuzz ${t}', 'fuzz-${t}');
    insert into rowgate.memberships (id, user_id, organization_id, role) values ('${membership}', '${user}', '${org}', 'admin'), (gen_random_uuid(), '${other}', '${org}', 'member');
    insert into rowgate.accounts (id, organization_id, admin_id, country, currency) values ('${account}', '${org}', '${user}', 'US', 'usd');
    update rowgate.organizations set account_id = '${account}' where id = '${org}';
    insert into rowgate.products (id, organization_id, name, price_amount, price_currency) values ('${product}', '${org}', 'Fuzz', 1000, 'usd');
    insert into rowgate.customers (id, organization_id, email) values ('${customer}', '${org}', 'fuzz-c-${t}@example.com');
    insert into rowgate.customer_members (id, organization_id, customer_id, email) values ('${seat}', '${org}', '${customer}', 'fuzz-m-${t}@example.com');
    insert into rowgate.orders (id, organization_id, customer_id, product_id, amount, currency, status) values ('${order}', '${org}', '${customer}', '${product}', 1000, 'usd', 'paid');
    insert into rowgate.payout_accounts (id, organization_id, type, country, currency) values ('${payout}', '${org}', 'bank_account', 'US', 'usd');
    insert into rowgate_private.sessions (token_hash, kind, user_id, expires_at) values (${h(session)}, 'user', '${user}', now() + interval '1 day');
    insert into rowgate.personal_access_tokens (id, user_id, comment, scopes) values ('${pat}', '${user}', 'fuzz', rowgate_private.all_scopes());
    insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) values (${h(patToken)}, '${pat}');
    insert into rowgate.personal_access_tokens (id, user_id, comment, scopes, deleted_at) values ('${revokedPatId}', '${user}', 'fuzz', '{products_read}', now());
    insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) values (${h(revokedPat)}, '${revokedPatId}');
    insert into rowgate.organization_access_tokens (id, organization_id, comment, scopes)
      values ('${oat}', '${org}', 'fuzz', array(select name from rowgate_private.scopes where name not like '%:%' and name not like 'customer_portal_%'));
    insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (${h(oatToken)}, '${oat}');
    insert into rowgate_private.sessions (token_hash, kind, customer_id, expires_at) values (${h(customerToken)}, 'customer', '${customer}', now() + interval '1 day');
    insert into rowgate_private.sessions (token_hash, kind, member_id, expires_at) values (${h(memberToken)}, 'member', '${seat}', now() + interval '1 day');
    insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at)
      values (${h(oauthUser)}, 'fuzz-client', '${user}', null, rowgate_private.all_scopes(), now() + interval '1 day'),
             (${h(oauthOrganization)}, 'fuzz-client', '${user}', '${org}',
              array(select name from rowgate_private.scopes where name not like '%:%' and name not like 'customer_portal_%'), now() + interval '1 day');
  `);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  return {
    ids,
    credentials: [
      null,
      { cookie: `rowgate_session=${session}` },
      bearer(patToken),
      bearer(oatToken),
      bearer(customerToken),
      bearer(memberToken),
      bearer(revokedPat),
      { authorization: 'Bearer not-a-token' },
      { authorization: 'Basic Zm9vOmJhcg==' },
      { cookie: `rowgate_session=rg_us_${'x'.repeat(40)}; other=1` },
      { cookie: `rowgate_session=${session}`, authorization: `Bearer ${customerToken}` },
      { authorization: `${`Bearer ${patToken}`.padEnd(3000, ' ')}x` },
      bearer(oauthUser),
      bearer(oauthOrganization),
    ],
  };
}

// ---------------------------------------------------------------------------
// Sending and judging.

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

/**
 * Percent-encoding that also takes lone surrogates (encodeURIComponent refuses
 * them): they go out as their WTF-8 bytes, an invalid UTF-8 sequence the server must survive.
 */
function enc(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\s\S]/gu, (ch) => {
      const code = ch.codePointAt(0)!;
      if (code >= 0xd800 && code <= 0xdfff) {
        return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
          .map((b) => `%${b.toString(16).toUpperCase()}`)
          .join('');
      }
      return encodeURIComponent(ch);
    });
  }
}

export function materialize(app: TestApp, ops: FuzzOperation[], r: FuzzRequest, fixtures: Fixtures): Sent {
  const op = ops[r.op]!;
  const fix = (s: string) => s.replace(FIXTURE_PATTERN, (_, n) => fixtures.ids[Number(n) % fixtures.ids.length]!);
  let path = op.path.replace(/\{(\w+)\}/g, (_, name) => enc(fix(r.path[name] ?? '')));
  const parts: string[] = [];
  for (const [name, value] of r.query) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) parts.push(`${enc(name)}=${enc(fix(v))}`);
  }
  if (r.rawQuery) parts.push(r.rawQuery);
  if (parts.length) path += `?${parts.join('&')}`;
  const credential = r.fitting ? op.accepts[r.credential % op.accepts.length]! : r.credential % fixtures.credentials.length;
  const headers: Record<string, string> = { ...(fixtures.credentials[credential] ?? {}), ...r.headers };
  let body: Buffer | null = null;
  if (r.body.kind === 'json') {
    body = Buffer.from(fix(JSON.stringify(r.body.value) ?? 'null'));
    headers['content-type'] = r.body.contentType;
  } else if (r.body.kind === 'raw') {
    body = Buffer.from(fix(r.body.text));
    if (r.body.contentType) headers['content-type'] = r.body.contentType;
    if (r.body.encoding) headers['content-encoding'] = r.body.encoding;
  }
  if (r.method === 'GET' || r.method === 'HEAD') body = null;
  return { method: r.method, url: app.url + path, headers, body };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export function send(sent: Sent, timeoutMs = 30_000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(sent.url);
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: sent.method,
        path: sent.url.slice(url.origin.length),
        headers: { ...sent.headers, ...(sent.body ? { 'content-length': String(sent.body.length) } : {}) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (sent.body) req.write(sent.body);
    req.end();
  });
}

/** What is wrong with an answer, or null. */
export function judge(op: FuzzOperation, sent: Sent, answer: Answer): string | null {
  if (answer.status >= 500) return `a ${answer.status} answer`;
  if (answer.status < 400 || sent.method === 'HEAD') return null;
  if (op.operationId === 'graphql' && new URL(sent.url).pathname === '/graphql') return null; // GraphQL errors have GraphQL's shape
  if (!/^application\/json\b/.test(String(answer.headers['content-type'] ?? ''))) {
    return `an error without a JSON body (content-type ${answer.headers['content-type']})`;
  }
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return 'an error body that is not JSON';
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'an error body that is not an object';
  const keys = Object.keys(body).sort().join(',');
  if (keys === 'error,error_description' && op.errorShape === 'oauth2') {
    return typeof body.error === 'string' && body.error && typeof body.error_description === 'string' ? null : 'a malformed OAuth2 error';
  }
  if (keys !== 'detail,error') return `an error body with the keys ${keys} (SPEC §7: error, detail)`;
  if (typeof body.error !== 'string' || !body.error) return 'an error without a name';
  // SPEC §7's table has no 400: a bad path, query or body is a 422 (a library's 400 passed through was one)
  if (answer.status === 400) return `a 400 ${body.error} in SPEC §7's shape: ${answer.text.slice(0, 200)}`;
  if (typeof body.detail === 'string') {
    if (body.detail.length > 2 * ECHOED_CHARACTERS) return `a detail of ${body.detail.length} characters (an input echoed whole?)`;
    return body.detail ? null : 'an empty detail';
  }
  if (!Array.isArray(body.detail) || !body.detail.length) return 'a detail that is neither a sentence nor a list';
  for (const issue of body.detail) {
    const extra = Object.keys(issue).filter((k) => !['type', 'loc', 'msg', 'input'].includes(k));
    if (extra.length || typeof issue.type !== 'string' || typeof issue.msg !== 'string' || !Array.isArray(issue.loc)) {
      return `a validation issue of the wrong shape: ${JSON.stringify(issue).slice(0, 200)}`;
    }
    if (!['body', 'query', 'path'].includes(issue.loc[0])) return `a validation issue located at ${JSON.stringify(issue.loc)}`;
    // SPEC §22: the tokens reported leaked are never repeated, a malformed report's included
    if (op.operationId === 'credentials:revoke' && 'input' in issue) return `a reported token echoed: ${JSON.stringify(issue.loc)}`;
    // SPEC §14: at most 200 characters of any input echoed
    if (typeof issue.input === 'string' && issue.input.length > ECHOED_CHARACTERS)
      return `an input echoed with ${issue.input.length} characters`;
  }
  return null;
}

/** The request as a shell command, for the report of a failure. */
export function curl(sent: Sent): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const url = sent.url.length > 1500 ? `${sent.url.slice(0, 1500)}…(${sent.url.length} characters in all)` : sent.url;
  const parts = ['curl -i', `-X ${sent.method}`, q(url)];
  for (const [k, v] of Object.entries(sent.headers)) parts.push(`-H ${q(`${k}: ${v.length > 200 ? `${v.slice(0, 200)}…` : v}`)}`);
  if (sent.body) {
    const text = sent.body.toString('utf8');
    parts.push(text.length > 2000 ? `--data-binary ${q(text.slice(0, 300))}… (${text.length} bytes in all)` : `--data-binary ${q(text)}`);
  }
  return parts.join(' ');
}

export interface FuzzCounters {
  requests: number;
  byStatus: Record<number, number>;
  byOperation: Record<string, number>;
  serverErrors: number;
}

export async function runFuzz(
  app: TestApp,
  options: { numRuns: number; seed?: number; renewEvery?: number; progress?: (c: FuzzCounters) => void },
): Promise<FuzzCounters> {
  const document = (await send({ method: 'GET', url: `${app.url}/v1/openapi.json`, headers: {}, body: null })).text;
  const parsed = JSON.parse(document);
  const ops = operationsOf(parsed);
  const counters: FuzzCounters = {
    requests: 0,
    byStatus: {},
    byOperation: Object.fromEntries(ops.map((o) => [o.operationId, 0])),
    serverErrors: 0,
  };
  let fixtures = await makeFixtures(app);
  await fc.assert(
    fc.asyncProperty(requestArb(parsed, ops), async (r) => {
      if (counters.requests > 0 && counters.requests % (options.renewEvery ?? 250) === 0) fixtures = await makeFixtures(app);
      const sent = materialize(app, ops, r, fixtures);
      const op = ops[r.op]!;
      const answer = await send(sent);
      counters.requests++;
      counters.byStatus[answer.status] = (counters.byStatus[answer.status] ?? 0) + 1;
      counters.byOperation[op.operationId] = (counters.byOperation[op.operationId] ?? 0) + 1;
      if (answer.status >= 500) counters.serverErrors++;
      if (options.progress && counters.requests % 2000 === 0) options.progress(counters);
      // a request that may have ended the fixtures' credentials (a delete, a sign-out, a revocation) renews them
      if (answer.status < 300 && (sent.method === 'DELETE' || /logout|revoke/.test(op.path))) fixtures = await makeFixtures(app);
      const problem = judge(op, sent, answer);
      if (problem) {
        throw new Error(
          `${op.operationId} (${op.method} ${op.path}): ${problem}\n` +
            `  request: ${curl(sent)}\n  answer: ${answer.status} ${answer.headers['content-type'] ?? ''} ${answer.text.slice(0, 500)}`,
        );
      }
    }),
    { numRuns: options.numRuns, seed: options.seed },
  );
  return counters;
}
