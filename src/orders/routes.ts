import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidRequest, type ErrorItem } from '../http/errors.js';
import { exactNumbers, type ExactNumbers } from '../http/exact-numbers.js';
import { dataJson } from '../http/json-text.js';
import { pageInfo, pageRequested, wholeInfo } from '../http/pagination.js';
import { ErrorEnvelope } from '../http/schemas.js';
import {
  AliasConflictError,
  ExclusiveFieldsError,
  UnknownOrdersError,
  type AliasToAttach,
  type DateRange,
} from './repository.js';
import {
  AMOUNT_BOUNDS,
  AliasRequest,
  AliasResult,
  LegacyOrderBatch,
  OrderBatch,
  OrderListQuery,
  OrderPage,
  OrderPatchBatch,
  PatchResult,
  UpsertResult,
  type Order,
  type OrderAsSent,
  type OrderPatch,
} from './schema.js';
import { orderWarnings } from './warnings.js';

const plural = (count: number, noun: string, nouns = `${noun}s`) => `${count} ${count === 1 ? noun : nouns}`;

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope };

/** An alias of the request, with where the request gave it. */
interface RequestedAlias extends AliasToAttach {
  loc: string;
}

export function aliasesOf(orders: readonly Pick<OrderPatch, 'order_id' | 'alternate_order_ids'>[]): RequestedAlias[] {
  return orders.flatMap((order, index) =>
    (order.alternate_order_ids ?? []).map((alias, a) => ({
      order_id: order.order_id,
      type: alias.type,
      id: alias.id,
      loc: `body/${index}/alternate_order_ids/${a}`,
    })),
  );
}

/** One alias (type and id) given for two different orders of one request. */
function aliasesGivenTwice(aliases: readonly RequestedAlias[]): ErrorItem[] {
  const firstOwner = new Map<string, string>();
  return aliases.flatMap((alias) => {
    const key = JSON.stringify([alias.type, alias.id]);
    const owner = firstOwner.get(key);
    if (owner === undefined) firstOwner.set(key, alias.order_id);
    if (owner === undefined || owner === alias.order_id) return [];
    return [{ loc: alias.loc, msg: `Alias ${alias.type} ${alias.id} is given for order ${owner} too in this request`, type: 'alias_conflict' }];
  });
}

const readAmounts = exactNumbers(AMOUNT_BOUNDS);

/**
 * Rules the schema cannot hold: an alias claimed by two orders of the request, and amounts out
 * of bounds by less than a binary float can tell (read as exact decimals). Answers the batch's
 * amounts: the JSON text to store, amounts rounded to their scale, and which were rounded.
 */
function checkBatch(batchJson: string, aliases: readonly RequestedAlias[]): ExactNumbers {
  const amounts = readAmounts(batchJson);
  const problems = [...aliasesGivenTwice(aliases), ...amounts.problems];
  if (problems.length > 0) throw invalidRequest(problems);
  return amounts;
}

function conflictError(error: AliasConflictError, aliases: readonly RequestedAlias[]): ApiError {
  return new ApiError(
    400,
    `${plural(error.conflicts.length, 'alias', 'aliases')} already attached to other orders; nothing was stored`,
    error.conflicts.map(({ index, attached_to }) => {
      const alias = aliases[index]!;
      return {
        loc: alias.loc,
        msg: `Alias ${alias.type} ${alias.id} is already attached to order ${attached_to}`,
        type: 'alias_conflict',
        order_id: alias.order_id,
      };
    }),
  );
}

/** The 404 of a request naming unknown orders; `locOf` says where the request named each. */
function notFoundError(error: UnknownOrdersError, locOf: (index: number) => string): ApiError {
  return new ApiError(
    404,
    `${plural(error.missing.length, 'order')} not found; nothing was stored`,
    error.missing.map(({ index, order_id }) => ({ loc: locOf(index), msg: `Order ${order_id} does not exist`, type: 'not_found', order_id })),
  );
}

