/**
 * Exports at scale: one client with BENCH_EXPORT_HOURS × 100 hourly spend records (default
 * 10,000 hours: 1,000,000 records from 1 January 2024) and BENCH_EXPORT_ORDERS orders (default
 * 1,000,000, over 2024), then three exports over the whole period, one at a time: time from
 * creation to SUCCESS, rows written, and the server's peak memory.
 *
 * The data is written straight into the store with SQL (ingestion has its own benchmarks): the
 * orders are 1,000 realistic ones from bench/generate.ts, repeated with new ids, customers and
 * times.
 *
 *   npm run bench:exports                      # both stores; PostgreSQL from DATABASE_URL
 */
import fs from 'node:fs';
import { openDatabase } from '../src/db/index.js';
import { insertOrders } from './seed.js';
import { benchEachStore, startServer, type Store } from './server.js';

const HOURS = Number(process.env.BENCH_EXPORT_HOURS ?? 10_000);
const ORDERS = Number(process.env.BENCH_EXPORT_ORDERS ?? 1_000_000);
const CUSTOMERS = 300_000;

const PERIOD = {
  period_type: 'FIXED',
  period_options: {
    period_starting_at: '2024-01-01T00:00:00Z',
    period_ending_at: new Date(Date.UTC(2024, 0, 1) + HOURS * 3_600_000).toISOString(),
  },
};
const ALL_METRICS = ['spend', 'impressions', 'clicks', 'ctr', 'cpc', 'cpm', 'revenue', 'transactions', 'aov', 'refunds', 'net_revenue',
  'new_customers', 'returning_customers', 'mer', 'blended_cac'];
const EXPORTS: [string, object][] = [
  ['ad level, HOURLY, ids', { ...PERIOD, level: 'ad', time_granularity: 'HOURLY', options: { include_ids: true }, metrics: [{ id: 'spend' }, { id: 'clicks' }, { id: 'cpc' }] }],
  ['DATE, DAILY, all metrics', { ...PERIOD, time_granularity: 'DAILY', options: { export_aggregation: 'DATE' }, metrics: ALL_METRICS.map((id) => ({ id })) }],
  ['aggregate_data, WEEKLY, kind', { ...PERIOD, time_granularity: 'WEEKLY', options: { aggregate_data: true, include_kind_and_platform: true }, metrics: ALL_METRICS.map((id) => ({ id })) }],
];

/** 100 ads on two platforms, every hour. */
const SPEND_SQL = `
  INSERT INTO spend_hourly (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id,
                            campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks, created_at, updated_at)
  SELECT $1, 'production', 'act_1', timestamptz '2024-01-01T00:00:00Z' + h * interval '1 hour', p.name, 'cmp-' || c, 'set-' || c, 'ad-' || c || '-' || a,
         'Campaign ' || c, 'Adset ' || c, 'Ad ' || a, ((h * 7 + c * 17 + a) % 5000) / 100.0, 'USD', 1000 + a, 10 + c, now(), now()
    FROM generate_series($2::int, $3::int - 1) AS h, (VALUES ('google'), ('meta')) AS p(name), generate_series(0, 4) AS c, generate_series(0, 9) AS a`;

async function load(store: Store, clientId: string) {
  const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL || undefined, dataDir: store.env.DATA_DIR ?? '', databasePoolSize: 2 });
  try {
    const started = performance.now();
    for (let h = 0; h < HOURS; h += 500) await db.query(SPEND_SQL, [clientId, h, Math.min(h + 500, HOURS)]);
    await db.query(`INSERT INTO ad_accounts VALUES ($1, 'production', 'google', 'act_1'), ($1, 'production', 'meta', 'act_1')`, [clientId]);
    await insertOrders(db, clientId, { count: ORDERS, customers: CUSTOMERS, from: new Date(Date.UTC(2024, 0, 1)), days: 366 });
    await db.exec('ANALYZE');
    console.log(`${store.name}: loaded ${(HOURS * 100).toLocaleString('en-US')} hourly spend records and ${ORDERS.toLocaleString('en-US')} orders in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await db.close();
  }
}

async function benchStore(store: Store): Promise<string[][]> {
  const exportsDir = fs.mkdtempSync('/tmp/tributary-bench-exports-');
  const env = { EXPORTS_DIR: exportsDir };
  try {
    // A first start creates the schema and the client; the data goes in while no server runs.
    const first = await startServer(store, env);
    await first.stop();
    await load(store, first.headers['data-client-id']!);
    const server = await startServer(store, env);
    const rows: string[][] = [];
    try {
      for (const [name, body] of EXPORTS) {
        const started = performance.now();
        const created = await fetch(`${server.url}/v1/exports/data-export`, { method: 'POST', headers: first.headers, body: JSON.stringify(body) });
        if (created.status !== 201) throw new Error(`${name}: ${created.status} ${await created.text()}`);
        const { id } = (await created.json()) as { id: string };
        let result: { status: string; result: string[]; warn: unknown };
        do {
          await new Promise((resolve) => setTimeout(resolve, 50));
          result = (await (await fetch(`${server.url}/v1/exports/data-export/result/${id}`, { headers: first.headers })).json()) as typeof result;
        } while (result.status === 'PENDING');
        const seconds = (performance.now() - started) / 1000;
        if (result.status !== 'SUCCESS') throw new Error(`${name}: ${JSON.stringify(result.warn)}`);
        let lines = 0;
        let bytes = 0;
        for (const file of fs.readdirSync(`${exportsDir}/${id}`)) {
          const text = fs.readFileSync(`${exportsDir}/${id}/${file}`, 'utf8');
          bytes += text.length;
          lines += text.split('\r\n').length - 2; // less the header and the empty last piece
        }
        rows.push([store.name, name, seconds.toFixed(1), lines.toLocaleString('en-US'), (bytes / 1e6).toFixed(0), String(server.peakRssMb() ?? '?')]);
        console.log(rows.at(-1)!.join('  '));
      }
    } finally {
      await server.stop();
    }
    return rows;
  } finally {
    fs.rmSync(exportsDir, { recursive: true, force: true });
    await store.drop();
  }
}

const header = ['store', 'export', 'to SUCCESS s', 'rows', 'MB', 'peak RSS MB'];
await benchEachStore(header, 2, benchStore);
