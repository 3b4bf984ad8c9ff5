// Assertions on the error shapes of SPEC §7, shared by the test files.
import { expect } from 'vitest';
import type { ApiResponse } from './harness.ts';

/** a timestamp as the API writes it: RFC 3339 in UTC, to the microsecond (src/db/timestamps.ts) */
export const aTimestamp = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?\+00:00$/);

export const REALM = 'Bearer realm="rowgate"';

/** One body shape for every error: exactly `{error, detail}`, served as JSON. */
export function expectError(res: ApiResponse, status: number, error: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { error, detail: expect.anything() },
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/json\b/);
  const detail = res.body.detail;
  expect(typeof detail === 'string' ? detail.length > 0 : Array.isArray(detail) && detail.length > 0).toBe(true);
}

/**
 * 401 `Unauthorized`, with `error="invalid_token"` exactly when the token sent is no
 * good (malformed, unknown, expired, revoked); none when none was sent or when a
 * good one is of a kind the endpoint does not accept (SPEC §16).
 */
export function expectUnauthorized(res: ApiResponse, invalidToken: boolean) {
  expectError(res, 401, 'Unauthorized');
  expect(typeof res.body.detail).toBe('string');
  expect(res.headers.get('www-authenticate')).toBe(invalidToken ? `${REALM}, error="invalid_token"` : REALM);
}

/** 403 `InsufficientScope`, naming the scopes (any of) the endpoint needs. */
export function expectInsufficientScope(res: ApiResponse, anyOf: readonly string[]) {
  expectError(res, 403, 'InsufficientScope');
  const header = res.headers.get('www-authenticate') ?? '';
  expect(header).toContain(REALM);
  expect(header).toContain('error="insufficient_scope"');
  const scope = /scope="([^"]*)"/.exec(header)?.[1];
  expect(scope?.split(' ').sort()).toEqual([...anyOf].sort());
}

export interface Issue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

/** 422 `RequestValidationError`: a list of `{type, loc, msg, input?}` and nothing else. */
export function expectValidationError(res: ApiResponse): Issue[] {
  expectError(res, 422, 'RequestValidationError');
  const issues = res.body.detail as Issue[];
  expect(Array.isArray(issues)).toBe(true);
  for (const issue of issues) {
    expect(Object.keys(issue).filter((k) => !['type', 'loc', 'msg', 'input'].includes(k))).toEqual([]);
    expect(typeof issue.type).toBe('string');
    expect(typeof issue.msg).toBe('string');
    expect(issue.msg.length).toBeGreaterThan(0);
    expect(Array.isArray(issue.loc)).toBe(true);
    expect(['body', 'query', 'path', 'header']).toContain(issue.loc[0]);
  }
  return issues;
}