/** A patch that sends an e-mail or phone number whose hash the order holds, or the reverse. */
function storedBesideHashError(error: ExclusiveFieldsError, batch: readonly OrderPatch[]): ApiError {
  return invalidRequest(
    error.orders.flatMap(({ index, fields }) =>
      fields.map((plain) => {
        const hashed = `hashed_${plain}`;
        const [sent, stored] = (batch[index] as Record<string, unknown>)[plain] != null ? [plain, hashed] : [hashed, plain];
        return {
          loc: `body/${index}/${sent}`,
          msg: `Must not be present together with ${stored}, which the order has: clear it with "${stored}": null in the same patch`,
          type: 'exclusive',
        };
      }),
    ),
  );
}

/** How a path takes an order upsert: the current one, or the old one the vendor's Magento module still posts to. */
export interface UpsertPath {
  body: typeof OrderBatch | typeof LegacyOrderBatch;
  /** Fields an order that leaves them out is stored with. */
  defaults: Partial<Order>;
  /** Only the old path: answered as deprecated (RFC 9745) since this instant, with a link to the path that replaces it. */
  deprecated?: { since: Date; successor: string };
}

export const CURRENT_UPSERT: UpsertPath = { body: OrderBatch, defaults: {} };
export const LEGACY_UPSERT: UpsertPath = {
  body: LegacyOrderBatch,
  defaults: { shipping_cost: 0 },
  deprecated: { since: new Date('2026-11-23T00:00:00Z'), successor: '/v2/orders' },
};

/** The order upsert, on the path its prefix names, taking orders as `path` says. */
export const orderUpsertRoute: FastifyPluginAsyncTypebox<{ path: UpsertPath }> = async (app, { path }) => {
  const { deprecated } = path;
  const deprecation = deprecated && {
    deprecation: `@${Math.floor(deprecated.since.getTime() / 1000)}`,
    link: `<${deprecated.successor}>; rel="successor-version"`,
  };
  app.post(
    '',
    {
      config: { rateLimit: 'orderWrites' },
      // Set before validation, so that the old path's refusals say it is deprecated too.
      ...(deprecation && {
        onRequest: async (_request, reply) => {
          reply.headers(deprecation);
        },
      }),
      schema: {
        summary: deprecated ? 'Upsert orders (old path)' : 'Upsert orders',
        description: deprecated
          ? `The old path of ${deprecated.successor}, for clients that still post here: the same upsert, with shipping_cost 0 when left out.`
          : 'Inserts each order, or replaces it wholesale when its order_id exists. All or nothing.',
        deprecated: deprecated !== undefined,
        body: path.body,
        response: { 200: UpsertResult, ...errors },
      },
    },
    async (request) => {
      // Validated by either path's schema, both of which take orders as sent.
      const batch = request.body as OrderAsSent[];
      const aliases = aliasesOf(batch);
      const amounts = checkBatch(request.rawBody!, aliases);
      const result = await request.store.orders.upsert(request.tenant, amounts.json, batch.map((order) => order.order_id), aliases, path.defaults).catch((error: unknown) => {
        throw error instanceof AliasConflictError ? conflictError(error, aliases) : error;
      });
      return {
        message: `Upserted ${plural(batch.length, 'order')}`,
        ...result,
        warnings: orderWarnings(batch, amounts.rounded),
        request_id: request.id,
      };
    },
  );
};

