/** Data written straight into a store with set-based SQL, for the benchmarks that need a lot of it. */
import { openDatabase, type Database } from '../src/db/index.js';
import { deriveTouchpoint } from '../src/touchpoints/derive.js';
import { ADS_PER_CAMPAIGN, CAMPAIGN_COUNT, PAID_CAMPAIGNS, SOURCE_PLATFORMS, campaignPlatform, generateOrders, generateVisit, random } from './generate.js';
import type { Store } from './server.js';

const ORDER_TEMPLATES = 1000;
const CHUNK = 20_000;
/** Order n's customer is n × this, modulo the number of customers: a prime, so that it spreads them. */
export const ORDER_CUSTOMER_FACTOR = 7919;

/**
 * Order `n` of [0, count): template `n % 1000` again (1,000 realistic orders from
 * bench/generate.ts), with the id `order-<n>`, the customer `cust-<n × ORDER_CUSTOMER_FACTOR mod customers>` and a
 * time `n / count` of the way through `days` days from `from`.
 */
const ORDERS_SQL = `
  INSERT INTO orders (client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)
  SELECT $1, 'production', o.id, o.at,
         t.body || jsonb_build_object('order_id', o.id, 'customer_id', o.customer, 'time_of_purchase', utc_iso(o.at)), now(), now()
    FROM generate_series($3::int, $4::int - 1) AS n
    JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(body, i) ON t.i = n % ${ORDER_TEMPLATES} + 1
   CROSS JOIN LATERAL (SELECT 'order-' || n AS id, 'cust-' || (n::bigint * ${ORDER_CUSTOMER_FACTOR} % $5) AS customer,
                              $6::timestamptz + n * ($7::int * interval '1 day' / $8::int) AS at) AS o`;

/** Inserts `count` orders of one client (see ORDERS_SQL), 20,000 a statement. */
export async function insertOrders(db: Database, clientId: string, { count, customers, from, days }: { count: number; customers: number; from: Date; days: number }) {
  const templates = JSON.stringify(generateOrders(7, 'template', ORDER_TEMPLATES).map(({ alternate_order_ids: _, ...order }) => order));
  for (let n = 0; n < count; n += CHUNK) {
    await db.query(ORDERS_SQL, [clientId, templates, n, Math.min(n + CHUNK, count), customers, from.toISOString(), days, count]);
  }
}

export const DAY_MS = 86_400_000;
/** Today's start in UTC, the benchmark client's zone. */
export const TODAY = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);

/**
 * The attribution benchmarks' data sets: ORDERS orders over the 366 days before today (UTC),
 * VISITS visits and VIEWS ad views, spend of the paid campaigns every 6 hours, of customers and
 * visitors in the proportions of a profile (DATA_PROFILES). Smaller with BENCH_ATTRIBUTION_ORDERS
 * and BENCH_ATTRIBUTION_VISITS.
 */
export const ORDERS = Number(process.env.BENCH_ATTRIBUTION_ORDERS ?? 1_000_000);
export const VISITS = Number(process.env.BENCH_ATTRIBUTION_VISITS ?? 5_000_000);
export const VIEWS = VISITS / 10;

/**
 * Who the orders and touchpoints are of. Visitors 0 to `linkedVisitors` − 1 are linked to customer
 * `v mod customers` (nine in ten directly, one in ten through one of its orders), and one in ten
 * of their touchpoints is sent with that customer, as a logged-in shopper's; the next
 * `knownVisitors` send every touchpoint with their customer and are not linked; the rest are
 * anonymous.
 */
export interface DataProfile {
  customers: number;
  visitors: number;
  linkedVisitors: number;
  knownVisitors: number;
}

/**
 * The profiles of bench/engine.ts at 1,000,000 orders and 5,000,000 visits, scaled with VISITS:
 * the attribution benchmark's own (`benchmark`); anonymous visitors, a fifth known and half the
 * rest linked (`anonymous`); about 200 touchpoints a customer (`deep`); few customers of a hundred
 * orders each (`loyal`).
 */
export const DATA_PROFILES = {
  benchmark: { customers: 150_000, visitors: 200_000, linkedVisitors: 180_000, knownVisitors: 0 },
  anonymous: { customers: 150_000, visitors: 1_000_000, linkedVisitors: 400_000, knownVisitors: 200_000 },
  deep: { customers: 25_000, visitors: 50_000, linkedVisitors: 50_000, knownVisitors: 0 },
  loyal: { customers: 10_000, visitors: 20_000, linkedVisitors: 20_000, knownVisitors: 0 },
} as const satisfies Record<string, DataProfile>;
export type DataProfileName = keyof typeof DATA_PROFILES;

