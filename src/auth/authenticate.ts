// Authentication, one way for every interface (REST and GraphQL): the database
// resolves the presented credential (rowgate_private.authenticate) and one
// statement turns it into the transaction's role and transaction-local settings,
// which the RLS policies and SQL functions read (trusting them only under
// rowgate_authenticator). REST runs the statement inside its request's
// transaction; GraphQL runs it in a query's first transaction (or once per
// request before a mutation) and hands the same settings to each of
// PostGraphile's transactions (src/graphql/transport/pg-client.ts, deferred-authentication.ts).
import { API_VERSIONS } from '../core/versions.ts';
import type { PresentedCredential } from './credentials.ts';
import { type CredentialKind, hashToken } from './tokens.ts';

/**
 * The authentication statement: one row when the credential is good, none
 * otherwise. The role and settings are applied by the statement itself and
 * returned, so that a caller running them elsewhere sets exactly the same.
 */
export const AUTHENTICATE = `
  select set_config('role', 'rowgate_' || a.subject_kind, true) as role,
    set_config('rowgate.subject_kind', a.subject_kind, true) as subject_kind,
    set_config('rowgate.subject_id', a.subject_id::text, true) as subject_id,
    set_config('rowgate.credential_kind', $1, true) as credential_kind,
    set_config('rowgate.credential_id', a.credential_id::text, true) as credential_id,
    set_config('rowgate.scopes', array_to_string(a.scopes, ' '), true) as scopes,
    set_config('rowgate.request_id', $3, true) as request_id,
    set_config('rowgate.client_address', coalesce($4::text, ''), true) as client_address,
    set_config('rowgate.user_agent', $5, true) as user_agent,
    set_config('rowgate.credential_impersonator', a.credential_id || ':' || coalesce(a.impersonator_id::text, ''), true) as credential_impersonator,
    set_config('rowgate.credential_client', a.credential_id || ':' || coalesce(a.oauth2_client_id, ''), true) as credential_client,
    set_config('rowgate.api_version', coalesce(nullif($6, ''), rowgate_private.credential_api_version($1, a.credential_id), $7), true) as api_version
  from rowgate_private.authenticate($1, $2, nullif($4::text, '')::inet) a`;

/** The role of a request without a credential ($1: its request id); no setting names a subject. */
export const ANONYMOUS = `select set_config('role', 'rowgate_anonymous', true) as role, set_config('rowgate.request_id', $1, true) as request_id`;
/** A transaction's role and the `rowgate.*` settings the SQL reads */
export type Settings = Readonly<Record<string, string>>;

export const ANONYMOUS_SETTINGS: Settings = Object.freeze({ role: 'rowgate_anonymous' });

export interface AuthenticatedRow {
  role: string;
  subject_kind: string;
  subject_id: string;
  credential_kind: string;
  credential_id: string;
  scopes: string;
  request_id: string;
  client_address: string;
  user_agent: string;
  /** the credential's id, a colon, and who impersonates through a web session or the client of an OAuth2 token (events record them) */
  credential_impersonator: string;
  credential_client: string;
  /** the request's API version: its Rowgate-Version, else the credential's pin, else the newest (SPEC §23) */
  api_version: string;
}

/** The kinds of subject a credential authenticates (SPEC §2). */
export type SubjectKind = 'user' | 'organization' | 'customer' | 'member';

export interface Authenticated {
  /** with the read scopes its write scopes imply */
  scopes: ReadonlySet<string>;
  subjectId: string;
  subjectKind: SubjectKind;
  credentialKind: CredentialKind;
  /** the role and transaction-local settings the statement applied */
  settings: Settings;
}

/** Runs one parameterised statement and returns its first row. */
export type RunOne = <T extends object>(text: string, values: unknown[]) => Promise<T | undefined>;

/** Where a request came from, as the audit trail keeps it (SPEC §21): its client address (SPEC §14) and User-Agent. */
export interface RequestOrigin {
  clientAddress?: string;
  userAgent?: string;
  /** the version its Rowgate-Version header names, if it sent one */
  apiVersion?: string;
}

/**
 * The authentication statement's parameters for a credential: its token only as
 * the keyed hash, and where it came from. The database checks the client address
 * against the token's `allowed_ips` (SPEC §22; refused: SQLSTATE RG401) and keeps
 * it with the User-Agent for the audit trail (SPEC §21). Only the authenticator
 * may call rowgate_private.authenticate, so only the API says where a request
 * came from.
 */
export function authenticationValues(
  secret: string,
  credential: PresentedCredential,
  requestId = '',
  origin: RequestOrigin = {},
): unknown[] {
  return [
    credential.kind,
    hashToken(secret, credential.token),
    requestId,
    credential.from ?? origin.clientAddress ?? null,
    (origin.userAgent ?? '').slice(0, 256),
    origin.apiVersion ?? '',
    API_VERSIONS.newest,
  ];
}

/** What the statement's row says: null (no row) when the credential authenticates nobody. */
export function authenticatedFrom(row: AuthenticatedRow | undefined): Authenticated | null {
  if (!row) return null;
  return {
    scopes: new Set(row.scopes.split(' ').filter(Boolean)),
    subjectId: row.subject_id,
    subjectKind: row.subject_kind as SubjectKind,
    credentialKind: row.credential_kind as CredentialKind,
    settings: {
      role: row.role,
      'rowgate.subject_kind': row.subject_kind,
      'rowgate.subject_id': row.subject_id,
      'rowgate.credential_kind': row.credential_kind,
      'rowgate.credential_id': row.credential_id,
      'rowgate.scopes': row.scopes,
      'rowgate.request_id': row.request_id,
      'rowgate.client_address': row.client_address,
      'rowgate.user_agent': row.user_agent,
      'rowgate.credential_impersonator': row.credential_impersonator,
      'rowgate.credential_client': row.credential_client,
      'rowgate.api_version': row.api_version,
    },
  };
}

/** What the database says of the credential: null when it authenticates nobody. */
export async function authenticate(
  run: RunOne,
  secret: string,
  credential: PresentedCredential,
  requestId = '',
  origin: RequestOrigin = {},
): Promise<Authenticated | null> {
  return authenticatedFrom(await run<AuthenticatedRow>(AUTHENTICATE, authenticationValues(secret, credential, requestId, origin)));
}
