// The client networks a personal or organization access token may be used from
// (SPEC §22). The database reads and checks them (rowgate_private.allowed_ips:
// a 422 at the entry it cannot read; rowgate_private.authenticate: a 401 from
// any other address); here they are only bounded and documented.
import { z } from 'zod';
import { doc } from '../core/fields.ts';

const EXAMPLE = ['203.0.113.0/24', '2001:db8:1234::/48'];

/** What a token's read schema shows: PostgreSQL's CIDR text (`203.0.113.7` is `203.0.113.7/32`), or null */
export const allowedIpsRead = doc(
  z.array(z.string()).nullable(),
  'The client networks (CIDRs) the token may be used from; null: any address. From any other address the token is refused (401).',
  EXAMPLE,
);

/** What a creation takes: 1 to 20 addresses or CIDRs, or null (the default) for any address */
export const allowedIpsCreate = doc(
  z
    .array(doc(z.string().min(1).max(64), 'An IPv4 or IPv6 address, or a CIDR whose host bits are zero.', '203.0.113.0/24'))
    .min(1)
    .max(20)
    .nullable()
    .optional(),
  'The client networks the token may be used from: 1 to 20 addresses or CIDRs, compared with the client address the rate limits see (after `ROWGATE_TRUST_PROXY`). Omitted or null: any address.',
  EXAMPLE,
);
