// GraphQL fuzzing from the introspected schema: the schema
// is read from the test app's own POST /graphql, and documents are generated
// from it: random nestings of object and connection fields with arguments of
// the right types (most of them pass validation and execute, so the fuzzer
// exercises execution, not only the limits of SPEC §13), and hostile ones:
// arguments of the wrong types and out of range, thousands of aliases, depth
// 50 and more, 1,600 `node(id:)` aliases, very long strings, malformed node
// ids, documents just under and over 1 MiB, cyclic and unused fragments,
// @include/@skip, invalid syntax, odd request bodies. They are sent
// anonymously and with several credentials (a web session, a PAT, an
// organization access token, customer and member sessions, OAuth2 tokens).
//
// For every answer: no 5xx, JSON, every error in `errors` with an
// `extensions.code` (and none of them InternalServerError: GraphQL's masked
// 500), REST's error shape (SPEC §7) when the answer is REST's (401, 413, 415,
// 422), an answer within the time limit. Over the run: the process's RSS (the
// app runs in the test process) stays within a bound of its size at the start,
// and GET /readyz, probed every second with a short timeout, keeps answering.
//
// Document i of a run is generated from (seed, i) alone, so a run is replayed
// with its seed (the ids in it are the fixtures' of that run); the body of every
// failing document is written to a file, and printed as a curl command.
// GRAPHQL_FUZZ_VERBOSE=<n> logs every document (its first n characters) and
// its answer to a file.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import {
  Kind,
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  parse,
  validate,
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'postgraphile/graphql';
import type { TestApp } from '../harness.ts';
import { makeFixtures, send, type Answer, type Fixtures } from './fuzz.ts';

// ---------------------------------------------------------------------------
// A small seeded generator (sfc32): document i of a run depends on (seed, i) only.

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    // splitmix32 spreads the two numbers over the state
    let s = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** [0, 1) */
  float(): number {
    return this.u32() / 2 ** 32;
  }

  /** an integer in [0, n) */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** an integer in [lo, hi] */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  weighted<T>(entries: readonly (readonly [number, T])[]): T {
    const total = entries.reduce((sum, [w]) => sum + w, 0);
    let x = this.float() * total;
    for (const [w, value] of entries) {
      if ((x -= w) < 0) return value;
    }
    return entries[entries.length - 1]![1];
  }

  uuid(): string {
    const hex = Array.from({ length: 4 }, () => this.u32().toString(16).padStart(8, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[this.int(4)]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }

  word(min = 1, max = 12): string {
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    return Array.from({ length: this.between(min, max) }, () => letters[this.int(26)]).join('');
  }
}

// ---------------------------------------------------------------------------
// What the documents name: ids, node ids and cursors of the fixtures (read back
// through GraphQL when the fixtures are made).

export interface GraphqlFixtures {
  fixtures: Fixtures;
  /** the organization every fixture row belongs to */
  organizationId: string;
  /** row ids of the fixtures: the ids of Fixtures and rows of the bulk insert */
  uuids: string[];
  /** node ids (`id: ID!`) read back, by GraphQL type */
  nodeIds: string[];
  nodeIdsByType: Map<string, string[]>;
  cursors: string[];
  /** cursors of the default order, by connection type (a cursor is valid in its own order only) */
  cursorsByConnection: Map<string, string[]>;
}

/** The fixture credentials a document is sent with (indices of Fixtures.credentials), and their weights. */
export const CREDENTIALS: readonly (readonly [number, number, string])[] = [
  // [weight, index, name]
  [5, 0, 'anonymous'],
  [6, 1, 'web session'],
  [5, 2, 'PAT'],
  [5, 3, 'organization access token'],
  [4, 4, 'customer session'],
  [2, 5, 'member session'],
  [2, 12, 'OAuth2 user token'],
  [2, 13, 'OAuth2 organization token'],
  [1, 6, 'revoked PAT'],
  [1, 7, 'malformed bearer token'],
];

export async function makeGraphqlFixtures(app: TestApp, schema: GraphQLSchema): Promise<GraphqlFixtures> {
  const fixtures = await makeFixtures(app);
  const [, org, , , customer] = fixtures.ids as [string, string, string, string, string];
  // rows enough for full pages (more than 100 products), and orders for the customer session
  const bulk = await app.owner.query<{ id: string }>(
    `with p as (
       insert into rowgate.products (organization_id, name, description, price_amount, price_currency, is_archived)
       select $1, 'Fuzz ' || g, case when g % 3 = 0 then repeat('d', g) end, 100 * g, 'usd', g % 7 = 0 from generate_series(1, 130) g
       returning id),
     c as (
       insert into rowgate.customers (organization_id, email) select $1, 'fuzz-' || gen_random_uuid() || '@example.com' from generate_series(1, 20)
       returning id)
     select id from p union all select id from c`,
    [org],
  );
  await app.owner.query(
    `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
     select $1, case when g % 3 = 0 then $2::uuid else (select id from rowgate.customers where organization_id = $1 order by id offset g % 20 limit 1) end,
            (select id from rowgate.products where organization_id = $1 order by id offset g % 130 limit 1), 100 * g, 'usd',
            (array['pending', 'paid', 'refunded'])[1 + g % 3]
     from generate_series(1, 60) g`,
    [org, customer],
  );
  const uuids = [...fixtures.ids, ...bulk.rows.filter((_, i) => i % 10 === 0).map((r) => r.id)];

  // node ids and cursors, read back with the web session (and the customer's), one
  // connection a request (one refused field must not take the others with it)
  const roots = Object.values(schema.getQueryType()!.getFields()).filter(
    (f) => f.name.startsWith('all') && f.args.some((a) => a.name === 'first'),
  );
  const nodeIdsByType = new Map<string, string[]>();
  const cursors = new Set<string>();
  const cursorsByConnection = new Map<string, string[]>();
  for (const credential of [fixtures.credentials[1], fixtures.credentials[4]]) {
    for (const root of roots) {
      const nodeType = (getNamedType(root.type) as GraphQLObjectType).getFields().nodes?.type;
      const node = nodeType && getNamedType(nodeType);
      const hasId = node && isObjectType(node) && 'id' in node.getFields();
      const query = `{ ${root.name}(first: 4) { edges { cursor ${hasId ? 'node { __typename id }' : ''} } } }`;
      const answer = await send(graphqlRequest(app, JSON.stringify({ query }), credential ?? null));
      const body = JSON.parse(answer.text) as {
        data?: Record<string, { edges: { cursor: string; node?: { __typename: string; id: string } }[] } | null>;
      };
      const connection = getNamedType(root.type).name;
      for (const edge of body.data?.[root.name]?.edges ?? []) {
        cursors.add(edge.cursor);
        cursorsByConnection.set(connection, [...(cursorsByConnection.get(connection) ?? []), edge.cursor]);
        if (edge.node) nodeIdsByType.set(edge.node.__typename, [...(nodeIdsByType.get(edge.node.__typename) ?? []), edge.node.id]);
      }
    }
  }
  const nodeIds = [...new Set([...nodeIdsByType.values()].flat())];
  if (nodeIds.length < 5 || cursors.size < 5)
    throw new Error(`the fixtures read back through GraphQL are too few (${nodeIds.length} node ids, ${cursors.size} cursors)`);
  return { fixtures, organizationId: org, uuids, nodeIds, nodeIdsByType, cursors: [...cursors], cursorsByConnection };
}

// ---------------------------------------------------------------------------
// Values: JS values printed as GraphQL literals, or sent as variables.

class EnumValue {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}
/** A literal printed as is (hostile: not expressible as a JSON variable value). */
class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

function printValue(value: unknown): string {
  if (value instanceof EnumValue) return value.name;
  if (value instanceof Raw) return value.text;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '1e999';
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(printValue).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${printValue(v)}`)
    .join(', ')}}`;
}

function jsonValue(value: unknown): unknown {
  if (value instanceof EnumValue) return value.name;
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return value.map(jsonValue);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonValue(v)]));
  return value;
}

export const ODD_STRINGS = [
  "' OR '1'='1",
  "'; drop table rowgate.products; --",
  '1; select pg_sleep(30)',
  '$$; select 1; $$',
  '\u0000',
  'a\u0000b',
  '\\',
  '%',
  '_',
  '\u202e\u0644\u0627',
  '𝕏𝔂𝔷 👩‍👩‍👧‍👦',
  '\ufeff',
  '\ud800',
  '',
  ' ',
  'null',
  '__proto__',
  '<script>alert(1)</script>',
  '{"$gt": ""}',
  '9'.repeat(400),
  'é'.repeat(3000),
];

