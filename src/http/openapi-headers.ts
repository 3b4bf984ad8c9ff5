// The header fields of the OpenAPI document (src/http/openapi.ts): those answers
// carry and those requests may send, each described once in components.headers.
import { z } from 'zod';
import { IDEMPOTENCY_HEADER } from './idempotency.ts';

/** The header fields answers carry (SPEC §14, §17, §19), each described once in components.headers. */
const header = (id: string, description: string, example: string) => z.string().meta({ description, example, header: { id } });
export const headers = {
  requestId: header(
    'X-Request-Id',
    "The request's id: the client's own `X-Request-Id` when it matches `^[A-Za-z0-9._:-]{1,128}$`, otherwise a new one. It is in the access log's line and in the events the request wrote.",
    '8e0f6c1e-3b1f-4a53-9a35-3f1f1f7c9d10',
  ),
  rateLimitPolicy: header(
    'RateLimit-Policy',
    'The rate limit this request counted against (draft-ietf-httpapi-ratelimit-headers): its name, quota (`q`) and window in seconds (`w`).',
    '"default";q=100;w=1',
  ),
  rateLimit: header('RateLimit', "What is left of that limit's window (`r`) and the seconds until it resets (`t`).", '"default";r=57;t=1'),
  retryAfter: header('Retry-After', 'Seconds to wait before trying again.', '2'),
  idempotentReplayed: header(
    'Idempotent-Replayed',
    '`true` on the stored answer of an earlier request with this `Idempotency-Key` (SPEC §17).',
    'true',
  ),
  version: header(
    'Rowgate-Version',
    "The API version this answer was made in (SPEC §23): the request's `Rowgate-Version`, else its credential's pinned version, else the newest.",
    '2026-12-15',
  ),
  consistency: header(
    'Rowgate-Consistency',
    'After a write: a token a later request may send back so that it never reads data older than this write, on any server or standby (SPEC §19).',
    '0/1FD7F88',
  ),
};

/** The header of a write that may be retried safely (SPEC §17). */
export const idempotencyHeader = z.object({
  [IDEMPOTENCY_HEADER]: z.string().min(1).max(255).optional().meta({
    description:
      'Makes the request safe to retry: the first 2xx answer is stored with its effect and a retry with the same key (and the same method, path and body) gets it again, byte for byte, with `Idempotent-Replayed: true`. The same key with another request: 422 `IdempotencyKeyReused`; while the first runs: 409 `IdempotencyKeyInUse`. Keys belong to the subject and are kept 24 hours.',
    example: '8e0f6c1e-3b1f-4a53-9a35-3f1f1f7c9d10',
  }),
});

/** The header that picks the version a request is answered in (SPEC §23). */
export const versionRequestHeader = {
  'Rowgate-Version': z.string().optional().meta({
    description:
      'The API version to answer in, a date listed by `GET /v1/versions`; absent: the version pinned on the credential, else the newest. An unknown one is 400 `UnsupportedVersion`, before anything else.',
    example: '2026-12-15',
  }),
};
