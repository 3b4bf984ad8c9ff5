// A minimal SMTP server for the tests (RFC 5321's happy path) that records the
// messages it accepts, and can stall: while stalled it accepts connections and
// says nothing (a relay that hangs), and greets them all once released.
import { createServer, type Server, type Socket } from 'node:net';

export interface TestSmtpServer {
  url: string;
  /** every chunk received, in order */
  received: string[];
  /** each message accepted (its DATA), in order */
  messages: string[];
  /** connections accepted so far */
  connections: number;
  /** new connections wait silently from now on */
  stall(): void;
  /** greets the waiting connections, and the next ones at once */
  release(): void;
  close(): Promise<void>;
}

export async function smtpServer(options: { stalled?: boolean } = {}): Promise<TestSmtpServer> {
  let stalled = options.stalled ?? false;
  const waiting: Socket[] = [];
  const sockets = new Set<Socket>();
  const greet = (socket: Socket) => {
    if (!socket.destroyed) socket.write('220 test ESMTP\r\n');
  };
  const state: TestSmtpServer = {
    url: '',
    received: [],
    messages: [],
    connections: 0,
    stall: () => {
      stalled = true;
    },
    release: () => {
      stalled = false;
      for (const socket of waiting.splice(0)) greet(socket);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let data = false;
    let buffer = '';
    if (stalled) waiting.push(socket);
    else greet(socket);
    socket.on('data', (chunk) => {
      state.received.push(chunk.toString());
      buffer += chunk.toString();
      let end: number;
      while ((end = data ? buffer.indexOf('\r\n.\r\n') : buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (data ? 5 : 2));
        if (data) {
          data = false;
          state.messages.push(line);
          socket.write('250 queued\r\n');
        } else if (/^(EHLO|HELO)/i.test(line)) socket.write('250 test\r\n');
        else if (/^DATA/i.test(line)) {
          data = true;
          socket.write('354 go ahead\r\n');
        } else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `smtp://127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}
