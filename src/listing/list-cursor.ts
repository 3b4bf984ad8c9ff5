// The cursor of a keyset page (SPEC §23): the sort values and id of a page's
// last row, signed with the server secret over the list's sorting and filters.
// It is opaque to clients: they may only send it back with the same sorting and
// the same filters (as a set, in any order), and anything else, a forged or
// altered cursor included, is refused at `query.after`.
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { validationError } from '../core/errors.ts';

/** A page's last row as the next page starts after it: its sort values, then its id, as PostgreSQL writes them as text. */
export type CursorKey = readonly (string | null)[];

const encode = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64url');

/** The keys cursors are signed with, by server secret (a server has one; a test process a few). */
const cursorKeys = new Map<string, KeyObject>();

/**
 * The key cursors are signed with: derived from the server secret, so it signs
 * nothing else. Derived once, as a KeyObject: a key given as bytes is checked
 * and copied again by every HMAC made with it.
 */
function cursorKey(secret: string): KeyObject {
  let key = cursorKeys.get(secret);
  if (!key) {
    if (cursorKeys.size >= 16) cursorKeys.clear();
    key = createSecretKey(createHmac('sha256', secret).update('rowgate list cursor').digest());
    cursorKeys.set(secret, key);
  }
  return key;
}

function signature(secret: string, fingerprint: string, payload: string): Buffer {
  return createHmac('sha256', cursorKey(secret)).update(fingerprint).update('\n').update(payload).digest();
}

/** The cursor a client sends back to continue after `key`. */
export function signCursor(secret: string, fingerprint: string, key: CursorKey): string {
  const payload = JSON.stringify(key);
  return `${encode(payload)}.${encode(signature(secret, fingerprint, payload))}`;
}

const refused = (after: string) =>
  validationError([
    {
      type: 'invalid_cursor',
      loc: ['query', 'after'],
      msg: 'Not a cursor of this list with this sorting and these filters; start again without after',
      input: after,
    },
  ]);

/** The key a cursor continues after, when it was signed for this sorting and these filters; a 422 at `query.after` otherwise. */
export function openCursor(secret: string, fingerprint: string, after: string, length: number): CursorKey {
  const [payloadText, signatureText, ...rest] = after.split('.');
  if (payloadText === undefined || signatureText === undefined || rest.length) throw refused(after);
  const payload = Buffer.from(payloadText, 'base64url').toString();
  const given = Buffer.from(signatureText, 'base64url');
  const expected = signature(secret, fingerprint, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused(after);
  const key: unknown = JSON.parse(payload);
  // signed by this server for this list: its shape is the one it wrote
  if (!Array.isArray(key) || key.length !== length) throw refused(after);
  return key as CursorKey;
}

/** A parameter's value with a repeated filter's values as a set: sorted, without repeats. */
function asSet(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return [...new Set(value.map((v) => JSON.stringify(asSet(v))))].sort();
}

/**
 * What a cursor is tied to: the table, the sort keys, and the filters as a set.
 * Each condition is written with its values in place of its placeholders, and
 * the conditions are sorted, so the order of the query's parameters and of a
 * repeated parameter's values does not matter.
 */
export function listFingerprint(
  from: string,
  sorting: readonly { field: string; descending: boolean }[],
  conditions: readonly string[],
  values: readonly unknown[],
  organizationIds: readonly string[] | undefined,
): string {
  const filters = conditions
    .map((condition) => condition.replace(/\$([0-9]+)/g, (_, n: string) => JSON.stringify(asSet(values[Number(n) - 1]))))
    .sort();
  return JSON.stringify({
    from,
    sorting: sorting.map((key) => `${key.descending ? '-' : ''}${key.field}`),
    filters,
    organizations: organizationIds ? asSet(organizationIds) : null,
  });
}
