import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DEFAULT_MODEL, DEFAULT_WINDOW, MODEL_ALIASES, MODEL_IDS, WINDOW_NAMES } from '../attribution/index.js';
import { abandonedSignal } from '../http/abandoned.js';
import { invalidRequest } from '../http/errors.js';
import { ErrorEnvelope } from '../http/schemas.js';
import { MAX_REPORT_DAYS, reportRequest, runReport, type ReportQuery } from './performance.js';

/** A choice of `values`, `fallback` when left out; `example`, the value the API reference's example asks. */
const Choice = <T extends string>(values: readonly T[], fallback: T, description: string, example?: T) =>
  Type.Optional(
    Type.Unsafe<T>({
      type: 'string',
      enum: values,
      default: fallback,
      description,
      'x-messages': { enum: `Must be one of ${values.join(', ')}` },
      ...(example && { examples: [example] }),
    }),
  );
const LocalDay = (description: string, example: string) => Type.String({ format: 'date', description, examples: [example] });

export const PerformanceQuery = Type.Object(
  {
    start_date: LocalDay("The first day, in the client's time zone.", '2024-03-01'),
    end_date: LocalDay(`The last day (included), at most ${MAX_REPORT_DAYS} days after start_date counting both.`, '2024-03-31'),
    granularity: Choice(['DAILY', 'WEEKLY', 'MONTHLY', 'HOURLY', 'PERIOD'], 'DAILY', "A row's time bucket, as an export's time_granularity; PERIOD makes the whole period one bucket, dated by start_date."),
    level: Choice(['platform', 'campaign', 'adset', 'ad', 'total'], 'platform', 'The ad objects rows are made of; total sums over them per bucket, and is the level of store metrics (revenue, mer, ...).', 'campaign'),
    breakdown: Type.Optional(Type.Unsafe<'platform' | 'account'>({ type: 'string', enum: ['platform', 'account'], description: 'Splits the rows of ad objects by this label too.' })),
    metrics: Type.String({ minLength: 1, maxLength: 2000, description: 'Comma-separated metric ids: GET /v1/exports/metrics.', examples: ['spend,rev,roas'] }),
    model: Choice([...MODEL_IDS, ...Object.keys(MODEL_ALIASES)], DEFAULT_MODEL, 'The attribution model: GET /v1/exports/attribution-models.'),
    window: Choice(WINDOW_NAMES, String(DEFAULT_WINDOW), 'The lookback window: days, or infinity.'),
    mode: Choice(['cash', 'accrual'] as const, 'cash', 'Accounting mode: cash counts a credit when the order is placed, accrual when its touchpoint happened.'),
    channels: Choice(
      ['all', 'paid'] as const,
      'all',
      'paid keeps the rows of the platforms with spend in the period (the paid channels), leaving out direct, e-mail, organic and unattributed revenue; with level=total, it adds those rows up per bucket. Store metrics (revenue, mer, ...) count every channel and are refused with it.',
    ),
  },
  { additionalProperties: false },
);

const Value = Type.Union([Type.String(), Type.Number(), Type.Null()]);
const EXAMPLE_ROW = { date: '2024-03-08', platform: 'meta', campaign: 'Spring sale', campaign_id: 'spring', currency: 'USD', attribution_model: 'linear', attribution_window: '30', accounting_mode: 'cash' };
export const PerformanceReport = Type.Object(
  {
    rows: Type.Array(Type.Record(Type.String(), Value), {
      description: "An export's rows of the same options: its columns (ids included) by name, then the metrics by id, as numbers.",
    }),
    totals: Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()]), {
      description:
        'Per metric: sums of the rows, and ratios of those sums (roas = total rev ÷ total spend); null when rows are in several currencies, or a ratio divides by 0.',
    }),
    currency: Type.Union([Type.String(), Type.Null()], { description: 'The currency of every row with one; null when there are several (or none).' }),
    warn: Type.Optional(
      Type.Object(
        { attribution_model: Type.String() },
        { description: 'Said when the data-driven model asked learnt from too few conversions to be trusted (GET /v1/attribution/models/{model_id}).' },
      ),
    ),
  },
  {
    // March 2024 by campaign and day: the paid visit of order 1001's path (src/touchpoints/schema.ts) on its own day, which
    // has no spend or credit and so no currency, then half the order's credit to the campaign and half to the Google search.
    examples: [
      {
        rows: [
          { ...EXAMPLE_ROW, date: '2024-03-06', currency: null, spend: 0, rev: 0, roas: null },
          { ...EXAMPLE_ROW, spend: 12.5, rev: 49.995, roas: 3.9996 },
          { ...EXAMPLE_ROW, platform: 'organic_search', campaign: '', campaign_id: '', spend: 0, rev: 49.995, roas: null },
        ],
        totals: { spend: 12.5, rev: 99.99, roas: 7.9992 },
        currency: 'USD',
      },
    ],
  },
);

/** GET /v1/reports/performance: an export's rows at once, as JSON, for periods a page can wait for. */
export const reportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/performance',
    {
      config: { validationStatus: 422, rateLimit: 'exportReads' },
      schema: {
        summary: 'Performance report',
        description: [
          `The rows an export of the same options would hold, computed by the same statement, answered at once as JSON: at most ${MAX_REPORT_DAYS} days;`,
          'longer periods are exports\' work (POST /v1/exports/data-export). One attribution model, window and mode. Ids are included.',
        ].join(' '),
        querystring: PerformanceQuery,
        response: { 200: PerformanceReport, 401: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const query = request.query as ReportQuery;
      const asked = reportRequest(query);
      if ('problems' in asked) throw invalidRequest(asked.problems, 422);
      const answered = await runReport(request.store, request.tenant, asked, abandonedSignal(reply));
      if ('problems' in answered) throw invalidRequest(answered.problems, 422);
      return reply.type('application/json; charset=utf-8').send(answered.json as never);
    },
  );
};
