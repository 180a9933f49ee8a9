/**
 * The spend, attributed revenue and transactions of an export, computed the straightforward way, for
 * PostgreSQL (over the service's tables) and DuckDB (over copies of them): every order joined to
 * its customer's visits within the window, each path numbered by window functions, each model's
 * credit in closed form, summed per model, accounting mode, UTC day, campaign and currency, beside
 * the hourly spend of the day and campaign (the benchmarks' data sets have no daily spend). The same rules
 * as src/attribution/models.ts (first_touch, linear and time_decay: the models bench/engine.ts
 * exports), written without the engine's code, so that its figures can be checked and its time
 * compared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';

export const REFERENCE_MODELS = ['first_touch', 'linear', 'time_decay'] as const;
const PARTS = 1_000_000_000;
const DAY_MS = 86_400_000;
const HALF_LIFE_MS = 7 * DAY_MS;

/** What differs between the two databases: how instants are held (timestamptz; microseconds since the epoch in DuckDB). */
interface Dialect {
  /** The milliseconds from instant `earlier` to instant `later`, as a float. */
  msBetween(later: string, earlier: string): string;
  /** Instant `at` moved back `days` days. */
  daysBefore(at: string, days: number): string;
  /** The UTC day of instant `at`, as YYYY-MM-DD text. */
  day(at: string): string;
  /** The whole quotient of two whole numbers. */
  quotient(dividend: string, divisor: string): string;
  /** Touchpoint ids ordered byte by byte. */
  byteOrder(column: string): string;
  /** The period's bounds, instants. */
  from: string;
  to: string;
  /** The client's rows of a table (PostgreSQL's tables hold every client's). */
  ofClient(alias: string): string;
}

/** A double: time_decay's weight takes the same floating-point steps as models.ts (PostgreSQL's `2.0` is an exact numeric). */
const float = (value: number | string) => `CAST(${value} AS DOUBLE PRECISION)`;

export interface ReferenceRow {
  model: string;
  mode: string;
  day: string;
  platform: string;
  campaign: string;
  currency: string;
  rev: number;
  txns: number;
  spend: number;
}

/**
 * The statement: orders of the period (and, for accrual, of the window after it), their paths of
 * visits within `windowDays` (null: any time before), credits, and the rows of both modes.
 */
