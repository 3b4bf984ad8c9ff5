// /v1/users/me: the current user (SPEC §9).
import { z } from 'zod';
import { notFound } from '../core/errors.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

export const UserRead = z
  .object({
    id: uuid('The user id.'),
    email: doc(z.email(), 'The e-mail address the user signs in with.', 'ada@example.com'),
    name: doc(z.string().nullable(), 'Display name.', 'Ada Lovelace'),
    avatar_url: doc(z.string().nullable(), 'URL of the avatar image.', 'https://example.com/ada.png'),
    is_admin: doc(z.boolean(), 'Platform administrator (may impersonate users); set by an operator.', false),
    ...timestamps,
  })
  .meta({ id: 'User', description: 'A person who signs in to rowgate.' });

const UserUpdate = z
  .strictObject({
    name: doc(z.string().trim().min(1).max(200).nullable(), 'Display name; null clears it.', 'Ada King').optional(),
    avatar_url: doc(
      z
        .url({ protocol: /^https?$/ })
        .max(2000)
        .nullable(),
      'URL (http or https) of the avatar image; null clears it.',
      'https://example.com/ada.png',
    ).optional(),
  })
  .meta({ id: 'UserUpdate', description: 'Fields to change; only the fields sent change.' });

// The platform-admin flag is not a column of rowgate.users (nobody may read a
// colleague's): the database answers it for the current user alone.
const columns = 'id, email, name, avatar_url, rowgate_hidden.current_user_is_platform_admin() as is_admin, created_at, updated_at';
/** GET /v1/users/me's statement (exported for the benchmark's pgbench comparator) */
export const ME = `select ${columns} from rowgate.users where id = rowgate_hidden.current_user_id()`;

export const userRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/users/me',
    operationId: 'users:me',
    explanation: explain.none,
    summary: 'Get the current user',
    tag: 'users',
    access: access.webUserRead,
    status: 200,
    response: UserRead,
    handler: async ({ tx }) => {
      const user = await tx.one(ME);
      if (!user) throw notFound();
      return user;
    },
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/users/me',
    operationId: 'users:update_me',
    explanation: explain.none,
    summary: 'Update the current user',
    tag: 'users',
    access: access.webUserWrite,
    body: UserUpdate,
    status: 200,
    response: UserRead,
    handler: async ({ tx, body }) => {
      const user = await tx.one(
        `update rowgate.users set
           name = case when $1 then $2 else name end,
           avatar_url = case when $3 then $4 else avatar_url end
         where id = rowgate_hidden.current_user_id()
         returning ${columns}`,
        ['name' in body, body.name ?? null, 'avatar_url' in body, body.avatar_url ?? null],
      );
      if (!user) throw notFound();
      return user;
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/users/me',
    operationId: 'users:delete_me',
    explanation: explain.none,
    summary: 'Delete the current user',
    description:
      'Soft-deletes the user and revokes every credential it holds (sessions, tokens). The user leaves every organization, and one of which it is the only member is deleted with it. The last admin of an organization that has other members cannot be deleted (422 naming those organizations): make another member admin, or delete the organization, first.',
    tag: 'users',
    access: access.userWrite,
    status: 204,
    handler: async ({ tx }) => {
      const row = await tx.one<{ deleted: boolean }>('select rowgate.delete_current_user() as deleted');
      if (!row?.deleted) throw notFound();
    },
  }),
];
