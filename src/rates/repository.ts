import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import type { RateListQuery } from './schema.js';

/** Derived rates keep this many significant digits; stored ones what was sent. */
const DERIVED_DIGITS = 12;

/**
 * Upserts a batch of rates by pair and day, in the order of the table's key (the lock order of
 * two batches that share days). The time of the write is passed in, not now(): Citus refuses a
 * volatile function in an upsert's SET.
 */
const UPSERT_SQL = `
  WITH sent AS (SELECT * FROM json_to_recordset($3::json -> 'data') AS r(date date, base text, quote text, rate numeric)),
  upserted AS (
    INSERT INTO exchange_rates (client_id, environment, base, quote, day, rate, updated_at)
    SELECT $1, $2, base, quote, date, rate, $4 FROM sent ORDER BY base, quote, date
    ON CONFLICT (client_id, environment, base, quote, day) DO UPDATE SET rate = EXCLUDED.rate, updated_at = EXCLUDED.updated_at
    RETURNING xmax = 0 AS inserted)
  SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated FROM upserted`;

/**
 * A pair's rate for each day of a period that has one: the rate stored for the pair; else the
 * inverse of the one stored for the reverse pair; else the cross rate through another currency,
 * each leg stored (preferred) or inverse, the first such currency by its code (through EUR for
 * rates of the European Central Bank, which are all the euro's). Only the rates naming base or
 * quote are read. A leg is a fraction of stored rates, so that a derived rate is one exact
 * quotient, rounded once (half up) to DERIVED_DIGITS significant digits.
 */
const LIST_SQL = `
  WITH stored AS (
    SELECT day, base, quote, rate FROM exchange_rates
     WHERE client_id = $1 AND environment = $2 AND day BETWEEN $3::date AND $4::date
       AND (base IN ($5, $6) OR quote IN ($5, $6))),
  legs AS (
    SELECT day, base, quote, rate AS numerator, 1::numeric AS denominator, 0 AS inverted FROM stored
    UNION ALL
    SELECT day, quote, base, 1, rate, 1 FROM stored),
  candidates AS (
    SELECT day, numerator, denominator, inverted AS source_rank, NULL::text AS via, 0 AS legs_inverted FROM legs WHERE base = $5 AND quote = $6
    UNION ALL
    SELECT a.day, a.numerator * b.numerator, a.denominator * b.denominator, 2, a.quote, a.inverted + b.inverted
      FROM legs a JOIN legs b ON b.day = a.day AND b.base = a.quote
     WHERE a.base = $5 AND b.quote = $6 AND a.quote <> $6),
  chosen AS (
    SELECT DISTINCT ON (day) day, numerator, denominator, source_rank, via,
           -- The place of the last digit kept, from the quotient's magnitude (PostgreSQL's division is exact to 16 digits only).
           ${DERIVED_DIGITS - 1} - floor(log(numerator / denominator))::int AS places
      FROM candidates
     ORDER BY day, source_rank, via, legs_inverted)
  SELECT coalesce(json_agg(json_strip_nulls(json_build_object(
           'date', to_char(day, 'YYYY-MM-DD'), 'base', $5::text, 'quote', $6::text,
           -- A derived rate n / d rounded once, half up, to the place 10^-p, by integer division:
           -- floor((2 n 10^p + d) / 2d) / 10^p, with p written as up - down, both at least 0
           -- (PostgreSQL keeps 16 decimal places of a power of 10 below 1).
           'rate', CASE WHEN source_rank = 0 THEN numerator
                        ELSE trim_scale(div(2 * numerator * 10::numeric ^ greatest(places, 0) + denominator * 10::numeric ^ greatest(-places, 0),
                                            2 * denominator * 10::numeric ^ greatest(-places, 0))
                                        * 10::numeric ^ greatest(-places, 0) / 10::numeric ^ greatest(places, 0)) END,
           'source', (ARRAY['stored', 'inverse', 'cross'])[source_rank + 1], 'via', via)) ORDER BY day), '[]')::text AS data
    FROM chosen`;

export type RateRepository = ReturnType<typeof createRateRepository>;

export function createRateRepository(db: Database) {
  return {
    /** Upserts the rates of a request's body, its JSON text as exactNumbers leaves it (rates as exact decimals). */
    async upsert(tenant: Tenant, bodyJson: string, writtenAt: Date): Promise<{ inserted: number; updated: number }> {
      const [row] = await db.query<{ inserted: number; updated: number }>(UPSERT_SQL, [tenant.clientId, tenant.environment, bodyJson, writtenAt.toISOString()]);
      return row!;
    },

    /** A pair's rates as the JSON text of the list's `data`: rates as exact decimals, as stored or derived. */
    async list(tenant: Tenant, { base, quote, start_date, end_date }: RateListQuery): Promise<string> {
      const [row] = await db.query<{ data: string }>(LIST_SQL, [tenant.clientId, tenant.environment, start_date, end_date, base, quote]);
      return row!.data;
    },
  };
}

/** The UAT test credentials keep nothing: every rate new, no rate listed. */
export const standInRates: RateRepository = {
  upsert: async (_tenant, bodyJson) => ({ inserted: (JSON.parse(bodyJson) as { data: unknown[] }).data.length, updated: 0 }),
  list: async () => '[]',
};