function referenceSql(d: Dialect, windowDays: number | null): string {
  const within = windowDays === null ? '' : `AND t.occurred >= ${d.daysBefore('o.purchased', windowDays)}`;
  // Accrual credits the period's touchpoints of orders placed up to a window after it.
  const lastPurchase = windowDays === null ? '' : `AND time_of_purchase < ${d.daysBefore(d.to, -windowDays)}`;
  const inPeriod = (at: string) => `${at} >= ${d.from} AND ${at} < ${d.to}`;
  const parts: Record<(typeof REFERENCE_MODELS)[number], string> = {
    first_touch: `CASE WHEN position = 1 THEN ${PARTS} ELSE 0 END`,
    linear: `${d.quotient(String(PARTS), 'length')} + CASE WHEN position > length - ${PARTS} % length THEN 1 ELSE 0 END`,
    time_decay: `decay_floor + CASE WHEN decay_rank <= ${PARTS} - decay_floors THEN 1 ELSE 0 END`,
  };
  return `
    WITH visits AS (
      SELECT t.touchpoint_id, t.occurred_at AS occurred,
             CASE WHEN t.platform_name = '' THEN t.channel ELSE t.platform_name END AS platform,
             CASE WHEN t.platform_name = '' THEN '' ELSE t.campaign_id END AS campaign,
             coalesce(t.customer_id, i.customer_id, linking.customer_id) AS customer_id -- its own customer first
        FROM touchpoints t
        LEFT JOIN identities i ON ${d.ofClient('i')} AND i.visitor_id = t.visitor_id
        LEFT JOIN orders linking ON ${d.ofClient('linking')} AND linking.order_id = i.order_id
       WHERE ${d.ofClient('t')} AND t.type = 'visit'
    ),
    purchases AS (
      SELECT order_id, customer_id, time_of_purchase AS purchased, purchase_total AS total, currency
        FROM orders o WHERE ${d.ofClient('o')} AND time_of_purchase >= ${d.from} ${lastPurchase}
    ),
    paths AS (
      SELECT o.order_id, o.purchased, o.total, o.currency, t.occurred, t.platform, t.campaign,
             row_number() OVER (PARTITION BY o.order_id ORDER BY t.occurred, ${d.byteOrder('t.touchpoint_id')}) AS position,
             count(*) OVER (PARTITION BY o.order_id) AS length,
             greatest(1, floor(power(${float(2)}, greatest(${float(-64)}, -(${d.msBetween('o.purchased', 't.occurred')}) / ${float(HALF_LIFE_MS)})) * ${float(PARTS)})::bigint) AS weight
        FROM purchases o JOIN visits t ON t.customer_id = o.customer_id AND t.occurred <= o.purchased ${within}
    ),
    weighed AS (
      SELECT *, ${d.quotient(`weight * ${PARTS}`, 'weights')} AS decay_floor, weight * ${PARTS} % weights AS decay_remainder
        FROM (SELECT *, CAST(sum(weight) OVER (PARTITION BY order_id) AS BIGINT) AS weights FROM paths) AS summed
    ),
    ranked AS (
      SELECT *, sum(decay_floor) OVER (PARTITION BY order_id) AS decay_floors,
                row_number() OVER (PARTITION BY order_id ORDER BY decay_remainder DESC, position DESC) AS decay_rank
        FROM weighed
    ),
    combinations AS (
      SELECT model, mode FROM (VALUES ${REFERENCE_MODELS.map((model) => `('${model}')`).join(', ')}) AS m (model) CROSS JOIN (VALUES ('cash'), ('accrual')) AS modes (mode)
    ),
    -- Each credit once per combination, counted at the purchase (cash) or the touchpoint (accrual).
    credits AS (
      SELECT c.model, c.mode, CASE WHEN c.mode = 'cash' THEN purchased ELSE occurred END AS counted, platform, campaign, currency, total,
             CASE ${REFERENCE_MODELS.map((model) => `WHEN c.model = '${model}' THEN ${parts[model]}`).join(' ')} END AS parts
        FROM ranked CROSS JOIN combinations c
    ),
    unattributed AS (
      SELECT o.purchased, o.total, o.currency FROM purchases o
       WHERE ${inPeriod('o.purchased')} AND NOT EXISTS (SELECT 1 FROM paths p WHERE p.order_id = o.order_id)
    ),
    credit_rows AS (
      SELECT model, mode, ${d.day('counted')} AS day, platform, campaign, currency,
             round(sum(parts * total) / ${PARTS}, 6) AS rev, round(sum(parts) / ${PARTS}.0, 6) AS txns
        FROM credits WHERE parts > 0 AND ${inPeriod('counted')}
       GROUP BY model, mode, ${d.day('counted')}, platform, campaign, currency
      UNION ALL
      SELECT model, mode, ${d.day('purchased')}, 'unattributed', '', currency, round(sum(total), 6), count(*)
        FROM unattributed CROSS JOIN combinations
       GROUP BY model, mode, ${d.day('purchased')}, currency
    ),
    spend_rows AS (
      SELECT model, mode, day, platform, campaign, currency, spend
        FROM (SELECT ${d.day('period')} AS day, platform_name AS platform, campaign_id AS campaign, spend_currency AS currency, sum(spend) AS spend
                FROM spend_hourly s WHERE ${d.ofClient('s')} AND ${inPeriod('period')}
               GROUP BY ${d.day('period')}, platform_name, campaign_id, spend_currency) AS spent
       CROSS JOIN combinations
    )
    SELECT model, mode, day, platform, campaign, currency, sum(rev) AS rev, sum(txns) AS txns, sum(spend) AS spend
      FROM (SELECT model, mode, day, platform, campaign, currency, rev, txns, 0 AS spend FROM credit_rows
            UNION ALL
            SELECT model, mode, day, platform, campaign, currency, 0, 0, spend FROM spend_rows) AS both_sides
     GROUP BY model, mode, day, platform, campaign, currency`;
}

export interface ReferencePeriod {
  /** The first day, and the day after the last (UTC). */
  from: string;
  to: string;
  /** The window in days; null for the unlimited one. */
  windowDays: number | null;
}

const rowsOf = (rows: Record<string, unknown>[]): ReferenceRow[] =>
  rows.map((row) => ({
    model: String(row.model),
    mode: String(row.mode),
    day: String(row.day),
    platform: String(row.platform),
    campaign: String(row.campaign),
    currency: String(row.currency),
    rev: Number(row.rev),
    txns: Number(row.txns),
    spend: Number(row.spend),
  }));

/** The rows, and the seconds the statement took to compute them (into a table: reading them out is not timed, as it is the driver's work). */
export interface ReferenceResult {
  seconds: number;
  rows: ReferenceRow[];
}

