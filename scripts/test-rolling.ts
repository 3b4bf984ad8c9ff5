// `npm run test:rolling`: a rolling deploy, tested. The database is migrated with
// this checkout's migrations, then the server of the previous release serves it:
// the code of the commit that landed the migration before the newest ones (git log
// on migrations/committed/). An HTTP smoke test through that old server
// creates and reads every kind of resource and receives one webhook delivery. A
// migration that drops or renames what the previous release reads, or changes a
// function it calls, fails here (docs/operations.md, "Deploying a migration").
//
// The old code is unpacked with `git archive`; it uses this checkout's
// node_modules when its package-lock.json locks nothing this one does not
// (same version, same integrity), else `npm ci` installs its own.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { generateToken, hashToken } from '../src/auth/tokens.ts';
import { DATABASE_NAME, embeddedUrl, freePort, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';

const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();

const newestMigration = (commit: string) =>
  git('ls-tree', '--name-only', commit, 'migrations/committed/')
    .split('\n')
    .filter((file) => /\/\d{6}-[^/]*\.sql$/.test(file))
    .sort()
    .at(-1);

/**
 * The commit whose server is the previous release, and the newest migration. A
 * release may land several migrations in one commit: the previous release is the
 * commit that landed the newest migration the commit before HEAD's newest one had
 * (its code is what ran against that schema).
 */
export function previousRelease(): { commit: string; migration: string } {
  const migration = newestMigration('HEAD');
  if (!migration) throw new Error('no committed migration at HEAD');
  const landed = git('log', '-1', '--diff-filter=A', '--format=%H', 'HEAD', '--', migration);
  const previous = newestMigration(`${landed}^1`);
  if (!previous) throw new Error(`no migration before ${migration}: no previous release to serve it`);
  const release = git('log', '-1', '--diff-filter=A', '--format=%H', `${landed}^1`, '--', previous);
  return { commit: release, migration: path.basename(migration) };
}

type Lock = { packages: Record<string, { version?: string; integrity?: string; dev?: boolean }> };

/** Does `current` install every package `previous` locks, at the same version and integrity? */
export function installsAllOf(previous: Lock, current: Lock): boolean {
  return Object.entries(previous.packages).every(([key, locked]) => {
    // the old server runs on what it depends on: its development tools (a linter, a test runner) never run here
    if (key === '' || locked.dev) return true;
    const here = current.packages[key];
    return here !== undefined && here.version === locked.version && here.integrity === locked.integrity;
  });
}

/** The previous release's code, ready to run, in `folder`. */
function unpack(commit: string, folder: string): 'reused' | 'installed' {
  mkdirSync(folder, { recursive: true });
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${folder}"`], { cwd: projectRoot, stdio: 'inherit' });
  const previousLock = JSON.parse(readFileSync(path.join(folder, 'package-lock.json'), 'utf8')) as Lock;
  const currentLock = JSON.parse(readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8')) as Lock;
  if (installsAllOf(previousLock, currentLock)) {
    symlinkSync(path.join(projectRoot, 'node_modules'), path.join(folder, 'node_modules'), 'dir');
    return 'reused';
  }
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: folder, stdio: 'inherit' });
  return 'installed';
}

/** `node src/main.ts` of `folder`, once it says it is listening. */
async function startServer(folder: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess; output: string[] }> {
  const port = await freePort();
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key, value]) => value !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|ROWGATE_.*|PORT|HOST)$/.test(key),
    ),
  ) as Record<string, string>;
  const child = spawn(process.execPath, [path.join(folder, 'src', 'main.ts')], {
    cwd: folder,
    env: { ...inherited, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const listening = new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (output.some((line) => line.includes('rowgate listening on'))) resolve();
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`the previous release's server exited (${code}):\n${output.join('\n')}`)));
  });
  await listening;
  return { url: `http://127.0.0.1:${port}`, child, output };
}

// ---------------------------------------------------------------------------
// The smoke test: every kind of resource created and read through the old server.

