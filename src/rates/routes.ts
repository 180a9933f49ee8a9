import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { dayRangeProblems } from '../http/day-range.js';
import { invalidRequest, type ErrorItem } from '../http/errors.js';
import { exactNumbers } from '../http/exact-numbers.js';
import { ErrorEnvelope } from '../http/schemas.js';
import { ExchangeRateBatch, MAX_RATE_LIST_DAYS, RATE_BOUNDS, RateList, RateListQuery, RatesStored } from './schema.js';

const errors = { 401: ErrorEnvelope, 422: ErrorEnvelope };
const plural = (n: number) => `${n} rate${n === 1 ? '' : 's'}`;
const readRates = exactNumbers(RATE_BOUNDS);

/** POST and GET /v1/exchange-rates: the client's own rates, by pair and day. */
export const rateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '',
    {
      config: { validationStatus: 422, rateLimit: 'spendWrites' },
      schema: {
        summary: 'Send exchange rates',
        description:
          'Stores one rate a pair a day (1 base = rate quote), replacing the one stored for that pair and day. The inverse pair and cross rates are derived when read: send each rate once, in the direction you have it.',
        body: ExchangeRateBatch,
        response: { 201: RatesStored, ...errors },
      },
    },
    async (request, reply) => {
      // Rates are stored from the JSON text, as exact decimals: out of bounds by less than a binary float can tell is refused, more decimal places than kept are rounded.
      const rates = readRates(request.rawBody!);
      if (rates.problems.length > 0) throw invalidRequest(rates.problems, 422);
      const stored = await request.store.rates.upsert(request.tenant, rates.json, new Date());
      const warnings = rates.rounded.length > 0 ? { warnings: rates.rounded } : {};
      return reply.code(201).send({ message: `Stored ${plural(request.body.data.length)}`, ...stored, ...warnings, request_id: request.id });
    },
  );

  app.get(
    '',
    {
      config: { validationStatus: 422 },
      schema: {
        summary: 'List the rates of a pair',
        description: `A pair's rate for each day of a period (at most ${MAX_RATE_LIST_DAYS} days) that has one: as stored, else the inverse of the reverse pair's, else a cross rate through another currency, each leg stored or inverse.`,
        querystring: RateListQuery,
        response: { 200: RateList, ...errors },
      },
    },
    async (request, reply) => {
      const { base, quote } = request.query;
      // Listed with the period's problems; a rate's own base and quote are the schema's (x-distinct), said the same way.
      const problems: ErrorItem[] = [
        ...(base === quote ? [{ loc: 'query/quote', msg: 'Must not be the same as base', type: 'distinct' }] : []),
        ...dayRangeProblems(request.query, MAX_RATE_LIST_DAYS, `A list covers at most ${MAX_RATE_LIST_DAYS} days (end_date included)`),
      ];
      if (problems.length > 0) throw invalidRequest(problems, 422);
      // Written as PostgreSQL writes the decimals: a stored rate reads back with every digit sent.
      return reply.type('application/json; charset=utf-8').send(`{"data":${await request.store.rates.list(request.tenant, request.query)}}` as never);
    },
  );
};
