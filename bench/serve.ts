// `node bench/serve.ts [--scale 1m]`: for profiling by hand. Opens the bench
// cluster (.rowgate-bench/, loaded by `npm run bench`), issues web sessions for
// the bench's small and big users, and prints the environment and commands that
// run the API over that data, e.g. with `--cpu-prof`:
//
//   eval "$(node bench/serve.ts --scale 1m)"
//   node --cpu-prof --cpu-prof-dir=/tmp/prof src/main.ts &
//   wrk -t1 -c8 -d10s -H "cookie: rowgate_session=$SMALL" "http://127.0.0.1:$PORT/v1/orders/?limit=50"
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../src/db/setup.ts';
import { embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { benchUsers, ensureOrderCounts, issueSessions } from './data.ts';

const { values: args } = parseArgs({ options: { scale: { type: 'string', default: '1m' }, port: { type: 'string', default: '8099' } } });
const db = await openEmbeddedDatabase({ home: path.join(projectRoot, '.rowgate-bench'), exclusive: false, log: (l) => console.error(l) });
const database = `bench_${args.scale}`;
const ownerUrl = embeddedUrl(db.state, 'owner', database);
await ensureOrderCounts(ownerUrl, (l) => console.error(l));
const secret = randomBytes(32).toString('base64url');
const sessions = await issueSessions(ownerUrl, await benchUsers(ownerUrl), secret);
const exports = {
  DATABASE_URL: ownerUrl,
  AUTH_DATABASE_URL: embeddedUrl(db.state, 'authenticator', database, db.socketDir),
  ROWGATE_SECRET: secret,
  PORT: args.port!,
  NODE_ENV: 'production',
  // as the bench's servers: wrk's thousands of requests a second from one credential are the load, not an abuse
  ROWGATE_RATE_LIMIT: '1000000',
  ROWGATE_ANONYMOUS_RATE_LIMIT: '1000000',
  SMALL: sessions.small!,
  BIG: sessions.big!,
};
for (const [k, v] of Object.entries(exports)) console.log(`export ${k}='${v}'`);
