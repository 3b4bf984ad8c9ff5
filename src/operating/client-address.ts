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

/** An IPv4 address written as IPv6 is that IPv4 address: `::ffff:10.0.0.1`, `::FFFF:0a00:0001`, `::10.0.0.1` */
function plain(address: string): string {
  const mapped = /^::(?:ffff:)?(.+)$/i.exec(address)?.[1];
  if (mapped === undefined) return address;
  if (isIPv4(mapped)) return mapped;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(mapped);
  if (!hex || !/^::ffff:/i.test(address)) return address;
  const [high, low] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
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

const isTrusted = (trusted: BlockList, address: string) => {
  const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  return type !== null && trusted.check(address, type);
};

/** An IPv6 address's /64, one spelling for every spelling (`2001:DB8:0::A` → `2001:db8:0:0::/64`); anything else as it is */
export function perClient(address: string): string {
  if (!isIPv6(address)) return address;
  const bare = address.split('%')[0]!.toLowerCase();
  const [head = '', tail] = bare.split('::');
  const left = head ? head.split(':') : [];
  let groups = left;
  if (tail !== undefined) {
    const right = tail ? tail.split(':') : [];
    // an IPv4 tail (`::ffff:1.2.3.4`) is two groups
    const width = right.reduce((n, group) => n + (group.includes('.') ? 2 : 1), 0);
    groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - width)).fill('0'), ...right];
  }
  return `${groups
    .slice(0, 4)
    .map((group) => (Number.parseInt(group, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/** The client as the per-address limits count it: its address, or its /64 (IPv6) */
export function clientAddress(req: IncomingMessage, trusted: BlockList | null): string {
  return perClient(connectingAddress(req, trusted));
}

function connectingAddress(req: IncomingMessage, trusted: BlockList | null): string {
  const peer = plain(req.socket.remoteAddress ?? 'unknown');
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