/** `profile` at the scale of VISITS. */
export function scaledProfile(profile: DataProfile): DataProfile {
  const scale = VISITS / 5_000_000;
  return Object.fromEntries(Object.entries(profile).map(([key, count]) => [key, Math.round(count * scale)])) as unknown as DataProfile;
}

/** The attribution benchmark's data set (bench/attribution.ts): 150,000 customers and 200,000 visitors whatever the scale. */
export const BENCHMARK_DATA: DataProfile = DATA_PROFILES.benchmark;
export const VISITORS = BENCHMARK_DATA.visitors;
/** The data set's year ends today: the dashboard's last 30 days, and the days the keeper keeps ahead, are its last. */
const YEAR = { from: new Date(TODAY - 366 * DAY_MS), days: 366 };
const SPEND_EVERY_HOURS = 6;
const TOUCHPOINT_TEMPLATES = 4000;
/** Seconds since `since`, a performance.now() reading. */
export const seconds = (since: number) => (performance.now() - since) / 1000;
export const thousands = (n: number) => Math.round(n).toLocaleString('en-US');

/** A uniform value in [0, modulo) from `expression` (a bigint), a different one for each seed. */
const hashed = (expression: string, seed: number, modulo: number | string) => `((hashint8extended(${expression}, ${seed}) & 9223372036854775807) % ${modulo})`;

/** Spend of the Google and Meta campaigns (not TikTok's: clicks without spend), a record every 6 hours, quarter-days [$2, $3). */
const SPEND_SQL = `
  INSERT INTO spend_hourly (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id,
                            campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks, created_at, updated_at)
  SELECT $1, 'production', 'act_1', $4::timestamptz + q * interval '${SPEND_EVERY_HOURS} hours',
         CASE WHEN c < ${PAID_CAMPAIGNS.google} THEN 'google' ELSE 'meta' END, 'cmp-' || c, 'set-' || c, 'ad-' || c || '-' || a,
         'Campaign ' || c, 'Adset ' || c, 'Ad ' || a, ((q * 7 + c * 17 + a) % 5000) / 100.0, 'USD', 1000 + a * 10 + c, 10 + (q + c) % 40, now(), now()
    FROM generate_series($2::int, $3::int - 1) AS q, generate_series(0, ${PAID_CAMPAIGNS.google + PAID_CAMPAIGNS.meta - 1}) AS c,
         generate_series(0, ${ADS_PER_CAMPAIGN - 1}) AS a`;

/** Visitor v's link: nine in ten to customer v mod customers directly, one in ten through one of that customer's orders. */
const identitiesSql = ({ customers, linkedVisitors }: DataProfile) => `
  INSERT INTO identities (client_id, environment, visitor_id, customer_id, order_id, linked_at)
  SELECT $1, 'production', 'visitor-' || v,
         CASE WHEN v % 10 <> 9 THEN 'cust-' || v % ${customers} END,
         CASE WHEN v % 10 = 9 THEN 'order-' || (v % ${customers})::bigint * $2 % ${customers} END, now()
    FROM generate_series(0, ${linkedVisitors - 1}) AS v`;