/** node ids that decode to nothing valid (PostGraphile's are base64 of a JSON array) */
export function malformedNodeId(rng: Rng, f: GraphqlFixtures): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const real = rng.pick(f.nodeIds);
  const decoded = Buffer.from(real, 'base64').toString();
  return rng.pick([
    () => '',
    () => ' ',
    () => 'x',
    () => '%%%',
    () => 'null',
    () => real.slice(0, rng.int(real.length)),
    () => `${real}=`,
    () => real.replace(/[A-Za-z]/, '!'),
    () => b64('[]'),
    () => b64('{}'),
    () => b64('null'),
    () => b64('"text"'),
    () => b64('['),
    () => b64(decoded.replace(/"[0-9a-f-]{36}"/, '"not-a-uuid"')),
    () => b64(decoded.replace(/"[0-9a-f-]{36}"/, '1')),
    () => b64(decoded.replace(/"[0-9a-f-]{36}"/, 'null')),
    () => b64(decoded.replace(/"[0-9a-f-]{36}"/, `"${rng.uuid()}"`)),
    () => b64(decoded.replace(/^\["[^"]*"/, '["Nope"')),
    () => b64(decoded.replace(/^\["[^"]*"/, '["__proto__"')),
    () => b64(decoded.replace(/^\["[^"]*"/, '[1')),
    () => b64(decoded.replace(/\]$/, ', 1, 2, 3]')),
    () => b64('['.repeat(5000) + ']'.repeat(5000)),
    () => b64(`["Product", "${'x'.repeat(100_000)}"]`),
    () => b64(JSON.stringify(['Product', ...Array.from({ length: 1000 }, () => rng.uuid())])),
    () => b64(`["Product", "\\u0000"]`),
    () => Buffer.from(decoded).toString('base64url'),
    () => Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString('base64'),
    () => rng.uuid(),
    () => rng.pick(ODD_STRINGS),
  ])();
}

// ---------------------------------------------------------------------------
// Documents.

export interface GeneratedDocument {
  kind: string;
  /** the request body as sent (JSON, or raw text for the odd bodies) */
  body: string;
  contentType: string;
  accept?: string;
  credential: number;
  /** the GraphQL text, when there is one (for local validation and the report) */
  query?: string;
  variables?: Record<string, unknown>;
  /** the nodes the document could ask for, estimated as SPEC §13 counts them (generated documents only) */
  estimatedNodes?: number;
}

interface Context {
  rng: Rng;
  schema: GraphQLSchema;
  f: GraphqlFixtures;
  /** respect the limits of SPEC §13 (a valid document), or not */
  bounded: boolean;
  maxDepth: number;
  variables: Map<string, { type: string; value: unknown }>;
  fragments: Map<string, string>;
  aliases: number;
  nodes: number;
  pVariable: number;
  pFragment: number;
  pDirective: number;
  pAlias: number;
  /** arguments of the wrong type or out of range */
  pHostileArgument: number;
  pOptionalArgument: number;
  /** the type of the field whose arguments are being made: node ids and cursors of its own kind */
  fieldType?: string;
}

function newContext(rng: Rng, schema: GraphQLSchema, f: GraphqlFixtures, bounded: boolean): Context {
  return {
    rng,
    schema,
    f,
    bounded,
    maxDepth: bounded
      ? rng.weighted([
          [6, rng.between(1, 4)],
          [3, rng.between(5, 8)],
          [1, rng.between(9, 10)],
        ])
      : rng.between(3, 14),
    variables: new Map(),
    fragments: new Map(),
    aliases: 0,
    nodes: 0,
    pVariable: rng.pick([0, 0.2, 0.6]),
    pFragment: rng.pick([0, 0.1, 0.3]),
    pDirective: rng.pick([0, 0.05, 0.15]),
    pAlias: rng.pick([0, 0.05, 0.15]),
    pHostileArgument: bounded ? 0 : rng.pick([0.1, 0.3, 0.6]),
    pOptionalArgument: rng.pick([0.2, 0.4]),
  };
}

const PAGE_ARGUMENTS = new Set(['first', 'last']);

function validScalar(ctx: Context, typeName: string, argName: string, nested: boolean): unknown {
  const { rng, f } = ctx;
  switch (typeName) {
    case 'Int':
      if (PAGE_ARGUMENTS.has(argName)) {
        // nested connections small, so that the nodes stay under 10,000
        return nested
          ? rng.weighted([
              [5, rng.between(1, 5)],
              [2, rng.between(0, 20)],
              [1, 0],
            ])
          : rng.weighted([
              [4, rng.between(1, 10)],
              [3, rng.between(0, 100)],
              [1, 100],
              [1, 0],
            ]);
      }
      if (argName === 'offset')
        return rng.weighted([
          [4, rng.between(0, 5)],
          [1, rng.between(0, 200)],
        ]);
      return rng.between(-5, 1000);
    case 'Float':
      return rng.pick([0, 1.5, -2.25, 1e6, rng.float() * 100]);
    case 'Boolean':
      return rng.chance(0.5);
    case 'ID':
      return rng.pick(f.nodeIdsByType.get(ctx.fieldType ?? '') ?? f.nodeIds);
    case 'UUID':
      return rng.weighted([
        [8, () => rng.pick(f.uuids)],
        [2, () => rng.uuid()],
      ])();
    case 'Cursor':
      return rng.pick(f.cursorsByConnection.get(ctx.fieldType ?? '') ?? f.cursors);
    case 'Datetime':
      return new Date(Date.UTC(2020, 0, 1) + rng.int(3e11)).toISOString();
    case 'Date':
      return new Date(Date.UTC(2020, 0, 1) + rng.int(3e11)).toISOString().slice(0, 10);
    case 'BigInt':
      return String(rng.between(0, 100_000));
    case 'BigFloat':
      return `${rng.between(0, 1000)}.${rng.between(0, 99)}`;
    case 'String': {
      const lower = argName.toLowerCase();
      if (lower.includes('email')) return `fuzz-${rng.word(4, 8)}@example.com`;
      if (lower.includes('currency')) return 'usd';
      if (lower.includes('country')) return 'US';
      if (lower === 'role') return rng.pick(['admin', 'member', 'owner']);
      if (lower.includes('slug')) return `fuzz-${rng.word(6, 10)}`;
      if (lower === 'status') return rng.pick(['pending', 'paid', 'refunded', 'active']);
      if (lower === 'type') return rng.pick(['bank_account', 'payment', 'refund']);
      return rng.weighted([
        [6, () => `Fuzz ${rng.between(1, 130)}`],
        [3, () => rng.word()],
        [1, () => rng.pick(ODD_STRINGS)],
      ])();
    }
    default:
      return rng.word();
  }
}

/** A value of the wrong type, out of range, or odd, for an argument of this type. */
function hostileValue(ctx: Context, type: GraphQLInputType, argName: string): unknown {
  const { rng } = ctx;
  const named = getNamedType(type);
  if (named.name === 'Int' && (PAGE_ARGUMENTS.has(argName) || argName === 'offset')) {
    return rng.pick([
      -1,
      -100,
      101,
      1000,
      10_001,
      2 ** 31 - 1,
      -(2 ** 31),
      new Raw('2147483648'),
      new Raw('99999999999999999999'),
      1.5,
      -0.5,
      new Raw('1e3'),
      new Raw('-0'),
      '10',
      'ten',
      true,
      null,
      [10],
      new EnumValue('ALL'),
      { n: 1 },
    ]);
  }
  if (named.name === 'ID' || named.name === 'UUID') {
    return rng.weighted<() => unknown>([
      [4, () => malformedNodeId(rng, ctx.f)],
      [1, () => 12345],
      [1, () => null],
      [1, () => [rng.uuid()]],
    ])();
  }
  if (named.name === 'Cursor')
    return rng.pick<unknown>([
      '',
      'x',
      Buffer.from('["natural", -1]').toString('base64'),
      Buffer.from('["natural", 1e308]').toString('base64'),
      Buffer.from('[]').toString('base64'),
      Buffer.from(JSON.stringify(['x'.repeat(50_000)])).toString('base64'),
      malformedNodeId(rng, ctx.f),
      1,
    ]);
  if (isEnumType(named))
    return rng.pick([
      new EnumValue('NOPE'),
      named.getValues()[0]?.name ?? 'x',
      0,
      null,
      [new EnumValue(named.getValues()[0]?.name ?? 'X'), new EnumValue('NATURAL_DESC')],
    ]);
  if (isInputObjectType(named)) return rng.pick([{}, { nope: 1 }, 'text', [], null, { __proto__x: 1 }]);
  return rng.pick([
    null,
    -1,
    2 ** 31,
    new Raw('1e999'),
    0.1,
    true,
    '',
    rng.pick(ODD_STRINGS),
    'x'.repeat(rng.pick([1000, 100_000])),
    [1, 2, 3],
    { a: 1 },
    new EnumValue('TRUE'),
    new Raw('"""block\nstring"""'),
    new Raw('"\\u{1F600}"'),
    new Raw('"\\uD800"'),
  ]);
}

function inputValue(ctx: Context, type: GraphQLInputType, argName: string, nested: boolean, depth: number): unknown {
  const { rng } = ctx;
  if (isNonNullType(type)) return inputValue(ctx, type.ofType, argName, nested, depth);
  if (isListType(type)) {
    const n = rng.weighted([
      [4, 1],
      [3, 2],
      [1, 3],
      [1, 0],
    ]);
    const items = Array.from({ length: n }, () => inputValue(ctx, type.ofType, argName, nested, depth + 1));
    return n === 1 && rng.chance(0.3) ? items[0] : items; // a single item is coerced to a list
  }
  if (isEnumType(type)) return new EnumValue(rng.pick(type.getValues()).name);
  if (isInputObjectType(type)) {
    const out: Record<string, unknown> = {};
    for (const field of Object.values(type.getFields())) {
      const required = isNonNullType(field.type) && field.defaultValue === undefined;
      if (required || (depth < 3 && rng.chance(0.3))) {
        const organization = /organizationId$/.test(field.name) && rng.chance(0.8);
        out[field.name] = organization ? ctx.f.organizationId : inputValue(ctx, field.type, field.name, nested, depth + 1);
      }
    }
    const fields = Object.values(type.getFields()).filter((x) => x.name !== 'clientMutationId');
    if (ctx.bounded && /Patch$/.test(type.name) && !Object.keys(out).length && fields.length) {
      // an update that changes nothing is refused at run time
      const field = rng.pick(fields);
      out[field.name] = inputValue(ctx, field.type, field.name, nested, depth + 1);
    }
    return out;
  }
  return validScalar(ctx, type.name, argName, nested);
}

function argumentText(ctx: Context, arg: GraphQLArgument, nested: boolean, include?: boolean): { text: string; value: unknown } | null {
  const { rng } = ctx;
  const required = isNonNullType(arg.type) && arg.defaultValue === undefined;
  const page = PAGE_ARGUMENTS.has(arg.name);
  // nested connections get a page size in bounded documents most of the time (100 each, else)
  const wanted =
    include ?? (required || (page && ctx.bounded && nested ? rng.chance(0.85) : rng.chance(page ? 0.5 : ctx.pOptionalArgument)));
  if (!wanted) return null;
  if (!ctx.bounded && arg.name === 'last' && rng.chance(0.7)) return null; // `first` and `last` together are refused
  const hostile = rng.chance(ctx.pHostileArgument);
  const value = hostile ? hostileValue(ctx, arg.type, arg.name) : inputValue(ctx, arg.type, arg.name, nested, 0);
  // a page size in a variable counts 100 towards the nodes (the limit is checked before the variables are read)
  const variable = rng.chance(ctx.pVariable) && !(ctx.bounded && page && nested);
  if (!hostile && variable) {
    const name = `v${ctx.variables.size}`;
    ctx.variables.set(name, { type: String(arg.type), value: jsonValue(value) });
    return { text: `${arg.name}: $${name}`, value };
  }
  if (hostile && !(value instanceof Raw) && rng.chance(0.3)) {
    // the wrong value as a variable of the argument's type: refused when the variables are coerced
    const name = `v${ctx.variables.size}`;
    ctx.variables.set(name, { type: String(arg.type), value: jsonValue(value) });
    return { text: `${arg.name}: $${name}`, value };
  }
  return { text: `${arg.name}: ${printValue(value)}`, value };
}

function directiveText(ctx: Context): string {
  const { rng } = ctx;
  if (!rng.chance(ctx.pDirective)) return '';
  const name = rng.pick(['include', 'skip']);
  let condition: string;
  if (rng.chance(0.4)) {
    const variable = `b${ctx.variables.size}`;
    // a nullable variable where Boolean! is expected is a validation error
    ctx.variables.set(variable, { type: ctx.bounded || rng.chance(0.7) ? 'Boolean!' : 'Boolean', value: rng.chance(0.5) });
    condition = `$${variable}`;
  } else condition = String(rng.chance(0.5));
  return ` @${name}(if: ${condition})`;
}

const isConnection = (field: GraphQLField<unknown, unknown>) =>
  getNamedType(field.type).name.endsWith('Connection') && field.args.some((a) => a.name === 'first');

/** `{ … }` for a composite type whose fields sit at `level` (an operation's top-level fields are level 1). */
function selectionSet(ctx: Context, type: GraphQLNamedType, level: number, multiplier: number): string {
  const { rng } = ctx;
  const parts: string[] = [];
  if (isUnionType(type) || isInterfaceType(type)) {
    const possible = ctx.schema.getPossibleTypes(type);
    if (isInterfaceType(type)) parts.push(...fieldsOf(ctx, type as unknown as GraphQLObjectType, level, multiplier, rng.between(0, 2)));
    for (const t of possible.length ? Array.from({ length: rng.between(1, 3) }, () => rng.pick(possible)) : []) {
      parts.push(`... on ${t.name} ${selectionSet(ctx, t, level, multiplier)}`);
    }
  } else if (isObjectType(type)) {
    parts.push(
      ...fieldsOf(
        ctx,
        type,
        level,
        multiplier,
        rng.weighted([
          [3, 1],
          [4, 2],
          [2, 3],
          [1, rng.between(4, 8)],
        ]),
      ),
    );
  }
  if (!parts.length) parts.push('__typename');
  let inner = parts.join(' ');
  // the same selection through a named fragment or an inline one
  if (level > 1 && isObjectType(type) && rng.chance(ctx.pFragment)) {
    const name = `F${ctx.fragments.size}`;
    ctx.fragments.set(name, `fragment ${name} on ${type.name} { ${inner} }`);
    inner = ctx.bounded || rng.chance(0.8) ? `...${name}` : `...${name} ${inner}`;
  } else if (rng.chance(ctx.pFragment / 2)) {
    inner = `... ${rng.chance(0.5) ? `on ${type.name} ` : ''}${directiveText(ctx)}{ ${inner} }`;
  }
  return `{ ${inner} }`;
}

function fieldsOf(ctx: Context, type: GraphQLObjectType, level: number, multiplier: number, count: number): string[] {
  const { rng } = ctx;
  const fields = Object.values(type.getFields());
  const used = new Set<string>();
  const out: string[] = [];
  const deepest = level >= ctx.maxDepth;
  for (let k = 0; k < count; k++) {
    // leaves at the deepest level; nodes under control in bounded documents
    const candidates = fields.filter((f) => {
      const named = getNamedType(f.type);
      if (isLeafType(named)) return true;
      if (deepest) return false;
      if (isConnection(f) && ctx.bounded && ctx.nodes + multiplier * 100 > 9_500) return false;
      return true;
    });
    if (!candidates.length || rng.chance(0.04)) {
      out.push('__typename');
      continue;
    }
    // composite fields are what make a document interesting: weigh them up while there is room
    const composite = candidates.filter((f) => !isLeafType(getNamedType(f.type)));
    const field = composite.length && rng.chance(level === 1 ? 0.9 : 0.45) ? rng.pick(composite) : rng.pick(candidates);
    const text = fieldText(ctx, field, level, multiplier, used);
    if (text) out.push(text);
  }
  return out;
}

function fieldText(
  ctx: Context,
  field: GraphQLField<unknown, unknown>,
  level: number,
  multiplier: number,
  used: Set<string>,
): string | null {
  const { rng } = ctx;
  const aliased = used.has(field.name) || (field.args.length > 0 && rng.chance(ctx.pAlias)) || rng.chance(ctx.pAlias / 3);
  if (aliased && ctx.bounded && ctx.aliases >= 12) return null;
  const named = getNamedType(field.type);
  // in bounded documents, arguments that go together: `first` or `last` (not both, and no
  // `offset` with `last`), a cursor only of this connection and in its default order
  const include = new Map<string, boolean>();
  if (ctx.bounded && isConnection(field)) {
    const last = rng.chance(0.1);
    include.set(last ? 'first' : 'last', false);
    if (last) include.set('last', true).set('offset', false);
    if (ctx.f.cursorsByConnection.has(named.name) && rng.chance(0.15))
      include.set(rng.pick(['after', 'before']), true).set('orderBy', false);
    else include.set('after', false).set('before', false);
  }
  const args: string[] = [];
  let page: number | null = null;
  ctx.fieldType = named.name;
  for (const arg of field.args) {
    const a = argumentText(ctx, arg, multiplier > 1 || level > 1, include.get(arg.name));
    if (!a) continue;
    args.push(a.text);
    if (PAGE_ARGUMENTS.has(arg.name)) {
      page =
        !a.text.includes('$') && typeof a.value === 'number' && Number.isInteger(a.value) && a.value >= 0 && a.value <= 100 ? a.value : 100;
    }
  }
  let childMultiplier = multiplier;
  if (isConnection(field)) {
    childMultiplier = multiplier * (page ?? 100);
    ctx.nodes += childMultiplier;
  }
  const alias = aliased ? `a${ctx.aliases++}: ` : '';
  used.add(field.name);
  const sub = isCompositeType(named) ? ` ${selectionSet(ctx, named, level + 1, childMultiplier)}` : '';
  return `${alias}${field.name}${args.length ? `(${args.join(', ')})` : ''}${directiveText(ctx)}${sub}`;
}

function operationText(ctx: Context, operation: 'query' | 'mutation', selection: string, name?: string): string {
  const variables = [...ctx.variables].map(([n, v]) => `$${n}: ${v.type}`);
  const head =
    variables.length || name || operation !== 'query' || ctx.rng.chance(0.3)
      ? `${operation}${name ? ` ${name}` : ''}${variables.length ? `(${variables.join(', ')})` : ''} `
      : '';
  return [`${head}${selection}`, ...ctx.fragments.values()].join('\n');
}

const variablesOf = (ctx: Context) => Object.fromEntries([...ctx.variables].map(([n, v]) => [n, v.value]));

/** A query or mutation built from the schema, within (bounded) or beyond SPEC §13's limits. */
function schemaDocument(
  rng: Rng,
  schema: GraphQLSchema,
  f: GraphqlFixtures,
  bounded: boolean,
): { query: string; variables: Record<string, unknown>; nodes: number } {
  const ctx = newContext(rng, schema, f, bounded);
  const mutationType = schema.getMutationType();
  if (mutationType && rng.chance(0.12)) {
    const fields = Object.values(mutationType.getFields());
    const parts = Array.from(
      {
        length: rng.weighted([
          [6, 1],
          [2, 2],
          [1, 3],
        ]),
      },
      () => fieldText(ctx, rng.pick(fields), 1, 1, new Set()),
    ).filter(Boolean);
    return { query: operationText(ctx, 'mutation', `{ ${parts.join(' ')} }`), variables: variablesOf(ctx), nodes: ctx.nodes };
  }
  const selection = selectionSet(ctx, schema.getQueryType()!, 1, 1);
  return {
    query: operationText(ctx, 'query', selection, rng.chance(0.2) ? `Op${rng.int(100)}` : undefined),
    variables: variablesOf(ctx),
    nodes: ctx.nodes,
  };
}

// ---------------------------------------------------------------------------
// Hostile documents.

/** A path of object fields from Query `depth` levels deep (relations, `nodes`, `query`), ending in a leaf. */
function deepPath(rng: Rng, schema: GraphQLSchema, f: GraphqlFixtures, depth: number, pageSize: () => string | null): string {
  const ctx = newContext(rng, schema, f, true);
  let type: GraphQLNamedType = schema.getQueryType()!;
  const opens: string[] = [];
  for (let level = 1; level < depth; level++) {
    if (!isObjectType(type)) break;
    // fields of object types that lead further (not PageInfo's dead end), without a node id to name
    const leadsOn = (t: GraphQLNamedType) =>
      isObjectType(t) && Object.values(t.getFields()).some((x) => isObjectType(getNamedType(x.type)));
    const composite: GraphQLField<unknown, unknown>[] = Object.values(type.getFields()).filter(
      (x) =>
        leadsOn(getNamedType(x.type)) &&
        !x.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined && getNamedType(a.type).name === 'ID'),
    );
    if (!composite.length) break;
    const field: GraphQLField<unknown, unknown> = rng.pick(composite);
    const args: string[] = [];
    for (const arg of field.args) {
      if (PAGE_ARGUMENTS.has(arg.name)) {
        const size = arg.name === 'first' ? pageSize() : null;
        if (size !== null) args.push(`first: ${size}`);
      } else if (isNonNullType(arg.type) && arg.defaultValue === undefined) {
        args.push(`${arg.name}: ${printValue(inputValue(ctx, arg.type, arg.name, true, 0))}`);
      }
    }
    opens.push(`${field.name}${args.length ? `(${args.join(', ')})` : ''} {`);
    type = getNamedType(field.type);
  }
  const leaf = isObjectType(type)
    ? (Object.values(type.getFields()).find((x) => isLeafType(getNamedType(x.type)))?.name ?? '__typename')
    : '__typename';
  return `{ ${opens.join(' ')} ${leaf} ${'}'.repeat(opens.length)} }`;
}

function nodeAliases(rng: Rng, f: GraphqlFixtures, count: number, malformed: number): string {
  const types = [...f.nodeIdsByType.keys()];
  const parts = Array.from({ length: count }, (_, i) => {
    const id = rng.chance(malformed) ? malformedNodeId(rng, f) : rng.pick(f.nodeIds);
    return `n${i}: node(id: ${JSON.stringify(id)}) { id ... on ${rng.pick(types)} { __typename } }`;
  });
  return `{ ${parts.join(' ')} }`;
}

function aliasesDocument(rng: Rng, schema: GraphQLSchema, f: GraphqlFixtures, count: number): string {
  const ctx = newContext(rng, schema, f, true);
  const product = rng.pick(f.uuids);
  const body = rng.pick([
    () => '__typename',
    () => `allProducts(first: 1) { nodes { rowId } }`,
    () => `productByRowId(rowId: ${JSON.stringify(product)}) { name }`,
    () => `allOrders { totalCount }`,
    () => `__schema { queryType { name } }`,
    () => {
      const fields = Object.values(schema.getQueryType()!.getFields());
      return fieldText(ctx, rng.pick(fields), 1, 1, new Set()) ?? '__typename';
    },
  ])();
  return `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${body}`).join(' ')} }`;
}

const SYNTAX_ERRORS = [
  '',
  ' ',
  '{',
  '}',
  '{}',
  'query',
  'query {',
  '{ a(b: ) }',
  '{ a(b: $) }',
  '{ __typename(',
  '{ "unterminated }',
  '{ __typename @ }',
  '{ ... on }',
  '{ ...  }',
  'fragment on on on { a }',
  'query ($: Int) { __typename }',
  'query ($a: Int = $b) { __typename }',
  '{ __typename }}}}}',
  '{ a: b: c }',
  '{ allProducts(first: 1e) { totalCount } }',
  '{ allProducts(first: 0x10) { totalCount } }',
  '{ allProducts(first: 00) { totalCount } }',
  '{ allProducts(first: 1.) { totalCount } }',
  '{ allProducts(first: .5) { totalCount } }',
  '{ allProducts(first: --1) { totalCount } }',
  '{ productByRowId(rowId: "\\uD800") { name } }',
  '{ productByRowId(rowId: "\\u{110000}") { name } }',
  '{ productByRowId(rowId: "\\x") { name } }',
  '{ productByRowId(rowId: """unterminated) { name } }',
  '{ productByRowId(rowId: "a\nb") { name } }',
  '\u0000',
  '{ __typename \u0000 }',
  '\ufeff{ __typename }',
  '{ __typename } garbage',
  'subscription { __typename }',
  'mutation { __typename }',
  'query A { __typename } query A { __typename }',
  'query A { __typename } query B { __typename }',
  '{ __typename } { __typename }',
  'schema { query: Query }',
  'type Query { a: Int }',
  'extend type Query { a: Int }',
  'directive @a on FIELD',
  '{ __typename @include }',
  '{ __typename @include(if: "yes") }',
  '{ __typename @skip(if: true) @skip(if: false) }',
  '{ __typename @defer }',
  '{ allProducts @stream(initialCount: 1) { totalCount } }',
  '{ __typename @nope }',
  '{ nope }',
  '{ allProducts }',
  '{ allProducts { nodes } }',
  '{ __typename { a } }',
  '{ node { id } }',
  '{ node(id: null) { id } }',
  '{ allProducts(first: 1, last: 1) { totalCount } }',
  '{ allProducts(first: 1, first: 2) { totalCount } }',
  '{ allProducts(orderBy: "NAME_ASC") { totalCount } }',
  '{ allProducts(orderBy: [NAME_ASC, NAME_ASC, NAME_DESC]) { nodes { name } } }',
  '{ allProducts(condition: { nope: 1 }) { totalCount } }',
  '{ a: allProducts { totalCount } a: allOrders { totalCount } }',
  '{ __schema { types { name } } __type(name: "Nope") { name } }',
  '{ __type(name: "") { name } }',
  '{ __typename } fragment F on Nope { a }',
  '{ __typename } fragment F on Query { __typename }',
  '{ ...F } fragment F on Query { ...F }',
  '{ ...Missing }',
  'query Q { __typename } fragment Q on Query { __typename }',
  '{ ... on Product { name } }',
  '{ ... on Nope { name } }',
  '#',
  '# only a comment',
  '"""a description""" { __typename }',
  `{ __typename }${'\n'.repeat(1000)}`,
  'query ($x: [[[[[[[[[[Int]]]]]]]]]]) { __typename }',
  'query ($x: Nope) { __typename }',
  'query ($x: Product) { __typename }',
  'query ($x: Int!) { __typename }',
  'query ($x: Int, $x: Int) { __typename }',
];

/** Invalid syntax: classics, a valid document cut or with a character changed, token soup. */
function syntaxDocument(rng: Rng, valid: string): string {
  return rng.weighted<() => string>([
    [4, () => rng.pick(SYNTAX_ERRORS)],
    [2, () => valid.slice(0, rng.int(valid.length))],
    [
      2,
      () => {
        const i = rng.int(valid.length);
        return (
          valid.slice(0, i) +
          rng.pick(['{', '}', '(', ')', '"', '$', '@', '...', ':', '!', '[', ']', '#', '\\', '\u0000', '\ud800', '"""', '=', '|', '&']) +
          valid.slice(i + rng.int(3))
        );
      },
    ],
    [
      1,
      () =>
        Array.from({ length: rng.between(1, 200) }, () =>
          rng.pick([
            '{',
            '}',
            '(',
            ')',
            '[',
            ']',
            'query',
            'fragment',
            'on',
            '...',
            '$a',
            ':',
            '@skip',
            'a',
            '1',
            '"s"',
            '!',
            '=',
            'true',
            'null',
            '#c\n',
          ]),
        ).join(' '),
    ],
    [1, () => '{'.repeat(rng.between(100, 100_000)) + '}'.repeat(rng.int(3) ? 0 : rng.between(0, 100))],
    [1, () => '['.repeat(rng.between(100, 50_000))],
    [
      1,
      () =>
        `{ allProducts(condition: ${'{ name: '.repeat(rng.between(50, 5000))}"x"${' }'.repeat(rng.between(50, 5000))}) { totalCount } }`,
    ],
    [1, () => `{ allProducts(orderBy: ${'['.repeat(rng.between(10, 5000))}NAME_ASC${']'.repeat(rng.between(10, 5000))}) { totalCount } }`],
  ])();
}

/** Fragments: cyclic ones, unused ones, one that fans out (each spreads the next twice), long chains. */
function fragmentsDocument(rng: Rng, schema: GraphQLSchema, f: GraphqlFixtures): string {
  const n = rng.pick([2, 10, 30, 100, 500]);
  return rng.pick([
    () => `{ ...A } fragment A on Query { __typename ...B } fragment B on Query { allProducts(first: 1) { totalCount } ...A }`,
    () => `{ ...A } fragment A on Query { ...A }`,
    () => `{ ...F0 } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Query { ...F${(i + 1) % n} }`).join(' ')}`,
    () =>
      `{ allProducts(first: 1) { nodes { ...P } } } fragment P on Product { name } fragment Unused on Product { rowId } fragment Unused2 on Nope { a }`,
    // 2^n expansions of a selection, unless the server merges them
    () =>
      `{ ...F0 } ${Array.from({ length: n }, (_, i) => (i === n - 1 ? `fragment F${i} on Query { __typename allOrders(first: 1) { totalCount } }` : `fragment F${i} on Query { ...F${i + 1} a${i}: __typename ...F${i + 1} }`)).join(' ')}`,
    () =>
      `{ ...F0 } ${Array.from({ length: n }, (_, i) => (i === n - 1 ? `fragment F${i} on Query { __typename }` : `fragment F${i} on Query { x${i}: query { ...F${i + 1} } y${i}: query { ...F${i + 1} } }`)).join(' ')}`,
    // the same without aliases nor depth: valid, and 2^n spreads for a walker that does not remember fragments
    () =>
      `{ ...F0 } ${Array.from({ length: n }, (_, i) => (i === n - 1 ? `fragment F${i} on Query { __typename }` : `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`)).join(' ')}`,
    // depth through fragments: each one nests the next
    () =>
      `{ allOrganizations(first: 1) { nodes { ...O0 } } } ${Array.from({ length: n }, (_, i) => (i === n - 1 ? `fragment O${i} on Organization { name }` : `fragment O${i} on Organization { productsByOrganizationId(first: 1) { nodes { organizationByOrganizationId { ...O${i + 1} } } } }`)).join(' ')}`,
    () => `{ ... on Query { ${'... on Query { '.repeat(n)}__typename${' }'.repeat(n)} } }`,
    () => `{ ...F } fragment F on Product { name }`,
    () => `{ allProducts(first: 1) { nodes { ...F } } } fragment F on Order { rowId }`,
    () => {
      const doc = schemaDocument(rng, schema, f, true);
      return `${doc.query}\nfragment Unused${rng.int(10)} on Query { __typename }`;
    },
  ])();
}

