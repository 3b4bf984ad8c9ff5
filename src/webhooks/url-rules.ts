// Where webhooks may go (SPEC §17): https to a public address. Loopback,
// private, link-local and other special-purpose addresses are refused, and so
// is every other scheme; ROWGATE_WEBHOOKS_ALLOW_LOOPBACK=1 allows loopback
// (127.0.0.0/8, ::1, localhost) over http too, for development and tests.
// The rules run twice: on the URL when an endpoint is saved (a 422), and on
// every address its host resolves to when a delivery connects (a name that
// resolves to a private address later, DNS rebinding, is refused then).
import { BlockList, isIP } from 'node:net';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

// IANA special-purpose registries (RFC 6890 and successors), loopback included
const special = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  special.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  // IPv4-compatible addresses (deprecated), 6to4 and NAT64, local use included: each carries an IPv4 address
  ['::', 96],
  ['2002::', 16],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  special.addSubnet(network, prefix, 'ipv6');

// IPv6 outside 2000::/3, the global unicast space, is all reserved by the IETF (site-local fec0::/10 and
// unallocated space alike, which no list of special ranges names whole): only 2000::/3 may be public, and
// 3fff::/20 within it is for documentation (RFC 9637)
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');
special.addSubnet('3fff::', 20, 'ipv6');

/**
 * `::ffff:10.0.0.1` or `::ffff:a00:1` → `10.0.0.1`: an address of
 * ::ffff:0:0/96 only, read from the URL standard's canonical form (so that
 * `0:ffff:808:808::`, in reserved ::/8, is not taken for 8.8.8.8).
 */
function mappedIPv4(address: string): string | undefined {
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname;
  } catch {
    return undefined;
  }
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(canonical);
  if (!m) return undefined;
  const [high, low] = [Number.parseInt(m[1]!, 16), Number.parseInt(m[2]!, 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

const isLoopbackName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** Why an address may not receive webhooks, or null when it may. */
export function addressDenial(address: string, allowLoopback: boolean): string | null {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  // an IPv4-mapped IPv6 address is judged as the IPv4 address it carries (BlockList
  // would match an IPv4 address against ::ffff:0:0/96 itself, so that range is not listed)
  const mapped = family === 'ipv6' ? mappedIPv4(address) : undefined;
  if (mapped) return addressDenial(mapped, allowLoopback);
  if (allowLoopback && loopback.check(address, family)) return null;
  if (special.check(address, family) || (family === 'ipv6' && !globalUnicast.check(address, family))) {
    return 'The address is loopback, private, link-local or otherwise not public';
  }
  return null;
}

/** Why a URL may not receive webhooks, or null when it may. */
export function urlDenial(text: string, allowLoopback: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'Not a URL';
  }
  if (url.username || url.password) return 'A URL with credentials is not accepted';
  // no connection is ever made to port 0
  if (url.port === '0') return 'Port 0 is no port';
  // a name's trailing dot (the root) names the same host: `localhost.` is localhost
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const ip = isIP(host) === 6 ? (mappedIPv4(host) ?? host) : host;
  const loopbackHost = isLoopbackName(host) || (isIP(ip) !== 0 && loopback.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4'));
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowLoopback && loopbackHost)) {
    return 'The URL must be https://';
  }
  if (isLoopbackName(host)) return allowLoopback ? null : 'The host is a loopback name';
  if (isIP(host)) return addressDenial(host, allowLoopback);
  if (!host.includes('.')) return 'The host must be a public domain name';
  return null;
}
