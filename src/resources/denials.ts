// Recorded denials (SPEC §20): the 403 answers on an organization's data, kept by the
// pipeline after the request rolled back (src/http/denials.ts), read here by the
// organization's managers. Who reads which rows is rowgate.denials' RLS policy.
import { z } from 'zod';
import { access, readScopes, route } from '../http/route-declaration.ts';
import { doc, timestamps, uuid } from '../core/fields.ts';
import { createdWindow, listQuery, listSchema, multi } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const nullableText = (description: string, example: unknown) => doc(z.string().nullable(), description, example);

const DenialRead = z
  .object({
    id: uuid('The denial id.'),
    organization_id: uuid('The organization whose data the request was refused.'),
    request_id: nullableText('The request id (X-Request-Id) of the refused request; null on an overflow row.', 'req_3f2b1c9e'),
    operation: nullableText('The operation refused; null on an overflow row.', 'products:update'),
    credential_kind: doc(z.string(), 'The kind of credential that made the request.', 'personal_access_token'),
    credential_id: doc(z.uuid().nullable(), 'The credential (token or session) that made it.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    user_id: doc(
      z.uuid().nullable(),
      'The user, for a User subject; null for an organization token.',
      '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
    ),
    step: nullableText('The check of SPEC §5 that refused it (`policy`, `scope`); null on an overflow row.', 'policy'),
    error: nullableText('The error answered (`NotPermitted`, `InsufficientScope`); null on an overflow row.', 'NotPermitted'),
    reason: nullableText('The denial sentence answered; null on an overflow row.', "You don't have permission to update products"),
    count: doc(
      z.number().int().min(1),
      "1 for a denial. Past 1,000 denials of a credential in an organization in one hour, the hour's one overflow row (operation null) counts the rest.",
      1,
    ),
    ...timestamps,
  })
  .meta({ id: 'Denial', description: 'A request refused with a 403 on the organization’s data.' });

const list: ListSpec = {
  from: 'rowgate.denials',
  columns:
    'id, organization_id, request_id, operation, credential_kind, credential_id, user_id, step, error, reason, count, created_at, updated_at',
  sortable: { created_at: 'created_at' },
};

export const denialRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/denials',
    operationId: 'denials:list',
    summary: 'List the refused requests of an organization',
    description:
      'Every 403 answer on the organization’s data, kept although the request rolled back: at most 1,000 rows per credential and hour, then one row that counts the rest. For users whose role grants `organization:manage`.',
    tag: 'authorization',
    access: access.organizationUser(...readScopes('organizations')),
    params: z.object({ id: uuid('The organization id.') }),
    query: listQuery(list, {
      user_id: multi(z.uuid(), 'Only denials of these users (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      operation: multi(z.string().min(1).max(100), 'Only denials of these operations (repeatable).', 'products:update'),
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(DenialRead, 'Denial'),
    authorize: { resource: 'organization', policy: 'organization:manage' },
    handler: ({ tx, params, query }) =>
      runList(
        tx,
        list,
        query,
        new Where()
          .equals('organization_id', params.id)
          .anyOf('user_id', query.user_id, 'uuid')
          .anyOf('operation', query.operation)
          .created(query),
      ),
  }),
];