/** A valid document padded to `size` bytes of request body: with a comment, with blanks, with a string, with aliases. */
function sizedBody(rng: Rng, size: number, f: GraphqlFixtures): string {
  const wrap = (query: string) => JSON.stringify({ query });
  const base = `{ allProducts(first: 1) { nodes { rowId } } }`;
  const room = size - wrap(base).length;
  const how = rng.pick(['comment', 'blanks', 'string', 'aliases', 'fields', 'variable']);
  let query: string;
  switch (how) {
    case 'comment':
      query = `# ${'c'.repeat(room - 3)}\n${base}`;
      break;
    case 'blanks':
      query = `${base}${' '.repeat(room)}`;
      break;
    case 'string':
      query = `{ allProducts(first: 1, condition: { name: "${'s'.repeat(Math.max(0, room - 26))}" }) { nodes { rowId } } }`;
      break;
    case 'variable': {
      const body = JSON.stringify({
        query: 'query ($n: String) { allProducts(first: 1, condition: { name: $n }) { totalCount } }',
        variables: { n: '' },
      });
      return body.replace('"n":""', `"n":"${'v'.repeat(size - body.length)}"`);
    }
    case 'fields': {
      const one = ' __typename';
      query = `{${one.repeat(Math.floor((room - 3) / one.length))} }`;
      break;
    }
    default: {
      const parts: string[] = [];
      let length = 4;
      for (let i = 0; length < room - 40; i++) {
        const part = `a${i}: productByRowId(rowId: "${rng.pick(f.uuids)}") { name }`;
        parts.push(part);
        length += part.length + 1;
      }
      query = `{ ${parts.join(' ')} }`;
    }
  }
  const body = wrap(query);
  // exact size: the padding of blanks at the end (a JSON body may end in blanks)
  return body.length < size ? body + ' '.repeat(size - body.length) : body;
}

