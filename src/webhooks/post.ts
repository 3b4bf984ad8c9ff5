// One webhook attempt over HTTP: POST the body, follow no redirect (a 3xx is a
// failure), give up after the timeout, read at most a few kilobytes of the
// answer, and connect only to addresses the URL rules allow, checked on the
// addresses the host resolves to at that moment (src/webhooks/url-rules.ts).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressDenial } from './url-rules.ts';

export const DELIVERY_TIMEOUT_MS = 10_000;
/** what is read of an answer at most (its status is what counts) */
export const MAX_RESPONSE_BYTES = 8 * 1024;

export interface AttemptResult {
  succeeded: boolean;
  responseCode: number | null;
  durationMs: number;
  error: string | null;
}

function guardedLookup(allowLoopback: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => addressDenial(a.address, allowLoopback));
      if (refused || !addresses.length) {
        const e = Object.assign(new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, which may not receive webhooks`), {
          code: 'EADDRNOTALLOWED',
        });
        return callback(e, '', 0);
      }
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

export function postWebhook(
  target: string,
  headers: Record<string, string>,
  body: string,
  options: { allowLoopback: boolean; timeoutMs?: number },
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (succeeded: boolean, responseCode: number | null, error: string | null): AttemptResult => ({
    succeeded,
    responseCode,
    durationMs: Math.round(performance.now() - started),
    error,
  });
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return resolve(done(false, null, 'Not a URL'));
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const literalDenial = isIP(host) ? addressDenial(host, options.allowLoopback) : null;
    if (literalDenial) return resolve(done(false, null, literalDenial));
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'user-agent': 'rowgate-webhooks',
        ...headers,
      },
      lookup: guardedLookup(options.allowLoopback),
      agent: false,
    });
    const timer = setTimeout(
      () => request.destroy(new Error(`No answer within ${(options.timeoutMs ?? DELIVERY_TIMEOUT_MS) / 1000} s`)),
      options.timeoutMs ?? DELIVERY_TIMEOUT_MS,
    );
    request.on('error', (error) => {
      clearTimeout(timer);
      resolve(done(false, null, error.message));
    });
    request.on('response', (response) => {
      // the status is the answer, decided when it arrives: a body trickled past the timeout changes nothing
      const status = response.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      resolve(done(ok, status, ok ? null : status >= 300 && status < 400 ? 'Redirects are not followed' : `HTTP ${status}`));
      // the rest is read (so the receiver sees its answer taken) up to a few kilobytes and the timeout
      let read = 0;
      const finish = () => {
        clearTimeout(timer);
        response.destroy();
      };
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) finish();
      });
      response.on('end', finish);
      response.on('error', finish);
    });
    request.end(body);
  });
}
