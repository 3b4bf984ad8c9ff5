// Turns a generated world (test/props/model.ts) into rows: one multi-statement
// SQL text, run as the owner in one round trip (one implicit transaction), and
// the model with the ids the rows got. Rows are inserted the way the harness
// fixtures insert them (test/harness.ts); tokens are stored as their keyed hash.
import { randomBytes, randomUUID } from 'node:crypto';
import { generateToken, hashToken, type CredentialKind } from '../../src/auth/tokens.ts';
import type { CredentialSpec, MCredential, Model, WorldSpec } from './model.ts';

const q = (v: string | null) => (v === null ? 'null' : `'${v.replace(/'/g, "''")}'`);
const bytea = (b: Buffer) => `'\\x${b.toString('hex')}'::bytea`;
const array = (xs: readonly string[]) => `array[${xs.map((x) => q(x)).join(',')}]::text[]`;
const deletedAt = (deleted: boolean) => (deleted ? 'now()' : 'null');

/** A short unique tag for names, slugs and e-mail addresses of this world. */
export const tag = () => randomBytes(5).toString('hex');

/**
 * The world with every reference made valid (an order's customer belongs to its
 * product's organization, credentials name things that exist): generated
 * indices are taken modulo what exists, and what cannot exist is dropped.
 */
export function normalize(spec: WorldSpec): WorldSpec {
  const nUsers = spec.users.length;
  const nOrgs = spec.orgs.length;
  const customRoles = spec.customRoles.map((r) => ({ ...r, org: r.org % nOrgs }));
  const customers = spec.customers.map((c) => ({ ...c, org: c.org % nOrgs }));
  const products = spec.products.map((p) => ({ ...p, org: p.org % nOrgs }));
  const seats = customers.length ? spec.seats.map((s) => ({ ...s, customer: s.customer % customers.length })) : [];
  const orders = spec.orders.flatMap((o) => {
    if (!products.length) return [];
    const product = o.product % products.length;
    const sameOrg = customers.flatMap((c, i) => (c.org === products[product]!.org ? [i] : []));
    if (!sameOrg.length) return [];
    return [{ ...o, product, customer: sameOrg[o.customer % sameOrg.length]! }];
  });
  const credentials = spec.credentials.flatMap((c): CredentialSpec[] => {
    switch (c.kind) {
      case 'customer_session':
        return customers.length ? [{ ...c, customer: c.customer % customers.length }] : [];
      case 'member_session':
        return seats.length ? [{ ...c, seat: c.seat % seats.length }] : [];
      case 'organization_access_token':
        return [{ ...c, org: c.org % nOrgs }];
      case 'oauth2_organization_token':
        return [{ ...c, org: c.org % nOrgs, user: c.user % nUsers }];
      default:
        return [{ ...c, user: c.user % nUsers }];
    }
  });
  // a case needs somebody to ask: a web session of the first user when nothing else is left
  if (!credentials.length) credentials.push({ kind: 'web_session', user: 0, impersonation: false, dead: false });
  return {
    ...spec,
    orgs: spec.orgs.map((o) => ({ ...o, accountAdmin: o.accountAdmin === null ? null : o.accountAdmin % nUsers })),
    customRoles,
    // `custom<k>`: the k-th role the membership's organization defined (named c<its index>), else `member`
    memberships: spec.memberships.map((m) => {
      const org = m.org % nOrgs;
      const custom = /^custom(\d+)$/.exec(m.role);
      const own = customRoles.flatMap((r, i) => (r.org === org ? [`c${i}`] : []));
      const role = custom ? (own.length ? own[Number(custom[1]) % own.length]! : 'member') : m.role;
      return { ...m, user: m.user % nUsers, org, role };
    }),
    products,
    customers,
    seats,
    orders,
    payouts: spec.payouts.map((p) => ({ ...p, org: p.org % nOrgs })),
    credentials,
    analyst: spec.analyst % nUsers,
  };
}

const credentialKind: Record<CredentialSpec['kind'], CredentialKind> = {
  web_session: 'web_session',
  personal_access_token: 'personal_access_token',
  oauth2_user_token: 'oauth2_user_token',
  organization_access_token: 'organization_access_token',
  oauth2_organization_token: 'oauth2_organization_token',
  customer_session: 'customer_session',
  member_session: 'member_session',
};