const TEXT_COLUMNS = ['landing_url', 'referrer', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content', 'platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id', 'channel'];

/**
 * Touchpoints n in [$3, $4) of `count` of one type, `<prefix>-<n>`: at a time n / count of the way
 * through the year, so that they are stored in time order as touchpoints sent as they happen are;
 * of a visitor hashed from n, with template (derived columns) number hash(n) of $2, whose click id
 * `__CLICK__` becomes one of its own; with its customer as `profile` says.
 */
const touchpointsSql = (type: 'visit' | 'view', prefix: string, templates: number, count: number, { customers, visitors, linkedVisitors, knownVisitors }: DataProfile) => {
  const visitor = hashed('n', 4, visitors);
  return `
  INSERT INTO touchpoints (client_id, environment, touchpoint_id, occurred_at, type, visitor_id, customer_id, click_ids, ${TEXT_COLUMNS.join(', ')}, created_at, updated_at)
  SELECT $1, 'production', '${prefix}-' || n, $5::timestamptz + n * (${YEAR.days * 86_400}::float8 / ${count}) * interval '1 second', '${type}',
         'visitor-' || ${visitor},
         CASE WHEN ${visitor} < ${linkedVisitors} AND ${hashed('n', 2, 10)} = 0 OR ${visitor} >= ${linkedVisitors} AND ${visitor} < ${linkedVisitors + knownVisitors}
              THEN 'cust-' || ${visitor} % ${customers} END,
         replace(t.click_ids::text, '__CLICK__', 'ck' || n)::jsonb,
         ${TEXT_COLUMNS.map((column) => (column === 'landing_url' ? `replace(t.landing_url, '__CLICK__', 'ck' || n)` : `t.${column}`)).join(', ')}, now(), now()
    FROM generate_series($3::bigint, $4::bigint - 1) AS n
    JOIN jsonb_to_recordset($2::jsonb) AS t(i int, click_ids jsonb, ${TEXT_COLUMNS.map((column) => `${column} text`).join(', ')})
      ON t.i = ${hashed('n', 3, templates)}`;
};

/** Derived columns of touchpoint templates, numbered from 0 in `i`. */
const derivedTemplates = (inputs: Record<string, unknown>[]) =>
  JSON.stringify(
    inputs.map((input, i) => {
      const derived = deriveTouchpoint({ touchpoint_id: 't', occurred_at: '2024-01-01T00:00:00Z', visitor_id: 'v', ...input }, SOURCE_PLATFORMS);
      if (Array.isArray(derived)) throw new Error(`template ${i}: ${JSON.stringify(derived)}`);
      return { i, ...derived };
    }),
  );

/** `run` over [0, count) in pieces of `chunk`, one after another. */
async function inChunks(count: number, chunk: number, run: (from: number, to: number) => Promise<unknown>) {
  for (let n = 0; n < count; n += chunk) await run(n, Math.min(n + chunk, count));
}

/** The multiplicative inverse of `a` modulo `m`: order (c × it mod m) is one of customer c's. */
function inverse(a: number, m: number): number {
  let [t, newT, r, newR] = [0n, 1n, BigInt(m), BigInt(a)];
  while (newR !== 0n) {
    const q = r / newR;
    [t, newT, r, newR] = [newT, t - q * newT, newR, r - q * newR];
  }
  return Number(((t % BigInt(m)) + BigInt(m)) % BigInt(m));
}

/**
 * A data set of `profile`, written into the PostgreSQL store `store` for client `clientId` with
 * set-based SQL while no server runs. Nothing is vacuumed or analyzed: the store is as a shop's
 * is right after a load. Answers the seconds it took.
 */
export async function loadDataSet(store: Store, clientId: string, profile: DataProfile = BENCHMARK_DATA): Promise<number> {
  const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL, dataDir: '', databasePoolSize: 2, databaseQueryTimeoutMs: 3_600_000 });
  const started = performance.now();
  const step = async (what: string, work: () => Promise<unknown>) => {
    const since = performance.now();
    await work();
    console.log(`  ${what}: ${seconds(since).toFixed(1)} s`);
  };
  try {
    await db.query('UPDATE clients SET source_platforms = $2 WHERE client_id = $1', [clientId, JSON.stringify(SOURCE_PLATFORMS)]);
    const quarterDays = (YEAR.days * 24) / SPEND_EVERY_HOURS;
    await step(`${thousands(quarterDays * (PAID_CAMPAIGNS.google + PAID_CAMPAIGNS.meta) * ADS_PER_CAMPAIGN)} spend records`, async () => {
      await inChunks(quarterDays, 200, (from, to) => db.query(SPEND_SQL, [clientId, from, to, YEAR.from.toISOString()]));
      await db.query(`INSERT INTO ad_accounts VALUES ($1, 'production', 'google', 'act_1'), ($1, 'production', 'meta', 'act_1')`, [clientId]);
    });
    await step(`${thousands(ORDERS)} orders`, () => insertOrders(db, clientId, { count: ORDERS, customers: profile.customers, ...YEAR }));
    await step(`${thousands(profile.linkedVisitors)} identities`, () => db.query(identitiesSql(profile), [clientId, inverse(ORDER_CUSTOMER_FACTOR, profile.customers)]));
    const rand = random(11);
    const visits = derivedTemplates(Array.from({ length: TOUCHPOINT_TEMPLATES }, () => generateVisit(rand, '__CLICK__')));
    await step(`${thousands(VISITS)} visits`, () =>
      inChunks(VISITS, 250_000, (from, to) => db.query(touchpointsSql('visit', 'visit', TOUCHPOINT_TEMPLATES, VISITS, profile), [clientId, visits, from, to, YEAR.from.toISOString()])),
    );
    const ads = Array.from({ length: CAMPAIGN_COUNT * ADS_PER_CAMPAIGN }, (_, n) => {
      const c = Math.floor(n / ADS_PER_CAMPAIGN);
      return { type: 'view', platform_name: campaignPlatform(c), campaign_id: `cmp-${c}`, adset_id: `set-${c}`, ad_id: `ad-${c}-${n % ADS_PER_CAMPAIGN}` };
    });
    const views = derivedTemplates(ads);
    await step(`${thousands(VIEWS)} views`, () =>
      inChunks(VIEWS, 250_000, (from, to) => db.query(touchpointsSql('view', 'view', ads.length, VIEWS, profile), [clientId, views, from, to, YEAR.from.toISOString()])),
    );
    return seconds(started);
  } finally {
    await db.close();
  }
}
