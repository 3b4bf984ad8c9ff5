// The bounds of one GraphQL request (SPEC §13), all decided before grafast plans
// anything: planning is synchronous and happens before any permission check, so
// a document that is too big must be refused from its text alone (one anonymous
// document of 1,600 `node(id:)` aliases ran the server out of heap).
//
// - tokens: graphql-js's own parser stops at 2,000 (its `maxTokens`), so a huge
//   document is never fully parsed nor held as an AST;
// - depth and aliases: graphql-armor's validation rules (maintained, plain
//   graphql-js rules), reported with our code instead of thrown;
// - nodes: GitHub's count, our own rule (no published rule counts page sizes
//   multiplied along nested connections with PostGraphile's argument names);
// - page sizes: `first`/`last` 0..100 and `offset` ≥ 0, literal or variable,
//   checked per request (variables differ between requests) before execution.
import { createHash } from 'node:crypto';
import { boundedText, ECHOED_CHARACTERS } from '../core/errors.ts';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import {
  GraphQLError,
  Kind,
  Source,
  getNamedType,
  isInterfaceType,
  isObjectType,
  parse,
  specifiedRules,
  validate,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'postgraphile/graphql';

export const LIMITS = Object.freeze({
  depth: 10,
  aliases: 20,
  tokens: 2_000,
  nodes: 10_000,
  /** the largest page, and the page of a connection asked without first/last */
  pageSize: 100,
  /** fields with every fragment written out where it is spread */
  expandedFields: 5_000,
});

/** extensions.code of each kind of refusal (SPEC §13) */
export const TOO_COMPLEX = 'QUERY_TOO_COMPLEX';
export const BAD_USER_INPUT = 'BAD_USER_INPUT';
const PARSE_FAILED = 'GRAPHQL_PARSE_FAILED';
export const VALIDATION_FAILED = 'GRAPHQL_VALIDATION_FAILED';

const tooComplex = (message: string, nodes?: readonly ASTNode[] | ASTNode) =>
  new GraphQLError(message, { nodes, extensions: { code: TOO_COMPLEX } });

/** graphql-armor's rules report through this instead of throwing their own "Syntax Error" */
const reportAs = (describe: (found: number) => string) => ({
  propagateOnRejection: false,
  exposeLimits: true,
  onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(tooComplex(describe(foundIn(error))))],
});
const foundIn = (error: GraphQLError) => Number(/found (\d+)/.exec(error.message)?.[1] ?? NaN);

/** The arguments that size a collection: PostGraphile's connections and lists take `first`. */
const isCollection = (field: GraphQLField<unknown, unknown>) => field.args.some((a) => a.name === 'first');

/**
 * GitHub's node count: for every collection in the operation, the product of
 * its page size and the page sizes of the collections enclosing it, summed. A
 * page size is the literal `first` (else `last`); a variable or no argument
 * counts the largest page, what the document *could* ask for whatever its
 * variables (so the count depends on the text alone and is cached with it).
 */
function countNodes(schema: GraphQLSchema, operation: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>): number {
  const rootType = schema.getRootType(operation.operation);
  if (!rootType) return 0;
  // A fragment's count is the same wherever it is spread, times the pages around
  // the spread: counted once (a fragment spread twice in each of 40 fragments
  // would otherwise be walked 2^40 times). Counts
  // are capped just past the limit, so they stay small numbers.
  const cap = (n: number) => Math.min(n, LIMITS.nodes + 1);
  const fragmentCounts = new Map<string, number>();
  const countSet = (selectionSet: SelectionSetNode, type: GraphQLNamedType, visiting: Set<string>): number => {
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!isObjectType(type) && !isInterfaceType(type)) continue;
        const field = type.getFields()[selection.name.value];
        if (!field) continue; // reported by the spec's own rules
        const page = isCollection(field) ? pageSizeOf(selection) : 1;
        const inner = selection.selectionSet ? countSet(selection.selectionSet, getNamedType(field.type), visiting) : 0;
        total += isCollection(field) ? page + page * inner : inner;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const narrowed = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type;
        if (narrowed) total += countSet(selection.selectionSet, narrowed, visiting);
      } else {
        total += countFragment(selection.name.value, visiting);
      }
      total = cap(total);
    }
    return total;
  };
  const countFragment = (name: string, visiting: Set<string>): number => {
    const known = fragmentCounts.get(name);
    if (known !== undefined) return known;
    const fragment = fragments.get(name);
    // a cycle is the spec's NoFragmentCycles error; here it only stops the walk
    if (!fragment || visiting.has(name)) return 0;
    const narrowed = schema.getType(fragment.typeCondition.name.value);
    if (!narrowed) return 0;
    visiting.add(name);
    const count = countSet(fragment.selectionSet, narrowed, visiting);
    visiting.delete(name);
    fragmentCounts.set(name, count);
    return count;
  };
  return countSet(operation.selectionSet, rootType, new Set());
}

