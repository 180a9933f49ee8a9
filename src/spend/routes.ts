import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { invalidRequest, type ErrorItem } from '../http/errors.js';
import { exactNumbers } from '../http/exact-numbers.js';
import { dataJson } from '../http/json-text.js';
import { pageInfo, pageRequested } from '../http/pagination.js';
import { ErrorEnvelope } from '../http/schemas.js';
import type { SpendCollection } from './collection.js';
import type { PeriodRange } from './repository.js';
import { KEY_FIELDS, MEASURE_BOUNDS, spendKey, spendSchemas, type SpendInput, type SpendListQuery } from './schema.js';

const errors = { 401: ErrorEnvelope, 422: ErrorEnvelope };

const readMeasures = exactNumbers(MEASURE_BOUNDS);

/** A key may appear once per request; two records of one key would overwrite each other. */
function duplicateKeys(collection: SpendCollection, records: readonly SpendInput[]): ErrorItem[] {
  const first = new Map<string, number>();
  const problems: ErrorItem[] = [];
  records.forEach((record, index) => {
    const key = spendKey(collection, record);
    const earlier = first.get(key);
    if (earlier === undefined) return void first.set(key, index);
    problems.push({
      loc: `body/data/${index}`,
      msg: `Same ${collection.timeField}, ${KEY_FIELDS.join(', ')} as record ${earlier}: each key may appear once per request`,
      type: 'unique',
    });
  });
  return problems;
}

/** The inclusive range a list query asks for: `date`, or both range parameters. */
function requestedRange(collection: SpendCollection, query: SpendListQuery): PeriodRange {
  const [startParam, endParam] = collection.rangeParams;
  const start = query[startParam] as string | undefined;
  const end = query[endParam] as string | undefined;
  const choice = `Give either date, or both ${startParam} and ${endParam}`;
  if (query.date !== undefined) {
    if (start === undefined && end === undefined) {
      const [from, to] = collection.periodsOfDay(query.date);
      return { from, to };
    }
    throw invalidRequest([{ loc: 'query/date', msg: `${choice}, not both`, type: 'range' }], 422);
  }
  if (start === undefined || end === undefined) {
    const missing = start === undefined && end === undefined ? 'query' : `query/${start === undefined ? startParam : endParam}`;
    throw invalidRequest([{ loc: missing, msg: choice, type: 'range' }], 422);
  }
  if (collection.periodValue(start) > collection.periodValue(end)) {
    throw invalidRequest([{ loc: `query/${endParam}`, msg: `Must not be before ${startParam}`, type: 'range' }], 422);
  }
  return { from: start, to: end };
}

/** Upsert, list and delete for one spend collection; validation failures are 422. */
export const spendRoutes: FastifyPluginAsyncTypebox<{ collection: SpendCollection }> = async (app, { collection }) => {
  const schemas = spendSchemas(collection);
  const config = { validationStatus: 422 as const };
  const writes = { ...config, rateLimit: 'spendWrites' as const };
  const { noun, timeField } = collection;
  const spendOf = (request: FastifyRequest) => request.store.spend[collection.table];

  app.post(
    '',
    {
      config: writes,
      schema: {
        summary: `Upsert ${noun}s`,
        description: `Inserts each record, or overwrites names, spend, currency, impressions and clicks of the record with the same ${timeField}, platform_name, platform_account_id, campaign_id, adset_id and ad_id. All or nothing.`,
        body: schemas.UpsertBody,
        response: { 201: schemas.UpsertResult, ...errors },
      },
    },
    async (request, reply) => {
      // Measures out of bounds by less than a binary float can tell, read as exact decimals; the
      // body is stored with its measures rounded to their scale.
      const measures = readMeasures(request.rawBody!);
      const problems = [...duplicateKeys(collection, request.body.data as SpendInput[]), ...measures.problems];
      if (problems.length > 0) throw invalidRequest(problems, 422);
      const items = await spendOf(request).upsert(request.tenant, measures.json);
      // The records alone, as the hosted API answers, unless a measure was rounded.
      const warnings = measures.rounded.length > 0 ? { warnings: measures.rounded } : {};
      return reply.code(201).type('application/json').send(dataJson(items, warnings) as never);
    },
  );

  app.get(
    '',
    {
      config,
      schema: {
        summary: `List ${noun}s`,
        description: `Records of one platform_account_id${collection.listNeedsAccount ? '' : ' (every account when left out)'} for one date, or an inclusive range of ${timeField}, a page at a time.`,
        querystring: schemas.ListQuery,
        response: { 200: schemas.RecordPage, ...errors },
      },
    },
    async (request, reply) => {
      const query = request.query as SpendListQuery;
      const range = requestedRange(collection, query);
      const { page, pageSize } = pageRequested(query);
      const { items, total } = await spendOf(request).list(request.tenant, query, range, page, pageSize);
      return reply.type('application/json').send(dataJson(items, pageInfo(page, pageSize, total)) as never);
    },
  );

  app.delete(
    '',
    {
      config: writes,
      schema: {
        summary: `Delete ${noun}s`,
        description: `Deletes the records of every platform_name with this ${timeField}, platform_account_id, campaign_id, adset_id and ad_id. Answers the records deleted.`,
        body: schemas.DeleteBody,
        response: { 200: schemas.RecordList, ...errors },
      },
    },
    async (request, reply) => {
      const match = request.body.data as Record<string, string>;
      const items = await spendOf(request).delete(request.tenant, {
        period: match[timeField]!,
        platform_account_id: match.platform_account_id!,
        campaign_id: match.campaign_id!,
        adset_id: match.adset_id!,
        ad_id: match.ad_id!,
      });
      return reply.type('application/json').send(dataJson(items) as never);
    },
  );
};
