// UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. The server
// makes a request's log id with it, so the id orders by time and falls in its
// day's partition of the request log.
import { randomFillSync } from 'node:crypto';

const bytes = Buffer.alloc(16);

export function uuidv7(now = Date.now()): string {
  randomFillSync(bytes, 6, 10);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