function pageSizeOf(field: FieldNode): number {
  const literal = (name: string) => {
    const value = field.arguments?.find((a) => a.name.value === name)?.value;
    return value?.kind === Kind.INT ? Math.min(Math.max(Number(value.value), 0), LIMITS.pageSize) : undefined;
  };
  const first = field.arguments?.find((a) => a.name.value === 'first');
  if (first) return first.value.kind === Kind.INT ? literal('first')! : LIMITS.pageSize;
  return literal('last') ?? LIMITS.pageSize;
}

const nodeBudgetRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    const fragments = new Map(
      context
        .getDocument()
        .definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((d) => [d.name.value, d]),
    );
    const nodes = countNodes(context.getSchema(), operation, fragments);
    if (nodes > LIMITS.nodes) {
      context.reportError(
        tooComplex(
          `The document could ask for more than ${LIMITS.nodes.toLocaleString('en')} nodes (each connection's page size multiplied by those of the connections around it, ${LIMITS.pageSize} when not given); ask for smaller pages`,
          operation,
        ),
      );
    }
  },
});

/**
 * The fields of an operation with its fragments written out where they are
 * spread: what grafast plans. grafast writes out a fragment spread twice in one
 * selection twice (graphql-js's own executor would not), so 40 fragments of
 * two spreads each, 1.5 kB, plan 2^40 fields: one anonymous request would hold
 * the server for hours. Each fragment's size is
 * counted once; sizes stop just past the limit.
 */
const expandedFieldsRule: ValidationRule = (context) => {
  const cap = (n: number) => Math.min(n, LIMITS.expandedFields + 1);
  const sizes = new Map<string, number>();
  const sizeOf = (selectionSet: SelectionSetNode, visiting: Set<string>): number => {
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) total += 1 + (selection.selectionSet ? sizeOf(selection.selectionSet, visiting) : 0);
      else if (selection.kind === Kind.INLINE_FRAGMENT) total += sizeOf(selection.selectionSet, visiting);
      else total += fragmentSize(selection.name.value, visiting);
      total = cap(total);
    }
    return total;
  };
  const fragmentSize = (name: string, visiting: Set<string>): number => {
    const known = sizes.get(name);
    if (known !== undefined) return known;
    const fragment = context.getFragment(name);
    if (!fragment || visiting.has(name)) return 0; // a cycle: the spec's rules report it
    visiting.add(name);
    const size = sizeOf(fragment.selectionSet, visiting);
    visiting.delete(name);
    sizes.set(name, size);
    return size;
  };
  return {
    OperationDefinition(operation) {
      const size = sizeOf(operation.selectionSet, new Set());
      if (size > LIMITS.expandedFields) {
        context.reportError(
          tooComplex(
            `With its fragments written out where they are spread, the document has more than ${LIMITS.expandedFields.toLocaleString('en')} fields`,
            operation,
          ),
        );
      }
    },
  };
};

/** An operation of a type the schema does not have (graphql-js 16 leaves it to execution) */
const knownOperationTypesRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    if (!context.getSchema().getRootType(operation.operation)) {
      context.reportError(
        new GraphQLError(`This API has no ${operation.operation} operations`, {
          nodes: operation,
          extensions: { code: VALIDATION_FAILED },
        }),
      );
    }
  },
});

