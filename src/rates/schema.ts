import { Type, type Static } from 'typebox';
import { CURRENCY_CODES } from '../reference-codes.js';
import type { NumberBounds } from '../http/exact-numbers.js';
import { MAX_RATES_PER_REQUEST } from '../request-limits.js';

/**
 * A rate's bounds, read as an exact decimal (exactNumbers): up to 10^9 of one currency for another,
 * kept to 18 decimal places (the schema's minimum, 10^-9, keeps 9 significant digits there).
 * Between ISO currencies, rates lie far inside; their cross rates stay finite doubles.
 */
export const RATE_BOUNDS: NumberBounds = { minimum: 0, maximum: 1_000_000_000, scale: 18 };
/** The longest period a list of rates covers, in days. */
export const MAX_RATE_LIST_DAYS = 366;

const Currency = (description: string, example?: string) =>
  Type.String({ enum: CURRENCY_CODES, description, 'x-messages': { enum: 'Currency does not match any known currencies' }, ...(example && { examples: [example] }) });
const Day = (description: string, example: string) => Type.String({ format: 'date', description, examples: [example] });

/** The rates of the API reference's examples: the euro in dollars and in pounds on the days of order 1001 (src/orders/schema.ts). */
const RATE_EXAMPLES = [
  { date: '2024-03-07', base: 'EUR', quote: 'USD', rate: 1.0895 },
  { date: '2024-03-07', base: 'EUR', quote: 'GBP', rate: 0.85505 },
  { date: '2024-03-08', base: 'EUR', quote: 'USD', rate: 1.0933 },
  { date: '2024-03-08', base: 'EUR', quote: 'GBP', rate: 0.85283 },
];

export const ExchangeRate = Type.Object(
  {
    date: Day("The day the rate holds on, a local day of the client's time zone, as the records it converts are dated.", '2024-03-08'),
    base: Currency('ISO 4217 code of the currency a rate of 1 buys.'),
    quote: Currency('ISO 4217 code of the currency paid for one base.'),
    rate: Type.Number({
      minimum: 1e-9,
      maximum: RATE_BOUNDS.maximum,
      description: `What one base costs in quote: 1 EUR = 1.0933 USD. From 0.000000001 to 1,000,000,000, kept exactly as sent to ${RATE_BOUNDS.scale} decimal places (more are rounded, with a warning).`,
      'x-messages': { minimum: 'Must be at least 0.000000001' },
    }),
  },
  { additionalProperties: false, 'x-distinct': ['base', 'quote'] },
);
export type ExchangeRate = Static<typeof ExchangeRate>;

export const ExchangeRateBatch = Type.Object(
  {
    data: Type.Array(ExchangeRate, {
      minItems: 1,
      maxItems: MAX_RATES_PER_REQUEST,
      'x-unique-by': ['date', 'base', 'quote'],
      'x-messages': { 'x-unique-by': 'Duplicate rate in this request: a pair has one rate a day' },
    }),
  },
  { additionalProperties: false, examples: [{ data: RATE_EXAMPLES }] },
);
export type ExchangeRateBatch = Static<typeof ExchangeRateBatch>;

export const RatesStored = Type.Object(
  {
    message: Type.String(),
    inserted: Type.Integer({ description: 'Rates of a pair and day not stored before.' }),
    updated: Type.Integer({ description: 'Rates that replaced the one stored for their pair and day.' }),
    warnings: Type.Optional(
      Type.Array(Type.Object({ loc: Type.String({ description: 'body/data/<n>/rate.' }), msg: Type.String() }), {
        description: `Rates sent with more than ${RATE_BOUNDS.scale} decimal places, each stored rounded to them.`,
      }),
    ),
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Stored 4 rates', inserted: 4, updated: 0, request_id: '55785a0d-8c67-4168-a2ca-f10db2cfc52d' }] },
);

export const RateListQuery = Type.Object(
  {
    base: Currency('The currency a rate of 1 buys.', 'GBP'),
    quote: Currency('The currency paid for it.', 'USD'),
    start_date: Day('The first day.', '2024-03-07'),
    end_date: Day(`The last day (included), at most ${MAX_RATE_LIST_DAYS} days after start_date counting both.`, '2024-03-08'),
  },
  { additionalProperties: false },
);
export type RateListQuery = Static<typeof RateListQuery>;

export const DerivedRate = Type.Object({
  date: Type.String({ format: 'date' }),
  base: Type.String(),
  quote: Type.String(),
  rate: Type.Number({ description: 'What one base costs in quote that day.' }),
  source: Type.Unsafe<'stored' | 'inverse' | 'cross'>({
    type: 'string',
    enum: ['stored', 'inverse', 'cross'],
    description: 'stored: as sent; inverse: 1 ÷ the rate of quote in base; cross: through the currency named by via. Derived rates keep 12 significant digits.',
  }),
  via: Type.Optional(Type.String({ description: 'With source cross: the currency both legs name.' })),
});

export const RateList = Type.Object(
  {
    data: Type.Array(DerivedRate, { description: 'A rate for each day of the period that has one (stored, or derived), oldest first.' }),
  },
  {
    examples: [
      {
        data: [
          { date: '2024-03-07', base: 'GBP', quote: 'USD', rate: 1.27419449155, source: 'cross', via: 'EUR' },
          { date: '2024-03-08', base: 'GBP', quote: 'USD', rate: 1.28196709778, source: 'cross', via: 'EUR' },
        ],
      },
    ],
  },
);