type Answer = { status: number; body: any };
const results: { step: string; ok: boolean; detail: string }[] = [];

function client(base: string) {
  return async (method: string, route: string, auth: { session?: string; token?: string }, body?: unknown): Promise<Answer> => {
    const headers: Record<string, string> = {};
    if (auth.session) headers.cookie = `rowgate_session=${auth.session}`;
    if (auth.token) headers.authorization = `Bearer ${auth.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text
    }
    return { status: response.status, body: parsed };
  };
}

/** Records one step: the answer has the status expected, else the step fails with the answer. */
function expectStatus(step: string, answer: Answer, status: number): any {
  const ok = answer.status === status;
  results.push({
    step,
    ok,
    detail: ok ? String(status) : `${answer.status}, expected ${status}: ${JSON.stringify(answer.body).slice(0, 400)}`,
  });
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${step}: ${results.at(-1)!.detail}`);
  return answer.body;
}

/** A user with a web session, made as the operator CLI makes one (`rowgate users create`). */
async function user(owner: pg.Client, secret: string, name: string) {
  const email = `rolling-${name}-${randomBytes(3).toString('hex')}@example.com`;
  const {
    rows: [row],
  } = await owner.query<{ id: string }>('insert into rowgate.users (email, name) values ($1, $2) returning id', [email, name]);
  const session = generateToken('web_session');
  await owner.query(`select rowgate_private.issue_user_session($1, $2, '1 day', null)`, [row!.id, hashToken(secret, session)]);
  return { id: row!.id, email, session };
}

