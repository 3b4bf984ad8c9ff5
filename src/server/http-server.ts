// The HTTP server around the Express app: Node's timeouts for idle and slow
// connections, SPEC §7's body for what Node's parser refuses, and a stop that
// lets the requests in flight finish.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type AccessLine, accessLog } from '../operating/access-log.ts';
import type { Logger } from '../operating/logger.ts';

/**
 * Errors Node's HTTP parser answers before Express sees the request (headers
 * over 16 KiB, a malformed request line, a request that took too long) get
 * SPEC §7's body too, instead of Node's empty one (a bare `431` tells a client
 * nothing).
 */
function answerClientErrors(server: Server, logAnswer?: (line: AccessLine) => void) {
  // the last response of each connection: once its headers are out and until it ends, an answer
  // written to the socket would land inside it (Node's own handler destroys the socket then too)
  const responses = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => responses.set(req.socket, res));
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = responses.get(socket);
    if (error.code === 'ECONNRESET' || !socket.writable || (inFlight?.headersSent && !inFlight.writableFinished)) {
      socket.destroy();
      return;
    }
    const [status, reason, name, detail] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'RequestHeaderFieldsTooLarge', 'The request line and headers are larger than 16 KiB']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'RequestTimeout', 'The request took too long to arrive']
          : [400, 'Bad Request', 'BadRequest', 'The request is not valid HTTP'];
    // an answer to HEAD has no body (the request line is at the start of the unparsed data)
    const head = /^HEAD /.test((error as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') ?? '');
    const body = head ? '' : JSON.stringify({ error: name, detail });
    // an id and a log line as every answer has (SPEC §14); the request's own id, if any, was never parsed
    const id = randomUUID();
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    logAnswer?.({
      request_id: id,
      method: '(unparsed)',
      route: UNPARSED,
      status,
      duration_ms: 0,
      subject_kind: null,
      credential_id: null,
      aborted: false,
    });
  });
}

/** The access log's route of a request Node's parser refused */
const UNPARSED = '(unparsed)';

/**
 * Idle and slow connections are closed (SPEC §14): an idle keep-alive
 * connection after 5 s; a connection whose request line and headers have not
 * all arrived within 10 s, or whose whole request (a body of up to 1 MiB)
 * within 30 s, gets a 408 (answerClientErrors); a socket on which nothing at
 * all moves for `idleMs` (at least two minutes, and twice the statement
 * timeout: a request waits on the database silently) is cut. Node checks the
 * first two every `connectionsCheckingInterval`. Without them a connection
 * that sends nothing stays open for ever.
 */
export const HTTP_TIMEOUTS = {
  keepAliveTimeout: 5_000,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  connectionsCheckingInterval: 1_000,
};

export function createHttpServer(
  listener: RequestListener,
  options: { statementTimeoutMs: number; timeouts?: Partial<typeof HTTP_TIMEOUTS>; logger?: Logger },
): Server {
  const timeouts = { ...HTTP_TIMEOUTS, ...options.timeouts };
  const server = createServer(timeouts, listener);
  server.keepAliveTimeout = timeouts.keepAliveTimeout;
  server.setTimeout(Math.max(120_000, 2 * options.statementTimeoutMs));
  answerClientErrors(server, options.logger ? accessLog(options.logger) : undefined);
  return server;
}

/** How long in-flight requests may take to finish once the server stops (main.ts gives up at 20 s) */
const DRAIN_MS = 15_000;

/**
 * The HTTP half of a graceful stop. `server.close()` refuses new connections
 * but waits for every open one, and a client that keeps its connection busy
 * (keep-alive under load) would keep it open until main.ts gives up, exiting 1
 * with the database still running. So once stopping, every answer carries `Connection: close` (the connection
 * ends after the request in flight on it), idle connections are closed as they
 * appear, and after DRAIN_MS whatever is left is cut.
 */
export function drainOnStop(server: Server): () => Promise<void> {
  let draining = false;
  server.prependListener('request', (_req, res) => {
    if (draining) res.setHeader('Connection', 'close');
  });
  return () =>
    new Promise<void>((resolve) => {
      draining = true;
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    });
}
