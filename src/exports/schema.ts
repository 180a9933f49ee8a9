import { Type, type Static } from 'typebox';
import { METRIC_IDS, MODEL_ALIASES, MODEL_IDS, REQUEST_BREAKDOWN_KEYS, UNLIMITED, WINDOW_NAMES, type RequestBreakdownKey } from '../attribution/index.js';
import { Identifier } from '../http/schemas.js';

export const PERIOD_TYPES = [
  'FIXED', 'TODAY', 'YESTERDAY', 'YESTERDAY_AND_TODAY',
  'LAST_3_DAYS', 'LAST_7_DAYS', 'LAST_14_DAYS', 'LAST_28_DAYS', 'LAST_30_DAYS', 'LAST_60_DAYS', 'LAST_90_DAYS', 'LAST_180_DAYS',
  'MONTH_TO_DATE', 'LAST_MONTH', 'THIS_WEEK', 'LAST_WEEK', 'THIS_WEEK_AND_LAST_WEEK',
  'LAST_3_WEEKS', 'LAST_4_WEEKS', 'LAST_7_WEEKS', 'LAST_12_WEEKS', 'LAST_14_WEEKS', 'LAST_26_WEEKS', 'LAST_28_WEEKS', 'LAST_52_WEEKS',
  'THIS_MONTH', 'THIS_MONTH_AND_LAST_MONTH', 'LAST_3_MONTHS', 'LAST_6_MONTHS', 'LAST_9_MONTHS', 'LAST_12_MONTHS',
  'YEAR_TO_DATE', 'LAST_YEAR', 'LAST_3_YEARS', 'LAST_5_YEARS',
] as const;

const Choice = <T extends string>(values: readonly T[], fallback: T, description: string) =>
  Type.Optional(Type.Unsafe<T>({ type: 'string', enum: values, default: fallback, description }));
const Flag = (description: string) => Type.Optional(Type.Boolean({ default: false, description }));

/** Fields that send the file to the caller's own bucket in the hosted API; not offered here. */
export const BUCKET_FIELDS = ['bucket_name', 'aws_role', 'region'] as const;

export const ExportRequest = Type.Object(
  {
    level: Choice(['platform', 'campaign', 'adset', 'ad'], 'platform', 'The ad objects rows are made of.'),
    time_granularity: Choice(['MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY'], 'DAILY', 'Length of a row\'s time bucket, in the client\'s time zone; weeks start on Monday.'),
    period_type: Choice(PERIOD_TYPES, 'LAST_7_DAYS', 'The period exported; FIXED takes period_options.'),
    period_options: Type.Optional(
      Type.Object(
        {
          period_starting_at: Type.String({ format: 'date-or-date-time', description: 'An instant, or the first whole local day.' }),
          period_ending_at: Type.String({ format: 'date-or-date-time', description: 'An instant (excluded), or the last whole local day (included).' }),
        },
        {
          additionalProperties: false,
          description: "The period of a FIXED export, at most 2 years: two date-times, or two dates (whole days of the client's time zone).",
        },
      ),
    ),
    breakdowns: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.Unsafe<RequestBreakdownKey>({
              type: 'string',
              enum: REQUEST_BREAKDOWN_KEYS,
              description: 'Platform (Northbeam), the hosted API\'s key, is an alias of platform.',
              'x-messages': { enum: 'Unknown breakdown key: GET /v1/exports/breakdowns lists them' },
            }),
            values: Type.Array(Identifier('A value of the key.'), { maxItems: 1000, description: 'Keep only rows with one of these values; empty keeps all.' }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: 16,
          description: 'Labels that split the rows of ad objects; see GET /v1/exports/breakdowns.',
          'x-unique-by': ['key'],
          'x-messages': { 'x-unique-by': 'Each breakdown key may be given once' },
        },
      ),
    ),
    options: Type.Optional(
      Type.Object(
        {
          export_aggregation: Choice(['BREAKDOWN', 'DATE'], 'BREAKDOWN', 'DATE sums over the ad objects per bucket.'),
          remove_zero_spend: Flag('Leave out rows whose spend is 0.'),
          aggregate_data: Flag('Ignore the campaign, adset and ad levels.'),
          include_ids: Flag('Add the ids beside the names.'),
          include_kind_and_platform: Flag('Add the platform (and kind) of each ad object.'),
          escape_formulas: Type.Optional(
            Type.Boolean({
              default: true,
              description:
                "Write the names and ids of platforms, accounts and ad objects that begin with =, +, -, @, a tab or a carriage return after a ' so that spreadsheets show them as text instead of running them as formulas; false writes them as stored, for data pipelines. Metrics, dates and currencies are never changed.",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    attribution_options: Type.Optional(
      Type.Object(
        {
          attribution_models: Type.Optional(
            Type.Array(
              Type.Unsafe<string>({
                type: 'string',
                enum: [...MODEL_IDS, ...Object.keys(MODEL_ALIASES)],
                description: 'An attribution model id.',
                'x-messages': { enum: 'Unknown attribution model: GET /v1/exports/attribution-models lists them' },
              }),
              {
              maxItems: 16,
              description: `See GET /v1/exports/attribution-models. The hosted API's ids are aliases: ${Object.entries(MODEL_ALIASES)
                .map(([alias, id]) => `${alias} of ${id}`)
                .join(', ')}; the rows of an alias are credited by its model and show the id asked in attribution_model.`,
              },
            ),
          ),
          attribution_windows: Type.Optional(
            Type.Array(Type.Unsafe<string>({ type: 'string', enum: WINDOW_NAMES, description: `Days of 24 hours, or ${UNLIMITED} for no lookback limit.` }), {
              maxItems: 16,
            }),
          ),
          accounting_modes: Type.Optional(Type.Array(Type.Unsafe<string>({ type: 'string', enum: ['cash', 'accrual'] }), { maxItems: 16 })),
        },
        { additionalProperties: false },
      ),
    ),
    metrics: Type.Array(
      Type.Object(
        {
          id: Type.String({
            enum: METRIC_IDS,
            description: 'See GET /v1/exports/metrics.',
            'x-messages': { enum: 'Unknown metric id: GET /v1/exports/metrics lists them' },
          }),
          label: Type.Optional(
            Type.String({ pattern: '^[a-zA-Z][a-zA-Z0-9_]+[a-zA-Z0-9]$', maxLength: 100, description: 'Column header; the metric id by default, as clients read columns by id.' }),
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 100, 'x-unique-by': ['id'], 'x-messages': { 'x-unique-by': 'Each metric may be asked for once' } },
    ),
    export_file_name: Type.Optional(Type.String({ minLength: 3, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' })),
  },
  {
    additionalProperties: false,
    // March 2024 by campaign and day, the days of the client's time zone, credited by the linear model.
    examples: [
      {
        level: 'campaign',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' },
        options: { include_ids: true },
        attribution_options: { attribution_models: ['linear'], attribution_windows: ['30'], accounting_modes: ['cash'] },
        metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'roas' }],
        export_file_name: 'march_campaigns',
      },
    ],
  },
);
export type ExportRequest = Static<typeof ExportRequest>;
