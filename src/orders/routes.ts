import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError, invalidRequest } from '../http/errors.js';
import { pageInfo, pageRequested } from '../http/pagination.js';
import { ErrorEnvelope } from '../http/schemas.js';
import {
  AliasConflictError,
  UnknownOrdersError,
  type AliasToAttach,
  type OrderRepository,
} from './repository.js';
import { AliasRequest, AliasResult, OrderBatch, OrderListQuery, OrderPage, UpsertResult, type Order } from './schema.js';
import { orderWarnings } from './warnings.js';

const plural = (count: number, noun: string, nouns = `${noun}s`) => `${count} ${count === 1 ? noun : nouns}`;

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope };

function aliasesOf(orders: readonly Order[]): AliasToAttach[] {
  return orders.flatMap((order, index) =>
    (order.alternate_order_ids ?? []).map((alias, a) => ({
      order_id: order.order_id,
      type: alias.type,
      id: alias.id,
      loc: `body/${index}/alternate_order_ids/${a}`,
    })),
  );
}

function conflictError(error: AliasConflictError): ApiError {
  return new ApiError(
    400,
    `${plural(error.conflicts.length, 'alias', 'aliases')} already attached to other orders; nothing was stored`,
    error.conflicts.map((conflict) => ({
      loc: conflict.loc,
      msg: `Alias ${conflict.type} ${conflict.id} is already attached to order ${conflict.attached_to}`,
      type: 'alias_conflict',
      order_id: conflict.order_id,
    })),
  );
}

export const orderRoutes: FastifyPluginAsyncTypebox<{ orders: OrderRepository }> = async (app, { orders }) => {
  app.post(
    '',
    {
      schema: {
        summary: 'Upsert orders',
        description: 'Inserts each order, or replaces it wholesale when its order_id exists. All or nothing.',
        body: OrderBatch,
        response: { 200: UpsertResult, ...errors },
      },
    },
    async (request) => {
      const batch = request.body;
      const warnings = orderWarnings(batch);
      let result = { inserted: batch.length, updated: 0 };
      if (!request.tenant.dryRun) {
        try {
          result = await orders.upsert(request.tenant, request.rawBody!, aliasesOf(batch));
        } catch (error) {
          throw error instanceof AliasConflictError ? conflictError(error) : error;
        }
      }
      return {
        message: `Upserted ${plural(batch.length, 'order')}`,
        ...result,
        warnings,
        request_id: request.id,
      };
    },
  );

  app.post(
    '/aliases',
    {
      schema: {
        summary: 'Add aliases to existing orders',
        description: 'Attaches alternate order ids. Aliases already attached to the same order are ignored.',
        body: AliasRequest,
        response: { 200: AliasResult, ...errors, 404: ErrorEnvelope },
      },
    },
    async (request) => {
      const aliases = request.body.aliases.map((alias, index) => ({ ...alias, loc: `body/aliases/${index}` }));
      let result = { added: aliases.length, ignored: 0 };
      if (!request.tenant.dryRun) {
        try {
          result = await orders.addAliases(request.tenant, aliases);
        } catch (error) {
          if (error instanceof UnknownOrdersError) {
            throw new ApiError(
              404,
              `${plural(error.missing.length, 'order')} not found; nothing was stored`,
              error.missing.map(({ order_id, loc }) => ({
                loc: `${loc}/order_id`,
                msg: `Order ${order_id} does not exist`,
                type: 'not_found',
                order_id,
              })),
            );
          }
          throw error instanceof AliasConflictError ? conflictError(error) : error;
        }
      }
      return { message: `Added ${plural(result.added, 'alias', 'aliases')}`, ...result, request_id: request.id };
    },
  );

  app.get(
    '',
    {
      schema: {
        summary: 'List orders',
        description: 'Orders whose time_of_purchase falls in the date range (UTC), oldest first, a page at a time.',
        querystring: OrderListQuery,
        response: { 200: OrderPage, ...errors },
      },
    },
    async (request, reply) => {
      const { start_date, end_date } = request.query;
      const { page, pageSize } = pageRequested(request.query);
      if (start_date > end_date) {
        throw invalidRequest([{ loc: 'query/end_date', msg: 'Must not be before start_date', type: 'range' }]);
      }
      const { orders: rows, total } = request.tenant.dryRun
        ? { orders: [], total: 0 }
        : await orders.list(request.tenant, { start: start_date, end: end_date }, page, pageSize);
      // The orders arrive as JSON text; splicing them in keeps their decimals exactly as stored.
      const info = JSON.stringify(pageInfo(page, pageSize, total)).slice(1);
      const body = `{"data":[${rows.join(',')}],${info}`;
      return reply.type('application/json').send(body as never);
    },
  );
};