const MiB = 1024 * 1024;

const ACCEPT: readonly (readonly [number, string | undefined])[] = [
  [30, 'application/json'],
  [6, 'application/graphql-response+json'],
  [2, undefined],
  [1, '*/*'],
  [1, 'multipart/mixed'],
  [1, 'text/html'],
  [1, 'application/graphql-response+json, application/json;q=0.9'],
  [1, 'text/event-stream'],
];

/** Document i of a run. */
export function generateDocument(seed: number, index: number, schema: GraphQLSchema, f: GraphqlFixtures): GeneratedDocument {
  const rng = new Rng(seed, index);
  const credential = rng.weighted(CREDENTIALS.map(([w, i]) => [w, i] as const));
  const accept = rng.weighted(ACCEPT);
  const json = (
    kind: string,
    query: string,
    variables?: Record<string, unknown>,
    extra: Record<string, unknown> = {},
    estimatedNodes?: number,
  ): GeneratedDocument => ({
    kind,
    body: JSON.stringify({ query, ...(variables && Object.keys(variables).length ? { variables } : {}), ...extra }),
    contentType: 'application/json',
    accept,
    credential,
    query,
    variables,
    estimatedNodes,
  });
  const kind = rng.weighted<string>([
    [52, 'schema'],
    [8, 'schema-unbounded'],
    [5, 'wrong-arguments'],
    [3, 'aliases'],
    [3, 'deep'],
    [1, 'node-aliases'],
    [3, 'node-ids'],
    [2, 'long-strings'],
    [2, 'sizes'],
    [6, 'syntax'],
    [4, 'fragments'],
    [2, 'directives'],
    [2, 'introspection'],
    [2, 'variables'],
    [3, 'bodies'],
  ]);
  switch (kind) {
    case 'schema': {
      const doc = schemaDocument(rng, schema, f, true);
      const operationName = rng.chance(0.1) && /^query Op\d+/.test(doc.query) ? { operationName: doc.query.split(/[ (]/)[1] } : {};
      return json(kind, doc.query, doc.variables, operationName, doc.nodes);
    }
    case 'schema-unbounded': {
      const doc = schemaDocument(rng, schema, f, false);
      return json(kind, doc.query, doc.variables, {}, doc.nodes);
    }
    case 'wrong-arguments': {
      const ctx = newContext(rng, schema, f, false);
      ctx.pHostileArgument = 1;
      ctx.maxDepth = rng.between(2, 5);
      const selection = selectionSet(ctx, schema.getQueryType()!, 1, 1);
      return json(kind, operationText(ctx, 'query', selection), variablesOf(ctx));
    }
    case 'aliases':
      return json(kind, aliasesDocument(rng, schema, f, rng.pick([19, 20, 21, 50, 200, 1000, 3000, 5000])));
    case 'deep': {
      const depth = rng.pick([9, 10, 11, 12, 20, 50, 60, 100, 200]);
      const pageSize = rng.pick([() => '1', () => null, () => String(rng.between(1, 100))]);
      return json(
        kind,
        rng.weighted<() => string>([
          [5, () => deepPath(rng, schema, f, depth, pageSize)],
          [1, () => `{ ${'query { '.repeat(depth - 1)}__typename${' }'.repeat(depth - 1)} }`],
          [
            1,
            () =>
              `{ __schema { types { ${'fields { type { '.repeat(Math.floor(depth / 2))}name${' } }'.repeat(Math.floor(depth / 2))} } } }`,
          ],
          [1, () => `{ __type(name: "Query") { ${'ofType { '.repeat(depth)}name${' }'.repeat(depth)} } }`],
          [1, () => `{ ${'query { '.repeat(depth)}allProducts(first: 1) { nodes { name } }${' }'.repeat(depth)} }`],
        ])(),
      );
    }
    case 'node-aliases':
      return json(kind, nodeAliases(rng, f, rng.pick([21, 100, 1600, 1600, 3000]), rng.pick([0, 0.1, 0.5, 1])));
    case 'node-ids': {
      const ids = Array.from({ length: rng.between(1, 4) }, () => (rng.chance(0.7) ? malformedNodeId(rng, f) : rng.pick(f.nodeIds)));
      const fields = Object.values(schema.getQueryType()!.getFields()).filter((x) => x.args.length === 1 && x.args[0]!.name === 'id');
      if (rng.chance(0.5)) {
        return json(kind, `query ($id: ID!) { node(id: $id) { id __typename } }`, { id: ids[0] });
      }
      return json(
        kind,
        `{ ${ids.map((id, i) => `x${i}: ${rng.pick(fields).name}(id: ${JSON.stringify(id)}) { id __typename }`).join(' ')} }`,
      );
    }
    case 'long-strings': {
      const length = rng.pick([10_000, 100_000, 500_000, 1_000_000]);
      const long = rng.pick(['x', 'é', '𝕏', '\\u0041', "'"])!.repeat(Math.ceil(length / 6));
      return json(
        kind,
        rng.pick([
          () => `{ allProducts(condition: { name: "${long}" }) { totalCount } }`,
          () => `{ productByRowId(rowId: "${long}") { name } }`,
          () => `{ node(id: "${long}") { id } }`,
          () => `{ ${'a'.repeat(Math.min(length, 200_000))}: __typename }`,
          () => `{ ${'a'.repeat(Math.min(length, 200_000))} }`,
          () => `query ${'Q'.repeat(Math.min(length, 200_000))} { __typename }`,
          () => `query ($${'v'.repeat(Math.min(length, 200_000))}: Int) { __typename }`,
          () => `{ allUsers(condition: { email: "${long}" }) { totalCount } }`,
          () => `{ __type(name: "${long}") { name } }`,
        ])(),
        rng.chance(0.3) ? { n: long.slice(0, 1000) } : undefined,
      );
    }
    case 'sizes': {
      const size = rng.pick([MiB - 1024, MiB - 64, MiB - 1, MiB, MiB + 1, MiB + 4096, 2 * MiB]);
      return { kind, body: sizedBody(rng, size, f), contentType: 'application/json', accept, credential };
    }
    case 'syntax': {
      const valid = schemaDocument(rng, schema, f, true).query;
      return json(kind, syntaxDocument(rng, valid));
    }
    case 'fragments':
      return json(kind, fragmentsDocument(rng, schema, f));
    case 'directives': {
      const n = rng.pick([2, 50, 1000, 5000]);
      return json(
        kind,
        rng.pick([
          () => `{ __typename${' @include(if: true)'.repeat(n)} }`,
          () => `{ allProducts(first: 1)${' @skip(if: false)'.repeat(n)} { totalCount } }`,
          () =>
            `query ($b: Boolean!) { allProducts(first: 2) @include(if: $b) { nodes { name @skip(if: $b) } } a: allOrders(first: 1) @skip(if: $b) { totalCount } }`,
          () => `{ __typename @include(if: true) @skip(if: true) }`,
          () => `{ __typename @deprecated }`,
          () => `{ __typename @oneOf }`,
          () => `query @skip(if: true) { __typename }`,
          () =>
            `{ ... @include(if: false) { allProducts { totalCount } } ... @skip(if: false) { allOrders(first: 3) { nodes { rowId } } } }`,
          () => `{ allProducts(first: 1) { nodes { name @defer } } }`,
          () => `{ allProducts(first: 3) @stream(initialCount: 1) { totalCount } }`,
          () => `{ __typename @include(if: ${'true'.repeat(n)}) }`,
        ])(),
        { b: rng.pick([true, false, null, 'yes', 1]) },
      );
    }
    case 'introspection': {
      const n = rng.pick([1, 2, 21, 100]);
      const full = getIntrospectionQuery({ descriptions: rng.chance(0.5), inputValueDeprecation: true });
      return json(
        kind,
        rng.pick([
          () => full,
          () =>
            `{ ${Array.from({ length: n }, (_, i) => `s${i}: __schema { types { name fields { name args { name type { name kind ofType { name } } } } } }`).join(' ')} }`,
          () =>
            `{ ${Array.from({ length: n }, (_, i) => `t${i}: __type(name: "${rng.pick(Object.keys(schema.getTypeMap()))}") { name fields { name } }`).join(' ')} }`,
          () => `{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }`,
          () => `{ __schema { directives { name args { name } } } }`,
        ])(),
      );
    }
    case 'variables': {
      const query = rng.pick([
        'query ($first: Int) { allProducts(first: $first) { nodes { name } } }',
        'query ($first: Int!) { allProducts(first: $first) { totalCount } }',
        'query ($id: ID!) { node(id: $id) { id } }',
        'query ($c: ProductCondition) { allProducts(condition: $c, first: 5) { nodes { name } } }',
        'query ($o: [ProductOrderBy!]) { allProducts(orderBy: $o, first: 5) { nodes { name } } }',
        'query ($r: UUID!) { productByRowId(rowId: $r) { name } }',
        'query ($a: Cursor) { allProducts(after: $a, first: 2) { nodes { name } } }',
      ]);
      const value = rng.pick([
        null,
        -1,
        101,
        2 ** 31,
        1e308,
        1.5,
        '5',
        'NAME_ASC',
        ['NAME_ASC', 'NAME_DESC'],
        Array.from({ length: 10_000 }, () => 'NAME_ASC'),
        { name: 'Fuzz 1' },
        { name: 'Fuzz 1', nope: 1 },
        { name: { nested: true } },
        { __proto__: { polluted: true } },
        malformedNodeId(rng, f),
        rng.pick(f.uuids),
        rng.pick(f.cursors),
        'x'.repeat(100_000),
        JSON.parse('['.repeat(2000) + ']'.repeat(2000)),
      ]);
      const name = /\$(\w+)/.exec(query)![1]!;
      const variables = rng.pick([{ [name]: value }, {}, { [name]: value, extra: value }]);
      return json(kind, query, variables);
    }
    default: {
      // request bodies of odd shapes
      const query = schemaDocument(rng, schema, f, true).query;
      const body = rng.pick<() => [string, string]>([
        () => [JSON.stringify({ query: 1 }), 'application/json'],
        () => [JSON.stringify({ query: null }), 'application/json'],
        () => [JSON.stringify({ query: [query] }), 'application/json'],
        () => [JSON.stringify({ query: { query } }), 'application/json'],
        () => [JSON.stringify({}), 'application/json'],
        () => [JSON.stringify([{ query }]), 'application/json'],
        () => [JSON.stringify([]), 'application/json'],
        () => [JSON.stringify(query), 'application/json'],
        () => ['null', 'application/json'],
        () => ['1', 'application/json'],
        () => [JSON.stringify({ query, variables: '{}' }), 'application/json'],
        () => [JSON.stringify({ query, variables: [] }), 'application/json'],
        () => [JSON.stringify({ query, variables: 1 }), 'application/json'],
        () => [JSON.stringify({ query, operationName: 'Nope' }), 'application/json'],
        () => [JSON.stringify({ query, operationName: 1 }), 'application/json'],
        () => [JSON.stringify({ query: `query A { __typename } query B { __typename }` }), 'application/json'],
        () => [JSON.stringify({ query: `query A { __typename } query B { __typename }`, operationName: 'B' }), 'application/json'],
        () => [JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } }), 'application/json'],
        () => [JSON.stringify({ query, extensions: 'x' }), 'application/json'],
        () => [JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } }), 'application/json'],
        () => [JSON.stringify({ query, documentId: 'x' }), 'application/json'],
        () => [JSON.stringify({ query, __proto__: { admin: true } }), 'application/json'],
        () => [`{"query": ${JSON.stringify(query)}, "query": 1}`, 'application/json'],
        () => [JSON.stringify({ query: query.replace(/ /g, '\u00a0') }), 'application/json'],
        () => [query, 'application/graphql'],
        () => [query, 'text/plain'],
        () => [JSON.stringify({ query }), 'text/plain'],
        () => [JSON.stringify({ query }), 'application/x-www-form-urlencoded'],
        () => [`query=${encodeURIComponent(query)}`, 'application/x-www-form-urlencoded'],
        () => [JSON.stringify({ query }), 'application/json; charset=utf-16'],
        () => [JSON.stringify({ query }), 'application/graphql-response+json'],
        () => [JSON.stringify({ query }).slice(0, -1), 'application/json'],
        () => [`{"query": "${'\\u0000'.repeat(10)}"}`, 'application/json'],
        () => [`{"query": "{ __typename }", "variables": ${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, 'application/json'],
      ]);
      const [text, contentType] = body();
      return { kind, body: text, contentType, accept, credential, query };
    }
  }
}

// ---------------------------------------------------------------------------
// Sending and judging.

export function graphqlRequest(
  app: TestApp,
  body: string,
  credential: Record<string, string> | null,
  contentType = 'application/json',
  accept?: string,
) {
  const headers: Record<string, string> = { ...(credential ?? {}), 'content-type': contentType };
  if (accept) headers.accept = accept;
  return { method: 'POST', url: `${app.url}/graphql`, headers, body: Buffer.from(body) };
}

export interface Judged {
  problem: string | null;
  /** the document passed validation and ran (the answer has `data`) */
  executed: boolean;
  codes: string[];
}

/** What is wrong with an answer of POST /graphql, or null; and what it says. */
export function judge(answer: Answer): Judged {
  const codes: string[] = [];
  const result = (problem: string | null, executed = false): Judged => ({ problem, executed, codes });
  if (answer.status >= 500) return result(`a ${answer.status} answer`);
  const type = String(answer.headers['content-type'] ?? '');
  if (answer.status === 406 || answer.status === 405) return result(null); // an Accept the server does not speak
  if (!/^application\/(graphql-response\+)?json\b/.test(type))
    return result(`an answer that is not JSON (${answer.status}, content-type ${type || 'none'})`);
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return result(`a ${answer.status} body that is not JSON`);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return result(`a ${answer.status} body that is not an object`);
  if ('errors' in body) {
    if (!Array.isArray(body.errors) || !body.errors.length) return result('`errors` that is not a non-empty list');
    for (const error of body.errors) {
      const code = error?.extensions?.code;
      if (typeof code !== 'string' || !code) return result(`an error without extensions.code: ${JSON.stringify(error).slice(0, 300)}`);
      codes.push(code);
      if (code === 'InternalServerError' || code === 'INTERNAL_SERVER_ERROR')
        return result(`an unexpected error (${code}): ${JSON.stringify(error).slice(0, 300)}`);
      if (typeof error.message !== 'string') return result(`an error without a message: ${JSON.stringify(error).slice(0, 300)}`);
      if (/\n\s+at .*\(.*:\d+:\d+\)/.test(error.message) || 'stack' in error) return result('an error with a stack trace');
    }
    return result(null, 'data' in body);
  }
  if ('error' in body) {
    // REST's error (the credential, the body): SPEC §7's shape
    const keys = Object.keys(body).sort().join(',');
    if (keys !== 'detail,error') return result(`a REST error with the keys ${keys}`);
    if (answer.status < 400) return result(`a REST error with status ${answer.status}`);
    codes.push(`${answer.status} ${body.error}`);
    return result(null);
  }
  if (!('data' in body)) return result(`a ${answer.status} answer with neither data nor errors: ${answer.text.slice(0, 200)}`);
  if (answer.status !== 200) return result(`data with status ${answer.status}`);
  return result(null, true);
}

// ---------------------------------------------------------------------------
// What SPEC §13 says must happen to a document, where that is certain from its
// text: refused with QUERY_TOO_COMPLEX (over 2,000 tokens, deeper than 10
// levels, more than 20 aliases in the operation itself, more than 10,000 nodes
// without fragments), or with BAD_USER_INPUT (a page argument out of range in an
// otherwise valid document). Either way, nothing executes.

const LIMITS = { tokens: 2_000, depth: 10, aliases: 20, nodes: 10_000, page: 100 };

export interface Expectation {
  /** why the document must be refused with QUERY_TOO_COMPLEX */
  tooComplex?: string;
  /** why it must be refused with BAD_USER_INPUT */
  badInput?: string;
}

export function expectationOf(schema: GraphQLSchema, query: string, variables: Record<string, unknown> | undefined): Expectation | null {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: LIMITS.tokens });
  } catch (error) {
    return /tokens/.test((error as Error).message) ? { tooComplex: `more than ${LIMITS.tokens} tokens` } : null;
  }
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operations.length !== 1) return null;
  const operation = operations[0]!;
  const fragments = new Map(
    document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
  );
  // depth: fields only (fragments flattened), each fragment's depth computed once; what
  // __schema holds is not counted (graphql-armor's ignoreIntrospection, so that the
  // standard introspection query, 15 levels, passes: graphql-js's own rule bounds it)
  const fragmentDepth = new Map<string, number>();
  const depthOf = (set: SelectionSetNode | undefined, visiting: Set<string>): number => {
    let deepest = 0;
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD)
        deepest = Math.max(deepest, 1 + (selection.name.value === '__schema' ? 0 : depthOf(selection.selectionSet, visiting)));
      else if (selection.kind === Kind.INLINE_FRAGMENT) deepest = Math.max(deepest, depthOf(selection.selectionSet, visiting));
      else {
        const name = selection.name.value;
        if (visiting.has(name) || !fragments.has(name)) continue;
        if (!fragmentDepth.has(name)) {
          visiting.add(name);
          fragmentDepth.set(name, depthOf(fragments.get(name)!.selectionSet, visiting));
          visiting.delete(name);
        }
        deepest = Math.max(deepest, fragmentDepth.get(name)!);
      }
    }
    return deepest;
  };
  const depth = depthOf(operation.selectionSet, new Set());
  if (depth > LIMITS.depth) return { tooComplex: `${depth} levels deep` };
  let aliases = 0;
  let spreads = 0;
  visit(operation, {
    Field: (field) => {
      if (field.alias) aliases++;
    },
    FragmentSpread: () => {
      spreads++;
    },
  });
  if (aliases > LIMITS.aliases) return { tooComplex: `${aliases} aliases in the operation` };
  if (!spreads) {
    let nodes = 0;
    const count = (set: SelectionSetNode | undefined, type: GraphQLNamedType | undefined | null, multiplier: number) => {
      for (const selection of set?.selections ?? []) {
        if (selection.kind === Kind.INLINE_FRAGMENT) {
          count(selection.selectionSet, selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type, multiplier);
        } else if (selection.kind === Kind.FIELD && (isObjectType(type) || isInterfaceType(type))) {
          const field = type.getFields()[selection.name.value];
          if (!field) continue;
          let inner = multiplier;
          if (field.args.some((a) => a.name === 'first')) {
            const literal = (name: string) => {
              const value = selection.arguments?.find((a) => a.name.value === name)?.value;
              return value?.kind === Kind.INT ? Math.min(Math.max(Number(value.value), 0), LIMITS.page) : value ? LIMITS.page : undefined;
            };
            inner = multiplier * (literal('first') ?? literal('last') ?? LIMITS.page);
            nodes += inner;
          }
          count(selection.selectionSet, getNamedType(field.type), inner);
        }
      }
    };
    count(operation.selectionSet, schema.getRootType(operation.operation), 1);
    if (nodes > LIMITS.nodes) return { tooComplex: `${nodes} nodes` };
  }
  // page arguments, in a document that is otherwise valid and skips nothing
  if (/@(skip|include)\b/.test(query) || validate(schema, document).length) return null;
  let badInput: string | undefined;
  const argumentValues = (node: OperationDefinitionNode | FragmentDefinitionNode) =>
    visit(node, {
      Argument: (argument) => {
        const name = argument.name.value;
        if (name !== 'first' && name !== 'last' && name !== 'offset') return;
        const value =
          argument.value.kind === Kind.INT
            ? Number(argument.value.value)
            : argument.value.kind === Kind.VARIABLE
              ? variables?.[argument.value.name.value]
              : undefined;
        if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > 2 ** 31 - 1) return; // not an Int: graphql-js refuses it
        if (name === 'offset' ? value < 0 : value < 0 || value > LIMITS.page) badInput ??= `${name}: ${value}`;
      },
    });
  argumentValues(operation);
  for (const fragment of fragments.values()) argumentValues(fragment);
  return badInput ? { badInput } : null;
}

// ---------------------------------------------------------------------------
// The run.

export interface GraphqlFuzzStats {
  documents: number;
  /** generated, of a kind not sent (options.skipKinds) */
  skipped: number;
  executed: number;
  /** documents graphql-js validates against the introspected schema (those under 50 kB) */
  locallyValid: number;
  locallyChecked: number;
  /** documents SPEC §13 says must be refused (by their text), each checked */
  refusalsExpected: number;
  byKind: Record<string, { sent: number; executed: number }>;
  byStatus: Record<number, number>;
  byCode: Record<string, number>;
  byCredential: Record<string, number>;
  problems: { index: number; kind: string; problem: string; file: string; request: string; answer: string }[];
  /** the problems told apart by what they say (numbers, positions and quoted text left out), with how often each came */
  distinctProblems: Map<string, { count: number; first: GraphqlFuzzStats['problems'][number] }>;
  /** answers slower than options.slowMs */
  slow: { index: number; kind: string; ms: number; request: string }[];
  latency: { p50: number; p99: number; max: number };
  rss: { start: number; max: number; end: number };
  eventLoopDelayMaxMs: number;
  readyz: WatchdogStats;
  /**
   * What the server logged as unexpected (the app runs here and logs with
   * console.error), first lines told apart as problems are, with their counts:
   * the causes behind InternalServerError answers, which all say the same.
   */
  serverLog: Map<string, number>;
  seconds: number;
}

export interface GraphqlFuzzOptions {
  seed: number;
  documents: number;
  /** only these document indices (a replay) */
  only?: number[];
  /** kinds of documents generated but not sent (while a bug they find is open) */
  skipKinds?: string[];
  concurrency?: number;
  /** fixtures renewed every so many documents (mutations change them) */
  renewEvery?: number;
  timeoutMs?: number;
  slowMs?: number;
  /** /readyz probes: one every probeEveryMs (1 s), each failed after probeTimeoutMs (2 s) */
  probeEveryMs?: number;
  probeTimeoutMs?: number;
  /** the process is ended (with the documents in flight named) when its event loop has not run for so long (60 s) */
  stallMs?: number;
  /** where the bodies of failing documents are written */
  outDir?: string;
  progress?: (stats: GraphqlFuzzStats) => void;
  progressEvery?: number;
}

export interface WatchdogStats {
  probes: number;
  /** a probe that failed, after how many documents, with the documents in flight */
  failures: { at: number; problem: string; inFlight: number[] }[];
  maxMs: number;
}

/**
 * The watchdog, a worker thread (plain JavaScript, evaluated): probes /readyz on
 * its schedule, and when the main thread's heartbeat is older than stallMs, says
 * which documents were in flight (their bodies are in inFlightDir) on stderr,
 * synchronously, and kills the process: a blocked event loop would otherwise
 * hang the run, vitest's own timeouts included.
 */
const WATCHDOG = `
const { workerData: w, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const http = require('node:http');
const stats = { probes: 0, failures: [], maxMs: 0 };
const inFlight = () => Array.from(w.slots).filter((n) => n > 0).map((n) => n - 1);
let stopping = false;
const pending = new Set();
const probe = () => new Promise((resolve) => {
  const t0 = Date.now();
  const fail = (problem) => { stats.probes++; stats.failures.push({ at: Atomics.load(w.done, 0), problem, inFlight: inFlight() }); resolve(); };
  const req = http.get(w.url, { agent: false, timeout: w.timeoutMs }, (res) => {
    res.resume();
    res.on('end', () => {
      const ms = Date.now() - t0;
      if (res.statusCode !== 200) return fail('status ' + res.statusCode);
      if (ms > w.timeoutMs) return fail('answered after ' + ms + ' ms');
      stats.probes++;
      stats.maxMs = Math.max(stats.maxMs, ms);
      resolve();
    });
    res.on('error', (e) => fail(e.message));
  });
  const timer = setTimeout(() => req.destroy(new Error('no answer within ' + w.timeoutMs + ' ms')), w.timeoutMs);
  req.on('close', () => clearTimeout(timer));
  req.on('error', (e) => fail(e.message));
});
const tick = setInterval(() => {
  if (stopping) return;
  const p = probe();
  pending.add(p);
  p.then(() => pending.delete(p));
  const stalled = Date.now() - w.base - Atomics.load(w.heartbeat, 0);
  if (stalled > w.stallMs) {
    const docs = inFlight();
    let text = '\\nGraphQL fuzzing (seed ' + w.seed + '): the event loop has not run for ' + Math.round(stalled / 1000) + ' s, after ' + Atomics.load(w.done, 0) + ' documents; ending the process.\\n' +
      '  documents in flight: ' + docs.join(', ') + ' (replay: GRAPHQL_FUZZ_SEED=' + w.seed + ' GRAPHQL_FUZZ_ONLY=' + docs.join(',') + ')\\n';
    for (const file of fs.readdirSync(w.inFlightDir)) {
      const body = fs.readFileSync(w.inFlightDir + '/' + file, 'utf8');
      text += '  ' + w.inFlightDir + '/' + file + ': ' + (body.length > 1500 ? body.slice(0, 1500) + '… (' + body.length + ' characters)' : body) + '\\n';
    }
    fs.writeSync(2, text);
    process.kill(process.pid, 'SIGKILL');
  }
}, w.everyMs);
parentPort.on('message', async () => {
  stopping = true;
  clearInterval(tick);
  await Promise.all(pending);
  parentPort.postMessage(stats);
});
`;

function startWatchdog(data: {
  url: string;
  everyMs: number;
  timeoutMs: number;
  stallMs: number;
  base: number;
  heartbeat: Int32Array;
  slots: Int32Array;
  done: Int32Array;
  inFlightDir: string;
  seed: number;
}): { stop(): Promise<WatchdogStats> } {
  const worker = new Worker(WATCHDOG, { eval: true, workerData: data });
  return {
    async stop() {
      const answer = new Promise<WatchdogStats>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      worker.postMessage('stop');
      const result = await answer;
      await worker.terminate();
      return result;
    },
  };
}

export async function introspect(app: TestApp): Promise<GraphQLSchema> {
  const answer = await send(graphqlRequest(app, JSON.stringify({ query: getIntrospectionQuery({ inputValueDeprecation: true }) }), null));
  const body = JSON.parse(answer.text);
  if (!body.data) throw new Error(`introspection failed: ${answer.status} ${answer.text.slice(0, 500)}`);
  return buildClientSchema(body.data);
}

const short = (text: string, n = 600) => (text.length > n ? `${text.slice(0, n)}… (${text.length} characters in all)` : text);

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! : 0;
}

export async function runGraphqlFuzz(app: TestApp, options: GraphqlFuzzOptions): Promise<GraphqlFuzzStats> {
  const started = Date.now();
  const schema = await introspect(app);
  let fixtures = await makeGraphqlFixtures(app, schema);
  const outDir = options.outDir ?? path.join(tmpdir(), `rowgate-graphql-fuzz-${options.seed}`);
  const indices = options.only ?? Array.from({ length: options.documents }, (_, i) => i);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const slowMs = options.slowMs ?? 5_000;
  const stats: GraphqlFuzzStats = {
    documents: 0,
    skipped: 0,
    executed: 0,
    locallyValid: 0,
    locallyChecked: 0,
    refusalsExpected: 0,
    byKind: {},
    byStatus: {},
    byCode: {},
    byCredential: {},
    problems: [],
    distinctProblems: new Map(),
    slow: [],
    latency: { p50: 0, p99: 0, max: 0 },
    rss: { start: process.memoryUsage.rss(), max: 0, end: 0 },
    eventLoopDelayMaxMs: 0,
    readyz: { probes: 0, failures: [], maxMs: 0 },
    serverLog: new Map(),
    seconds: 0,
  };
  stats.rss.max = stats.rss.start;
  const latencies: number[] = [];
  const verbose = Number(process.env.GRAPHQL_FUZZ_VERBOSE ?? 0);
  if (verbose) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, 'log.txt'), '');
    console.log(`GraphQL fuzzing: every document and answer in ${path.join(outDir, 'log.txt')}`);
  }
  const credentialName = new Map(CREDENTIALS.map(([, i, name]) => [i, name]));

  // /readyz, probed from a thread of its own: the app runs in this thread, and a
  // document that blocks it must show as probes that go unanswered
  const inFlightDir = path.join(outDir, 'in-flight');
  mkdirSync(inFlightDir, { recursive: true });
  const concurrency = options.concurrency ?? 2;
  const shared = {
    heartbeat: new Int32Array(new SharedArrayBuffer(4)),
    slots: new Int32Array(new SharedArrayBuffer(4 * concurrency)),
    done: new Int32Array(new SharedArrayBuffer(4)),
  };
  const base = Date.now();
  const beat = () => Atomics.store(shared.heartbeat, 0, Date.now() - base);
  beat();
  const heartbeat = setInterval(beat, 100);
  const watchdog = startWatchdog({
    url: `${app.url}/readyz`,
    everyMs: options.probeEveryMs ?? 1_000,
    timeoutMs: options.probeTimeoutMs ?? 2_000,
    stallMs: options.stallMs ?? 60_000,
    base,
    heartbeat: shared.heartbeat,
    slots: shared.slots,
    done: shared.done,
    inFlightDir,
    seed: options.seed,
  });
  const consoleError = console.error;
  console.error = (...args: unknown[]) => {
    const first = String(args[0] ?? '').split('\n')[0]!;
    const line = first
      .replace(/^graphql error at \S+: /, 'graphql error: ')
      .replace(/"[0-9a-f]{16,}"/g, '"…"')
      .replace(/"[^"]{0,100}"/g, '"…"')
      .replace(/\d+/g, '#')
      .slice(0, 200);
    stats.serverLog.set(line, (stats.serverLog.get(line) ?? 0) + 1);
    if (verbose) appendFileSync(path.join(outDir, 'log.txt'), `  server: ${first.slice(0, 300)}\n`);
    consoleError(...args);
  };
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();

  let next = 0;
  let renewing: Promise<void> | null = null;
  const renewEvery = options.renewEvery ?? 1_000;
  /** the stats with what is measured over the run so far: latencies, RSS now, the event loop's delay, the time */
  const measured = () => {
    const sorted = [...latencies].sort((a, b) => a - b);
    stats.latency = {
      p50: Math.round(percentile(sorted, 0.5)),
      p99: Math.round(percentile(sorted, 0.99)),
      max: Math.round(sorted[sorted.length - 1] ?? 0),
    };
    stats.rss.end = process.memoryUsage.rss();
    stats.eventLoopDelayMaxMs = Math.round(loopDelay.max / 1e6);
    stats.seconds = Math.round((Date.now() - started) / 100) / 10;
    return stats;
  };
  const worker = async (slot: number) => {
    while (next < indices.length) {
      const position = next++;
      const index = indices[position]!;
      if (position > 0 && position % renewEvery === 0) {
        renewing = makeGraphqlFixtures(app, schema).then((f) => {
          fixtures = f;
        });
      }
      if (renewing) await renewing;
      const doc = generateDocument(options.seed, index, schema, fixtures);
      if (options.skipKinds?.includes(doc.kind)) {
        stats.skipped++;
        continue;
      }
      const request = graphqlRequest(app, doc.body, fixtures.fixtures.credentials[doc.credential] ?? null, doc.contentType, doc.accept);
      // what the watchdog names if the process stops answering
      writeFileSync(path.join(inFlightDir, `${slot}.json`), doc.body);
      Atomics.store(shared.slots, slot, index + 1);
      const t0 = performance.now();
      let answer: Answer;
      let judged: Judged;
      try {
        answer = await send(request, timeoutMs);
        judged = judge(answer);
      } catch (error) {
        answer = { status: 0, headers: {}, text: '' };
        judged = { problem: `no answer: ${(error as Error).message}`, executed: false, codes: [] };
      }
      const ms = performance.now() - t0;
      Atomics.store(shared.slots, slot, 0);
      latencies.push(ms);
      if (verbose) {
        // every document and its answer, one line each, in outDir/log.txt
        appendFileSync(
          path.join(outDir, 'log.txt'),
          `${index} ${doc.kind} [${CREDENTIALS.find(([, i]) => i === doc.credential)?.[2]}] ${answer.status} ${Math.round(ms)} ms ${judged.codes.join(',')} ${short(doc.body, verbose)} → ${short(answer.text, 300)}\n`,
        );
      }
      const rss = process.memoryUsage.rss();
      if (rss > stats.rss.max) stats.rss.max = rss;
      stats.documents++;
      Atomics.store(shared.done, 0, stats.documents);
      const kind = (stats.byKind[doc.kind] ??= { sent: 0, executed: 0 });
      kind.sent++;
      stats.byStatus[answer.status] = (stats.byStatus[answer.status] ?? 0) + 1;
      const credential = credentialName.get(doc.credential) ?? String(doc.credential);
      stats.byCredential[credential] = (stats.byCredential[credential] ?? 0) + 1;
      for (const code of new Set(judged.codes)) stats.byCode[code] = (stats.byCode[code] ?? 0) + 1;
      if (judged.executed) {
        stats.executed++;
        kind.executed++;
      }
      // what SPEC §13 says of this document, where its text decides it
      if (
        !judged.problem &&
        doc.kind !== 'bodies' &&
        doc.query !== undefined &&
        doc.contentType === 'application/json' &&
        doc.body.length <= 1024 * 1024 &&
        [200, 400].includes(answer.status)
      ) {
        // refused, and said so: with the limit's code, or another refusal that came first
        // (a validation error the server's own scalars find, graphql-js's 20 errors at most)
        const expectation = expectationOf(schema, doc.query, doc.variables);
        const why = expectation?.tooComplex ?? expectation?.badInput;
        if (why) {
          stats.refusalsExpected++;
          const refusals = ['QUERY_TOO_COMPLEX', 'BAD_USER_INPUT', 'GRAPHQL_VALIDATION_FAILED', 'GRAPHQL_PARSE_FAILED'];
          if (judged.executed || !judged.codes.some((c) => refusals.includes(c))) {
            judged.problem = `not refused (${expectation?.tooComplex ? 'QUERY_TOO_COMPLEX' : 'BAD_USER_INPUT'}) although ${why}: ${judged.executed ? 'it executed' : `codes ${judged.codes.join(', ') || 'none'}`}`;
          }
        }
      }
      if (doc.query !== undefined && doc.query.length < 50_000 && doc.contentType === 'application/json') {
        stats.locallyChecked++;
        try {
          if (validate(schema, parse(doc.query)).length === 0) stats.locallyValid++;
        } catch {
          // a syntax error
        }
      }
      const describe = () => {
        mkdirSync(outDir, { recursive: true });
        const file = path.join(outDir, `${index}.json`);
        writeFileSync(file, doc.body);
        const headers = Object.entries(request.headers)
          .map(([k, v]) => `-H '${k}: ${v}'`)
          .join(' ');
        return { file, request: `curl -i ${app.url}/graphql ${headers} --data-binary @${file}   # ${short(doc.body, 400)}` };
      };
      if (ms > slowMs) stats.slow.push({ index, kind: doc.kind, ms: Math.round(ms), request: describe().request });
      if (judged.problem) {
        const { file, request: curl } = describe();
        const problem = {
          index,
          kind: doc.kind,
          problem: judged.problem,
          file,
          request: `[${credential}] ${curl}`,
          answer: `${answer.status} ${short(answer.text, 800)}`,
        };
        stats.problems.push(problem);
        const signature = problemSignature(judged.problem);
        const seen = stats.distinctProblems.get(signature);
        if (seen) seen.count++;
        else {
          stats.distinctProblems.set(signature, { count: 1, first: problem });
          // said at once (the first of its kind): a crash later must not hide it
          console.log(
            `GraphQL fuzzing: document ${index} (seed ${options.seed}, ${doc.kind}): ${judged.problem}\n  request: ${problem.request}\n  answer: ${problem.answer}`,
          );
        }
      }
      if (options.progress && stats.documents % (options.progressEvery ?? 1000) === 0) options.progress(measured());
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, (_, slot) => worker(slot)));
  } finally {
    clearInterval(heartbeat);
    stats.readyz = await watchdog.stop();
    loopDelay.disable();
    console.error = consoleError;
  }
  return measured();
}