export const orderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(orderUpsertRoute, { path: CURRENT_UPSERT });

  app.patch(
    '',
    {
      config: { rateLimit: 'orderWrites' },
      schema: {
        summary: 'Patch orders',
        description:
          'Changes the fields sent of existing orders, validated as the upsert validates them; the others keep their values. ' +
          'null clears an optional field; products and refunds cannot be patched. All or nothing: an unknown order_id fails ' +
          'the whole batch (404).',
        body: OrderPatchBatch,
        response: { 200: PatchResult, ...errors, 404: ErrorEnvelope, 413: ErrorEnvelope },
      },
    },
    async (request) => {
      const batch = request.body as OrderPatch[];
      const aliases = aliasesOf(batch);
      const amounts = checkBatch(request.rawBody!, aliases);
      const orderIds = batch.map((order) => order.order_id);
      try {
        await request.store.orders.patch(request.tenant, amounts.json, orderIds, aliases, new Date());
      } catch (error) {
        if (error instanceof UnknownOrdersError) throw notFoundError(error, (index) => `body/${index}/order_id`);
        if (error instanceof ExclusiveFieldsError) throw storedBesideHashError(error, batch);
        throw error instanceof AliasConflictError ? conflictError(error, aliases) : error;
      }
      return {
        message: `Updated ${plural(batch.length, 'order')}`,
        updated: batch.length,
        warnings: orderWarnings(batch, amounts.rounded),
        request_id: request.id,
      };
    },
  );

  app.post(
    '/aliases',
    {
      config: { rateLimit: 'orderWrites' },
      schema: {
        summary: 'Add aliases to existing orders',
        description: 'Attaches alternate order ids. Aliases already attached to the same order are ignored.',
        body: AliasRequest,
        response: { 200: AliasResult, ...errors, 404: ErrorEnvelope },
      },
    },
    async (request) => {
      const aliases = request.body.aliases.map((alias, index) => ({ ...alias, loc: `body/aliases/${index}` }));
      const givenTwice = aliasesGivenTwice(aliases);
      if (givenTwice.length > 0) throw invalidRequest(givenTwice);
      const result = await request.store.orders.addAliases(request.tenant, aliases).catch((error: unknown) => {
        if (error instanceof UnknownOrdersError) throw notFoundError(error, (index) => `${aliases[index]!.loc}/order_id`);
        throw error instanceof AliasConflictError ? conflictError(error, aliases) : error;
      });
      return { message: `Added ${plural(result.added, 'alias', 'aliases')}`, ...result, request_id: request.id };
    },
  );

  /**
   * Every order of the range in one answer, written as the cursor reads it. The first batch is
   * read before anything is sent, so a store that fails at once gets an error answer. After
   * that the status is sent: a failure cuts the connection before the closing `]}`, so that
   * no client takes a part for the whole. A client that goes away closes the body, which stops
   * the reading at the next batch.
   */
  async function sendEveryOrder(request: FastifyRequest, reply: FastifyReply, range: DateRange) {
    const body = new PassThrough();
    const gone = new AbortController();
    body.on('close', () => gone.abort());
    body.write('{"data":[');
    let count = 0;
    let started!: () => void;
    const firstBatch = new Promise<void>((resolve) => (started = resolve));
    const read = request.store.orders.listAll(request.tenant, range, async (items, rows) => {
      gone.signal.throwIfAborted();
      const text = count > 0 && rows > 0 ? `,${items}` : items;
      count += rows;
      started();
      if (!body.write(text)) await once(body, 'drain', { signal: gone.signal });
    });
    read.then(
      () => body.end(`]${JSON.stringify(wholeInfo(count)).replace(/^{/, ',')}`),
      (error: unknown) => {
        if (!gone.signal.aborted) body.destroy(error as Error);
      },
    );
    await Promise.race([firstBatch, read]);
    return reply.type('application/json').send(body);
  }

  app.get(
    '',
    {
      schema: {
        summary: 'List orders',
        description:
          'Orders whose time_of_purchase falls in the date range (UTC), oldest first: a page at a time with page or ' +
          'page_size, all of them in one answer without.',
        querystring: OrderListQuery,
        response: { 200: OrderPage, ...errors },
      },
    },
    async (request, reply) => {
      const { start_date, end_date } = request.query;
      if (start_date > end_date) {
        throw invalidRequest([{ loc: 'query/end_date', msg: 'Must not be before start_date', type: 'range' }]);
      }
      const range = { start: start_date, end: end_date };
      const paged = request.query.page !== undefined || request.query.page_size !== undefined;
      if (!paged) return sendEveryOrder(request, reply, range);
      const { page, pageSize } = pageRequested(request.query);
      const { items, total } = await request.store.orders.list(request.tenant, range, page, pageSize);
      return reply.type('application/json').send(dataJson(items, pageInfo(page, pageSize, total)) as never);
    },
  );
};
