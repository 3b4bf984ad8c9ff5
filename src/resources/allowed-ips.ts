// The client networks a personal or organization access token may be used from
// (SPEC §22). An entry is read here by its form: a full IPv4 address (four dotted
// decimal parts, none with a leading zero) or an IPv6 address without a zone id,
// with an optional decimal mask; anything else is a 422 at its place, because
// PostgreSQL would read `127.1` as the classful `127.1.0.0/16`. An IPv4-mapped
// IPv6 entry becomes its IPv4 network, as a mapped client address becomes its IPv4
// address (src/core/client-address.ts). The database then reads the network
// (rowgate_private.allowed_ips: a 422 at an entry whose host bits are set), keeps
// it as `cidr`, whose text is the canonical form shown (`127.0.0.1/32`, IPv6
// compressed and lower-case), and checks it (rowgate_private.authenticate: a 401
// from any other address).
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';
import { doc } from '../core/fields.ts';

const EXAMPLE = ['203.0.113.0/24', '2001:db8:1234::/48'];

/** IPv6's IPv4-mapped addresses, `::ffff:0:0/96` */
const mapped = new BlockList();
mapped.addSubnet('::ffff:0:0', 96, 'ipv6');

/** A mask as written: decimal, no leading zero */
const MASK = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * An entry in the form the database reads without guessing (an IPv4 address with its
 * mask, an IPv4-mapped IPv6 one as IPv4), or why it is refused.
 */
export function allowedIpEntry(entry: string): { entry: string } | { refused: string } {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const mask = slash < 0 ? undefined : entry.slice(slash + 1);
  if (address.includes('%')) return { refused: 'An IPv6 address with a zone id is not a network' };
  if (mask !== undefined && !MASK.test(mask)) return { refused: 'A mask is a decimal number without leading zeros' };
  const bits = mask === undefined ? undefined : Number(mask);
  if (isIPv4(address)) {
    if (bits !== undefined && bits > 32) return { refused: 'An IPv4 mask is at most 32' };
    return { entry: `${address}/${bits ?? 32}` };
  }
  if (!isIPv6(address))
    return { refused: 'Not an IP address or CIDR: an IPv4 address has four decimal parts without leading zeros (no abbreviations)' };
  if (bits !== undefined && bits > 128) return { refused: 'An IPv6 mask is at most 128' };
  if (mapped.check(address, 'ipv6') && (bits === undefined || bits >= 96)) {
    return { entry: `${ipv4Of(address)}/${bits === undefined ? 32 : bits - 96}` };
  }
  return { entry: bits === undefined ? `${address}/128` : `${address}/${bits}` };
}

/** The IPv4 address an IPv4-mapped IPv6 address (already found valid) carries in its last 32 bits. */
function ipv4Of(address: string): string {
  const groups = address.split(':');
  const last = groups.at(-1)!;
  if (isIPv4(last)) return last;
  const word = (group: string) => Number.parseInt(group || '0', 16);
  const high = word(groups.at(-2)!);
  const low = word(last);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** What a token's read schema shows: the canonical CIDR text (`203.0.113.7` is `203.0.113.7/32`), or null */
export const allowedIpsRead = doc(
  z.array(z.string()).nullable(),
  'The client networks (CIDRs, canonical: `127.0.0.1/32`, IPv6 compressed and lower-case) the token may be used from; null: any address. From any other address the token is refused (401).',
  EXAMPLE,
);

const entry = z
  .string()
  .min(1)
  .max(64)
  .superRefine((value, ctx) => {
    const read = allowedIpEntry(value);
    if ('refused' in read) ctx.addIssue({ code: 'custom', message: read.refused, input: value });
  })
  .overwrite((value) => {
    const read = allowedIpEntry(value);
    return 'entry' in read ? read.entry : value;
  });

/** What a creation takes: 1 to 20 addresses or CIDRs, or null (the default) for any address */
export const allowedIpsCreate = doc(
  z
    .array(
      doc(
        entry,
        'A full IPv4 address (four decimal parts, no leading zeros) or an IPv6 address (no zone id), with an optional mask whose host bits are zero; a bare address is its /32 or /128.',
        '203.0.113.0/24',
      ),
    )
    .min(1)
    .max(20)
    .nullable()
    .optional(),
  'The client networks the token may be used from: 1 to 20 addresses or CIDRs, compared with the client address the rate limits see (after `ROWGATE_TRUST_PROXY`), stored and shown in canonical CIDR form. An IPv4-mapped IPv6 entry counts as its IPv4 network. Omitted or null: any address.',
  EXAMPLE,
);
