// Recording a denial (SPEC §20): a 403 answer on an organization's data is kept as a row
// of rowgate.denials although the request's own transaction rolled back. The pipeline
// calls this after the rollback; it runs one statement on the pool, as the authenticator,
// with the request's subject settings as parameters (rowgate_private.record_denial), and
// the database keeps the row only in an organization the subject reaches, within the cap.
import type pg from 'pg';
import type { Settings } from '../auth/authenticate.ts';
import type { ApiError } from '../core/errors.ts';

const RECORD = `select rowgate_private.record_denial($1, nullif($2, '')::uuid, $3, nullif($4, '')::uuid, $5, $6, $7, $8::jsonb,
  $9::uuid, $10::uuid, $11, $12, $13) as kept`;

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
    ]);
  } catch (failure) {
    log(`denials: a 403 of ${request.operation} was not recorded (${(failure as Error).message})`);
  }
}
