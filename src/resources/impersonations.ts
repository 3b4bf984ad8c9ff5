// POST /v1/impersonations/: a platform admin becomes another user, read-only, for an hour.
import { z } from 'zod';
import { setSessionCookie } from '../auth/session-cookie.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, timestamp, tokenField, uuid } from '../core/fields.ts';
import { generateToken, hashToken } from '../auth/tokens.ts';

const ImpersonationCreate = z
  .strictObject({ user_id: uuid('The user to impersonate.') })
  .meta({ id: 'ImpersonationCreate', description: 'Whom to impersonate.' });

const Impersonation = z
  .object({
    token: tokenField('rg_us_'),
    user_id: uuid('The impersonated user.'),
    expires_at: timestamp('When the impersonation session ends (1 hour).'),
    scopes: doc(z.array(z.string()), "The session's scopes: the read scopes only.", ['user:read', 'products_read']),
  })
  .meta({ id: 'Impersonation', description: 'A read-only web session of another user; also set as the session cookie.' });

export const impersonationRoutes = [
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/impersonations/',
    operationId: 'impersonations:create',
    explanation: { lookup: 'none', policy: 'platform_admin' },
    summary: 'Impersonate a user',
    description:
      'Platform admins only, with their own web session. Answers a web session of the target user that carries only the read scopes, lasts 1 hour, is marked as an impersonation, and sets it as the session cookie.',
    tag: 'impersonations',
    access: access.webUserWrite,
    body: ImpersonationCreate,
    status: 201,
    response: Impersonation,
    handler: async ({ tx, body, secret, res }) => {
      const token = generateToken('web_session');
      const session = await tx.one<{ user_id: string; expires_at: string; scopes: string[] }>(
        'select user_id, expires_at, scopes from rowgate.create_impersonation_session($1, $2)',
        [body.user_id, hashToken(secret, token)],
      );
      setSessionCookie(res, token, session!.expires_at);
      return { token, ...session };
    },
  }),
];