/** The spec's rules, then ours; depth as SPEC §13 counts it (fragments add no level) */
const validationRules: readonly ValidationRule[] = [
  ...specifiedRules,
  knownOperationTypesRule,
  expandedFieldsRule,
  maxDepthRule({
    n: LIMITS.depth,
    flattenFragments: true,
    ...reportAs((found) => `The document is ${found} levels deep; the limit is ${LIMITS.depth}`),
  }),
  maxAliasesRule({
    n: LIMITS.aliases,
    allowList: [],
    ...reportAs((found) => `The document has ${found} aliases; the limit is ${LIMITS.aliases}`),
  }),
  nodeBudgetRule,
];

/** the longest document whose parse and validation are kept (20,000 characters: 2,000 tokens of ten) */
const CACHED_LENGTH = 20_000;

export type ParseAndValidateResult =
  | { document: DocumentNode; errors?: undefined }
  | { errors: readonly GraphQLError[]; document?: undefined };

/**
 * graphql-js quotes the document's names in its messages: a 100,000-character
 * field name was a 100 KB message. A quoted name is echoed at most 200
 * characters, as REST echoes inputs (SPEC §14), and a message at most 400.
 */
const boundedMessage = (message: string) =>
  boundedText(
    message.replace(/"([^"]{201,})"/g, (_, name: string) => `"${boundedText(name)}"`),
    2 * ECHOED_CHARACTERS,
  );

/** A refusal or a syntax error with its code (the spec's own validation errors as GRAPHQL_VALIDATION_FAILED), its message bounded. */
function withCode(error: GraphQLError, code: string): GraphQLError {
  const message = boundedMessage(error.message);
  if (error.extensions.code && message === error.message) return error;
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    extensions: { ...error.extensions, code: error.extensions.code ?? code },
  });
}

/**
 * Parses (at most LIMITS.tokens tokens) and validates a document, remembering
 * the last `cacheSize` answers by text (a client sends the same few documents).
 */
export function makeParseAndValidate(schema: GraphQLSchema, cacheSize = 100): (query: string) => ParseAndValidateResult {
  const cache = new Map<string, ParseAndValidateResult>();
  return (query) => {
    // A result holds its document's text (its AST's source, an error's source):
    // a long document is not kept at all, so the cache holds at most
    // cacheSize × CACHED_LENGTH characters (1 MiB documents, each a little
    // different, would run the server out of heap)
    const cacheable = query.length <= CACHED_LENGTH;
    const key = query.length > 500 ? createHash('sha256').update(query).digest('base64') : query;
    const cached = cacheable ? cache.get(key) : undefined;
    if (cached) {
      // most recently used last: the first entry is the one to drop
      cache.delete(key);
      cache.set(key, cached);
      return cached;
    }
    let result: ParseAndValidateResult;
    try {
      const document = parse(new Source(query, 'GraphQL request'), { maxTokens: LIMITS.tokens });
      const errors = validate(schema, document, validationRules, { maxErrors: 20 });
      result = errors.length ? { errors: errors.map((e) => withCode(e, VALIDATION_FAILED)) } : { document };
    } catch (error) {
      // graphql-js parses nested values by recursion: 2,000 tokens of `[` run out of
      // stack (a 500); too deep is too complex
      if (error instanceof RangeError) return { errors: [tooComplex('The document is nested too deeply')] };
      if (!(error instanceof GraphQLError)) throw error;
      // (graphql-js words it "more that N tokens")
      const tooManyTokens = /more tha[nt] \d+ tokens/.test(error.message);
      result = {
        errors: [
          tooManyTokens
            ? tooComplex(
                `The document has more than ${LIMITS.tokens.toLocaleString('en')} tokens; the limit is ${LIMITS.tokens.toLocaleString('en')}`,
              )
            : withCode(error, PARSE_FAILED),
        ],
      };
    }
    if (!cacheable) return result;
    cache.set(key, result);
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
    return result;
  };
}