/** What a problem says, without what varies between documents (numbers, positions, quoted values). */
export function problemSignature(problem: string): string {
  return problem
    .replace(/"locations":\[[^\]]*\],?/g, '')
    .replace(/"path":\[[^\]]*\],?/g, '')
    .replace(/\\"(?:[^"\\]|\\[^"]){0,200}?\\"/g, '…')
    .replace(/\d+/g, '#')
    .slice(0, 200);
}

export function summary(s: GraphqlFuzzStats): string {
  const MB = (n: number) => `${Math.round(n / 1e6)} MB`;
  const kinds = Object.entries(s.byKind)
    .sort((a, b) => b[1].sent - a[1].sent)
    .map(([k, v]) => `${k} ${v.executed}/${v.sent}`)
    .join(', ');
  return [
    `${s.documents} documents${s.skipped ? ` (${s.skipped} skipped)` : ''} in ${s.seconds || '…'} s, ${s.executed} executed (${((100 * s.executed) / Math.max(1, s.documents)).toFixed(1)} %), ${s.problems.length} problems (${s.distinctProblems.size} distinct)`,
    `  valid for graphql-js: ${s.locallyValid} of ${s.locallyChecked} checked; ${s.refusalsExpected} refusals SPEC §13 requires, checked`,
    `  executed/sent by kind: ${kinds}`,
    `  statuses ${JSON.stringify(s.byStatus)}; codes ${JSON.stringify(s.byCode)}`,
    `  credentials ${JSON.stringify(s.byCredential)}`,
    `  latency p50 ${s.latency.p50} ms, p99 ${s.latency.p99} ms, max ${s.latency.max} ms; ${s.slow.length} answers over the slow mark`,
    `  RSS ${MB(s.rss.start)} at the start, ${MB(s.rss.max)} at most (+${MB(s.rss.max - s.rss.start)}), ${MB(s.rss.end)} now; event loop delay max ${s.eventLoopDelayMaxMs} ms`,
    `  /readyz: ${s.readyz.probes} probes, ${s.readyz.failures.length} failed, slowest ${s.readyz.maxMs} ms` +
      s.readyz.failures
        .slice(0, 5)
        .map((f) => `\n    failed after ${f.at} documents: ${f.problem} (documents in flight: ${f.inFlight.join(', ') || 'none'})`)
        .join(''),
    `  the server logged: ${
      [...s.serverLog]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([line, n]) => `\n    ${n}× ${line}`)
        .join('') || 'nothing'
    }`,
  ].join('\n');
}
