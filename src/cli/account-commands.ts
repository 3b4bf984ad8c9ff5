// The users of the API and their credentials, as the operator makes them: users,
// platform admins, web sessions and personal access tokens.
import { generateToken, hashToken } from '../auth/tokens.ts';
import { type CommandSpec, email, type Options, one, scopeList, seconds, userIdOption } from './command-spec.ts';

const noSuchUser = (o: Options) => `no user ${o.userId}`;

export const accountCommands: Record<string, CommandSpec> = {
  // the platform-admin flag is the row of rowgate_private.platform_admins (migration 000003)
  'users create': {
    description: 'create a user',
    options: [
      { flags: '--email <address>', description: 'the e-mail address it signs in with', required: true, parse: email },
      { flags: '--name <name>', description: 'its display name' },
      { flags: '--admin', description: 'a platform admin' },
    ],
    run: (db, o) =>
      one(
        db,
        `with u as (insert into rowgate.users (email, name) values ($1, $2) returning id, email, name),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u where $3::boolean)
         select id, email, name, $3::boolean as is_admin from u`,
        [o.email, o.name ?? null, o.admin === true],
        'not created',
      ),
  },
  'users set-admin': {
    description: 'make a user a platform admin',
    options: [userIdOption],
    run: (db, o) =>
      one(
        db,
        `with u as (select id from rowgate.users where id = $1 and deleted_at is null),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u on conflict (user_id) do nothing)
         select id, true as is_admin from u`,
        [o.userId],
        noSuchUser(o),
      ),
  },
  'sessions create': {
    description: 'create a web session for a user, lasting what signing in gives: {token, expires_at}',
    options: [userIdOption],
    run: async (db, o, c) => {
      const token = generateToken('web_session');
      const session = await one<{ expires_at: string }>(
        db,
        `select s.expires_at from rowgate.users u,
           rowgate_private.issue_web_session(u.id, $2) s
         where u.id = $1 and u.deleted_at is null`,
        [o.userId, hashToken(c.secret, token)],
        noSuchUser(o),
      );
      return { token, expires_at: session.expires_at };
    },
  },
  'tokens create': {
    description: 'create a personal access token for a user',
    options: [
      userIdOption,
      { flags: '--scopes <a,b>', description: 'its scopes, comma-separated', required: true, parse: scopeList },
      { flags: '--comment <text>', description: 'what it is for' },
      { flags: '--expires-in <seconds>', description: 'its lifetime (default: none)', parse: seconds },
    ],
    run: async (db, o, c) => {
      const token = generateToken('personal_access_token');
      const row = await one<object>(
        db,
        `select t.id, t.comment, t.scopes, t.expires_at from rowgate.users u,
           rowgate_private.issue_personal_access_token(u.id, $2, $3, now() + make_interval(secs => $4), $5) t
         where u.id = $1 and u.deleted_at is null`,
        [o.userId, o.comment ?? 'created by the operator CLI', o.scopes, o.expiresIn ?? null, hashToken(c.secret, token)],
        noSuchUser(o),
      );
      return { ...row, token };
    },
  },
};
