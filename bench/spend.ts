/**
 * Hourly spend at scale: loads BENCH_SPEND_RECORDS (default 1,000,000) hourly records for one
 * client over HTTP, in batches of 1,000 from 4 connections, then times list queries: one day
 * (2,400 records, first page) and the last page of a 30-day range (page 72 of 72, 72,000 records),
 * 200 of each, one at a time.
 *
 *   npm run bench:spend                      # both stores; PostgreSQL from DATABASE_URL
 *   CITUS_URL=postgres://…@coordinator/db npm run bench:spend   # also on a Citus coordinator
 */
import pg from 'pg';
import { poster } from './load.js';
import { benchEachStore, startServer, type RunningServer, type Store } from './server.js';

const RECORDS = Number(process.env.BENCH_SPEND_RECORDS ?? 1_000_000);
const CONNECTIONS = 4;
const QUERIES = 200;

const PLATFORMS = ['google', 'meta'];
const CAMPAIGNS = 5;
const ADS = 10;
const PER_HOUR = PLATFORMS.length * CAMPAIGNS * ADS; // 100
const HOURS_PER_BATCH = 1000 / PER_HOUR;
const FIRST_HOUR = Date.UTC(2024, 0, 1);

/** Batch `n`: every ad of hours [n * 10, n * 10 + 10). */
function batch(n: number): string {
  const data = [];
  for (let h = 0; h < HOURS_PER_BATCH; h++) {
    const hour = new Date(FIRST_HOUR + (n * HOURS_PER_BATCH + h) * 3_600_000).toISOString();
    for (const platform_name of PLATFORMS) {
      for (let c = 0; c < CAMPAIGNS; c++) {
        for (let a = 0; a < ADS; a++) {
          data.push({
            hour_start_iso: hour,
            platform_account_id: 'act_1',
            platform_name,
            campaign_id: `cmp-${c}`,
            campaign_name: `Campaign ${c}`,
            adset_id: `set-${c}`,
            adset_name: `Adset ${c}`,
            ad_id: `ad-${c}-${a}`,
            ad_name: `Ad ${a}`,
            spend: ((n * 7 + h * 13 + c * 17 + a) % 5000) / 100,
            spend_currency: 'USD',
            impressions: 1000 + a,
            clicks: 10 + c,
          });
        }
      }
    }
  }
  return JSON.stringify({ data });
}

async function load(server: RunningServer): Promise<number> {
  const batches = Math.ceil(RECORDS / 1000);
  let next = 0;
  const started = performance.now();
  const post = poster(`${server.url}/v1/spend_hourly`, server.headers, 201);
  const connection = async () => {
    for (let n = next++; n < batches; n = next++) await post(batch(n));
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  return (batches * 1000) / ((performance.now() - started) / 1000);
}

async function latencies(server: RunningServer, query: string, expectCount: number): Promise<[number, number]> {
  const times: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/spend_hourly?${query}`, { headers: server.headers });
    const body = (await response.json()) as { data: unknown[] };
    times.push(performance.now() - started);
    if (response.status !== 200 || body.data.length !== expectCount) {
      throw new Error(`${query}: ${response.status}, ${body.data?.length} records, expected ${expectCount}`);
    }
  }
  times.sort((a, b) => a - b);
  return [times[Math.floor(QUERIES / 2)]!, times[Math.floor(QUERIES * 0.99)]!];
}

// The queries look at the middle of the loaded hours: one day, and 30 days around it.
const DAY_MS = 86_400_000;
const middleDay = FIRST_HOUR + Math.floor(RECORDS / PER_HOUR / 24 / 2) * DAY_MS;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const ONE_DAY = `platform_account_id=act_1&date=${day(middleDay)}&page_size=1000`;
const DEEP_PAGE =
  `platform_account_id=act_1&hour_start_iso_begin=${day(middleDay - 15 * DAY_MS)}T00:00:00Z` +
  `&hour_start_iso_end=${day(middleDay + 14 * DAY_MS)}T23:00:00Z&page=${(30 * 24 * PER_HOUR) / 1000}&page_size=1000`;
if (RECORDS < 30 * 24 * PER_HOUR) throw new Error(`BENCH_SPEND_RECORDS must be at least ${30 * 24 * PER_HOUR} (30 days)`);

async function queryLatencies(server: RunningServer): Promise<string[]> {
  const [dayP50, dayP99] = await latencies(server, ONE_DAY, 1000);
  const [deepP50, deepP99] = await latencies(server, DEEP_PAGE, 1000);
  return [dayP50.toFixed(1), dayP99.toFixed(1), deepP50.toFixed(1), deepP99.toFixed(1)];
}

async function benchStore(store: Store): Promise<string[][]> {
  const server = await startServer(store);
  try {
    const rate = Math.round(await load(server)).toLocaleString('en-US');
    const rows = [[`${store.name}, just loaded`, rate, ...(await queryLatencies(server))]];
    if (store.name !== 'pglite') {
      // What autovacuum does to a long-lived table, done now: statistics and the visibility map.
      const client = new pg.Client({ connectionString: store.env.DATABASE_URL });
      await client.connect();
      await client.query('VACUUM ANALYZE spend_hourly');
      await client.end();
      rows.push([`${store.name}, vacuumed`, '', ...(await queryLatencies(server))]);
    }
    return rows.map((row) => [...row, String(server.peakRssMb() ?? '?')]);
  } finally {
    await server.stop();
    await store.drop();
  }
}

const header = ['store', 'load records/s', 'day p50 ms', 'day p99 ms', 'deep page p50 ms', 'deep page p99 ms', 'peak RSS MB'];
console.log(`hourly spend: ${RECORDS.toLocaleString('en-US')} records of one client loaded in batches of 1,000 from ${CONNECTIONS} connections, then ${QUERIES} list queries of each kind`);
await benchEachStore(header, 1, benchStore);