async function smoke(base: string, owner: pg.Client, secret: string) {
  const call = client(base);
  const deliveries: { body: any; headers: http.IncomingHttpHeaders }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      deliveries.push({ body: JSON.parse(Buffer.concat(chunks).toString('utf8')), headers: req.headers });
      res.writeHead(200).end('ok');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  try {
    const admin = await user(owner, secret, 'admin');
    const colleague = await user(owner, secret, 'colleague');
    const web = { session: admin.session };

    expectStatus('GET /v1/users/me', await call('GET', '/v1/users/me', web), 200);
    const slug = `rolling-${randomBytes(3).toString('hex')}`;
    const organization = expectStatus(
      'POST /v1/organizations/',
      await call('POST', '/v1/organizations/', web, { name: 'Rolling', slug }),
      201,
    );
    const org = organization?.id as string;
    expectStatus('GET /v1/organizations/{id}', await call('GET', `/v1/organizations/${org}`, web), 200);
    expectStatus('GET /v1/organizations/{id}/roles', await call('GET', `/v1/organizations/${org}/roles`, web), 200);

    const invitation = expectStatus(
      'POST /v1/organizations/{id}/invitations',
      await call('POST', `/v1/organizations/${org}/invitations`, web, { email: colleague.email, role: 'member' }),
      201,
    );
    expectStatus('GET /v1/invitations/', await call('GET', '/v1/invitations/', { session: colleague.session }), 200);
    expectStatus(
      'POST /v1/invitations/{id}/accept',
      await call('POST', `/v1/invitations/${invitation?.id}/accept`, { session: colleague.session }),
      201,
    );
    const members = expectStatus('GET /v1/organizations/{id}/members', await call('GET', `/v1/organizations/${org}/members`, web), 200);
    record('the accepted invitation made a member', JSON.stringify(members).includes(colleague.id));
    expectStatus('GET /v1/members/', await call('GET', '/v1/members/', { session: colleague.session }), 200);

    const pat = expectStatus(
      'POST /v1/personal-access-tokens/',
      await call('POST', '/v1/personal-access-tokens/', web, { comment: 'rolling', scopes: ['organizations_read'] }),
      201,
    );
    const pats = expectStatus('GET /v1/personal-access-tokens/', await call('GET', '/v1/personal-access-tokens/', web), 200);
    record('the personal access token is listed', JSON.stringify(pats).includes(pat?.id));
    expectStatus(
      'GET /v1/organizations/{id} with the personal access token',
      await call('GET', `/v1/organizations/${org}`, { token: pat?.token }),
      200,
    );

    const scopes = ['products_read', 'products_write', 'customers_read', 'customers_write', 'orders_read', 'orders_write'];
    const oat = expectStatus(
      'POST /v1/organization-access-tokens/',
      await call('POST', '/v1/organization-access-tokens/', web, { organization_id: org, comment: 'rolling', scopes }),
      201,
    );
    const oats = expectStatus(
      'GET /v1/organization-access-tokens/',
      await call('GET', `/v1/organization-access-tokens/?organization_id=${org}`, web),
      200,
    );
    record('the organization access token is listed', JSON.stringify(oats).includes(oat?.id));
    const bearer = { token: oat?.token as string };

    const endpoint = expectStatus(
      'POST /v1/webhook-endpoints/',
      await call('POST', '/v1/webhook-endpoints/', web, {
        organization_id: org,
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        event_types: ['customer.created'],
      }),
      201,
    );
    expectStatus('GET /v1/webhook-endpoints/{id}', await call('GET', `/v1/webhook-endpoints/${endpoint?.id}`, web), 200);

    const product = expectStatus(
      'POST /v1/products/',
      await call('POST', '/v1/products/', bearer, { name: 'Rolling', price_amount: 1500, price_currency: 'usd' }),
      201,
    );
    expectStatus('GET /v1/products/{id}', await call('GET', `/v1/products/${product?.id}`, bearer), 200);
    expectStatus('GET /v1/products/', await call('GET', '/v1/products/', bearer), 200);

    const customer = expectStatus(
      'POST /v1/customers/',
      await call('POST', '/v1/customers/', bearer, { email: `buyer-${randomUUID().slice(0, 8)}@example.com`, external_id: 'rolling-1' }),
      201,
    );
    expectStatus('GET /v1/customers/{id}', await call('GET', `/v1/customers/${customer?.id}`, bearer), 200);
    expectStatus('GET /v1/customers/external/{external_id}', await call('GET', '/v1/customers/external/rolling-1', bearer), 200);

    const order = expectStatus(
      'POST /v1/orders/',
      await call('POST', '/v1/orders/', bearer, { product_id: product?.id, customer_id: customer?.id, status: 'paid' }),
      201,
    );
    expectStatus('GET /v1/orders/{id}', await call('GET', `/v1/orders/${order?.id}`, bearer), 200);
    expectStatus('GET /v1/orders/', await call('GET', '/v1/orders/', bearer), 200);

    const refund = expectStatus(
      'POST /v1/refunds/',
      await call('POST', '/v1/refunds/', web, { order_id: order?.id, amount: 500, reason: 'customer_request' }),
      201,
    );
    expectStatus('GET /v1/refunds/{id}', await call('GET', `/v1/refunds/${refund?.id}`, web), 200);
    expectStatus('GET /v1/transactions/', await call('GET', `/v1/transactions/?organization_id=${org}`, web), 200);

    const account = expectStatus(
      'POST /v1/accounts/',
      await call('POST', '/v1/accounts/', web, { organization_id: org, country: 'FR', currency: 'eur' }),
      201,
    );
    expectStatus('GET /v1/accounts/{id}', await call('GET', `/v1/accounts/${account?.id}`, web), 200);
    const payout = expectStatus(
      'POST /v1/payout-accounts/',
      await call('POST', '/v1/payout-accounts/', web, { organization_id: org, type: 'stripe', country: 'FR', currency: 'eur' }),
      201,
    );
    expectStatus('GET /v1/payout-accounts/{id}', await call('GET', `/v1/payout-accounts/${payout?.id}`, web), 200);

    const session = expectStatus(
      'POST /v1/customer-sessions/',
      await call('POST', '/v1/customer-sessions/', web, { customer_id: customer?.id }),
      201,
    );
    expectStatus('GET /v1/customer-portal/orders/', await call('GET', '/v1/customer-portal/orders/', { token: session?.token }), 200);

    expectStatus('GET /v1/events/', await call('GET', `/v1/events/?organization_id=${org}`, web), 200);
    const graphql = expectStatus(
      'POST /graphql',
      await call('POST', '/graphql', bearer, { query: '{ allProducts { totalCount nodes { rowId } } }' }),
      200,
    );
    record('GraphQL answers without errors', graphql?.errors === undefined && graphql?.data?.allProducts?.totalCount === 1);

    // the customer made above is an event the endpoint subscribes to: one delivery
    const deadline = Date.now() + (customer?.id ? 30_000 : 0);
    while (deliveries.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const delivered = deliveries.find((delivery) => delivery.body?.type === 'customer.created');
    record('the webhook delivery of customer.created', delivered !== undefined && JSON.stringify(delivered.body).includes(customer?.id));
    record('the delivery is signed', typeof delivered?.headers['webhook-signature'] === 'string');
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}

function record(step: string, ok: boolean) {
  results.push({ step, ok, detail: ok ? 'yes' : 'no' });
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${step}`);
}

// ---------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const { commit, migration } = previousRelease();
  console.log(
    `rolling: the server of ${commit.slice(0, 12)} (the previous release: migrations before ${migration}) on a database migrated to this checkout`,
  );
  const work = mkdtempSync(path.join(tmpdir(), 'rowgate-rolling-'));
  // the embedded PostgreSQL runs as its own OS user when this one is root: it passes through
  chmodSync(work, 0o711);
  const folder = path.join(work, 'previous');
  const home = path.join(work, 'home');
  let embedded: Awaited<ReturnType<typeof openEmbeddedDatabase>> | undefined;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let owner: pg.Client | undefined;
  try {
    console.log(`rolling: node_modules ${unpack(commit, folder)}`);
    embedded = await openEmbeddedDatabase({ home, exclusive: false });
    const superuser = embeddedUrl(embedded.state, 'superuser', 'postgres');
    await ensureRoles(superuser, { owner: embedded.state.ownerPassword, authenticator: embedded.state.authenticatorPassword });
    await ensureDatabase(superuser, DATABASE_NAME);
    await hardenDatabase(superuser, DATABASE_NAME);
    const ownerUrl = embeddedUrl(embedded.state, 'owner');
    await migrateDatabase(ownerUrl);
    owner = new pg.Client({ connectionString: ownerUrl });
    await owner.connect();
    const {
      rows: [last],
    } = await owner.query<{ filename: string }>('select filename from graphile_migrate.migrations order by filename desc limit 1');
    console.log(`rolling: database migrated to ${last?.filename}`);
    server = await startServer(folder, {
      DATABASE_URL: ownerUrl,
      AUTH_DATABASE_URL: embeddedUrl(embedded.state, 'authenticator', DATABASE_NAME),
      ROWGATE_SECRET: embedded.state.secret,
      ROWGATE_POOL_SIZE: '4',
      ROWGATE_RATE_LIMIT: '1000000',
      ROWGATE_ANONYMOUS_RATE_LIMIT: '1000000',
      ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1',
    });
    await smoke(server.url, owner, embedded.state.secret);
    const errors = server.output.filter((line) => /"level":"(error|fatal)"|"status":5\d\d/.test(line));
    record('the previous release answered no 5xx and logged no error', errors.length === 0);
    if (errors.length)
      console.log(
        errors
          .slice(0, 3)
          .map((line) => line.slice(0, 600))
          .join('\n'),
      );
  } catch (error) {
    results.push({ step: 'run', ok: false, detail: String(error) });
    console.log(`FAIL ${error instanceof Error ? error.message : error}`);
  } finally {
    await owner?.end().catch(() => {});
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }
    await embedded?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const failed = results.filter((result) => !result.ok).length;
  console.log(`rolling: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`${results.length - failed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

if (import.meta.main) await main();
