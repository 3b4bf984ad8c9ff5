// DELETE /v1/organizations/{id}/members/me: a member leaves (SPEC §21), with a web
// session and no one's members:manage; the last admin cannot (rowgate.leave_organization
// decides). Listed before the members' routes: `me` is not a user id.
import { z } from 'zod';
import { access, route } from '../http/route-declaration.ts';
import { uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

export const leaveRoutes = [
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/members/me',
    operationId: 'members:leave',
    // leaving: the organization must be in reach; the last-admin rule depends on the data (a 422, not predicted)
    explanation: explain.visible('organizations'),
    summary: 'Leave an organization',
    description:
      'Ends the signed-in user’s own membership at once. The last admin of an organization cannot leave it (422): make another member admin first.',
    tag: 'members',
    access: access.webUserWrite,
    params: z.object({ id: uuid('The organization id.') }),
    status: 204,
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.leave_organization($1)', [params.id]);
    },
  }),
];