/** The reference on PostgreSQL, over the client's rows of the service's own tables, on the connection `client`. */
export async function postgresReference(client: pg.Client, clientId: string, { from, to, windowDays }: ReferencePeriod): Promise<ReferenceResult> {
  const dialect: Dialect = {
    msBetween: (later, earlier) => float(`extract(epoch FROM ${later} - ${earlier}) * 1000`),
    daysBefore: (at, days) => `${at} - ${days} * interval '${DAY_MS} milliseconds'`,
    day: (at) => `to_char(${at} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    quotient: (dividend, divisor) => `${dividend} / ${divisor}`,
    byteOrder: (column) => `${column} COLLATE "C"`,
    from: `'${from}T00:00:00Z'::timestamptz`,
    to: `'${to}T00:00:00Z'::timestamptz`,
    ofClient: (alias) => `${alias}.client_id = $1 AND ${alias}.environment = 'production'`,
  };
  await client.query("SET work_mem = '256MB'");
  await client.query('DROP TABLE IF EXISTS reference_rows');
  const started = performance.now();
  await client.query(`CREATE TEMPORARY TABLE reference_rows AS ${referenceSql(dialect, windowDays)}`, [clientId]);
  const seconds = (performance.now() - started) / 1000;
  return { seconds, rows: rowsOf((await client.query('SELECT * FROM reference_rows')).rows) };
}

/** DuckDB over copies of the client's orders, touchpoints, identities and hourly spend, instants as microseconds. */
export interface DuckDbCopy {
  connection: DuckDBConnection;
  close(): void;
}

/** A timestamptz as the microseconds since the epoch it holds, exactly. */
const MICROSECONDS = (column: string) => `(extract(epoch FROM ${column}) * 1000000)::bigint`;

/** The client's rows copied from PostgreSQL into an in-memory DuckDB, through CSV files (its extensions cannot be downloaded here). */
export async function copyIntoDuckDb(connectionString: string, clientId: string, dir: string): Promise<DuckDbCopy> {
  if (!/^[0-9a-f-]{36}$/.test(clientId)) throw new Error(`Not a client id: ${clientId}`);
  const tables = {
    orders: {
      select: `SELECT order_id, customer_id, ${MICROSECONDS('time_of_purchase')} AS time_of_purchase, purchase_total, currency FROM orders`,
      columns: { order_id: 'VARCHAR', customer_id: 'VARCHAR', time_of_purchase: 'BIGINT', purchase_total: 'DECIMAL(38,10)', currency: 'VARCHAR' },
    },
    touchpoints: {
      select: `SELECT touchpoint_id, ${MICROSECONDS('occurred_at')} AS occurred_at, type, channel, platform_name, campaign_id, visitor_id, customer_id
                 FROM touchpoints`,
      columns: { touchpoint_id: 'VARCHAR', occurred_at: 'BIGINT', type: 'VARCHAR', channel: 'VARCHAR', platform_name: 'VARCHAR', campaign_id: 'VARCHAR', visitor_id: 'VARCHAR', customer_id: 'VARCHAR' },
    },
    spend_hourly: {
      select: `SELECT ${MICROSECONDS('period')} AS period, platform_name, campaign_id, spend, spend_currency FROM spend_hourly`,
      columns: { period: 'BIGINT', platform_name: 'VARCHAR', campaign_id: 'VARCHAR', spend: 'DECIMAL(38,10)', spend_currency: 'VARCHAR' },
    },
    identities: {
      select: `SELECT visitor_id, customer_id, order_id FROM identities`,
      columns: { visitor_id: 'VARCHAR', customer_id: 'VARCHAR', order_id: 'VARCHAR' },
    },
  };
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    for (const [table, { select }] of Object.entries(tables)) {
      const copy = client.query(copyTo(`COPY (${select} WHERE client_id = '${clientId}' AND environment = 'production') TO STDOUT WITH (FORMAT csv, HEADER)`));
      await pipeline(copy, fs.createWriteStream(path.join(dir, `${table}.csv`)));
    }
  } finally {
    await client.end();
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  for (const [table, { columns }] of Object.entries(tables)) {
    const types = `{${Object.entries(columns).map(([name, type]) => `'${name}': '${type}'`).join(', ')}}`;
    // PostgreSQL writes NULL unquoted and '' quoted: only the first is NULL.
    await connection.run(`CREATE TABLE ${table} AS SELECT * FROM read_csv('${path.join(dir, `${table}.csv`)}', header = true, columns = ${types}, allow_quoted_nulls = false)`);
  }
  return { connection, close: () => (connection.closeSync(), instance.closeSync()) };
}

/** The reference on DuckDB, over a copy. */
export async function duckDbReference({ connection }: DuckDbCopy, { from, to, windowDays }: ReferencePeriod): Promise<ReferenceResult> {
  const microseconds = (day: string) => Date.parse(`${day}T00:00:00Z`) * 1000;
  const dialect: Dialect = {
    msBetween: (later, earlier) => `${float(`${later} - ${earlier}`)} / ${float(1000)}`,
    daysBefore: (at, days) => `${at} - ${days * DAY_MS * 1000}`,
    day: (at) => `strftime(make_timestamp(${at}), '%Y-%m-%d')`,
    quotient: (dividend, divisor) => `${dividend} // ${divisor}`,
    byteOrder: (column) => column,
    from: String(microseconds(from)),
    to: String(microseconds(to)),
    ofClient: () => 'true',
  };
  await connection.run('DROP TABLE IF EXISTS reference_rows');
  const started = performance.now();
  await connection.run(`CREATE TABLE reference_rows AS ${referenceSql(dialect, windowDays)}`);
  const seconds = (performance.now() - started) / 1000;
  const result = await connection.runAndReadAll('SELECT * FROM reference_rows');
  return { seconds, rows: rowsOf(result.getRowObjectsJS() as Record<string, unknown>[]) };
}
