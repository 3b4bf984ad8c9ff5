// A server listening, as a promise: it resolves once the port is bound, and
// rejects with the bind's error (the port taken, the address unknown).
import type { Server } from 'node:http';

export function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
