// What a GraphQL client reads when something goes wrong: a request body that is
// not GraphQL over HTTP (SPEC §7's 422), and the errors of execution, where our
// SQL's deliberate errors keep REST's words and everything else is masked.
import type { GraphQLError } from 'postgraphile/graphql';
import { boundedText, ECHOED_CHARACTERS, fromDatabaseError, timeoutDetail, type ValidationIssue } from '../core/errors.ts';
import { databaseFailure, SQLSTATE } from '../core/sqlstate.ts';
import { BAD_USER_INPUT, VALIDATION_FAILED } from './limits.ts';

/** GraphQL errors the client may read: our SQL's deliberate errors, as REST words them; the rest is masked. */
export function makeMaskError(
  GraphQLErrorClass: typeof GraphQLError,
  isSafeError: (e: Error) => boolean,
  log: (line: string) => void,
  options: { statementTimeoutMs?: number; development: boolean; refused?: (code: string) => void },
) {
  const mask = (error: GraphQLError): GraphQLError => {
    const original = error.originalError as (Error & { code?: string; extensions?: Record<string, unknown> }) | undefined;
    if (!original || original instanceof GraphQLErrorClass) {
      // graphql-js's own: a variable of the wrong type, an unknown operation name (its message quotes the
      // value the client sent: bounded, SPEC §14)
      if (error.extensions.code && error.message.length <= 2 * ECHOED_CHARACTERS) return error;
      const code = (error.extensions.code as string | undefined) ?? (error.nodes?.length ? BAD_USER_INPUT : VALIDATION_FAILED);
      return new GraphQLErrorClass(boundedText(error.message, 2 * ECHOED_CHARACTERS), {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        extensions: { ...error.extensions, code },
      });
    }
    if (isSafeError(original)) {
      // meant for the client: ours (an update that changed nothing), and grafast's
      // about the request itself (a cursor from another ordering), which carry no code
      return new GraphQLErrorClass(original.message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        originalError: original,
        extensions: { code: BAD_USER_INPUT, ...original.extensions },
      });
    }
    const copy = (message: string, code: string) =>
      new GraphQLErrorClass(message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        originalError: original,
        extensions: { code },
      });
    const failure = databaseFailure(original);
    // a grant is missing (an anonymous request) or RLS refused a row
    if (failure === 'privilege') return copy(original.message, 'NotPermitted');
    // a query's statements after its credential was found to authenticate nobody
    // (src/graphql/transport/deferred-authentication.ts); the request's answer is REST's 401
    if (failure === 'nobody') return copy(original.message, 'Unauthorized');
    // the statement timeout (SPEC §13), said with a warning (SPEC §14)
    if (original.code === SQLSTATE.queryCanceled) {
      const message = options.statementTimeoutMs
        ? timeoutDetail(options.statementTimeoutMs)
        : 'The request took longer than the statement timeout and was cancelled';
      log(`timeout on POST /graphql at ${error.path?.join('.') ?? '(request)'}: ${message}`);
      return copy(message, 'TIMEOUT');
    }
    // a data exception: a value of the input that is not of its column's type (a node id holding no uuid);
    // REST's 422 would locate it in a body this request does not have
    if (failure === 'badValue') return copy(boundedText(original.message, 2 * ECHOED_CHARACTERS), BAD_USER_INPUT);
    const apiError = fromDatabaseError(original);
    if (apiError && apiError.status !== 500) {
      const detail = apiError.detail;
      const message = typeof detail === 'string' ? detail : detail.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ');
      return copy(message, apiError.error);
    }
    // integrity violations come from the input: a null for a required column
    if (failure === 'constraint' || failure === 'integrity')
      return copy(boundedText(original.message, 2 * ECHOED_CHARACTERS), BAD_USER_INPUT);
    // the message may repeat the client's input (a malformed node id): bounded, and the stack in development only
    const path = boundedText(error.path?.join('.') ?? '(request)');
    log(`graphql error at ${path}: ${options.development ? (original.stack ?? String(original)) : boundedText(String(original))}`);
    return copy('An unexpected error occurred', 'InternalServerError');
  };
  // statement timeouts, as metrics count them beside the limits' refusals (SPEC §14)
  return (error: GraphQLError): GraphQLError => {
    const masked = mask(error);
    if (masked.extensions?.code === 'TIMEOUT') options.refused?.('TIMEOUT');
    return masked;
  };
}

/** What is wrong with a GraphQL request body (GraphQL over HTTP: query, variables, operationName, extensions) */
export function graphqlBodyIssues(body: unknown): ValidationIssue[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return [{ type: 'object_type', loc: ['body'], msg: 'The body must be a JSON object with a "query"' }];
  }
  const fields = body as Record<string, unknown>;
  const issues: ValidationIssue[] = [];
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (typeof fields.query !== 'string') issues.push({ type: 'string_type', loc: ['body', 'query'], msg: 'The document must be a string' });
  if (fields.operationName != null && typeof fields.operationName !== 'string') {
    issues.push({ type: 'string_type', loc: ['body', 'operationName'], msg: 'The operation name must be a string or null' });
  }
  for (const key of ['variables', 'extensions'] as const) {
    if (fields[key] != null && !isObject(fields[key]))
      issues.push({ type: 'object_type', loc: ['body', key], msg: `${key} must be an object or null` });
  }
  return issues;
}
