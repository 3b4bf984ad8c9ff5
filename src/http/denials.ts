// Recording a denial (SPEC §20): a 403 answer on an organization's data is kept as a row
// of rowgate.denials although the request's own transaction rolled back. The pipeline
// calls this after the rollback; it runs one statement on the pool, as the authenticator,
// with the request's subject settings as parameters (rowgate_private.record_denial), and
// the database keeps the row only in an organization the subject reaches, within the cap.
import type pg from 'pg';
import type { Settings } from '../auth/authenticate.ts';
import { organizationOfDenial } from '../auth/authorize.ts';
import { type ApiError, toApiError } from '../core/errors.ts';
import type { Input } from './input.ts';

// set first: the request's log id (SPEC §25), for the denial row to carry it, and the credential,
// whose reach a token kept to some organizations narrows
const RECORD = `select rowgate_private.record_denial($1, nullif($2, '')::uuid, $3, nullif($4, '')::uuid, $5, $6, $7, $8::jsonb,
  $9::uuid, $10::uuid, $11, $12, $13) as kept
  from (select set_config('rowgate.request_log_id', $14, true), set_config('rowgate.credential_id', $4, true)) as request`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface DeniedRequest {
  operation: string;
  settings: Settings;
  /** the path parameters, as parsed */
  params?: Record<string, unknown>;
  /** the organization the request resolved, when the pipeline knows it */
  organizationId?: string;
  /** the organization the request named (a create's body, a list's query) */
  namedOrganizationId?: unknown;
}

/** Keeps the denial; never fails the answer (a failure is only logged). */
export async function recordDenial(
  pool: pg.Pool,
  request: DeniedRequest,
  error: ApiError,
  log: (line: string) => void = () => {},
): Promise<void> {
  const s = request.settings;
  const named =
    typeof request.namedOrganizationId === 'string' && UUID.test(request.namedOrganizationId) ? request.namedOrganizationId : null;
  const params = Object.fromEntries(Object.entries(request.params ?? {}).map(([k, v]) => [k, String(v)]));
  try {
    await pool.query(RECORD, [
      s['rowgate.subject_kind'] ?? null,
      s['rowgate.subject_id'] ?? '',
      s['rowgate.credential_kind'] ?? null,
      s['rowgate.credential_id'] ?? '',
      s['rowgate.scopes'] ?? '',
      s['rowgate.request_id'] ?? '',
      request.operation,
      JSON.stringify(params),
      request.organizationId ?? null,
      named,
      error.error === 'InsufficientScope' ? 'scope' : 'policy',
      error.error,
      typeof error.detail === 'string' ? error.detail : null,
      s['rowgate.request_log_id'] ?? '',
    ]);
  } catch (failure) {
    log(`denials: a 403 of ${request.operation} was not recorded (${(failure as Error).message})`);
  }
}

/** What a refused request is recorded with, filled in as its checks pass. */
export interface DenialFacts {
  /** the input, when valid: what the refused request names */
  input?: Input;
  /** the organization the declared policy resolved */
  organizationId?: string;
}

/**
 * A 403 on an organization's data, kept after the rollback (SPEC §20). A scope refusal
 * was answered before anything was resolved; the database resolves what it names only
 * to record it, and only in an organization the subject reaches.
 */
export async function keepDenial(pool: pg.Pool, operation: string, settings: Settings, error: unknown, facts: DenialFacts): Promise<void> {
  const answer = toApiError(error);
  if (answer.status !== 403) return;
  const { params, query, body } = facts.input ?? ({} as Partial<Input>);
  const named =
    (body as { organization_id?: unknown } | null | undefined)?.organization_id ??
    (query as { organization_id?: unknown } | null | undefined)?.organization_id;
  await recordDenial(
    pool,
    {
      operation,
      settings,
      params: params as Record<string, unknown> | undefined,
      organizationId: facts.organizationId ?? organizationOfDenial(error),
      namedOrganizationId: Array.isArray(named) && named.length === 1 ? named[0] : named,
    },
    answer,
  );
}