export interface Built {
  model: Model;
  /** the SQL that creates the world and binds the analyst login to its user */
  sql: string;
}

export function buildWorld(input: WorldSpec, secret: string, analystLogin: string | null): Built {
  const spec = normalize(input);
  const t = tag();
  const model: Model = {
    users: spec.users.map((u, i) => ({ id: randomUUID(), email: `u${i}-${t}@example.com`, deleted: u.deleted })),
    orgs: spec.orgs.map((o, i) => ({ id: randomUUID(), slug: `o${i}-${t}`, deleted: o.deleted, account: null })),
    customRoles: spec.customRoles.map((r, i) => ({ id: randomUUID(), org: r.org, name: `c${i}`, permissions: r.permissions })),
    memberships: spec.memberships.map((m) => ({ id: randomUUID(), ...m })),
    products: spec.products.map((p, i) => ({ id: randomUUID(), ...p, tag: i % 3 })),
    customers: spec.customers.map((c, i) => ({ id: randomUUID(), ...c, tag: i % 3 })),
    seats: spec.seats.map((s) => ({ id: randomUUID(), ...s })),
    // a refunded order has one refund: the status change refunds it whole (SPEC §18)
    orders: spec.orders.map((o, i) => ({
      id: randomUUID(),
      org: spec.products[o.product]!.org,
      tag: i % 3,
      ...o,
      refunds: o.status === 'refunded' ? 1 : 0,
    })),
    payouts: spec.payouts.map((p) => ({ id: randomUUID(), ...p })),
    credentials: spec.credentials.map((c) => ({ ...c, token: generateToken(credentialKind[c.kind]) }) as MCredential),
    analyst: spec.analyst,
  };
  spec.orgs.forEach((o, i) => {
    if (o.accountAdmin !== null) model.orgs[i]!.account = { id: randomUUID(), admin: o.accountAdmin };
  });

  const s: string[] = [];
  const metadata = (tag: number | undefined) => (tag === undefined ? `'{}'` : `'{"tag": "t${tag}"}'`);
  const values = (rows: string[][]) => rows.map((r) => `(${r.join(', ')})`).join(',\n  ');
  const insert = (table: string, columns: string, rows: string[][]) => {
    if (rows.length) s.push(`insert into ${table} (${columns}) values\n  ${values(rows)}`);
  };
  insert(
    'rowgate.users',
    'id, email, deleted_at',
    model.users.map((u) => [q(u.id), q(u.email), deletedAt(u.deleted)]),
  );
  insert(
    'rowgate.organizations',
    'id, name, slug, deleted_at',
    model.orgs.map((o) => [q(o.id), q(`Org ${o.slug}`), q(o.slug), deletedAt(o.deleted)]),
  );
  insert(
    'rowgate.organization_roles',
    'id, organization_id, name, permissions',
    model.customRoles.map((r) => [q(r.id), q(model.orgs[r.org]!.id), q(r.name), array(r.permissions)]),
  );
  insert(
    'rowgate.memberships',
    'id, user_id, organization_id, role, deleted_at',
    model.memberships.map((m) => [q(m.id), q(model.users[m.user]!.id), q(model.orgs[m.org]!.id), q(m.role), deletedAt(m.removed)]),
  );
  const accounts = model.orgs.flatMap((o) => (o.account ? [{ org: o, account: o.account }] : []));
  insert(
    'rowgate.accounts',
    'id, organization_id, admin_id, country, currency',
    accounts.map(({ org, account }) => [q(account.id), q(org.id), q(model.users[account.admin]!.id), `'US'`, `'usd'`]),
  );
  for (const { org, account } of accounts) s.push(`update rowgate.organizations set account_id = ${q(account.id)} where id = ${q(org.id)}`);
  insert(
    'rowgate.products',
    'id, organization_id, name, price_amount, price_currency, is_archived, deleted_at, metadata',
    model.products.map((p, i) => [
      q(p.id),
      q(model.orgs[p.org]!.id),
      q(`Product ${i}`),
      `${1000 + i}`,
      `'usd'`,
      `${p.archived}`,
      deletedAt(p.deleted),
      metadata(p.tag),
    ]),
  );
  // customers live first: an order's customer must be live when the order is made
  insert(
    'rowgate.customers',
    'id, organization_id, email, metadata',
    model.customers.map((c, i) => [q(c.id), q(model.orgs[c.org]!.id), q(`c${i}-${t}@example.com`), metadata(c.tag)]),
  );
  insert(
    'rowgate.customer_members',
    'id, organization_id, customer_id, email, deleted_at',
    model.seats.map((x, i) => [
      q(x.id),
      q(model.orgs[model.customers[x.customer]!.org]!.id),
      q(model.customers[x.customer]!.id),
      q(`m${i}-${t}@example.com`),
      deletedAt(x.deleted),
    ]),
  );
  // a refunded order was paid first: payment, then refund (the transactions trigger)
  insert(
    'rowgate.orders',
    'id, organization_id, customer_id, product_id, amount, currency, status, metadata',
    model.orders.map((o) => [
      q(o.id),
      q(model.orgs[o.org]!.id),
      q(model.customers[o.customer]!.id),
      q(model.products[o.product]!.id),
      '1000',
      `'usd'`,
      q(o.status === 'refunded' ? 'paid' : o.status),
      metadata(o.tag),
    ]),
  );
  const refunded = model.orders.filter((o) => o.status === 'refunded').map((o) => q(o.id));
  if (refunded.length) s.push(`update rowgate.orders set status = 'refunded' where id in (${refunded.join(', ')})`);
  const deletedCustomers = model.customers.filter((c) => c.deleted).map((c) => q(c.id));
  if (deletedCustomers.length) s.push(`update rowgate.customers set deleted_at = now() where id in (${deletedCustomers.join(', ')})`);
  insert(
    'rowgate.payout_accounts',
    'id, organization_id, type, country, currency, deleted_at',
    model.payouts.map((p) => [q(p.id), q(model.orgs[p.org]!.id), `'bank_account'`, `'US'`, `'usd'`, deletedAt(p.deleted)]),
  );

  for (const c of model.credentials) {
    const hash = bytea(hashToken(secret, c.token));
    const revoked = c.dead ? 'now()' : 'null';
    switch (c.kind) {
      case 'web_session': {
        const user = q(model.users[c.user]!.id);
        s.push(
          `insert into rowgate_private.sessions (token_hash, kind, user_id, is_impersonation, impersonator_id, expires_at, revoked_at)
           values (${hash}, 'user', ${user}, ${c.impersonation}, ${c.impersonation ? user : 'null'}, now() + interval '1 hour', ${revoked})`,
        );
        break;
      }
      case 'personal_access_token': {
        const id = q(randomUUID());
        s.push(
          `insert into rowgate.personal_access_tokens (id, user_id, comment, scopes, deleted_at) values (${id}, ${q(model.users[c.user]!.id)}, 'props', ${array(c.scopes)}, ${revoked})`,
          `insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) values (${hash}, ${id})`,
        );
        break;
      }
      case 'organization_access_token': {
        const id = q(randomUUID());
        s.push(
          `insert into rowgate.organization_access_tokens (id, organization_id, comment, scopes, deleted_at) values (${id}, ${q(model.orgs[c.org]!.id)}, 'props', ${array(c.scopes)}, ${revoked})`,
          `insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) values (${hash}, ${id})`,
        );
        break;
      }
      case 'oauth2_user_token':
      case 'oauth2_organization_token': {
        const org = c.kind === 'oauth2_organization_token' ? q(model.orgs[c.org]!.id) : 'null';
        s.push(
          `insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at, revoked_at)
           values (${hash}, 'props-client', ${q(model.users[c.user]!.id)}, ${org}, ${array(c.scopes)}, now() + interval '1 hour', ${revoked})`,
        );
        break;
      }
      case 'customer_session':
        s.push(
          `insert into rowgate_private.sessions (token_hash, kind, customer_id, expires_at, revoked_at)
           values (${hash}, 'customer', ${q(model.customers[c.customer]!.id)}, now() + interval '1 hour', ${revoked})`,
        );
        break;
      case 'member_session':
        s.push(
          `insert into rowgate_private.sessions (token_hash, kind, member_id, expires_at, revoked_at)
           values (${hash}, 'member', ${q(model.seats[c.seat]!.id)}, now() + interval '1 hour', ${revoked})`,
        );
        break;
    }
  }
  if (analystLogin) {
    s.push(`update rowgate_private.analysts set user_id = ${q(model.users[model.analyst]!.id)} where login = ${q(analystLogin)}`);
  }
  return { model, sql: s.join(';\n') };
}
