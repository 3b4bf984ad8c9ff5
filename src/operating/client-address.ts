// The client's address, for the per-address rate limit (SPEC §14): the
// connection's peer, or, when that peer is a proxy named in
// ROWGATE_TRUST_PROXY, the address its X-Forwarded-For names: read from the
// right, the first address that is not itself a trusted proxy (a client can put
// anything at the left of the header; only what the proxies appended counts).
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** `::ffff:10.0.0.1` is 10.0.0.1 */
const plain = (address: string) => (address.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address);

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

export function clientAddress(req: IncomingMessage, trusted: BlockList | null): string {
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
