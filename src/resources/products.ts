// /v1/products: what an organization sells (SPEC §9, §11).
import { z } from 'zod';
import { found } from '../core/errors.ts';
import { createdWindow, listQuery, listSchema, metadataFilter, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { currency } from '../core/money.ts';
import { doc, idParams, jsonOrNull, metadata, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const name = doc(z.string().trim().min(1).max(200), 'Product name.', 'Pro plan');
const description = doc(z.string().max(5000).nullable(), 'Longer description; null when none.', 'Everything in Basic, and more.');
const priceAmount = doc(z.number().int().min(0).max(100_000_000_000), "Price in the currency's minor unit (cents).", 2500);
const isArchived = doc(z.boolean(), 'Archived products stay visible and listed, but are no longer sold.', false);

const ProductRead = z
  .object({
    id: uuid('The product id.'),
    organization_id: uuid('The organization that sells it.'),
    name,
    description,
    price_amount: priceAmount,
    price_currency: currency,
    is_archived: isArchived,
    metadata,
    ...timestamps,
  })
  .meta({ id: 'Product', description: 'A product an organization sells.' });

const ProductCreate = z
  .strictObject({
    organization_id: uuid('The organization; required for users, implied for organization tokens.').optional(),
    name,
    description: description.optional(),
    price_amount: priceAmount,
    price_currency: currency,
    is_archived: isArchived.optional(),
    metadata: metadata.optional(),
  })
  .meta({ id: 'ProductCreate', description: 'A new product.' });

const ProductUpdate = z
  .strictObject({
    name: name.optional(),
    description: description.optional(),
    price_amount: priceAmount.optional(),
    price_currency: currency.optional(),
    is_archived: isArchived.optional(),
    metadata: metadata.optional(),
  })
  .meta({ id: 'ProductUpdate', description: 'Fields to change; only the fields sent change; null clears the description.' });

const columns = 'id, organization_id, name, description, price_amount, price_currency, is_archived, metadata, created_at, updated_at';
const read = readScopes('products');
const write = writeScopes('products');

const productList: ListSpec = {
  from: 'rowgate.products',
  columns,
  sortable: { created_at: 'created_at', name: 'name', price_amount: 'price_amount' },
  perOrganization: { counter: 'products' },
};

export const productRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/products/',
    operationId: 'products:list',
    exportedAs: 'products',
    explanation: explain.list,
    summary: 'List products',
    tag: 'products',
    access: access.organization(...read),
    query: listQuery(productList, {
      organization_id: organizationFilter,
      // exactly `true` or `false`, as the document declares (zod's stringbool also took yes, on, 1, y, enabled…)
      is_archived: doc(
        z
          .enum(['true', 'false'])
          .transform((value) => value === 'true')
          .optional(),
        'Only archived (true) or only not archived (false) products.',
        'false',
      ),
      query: doc(z.string().max(200).optional(), 'Case-insensitive search in the name.', 'pro'),
      metadata: metadataFilter,
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(ProductRead, 'Product'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        productList,
        query,
        new Where()
          .organizations(query.organization_id)
          .equals('is_archived', query.is_archived)
          .search(['name'], query.query)
          .metadata(query)
          .created(query),
      ),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/products/{id}',
    operationId: 'products:get',
    explanation: explain.visible('products'),
    summary: 'Get a product',
    tag: 'products',
    access: access.organization(...read),
    params: idParams,
    status: 200,
    response: ProductRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${columns} from rowgate.products where id = $1`, [params.id])),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/products/',
    operationId: 'products:create',
    explanation: explain.target('products:write'),
    summary: 'Create a product',
    description: 'Needs the `products:write` permission in the organization.',
    tag: 'products',
    access: access.organization(...write),
    body: ProductCreate,
    status: 201,
    response: ProductRead,
    handler: ({ tx, body }) =>
      tx.one(
        `insert into rowgate.products (organization_id, name, description, price_amount, price_currency, is_archived, metadata)
         values (rowgate_hidden.target_organization_id($1, 'products:write'), $2, $3, $4, $5, $6, coalesce($7::jsonb, '{}'))
         returning ${columns}`,
        [
          body.organization_id ?? null,
          body.name,
          body.description ?? null,
          body.price_amount,
          body.price_currency,
          body.is_archived ?? false,
          jsonOrNull(body.metadata),
        ],
      ),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/products/{id}',
    operationId: 'products:update',
    summary: 'Update a product',
    tag: 'products',
    access: access.organization(...write),
    params: idParams,
    body: ProductUpdate,
    status: 200,
    response: ProductRead,
    authorize: { resource: 'product', policy: 'products:write' },
    handler: ({ tx, params, body }) =>
      tx.one(
        `update rowgate.products set
           name = coalesce($2, name),
           description = case when $3 then $4 else description end,
           price_amount = coalesce($5, price_amount),
           price_currency = coalesce($6, price_currency),
           is_archived = coalesce($7, is_archived),
           metadata = coalesce($8::jsonb, metadata)
         where id = $1 returning ${columns}`,
        [
          params.id,
          body.name ?? null,
          'description' in body,
          body.description ?? null,
          body.price_amount ?? null,
          body.price_currency ?? null,
          body.is_archived ?? null,
          jsonOrNull(body.metadata),
        ],
      ),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/products/{id}',
    operationId: 'products:delete',
    summary: 'Delete a product',
    description: 'A soft delete: the product disappears from every API; its orders remain.',
    tag: 'products',
    access: access.organization(...write),
    params: idParams,
    status: 204,
    authorize: { resource: 'product', policy: 'products:write', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      await tx.one(`select rowgate.delete_resource('product', $1)`, [params.id]);
    },
  }),
];
