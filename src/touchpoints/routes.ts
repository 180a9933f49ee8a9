import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { instantOf } from '../date-time.js';
import { invalidRequest, type ErrorItem } from '../http/errors.js';
import { dataJson } from '../http/json-text.js';
import { pageInfo, pageRequested } from '../http/pagination.js';
import { ErrorEnvelope } from '../http/schemas.js';
import { deriveTouchpoint, type DerivedTouchpoint, type SourcePlatforms } from './derive.js';
import { IdentityBatch, LinkResult, TouchpointBatch, TouchpointListQuery, TouchpointPage, UpsertResult } from './schema.js';

const errors = { 401: ErrorEnvelope, 422: ErrorEnvelope };
const config = { validationStatus: 422 as const };
const writes = { ...config, rateLimit: 'touchpointWrites' as const };

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The touchpoints of a request as stored, or the values of their landing_url queries that cannot be. */
function derived(batch: TouchpointBatch, sourcePlatforms: SourcePlatforms): DerivedTouchpoint[] {
  const touchpoints: DerivedTouchpoint[] = [];
  const problems: ErrorItem[] = [];
  batch.data.forEach((input, index) => {
    const touchpoint = deriveTouchpoint(input, sourcePlatforms);
    if (!Array.isArray(touchpoint)) return void touchpoints.push(touchpoint);
    problems.push(...touchpoint.map(({ param, msg }) => ({ loc: `body/data/${index}/landing_url`, msg, type: 'query_parameter', param })));
  });
  if (problems.length > 0) throw invalidRequest(problems, 422);
  return touchpoints;
}

/** What a list query asks for, or a 422: a visitor or a customer (not both) and/or a time range. */
function requestedFilter(query: TouchpointListQuery) {
  const { visitor_id, customer_id, start, end } = query;
  const problem = (loc: string, msg: string) => invalidRequest([{ loc, msg, type: 'range' }], 422);
  if (visitor_id !== undefined && customer_id !== undefined) throw problem('query/customer_id', 'Give visitor_id or customer_id, not both');
  if ([visitor_id, customer_id, start, end].every((value) => value === undefined)) {
    throw problem('query', 'Give visitor_id or customer_id, and/or start and end');
  }
  if (start !== undefined && end !== undefined && instantOf(start) > instantOf(end)) throw problem('query/end', 'Must not be before start');
  return { visitor_id, customer_id, start, end };
}

/** Touchpoints: upsert and list. */
export const touchpointRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '',
    {
      config: writes,
      schema: {
        summary: 'Upsert touchpoints',
        description:
          "Inserts each touchpoint, or replaces the one with the same touchpoint_id. UTMs and click ids missing from the fields are read from landing_url's query; platform_name, campaign_id, adset_id, ad_id and channel are derived when written (the client's source mapping as it is then). All or nothing.",
        body: TouchpointBatch,
        response: { 201: UpsertResult, ...errors },
      },
    },
    async (request, reply) => {
      const { tenant, store } = request;
      const rows = derived(request.body, await store.touchpoints.sourcePlatforms(tenant.clientId));
      const result = await store.touchpoints.upsert(tenant, rows, new Date());
      return reply.code(201).send({ message: `Upserted ${count(rows.length, 'touchpoint')}`, ...result, request_id: request.id });
    },
  );

  app.get(
    '',
    {
      config,
      schema: {
        summary: 'List touchpoints',
        description:
          "A visitor's or a customer's touchpoints (a customer's: those sent with its customer_id, and those of visitors linked to it), and/or those of an inclusive range of occurred_at; by occurred_at, then touchpoint_id, a page at a time.",
        querystring: TouchpointListQuery,
        response: { 200: TouchpointPage, ...errors },
      },
    },
    async (request, reply) => {
      const filter = requestedFilter(request.query);
      const { page, pageSize } = pageRequested(request.query);
      const { items, total } = await request.store.touchpoints.list(request.tenant, filter, page, pageSize);
      return reply.type('application/json').send(dataJson(items, pageInfo(page, pageSize, total)) as never);
    },
  );
};

/** Identities: links of anonymous visitors to customers. */
export const identityRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '',
    {
      config: writes,
      schema: {
        summary: 'Link visitors to customers',
        description:
          "Links each visitor to a customer, directly (customer_id) or through an order (order_id: the order's customer, once the order exists). A visitor has one link: a later request's replaces an earlier one. The link covers all of the visitor's touchpoints, earlier and later ones.",
        body: IdentityBatch,
        response: { 201: LinkResult, ...errors },
      },
    },
    async (request, reply) => {
      const linked = await request.store.touchpoints.link(request.tenant, request.rawBody!, new Date());
      return reply.code(201).send({ message: `Linked ${count(linked, 'visitor')}`, linked, request_id: request.id });
    },
  );
};
