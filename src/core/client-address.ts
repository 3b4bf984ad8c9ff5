// The client's address, for the per-address rate limit (SPEC §14): the
// connection's peer, or, when that peer is a proxy named in
// ROWGATE_TRUST_PROXY, the address its X-Forwarded-For names: read from the
// right, the first address that is not itself a trusted proxy (a client can put
// anything at the left of the header; only what the proxies appended counts).
// An IPv6 client is its /64: one host, or one customer of an ISP, is given a
// whole /64, so counting each address apart would give it 2^64 allowances
// (and each spelling of one address another).
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { requestRecord } from './request-record.ts';

/** An IPv6 address's eight 16-bit groups (zone id dropped), or null when it is not one */
function groupsOf(address: string): number[] | null {
  // IPv4 (most peers): no IPv6 address is without a colon, and Node's test is a long regular expression
  if (!address.includes(':')) return null;
  const bare = address.split('%')[0]!;
  if (!isIPv6(bare)) return null;
  const [head = '', tail] = bare.split('::');
  const parse = (part: string) =>
    part
      ? part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [Number.parseInt(group, 16)];
          // a dotted IPv4 tail is the last two groups
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        })
      : [];
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * An IPv4 address written as IPv6 is that IPv4 address, however written:
 * mapped (`::ffff:10.0.0.1`, `0:0:0:0:0:FFFF:0a00:0001`), translated
 * (`::ffff:0:10.0.0.1`), compatible (`::10.0.0.1`) and NAT64's `64:ff9b::10.0.0.1`.
 */
function plain(address: string): string {
  const g = groupsOf(address);
  if (!g) return address;
  const zeros = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  const embedded =
    (zeros(0, 5) && g[5] === 0xffff) ||
    (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) ||
    (zeros(0, 6) && address.includes('.')) ||
    (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6));
  return embedded ? `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}` : address;
}

/** The trusted proxies of a comma-separated list of addresses and CIDRs (the configuration is validated). */
export function trustedProxies(list: string | undefined): BlockList | null {
  if (!list?.trim()) return null;
  const trusted = new BlockList();
  for (const entry of list.split(',').map((e) => e.trim())) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
    if (!type) throw new Error(`ROWGATE_TRUST_PROXY: ${JSON.stringify(entry)} is not an IP address or CIDR`);
    if (prefix === undefined) trusted.addAddress(address, type);
    else trusted.addSubnet(address, Number(prefix), type);
  }
  return trusted;
}

/** Whether a peer's address is one of the trusted proxies (any spelling: IPv4-mapped IPv6 included) */
export const proxyTrusted = (trusted: BlockList, address: string) => isTrusted(trusted, plain(address));

const isTrusted = (trusted: BlockList, address: string) => {
  const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  return type !== null && trusted.check(address, type);
};

/** An IPv6 address's /64, one spelling for every spelling (`2001:DB8:0::A` → `2001:db8:0:0::/64`); anything else as it is */
export function perClient(address: string): string {
  const groups = groupsOf(address);
  if (!groups) return address;
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** Where a request keeps its client's full address, once the operating middleware has read it (behind the trusted proxies) */
const FULL = Symbol('rowgate.client-address');
type Remembered = IncomingMessage & { [FULL]?: string };

/** The client as the per-address limits count it: its address, or its /64 (IPv6) */
export function clientAddress(req: IncomingMessage, trusted: BlockList | null): string {
  const address = connectingAddress(req, trusted);
  (req as Remembered)[FULL] = address;
  return perClient(address);
}

/**
 * The client's full address (never its /64), as the operating middleware read
 * it behind the trusted proxies (else the peer's): what a token's `allowed_ips`
 * are checked against (SPEC §22). Null when it is not an IP address (a socket
 * already closed), which no allow-list admits.
 */
export function requestAddress(req: IncomingMessage): string | null {
  const address = (req as Remembered)[FULL] ?? connectingAddress(req, null);
  const bare = address.split('%')[0]!; // an IPv6 zone id is no part of an address PostgreSQL reads
  return isIPv4(bare) || isIPv6(bare) ? bare : null;
}

function connectingAddress(req: IncomingMessage, trusted: BlockList | null): string {
  const peer = plain(req.socket?.remoteAddress ?? 'unknown');
  if (!trusted || !isTrusted(trusted, peer)) return peer;
  const forwarded = req.headers['x-forwarded-for'];
  if (!forwarded) return peer;
  const hops = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded).split(',').map((h) => plain(h.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (!isTrusted(trusted, hop)) return isIPv4(hop) || isIPv6(hop) ? hop : peer;
  }
  return hops[0] || peer;
}

/** The client of a request as the rate limits count it (behind the trusted proxies), else its peer's */
export function requestClient(req: IncomingMessage): string {
  return requestRecord(req).clientAddress ?? clientAddress(req, null);
}

/** Where a request came from, as the audit trail keeps it (SPEC §21): its client address and User-Agent (at most 256 characters). */
export function requestOrigin(req: IncomingMessage & { res?: { locals: Record<string, unknown> } }) {
  // a request made up in process (no socket) comes from nowhere the audit trail could name
  return {
    clientAddress: req.socket ? (requestAddress(req) ?? undefined) : undefined,
    userAgent: req.headers['user-agent']?.slice(0, 256),
    logId: requestRecord(req).logId,
  };
}
