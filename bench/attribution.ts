/**
 * Attribution at scale, on PostgreSQL only, DATABASE_URL's and CITUS_URL's when it is set (the
 * embedded store is not run: a data set of this size is beyond what it is for, see docs/benchmarks.md):
 *
 * 1. touchpoint ingestion over HTTP: batches of 1,000 realistic visits to POST /v1/touchpoints
 *    from several connections for BENCH_SECONDS (15), then, with the server stopped and the
 *    table emptied again, its data-layer ceiling: the same batches, derived as the route derives
 *    them, through the repository's upsert from this process;
 * 2. on a new database, the data set written with set-based SQL while no server runs:
 *    1,000,000 orders over the 366 days before today (UTC) of 150,000 customers, 5,000,000 visits and 500,000 ad views of
 *    200,000 visitors (180,000 of them linked to a customer: nine in ten directly, one in ten
 *    through an order), 320 paid campaigns of which 300 have spend (two ads each, a record every
 *    6 hours), every touchpoint's derived columns computed by src/touchpoints/derive.ts;
 * 3. the explanation of one order, GET /v2/orders/{id}/attribution, for random orders;
 * 4. exports with attribution_options: 30 days and the whole year, campaign level, DAILY, three
 *    models, one window, both accounting modes; the dashboard's shape (one model, window and
 *    mode, 30 days) as an export and as the bare statement of the row builder, in a transaction
 *    with the export's settings, and as GET /v1/reports/performance (the page's request, from
 *    kept daily totals: once the server's keeper has kept the last 90 days ahead, the first
 *    request, the next ones, another model, another window, after live and late writes); the
 *    server's peak memory.
 *
 * A part whose endpoint or option does not exist yet is reported "not available", with the answer.
 *
 *   npm run bench:attribution                 # PostgreSQL from DATABASE_URL
 *   BENCH_ATTRIBUTION_ORDERS=100000 BENCH_ATTRIBUTION_VISITS=500000 npm run bench:attribution
 *   BENCH_ATTRIBUTION_INGESTION_ONLY=1 npm run bench:attribution   # part 1 alone
 */
import fs from 'node:fs';
import pg from 'pg';
import { Value } from 'typebox/value';
import type { Tenant } from '../src/auth/tenant.js';
import { openDatabase } from '../src/db/index.js';
import { planExport, planRowsSql } from '../src/exports/plan.js';
import { ROWS_TRANSACTION_SETTINGS } from '../src/attribution/rows.js';
import { ExportRequest } from '../src/exports/schema.js';
import { deriveTouchpoint, type TouchpointInput } from '../src/touchpoints/derive.js';
import { createTouchpointRepository } from '../src/touchpoints/repository.js';
import { generateTouchpoints, generateVisit, random } from './generate.js';
import { BATCH_SIZE, CONNECTIONS, batchesWithIds, poster, runPhase, type PhaseResult } from './load.js';
import { DAY_MS, ORDERS, TODAY, VIEWS, VISITORS, VISITS, loadDataSet, seconds, thousands } from './seed.js';
import { anotherStore, benchEachStore, exportOutcome, postgresCpuSeconds, startServer, type RunningServer, type Store } from './server.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const INGESTION_ONLY = Boolean(process.env.BENCH_ATTRIBUTION_INGESTION_ONLY);
const EXPLAINED_ORDERS = 300;
const REPORT_RUNS = 3;
/** The local day `offset` days from today (UTC, the benchmark client's zone). */
const dayOf = (offset: number) => new Date(TODAY + offset * DAY_MS).toISOString().slice(0, 10);
const MODELS = ['first_touch', 'last_touch', 'last_touch_non_direct', 'linear', 'position_based', 'time_decay', 'clicks_only', 'clicks_and_views'];
const WINDOWS = ['1', '3', '7', '14', '30', '60', '90'];

const tenantOf = (server: RunningServer): Tenant => ({ clientId: server.headers['data-client-id']!, environment: 'production', dryRun: false });

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** `work` with a connection of its own to the store's database, closed after. */
async function withClient<T>(store: Store, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: store.env.DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A row of the table: part, value, unit, p50, p99, target. */
type Row = [string, string, string, string, string, string];
const unavailable = (part: string, why: string, target: string): Row => {
  console.log(`${part}: not available (${why})`);
  return [part, 'n/a', 'not available', '', '', target];
};

// 1. Ingestion ------------------------------------------------------------------------------

const touchpointTemplates = Array.from({ length: 8 }, (_, t) => generateTouchpoints(100 + t, `__RUN__-${t}`, BATCH_SIZE, VISITORS));
const touchpointBodies = touchpointTemplates.map((data) => JSON.stringify({ data }));
/** The same batches as the route stores them (no source mapping: the bench's client has none). */
const derivedBodies = touchpointTemplates.map((data) => JSON.stringify(data.map((input) => deriveTouchpoint(input as TouchpointInput, {}))));

const ingestionRow = (part: string, result: PhaseResult, target: string): Row => [
  part,
  thousands((result.batches * BATCH_SIZE) / result.seconds),
  'touchpoints/s',
  percentile(result.latencies, 50).toFixed(0),
  percentile(result.latencies, 99).toFixed(0),
  target,
];

/** `phase` run, with the CPU time per touchpoint of the server (when there is one), of PostgreSQL (when it runs on this machine) and of this process. */
async function measuredPhase(name: string, phase: () => Promise<PhaseResult>, server?: RunningServer): Promise<PhaseResult> {
  const before = { server: server?.cpuSeconds() ?? 0, postgres: postgresCpuSeconds(), bench: process.cpuUsage() };
  const result = await phase();
  const touchpoints = result.batches * BATCH_SIZE;
  const perTouchpoint = (seconds: number) => `${((seconds * 1e6) / touchpoints).toFixed(1)} µs`;
  const bench = process.cpuUsage(before.bench);
  console.log(
    `ingestion, ${name}: CPU a touchpoint: ${server ? `server ${perTouchpoint(server.cpuSeconds() - before.server)}, ` : ''}` +
      `PostgreSQL ${perTouchpoint(postgresCpuSeconds() - before.postgres)}, this process ${perTouchpoint((bench.user + bench.system) / 1e6)}`,
  );
  return result;
}

async function ingestion(store: Store): Promise<Row[]> {
  const server = await startServer(store);
  let http: PhaseResult;
  try {
    const post = poster(`${server.url}/v1/touchpoints`, server.headers, 201);
    http = await measuredPhase('HTTP', () => runPhase(post, batchesWithIds('h', touchpointBodies), SECONDS), server);
    console.log(`ingestion: server peak RSS ${server.peakRssMb() ?? '?'} MB`);
  } finally {
    await server.stop();
  }
  // The ceiling is measured from the table the HTTP phase started from: an empty one.
  await withClient(store, (client) => client.query('TRUNCATE touchpoints'));
  const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL, dataDir: '', databasePoolSize: CONNECTIONS });
  try {
    const touchpoints = createTouchpointRepository(db);
    const tenant = tenantOf(server);
    const upsert = async (body: string) => void (await touchpoints.upsert(tenant, JSON.parse(body), new Date()));
    const direct = await measuredPhase('data layer', () => runPhase(upsert, batchesWithIds('d', derivedBodies), SECONDS));
    const share = Math.round((100 * http.batches) / http.seconds / (direct.batches / direct.seconds));
    console.log(`ingestion: HTTP is ${share}% of the data layer; ${(Buffer.byteLength(touchpointBodies[0]!) / BATCH_SIZE).toFixed(0)} bytes a touchpoint`);
    return [ingestionRow('touchpoints over HTTP', http, '≥ 50,000/s'), ingestionRow('touchpoints, data layer (ceiling)', direct, '')];
  } finally {
    await db.close();
  }
}

// 3. The explanation of one order ------------------------------------------------------------

async function explanations(server: RunningServer, choose: (rand: () => number) => [string, string], part: string): Promise<Row> {
  const rand = random(5);
  const times: number[] = [];
  let touchpoints = 0;
  for (let n = 0; n < EXPLAINED_ORDERS; n++) {
    const orderId = `order-${Math.floor(rand() * ORDERS)}`;
    const [model, window] = choose(rand);
    const started = performance.now();
    const response = await fetch(`${server.url}/v2/orders/${orderId}/attribution?model=${model}&window=${window}`, { headers: server.headers });
    const text = await response.text();
    times.push(performance.now() - started);
    // Every order asked for exists: any other answer means the endpoint does not (yet).
    if (response.status !== 200) return unavailable(part, `${response.status} ${text.slice(0, 200)}`, 'p99 < 50 ms');
    touchpoints += (JSON.parse(text) as { touchpoints: unknown[] }).touchpoints.length;
  }
  console.log(`${part}: ${(touchpoints / EXPLAINED_ORDERS).toFixed(1)} touchpoints a path on average`);
  return [part, String(EXPLAINED_ORDERS), 'orders', percentile(times, 50).toFixed(1), percentile(times, 99).toFixed(1), 'p99 < 50 ms'];
}

// 4. Exports --------------------------------------------------------------------------------

const fixed = (from: string, to: string) => ({ period_type: 'FIXED', period_options: { period_starting_at: `${from}T00:00:00Z`, period_ending_at: `${to}T00:00:00Z` } });
/** The last 30 days, which end yesterday, as the dashboard's do. */
const DAYS_30 = fixed(dayOf(-30), dayOf(0));
const WHOLE_YEAR = fixed(dayOf(-366), dayOf(0));
const attributedExport = (period: object, models: string[], modes: string[]) => ({
  ...period,
  level: 'campaign',
  time_granularity: 'DAILY',
  attribution_options: { attribution_models: models, attribution_windows: ['30'], accounting_modes: modes },
  metrics: ['spend', 'rev', 'txns', 'roas', 'cac', 'visits'].map((id) => ({ id })),
});
const THREE_MODELS = ['first_touch', 'linear', 'time_decay'];
const BOTH_MODES = ['cash', 'accrual'];
const DASHBOARD = attributedExport(DAYS_30, ['linear'], ['cash']);

async function runExport(server: RunningServer, exportsDir: string, part: string, body: object, target: string): Promise<Row> {
  const started = performance.now();
  const created = await fetch(`${server.url}/v1/exports/data-export`, { method: 'POST', headers: server.headers, body: JSON.stringify(body) });
  if (created.status !== 201) return unavailable(part, `${created.status} ${(await created.text()).slice(0, 300)}`, target);
  const { id } = (await created.json()) as { id: string };
  const result = await exportOutcome(server, id, 50);
  const took = seconds(started);
  if (result.status !== 'SUCCESS') return unavailable(part, `${result.status} ${JSON.stringify(result.warn)}`, target);
  let lines = 0;
  for (const file of fs.readdirSync(`${exportsDir}/${id}`)) lines += fs.readFileSync(`${exportsDir}/${id}/${file}`, 'utf8').split('\r\n').length - 2;
  console.log(`${part}: ${took.toFixed(1)} s to SUCCESS, ${thousands(lines)} rows`);
  return [part, took.toFixed(1), 's to SUCCESS', '', '', target];
}

/** The dashboard's rows: the row builder's statement of its plan, run from this process and read to the end. */
async function bareDashboardSql(store: Store, tenant: Tenant): Promise<Row> {
  const part = 'dashboard: bare SQL, 30 days';
  // planExport takes a request its schema has validated, as the route does first.
  const invalid = [...Value.Errors(ExportRequest, DASHBOARD)].map((error) => `${error.instancePath} ${error.message}`);
  if (invalid.length > 0) return unavailable(part, `the request is invalid: ${invalid.join('; ').slice(0, 300)}`, '< 2 s');
  const planned = planExport(DASHBOARD as ExportRequest, 'UTC', new Date());
  if ('problems' in planned) return unavailable(part, `the plan's problems: ${JSON.stringify(planned.problems).slice(0, 300)}`, '< 2 s');
  const { sql, params } = planRowsSql(tenant, planned.plan);
  return withClient(store, async (client) => {
    const started = performance.now();
    await client.query('BEGIN');
    for (const setting of ROWS_TRANSACTION_SETTINGS) await client.query(setting);
    const { rowCount } = await client.query(sql, params);
    await client.query('COMMIT');
    const took = seconds(started).toFixed(2);
    console.log(`${part}: ${took} s, ${thousands(rowCount ?? 0)} rows`);
    return [part, took, 's', '', '', '< 2 s'];
  });
}

/**
 * The dashboard's request: DASHBOARD's options as GET /v1/reports/performance, which reads kept
 * daily totals (src/exports/daily-totals.ts). Timed, once the server's keeper (src/exports/keeper.ts)
 * has kept the dashboard's window and mode ahead: the first request; the median of a few more;
 * another model (kept ahead too); another window, whose 30 days the request computes and keeps;
 * accrual mode (kept ahead too); one after a batch of live touchpoints and an order (now, after the
 * period: no cash day changes, and accrual days are kept without today's orders), in both modes; one right after
 * a late touchpoint in the middle of the period, of an anonymous visitor (the visits of its day are
 * computed again), then one of a customer who ordered 8 days ago (the credits from that order on, too);
 * one after another, once the keeper has computed them again in the background; another model
 * then (the report before took the first change: the keeper computes the days it made stale).
 */
async function dashboardReports(server: RunningServer, store: Store): Promise<Row[]> {
  const part = 'dashboard: GET /v1/reports/performance, 30 days';
  const query = (options: Record<string, string>) =>
    new URLSearchParams({
      start_date: dayOf(-30),
      end_date: dayOf(-1),
      level: 'campaign',
      granularity: 'DAILY',
      metrics: DASHBOARD.metrics.map((metric) => metric.id).join(','),
      model: 'linear',
      window: '30',
      mode: 'cash',
      ...options,
    });
  const timed = async (options: Record<string, string>): Promise<{ took: number; rows: number } | { failed: string }> => {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/reports/performance?${query(options)}`, { headers: server.headers });
    const text = await response.text();
    if (response.status !== 200) return { failed: `${response.status} ${text.slice(0, 300)}` };
    return { took: seconds(started), rows: (JSON.parse(text) as { rows: unknown[] }).rows.length };
  };
  const postTouchpoints = async (touchpoints: object[]) => {
    const response = await fetch(`${server.url}/v1/touchpoints`, {
      method: 'POST',
      headers: { ...server.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ data: touchpoints }),
    });
    if (response.status !== 201) throw new Error(`touchpoints: ${response.status} ${await response.text()}`);
  };
  const rows: Row[] = [];
  const measured = async (name: string, runs = 1, options: Record<string, string> = {}) => {
    const times: number[] = [];
    for (let n = 0; n < runs; n++) {
      const result = await timed(options);
      if ('failed' in result) return void rows.push(unavailable(`${part}, ${name}`, result.failed, '< 2 s'));
      times.push(result.took);
      if (n === runs - 1) console.log(`${part}, ${name}: ${times.map((time) => time.toFixed(2)).join(', ')} s, ${thousands(result.rows)} rows`);
    }
    rows.push([`${part}, ${name}`, percentile(times, 50).toFixed(2), runs > 1 ? 's (median)' : 's', '', '', '< 2 s']);
  };
  await measured('first (days kept ahead)');
  await measured('again', REPORT_RUNS);
  await measured('another model (kept ahead)', 1, { model: 'time_decay' });
  await measured('another window (computes its days)', 1, { window: '14' });
  await measured('accrual (kept ahead)', 1, { mode: 'accrual' });
  const rand = random(7);
  const visit = (id: string, at: Date) => ({
    touchpoint_id: `bench-live-${id}`,
    occurred_at: at.toISOString(),
    visitor_id: `bench-live-visitor-${id}`,
    ...generateVisit(rand, `bench-live-click-${id}`),
  });
  await postTouchpoints(Array.from({ length: 1000 }, (_, n) => visit(String(n), new Date())));
  const liveOrder = { order_id: 'bench-live-order', customer_id: 'cust-1', time_of_purchase: new Date().toISOString(), currency: 'USD', purchase_total: 50, tax: 0, shipping_cost: 0 };
  const ordered = await fetch(`${server.url}/v2/orders`, { method: 'POST', headers: server.headers, body: JSON.stringify([{ ...liveOrder, products: [{ id: 'p', name: 'P', quantity: 1, price: 50 }] }]) });
  if (ordered.status >= 300) throw new Error(`order: ${ordered.status} ${await ordered.text()}`);
  await measured('after 1,000 live touchpoints and an order');
  await measured('accrual, after them', 1, { mode: 'accrual' });
  await postTouchpoints([visit('late', new Date(TODAY - 15 * DAY_MS + 12 * 3_600_000))]);
  await measured("after an anonymous visitor's touchpoint 15 days ago");
  const customer = await firstCustomerOrderingFrom(store, server.headers['data-client-id']!, new Date(TODAY - 8 * DAY_MS));
  await postTouchpoints([{ ...visit('late-customer', new Date(TODAY - 15 * DAY_MS + 12 * 3_600_000)), customer_id: customer }]);
  await measured("after a touchpoint 15 days ago of a customer who ordered 8 days ago");
  await postTouchpoints([visit('late-kept', new Date(TODAY - 15 * DAY_MS + 13 * 3_600_000))]);
  const waited = await keeperDone(store, server.headers['data-client-id']!);
  console.log(`${part}: the keeper brought the days up to date ${waited.toFixed(1)} s after the touchpoint`);
  await measured('after another 15 days ago, once the keeper has run');
  await measured('another model, once the keeper has run', 1, { model: 'time_decay' });
  return rows;
}

/** The customer of the client's first order placed from `from` on. */
const firstCustomerOrderingFrom = (store: Store, clientId: string, from: Date): Promise<string> =>
  withClient(store, async (client) => {
    const { rows } = await client.query<{ customer_id: string }>(
      `SELECT customer_id FROM orders WHERE client_id = $1 AND environment = 'production' AND time_of_purchase >= $2 AND customer_id IS NOT NULL
        ORDER BY time_of_purchase LIMIT 1`,
      [clientId, from],
    );
    return rows[0]!.customer_id;
  });

/** Seconds until `done` holds of the rows of `sql`, polled every 250 ms. */
function secondsUntil<T extends object>(store: Store, sql: string, params: unknown[], done: (rows: T[]) => boolean): Promise<number> {
  const started = performance.now();
  return withClient(store, async (client) => {
    while (!done((await client.query<T>(sql, params)).rows)) await new Promise((resolve) => setTimeout(resolve, 250));
    return seconds(started);
  });
}

/** Seconds until the client has no change noted (instant or key) nor day stale, and the dashboard's 30 days kept again: the keeper has run. */
const keeperDone = (store: Store, clientId: string) =>
  secondsUntil<{ changes: number; stale: number; days: number }>(
    store,
    `SELECT (SELECT count(*)::int FROM attribution_changes WHERE client_id = $1) + (SELECT count(*)::int FROM attribution_change_keys WHERE client_id = $1) AS changes,
            (SELECT count(*)::int FROM attribution_days WHERE client_id = $1 AND stale) AS stale,
            (SELECT count(*)::int FROM attribution_days WHERE client_id = $1 AND totals = 'linear/30/cash' AND day BETWEEN $2 AND $3 AND NOT stale) AS days`,
    [clientId, dayOf(-30), dayOf(-1)],
    ([row]) => row!.changes === 0 && row!.stale === 0 && row!.days === 30,
  );

/** Seconds until the keeper has kept the client's last days ahead today. */
const keptAhead = (store: Store, clientId: string) =>
  secondsUntil<{ on: string }>(
    store,
    `SELECT to_char(kept_ahead_on, 'YYYY-MM-DD') AS on FROM attribution_totals_kept WHERE client_id = $1 AND environment = 'production'`,
    [clientId],
    ([row]) => row?.on === dayOf(0),
  );

/**
 * Gathers the statistics of the kept days and paths the keeper wrote, as autovacuum would soon after (it is
 * off on the benchmark's machine, docs/benchmarks.md): without them, reports' reads are planned
 * for tables of a few rows.
 */
const analyzeKeptDays = (store: Store) => withClient(store, (client) => client.query('ANALYZE attribution_days, attribution_credit_days, attribution_visit_days, attribution_paths'));

async function atScale(store: Store): Promise<Row[]> {
  const exportsDir = fs.mkdtempSync('/tmp/tributary-bench-attribution-');
  // An export's statement may run longer than the default 60 s query timeout: its time is what is measured.
  const env = { EXPORTS_DIR: exportsDir, DATABASE_QUERY_TIMEOUT_MS: '600000' };
  try {
    const first = await startServer(store, env);
    await first.stop();
    console.log(`loading the data set (PostgreSQL, set-based SQL):`);
    const loadSeconds = await loadDataSet(store, first.headers['data-client-id']!);
    const server = await startServer(store, env);
    // The client of the first start holds the data.
    server.headers = first.headers;
    try {
      const rows: Row[] = [['data set load', loadSeconds.toFixed(0), 's', '', '', '']];
      // The keeper's first pass, 30 s after the start, keeps the last 90 days ahead: measured, and waited
      // for, so that it does not run beside what is measured next.
      const ahead = await keptAhead(store, first.headers['data-client-id']!);
      console.log(`the keeper kept the last 90 days ahead ${ahead.toFixed(1)} s after the server started`);
      rows.push(['dashboard: days kept ahead by the keeper', ahead.toFixed(1), 's after start (first pass at 30 s)', '', '', '']);
      await analyzeKeptDays(store);
      const parts = [
        () => explanations(server, () => ['linear', '30'], 'explanation, linear, 30 days'),
        () => explanations(server, (rand) => [MODELS[Math.floor(rand() * MODELS.length)]!, WINDOWS[Math.floor(rand() * WINDOWS.length)]!], 'explanation, random model and window'),
        () => runExport(server, exportsDir, 'export: 30 days, 3 models, both modes', attributedExport(DAYS_30, THREE_MODELS, BOTH_MODES), '< 20 s'),
        () => runExport(server, exportsDir, 'export: year, 3 models, both modes', attributedExport(WHOLE_YEAR, THREE_MODELS, BOTH_MODES), '< 120 s'),
        () => runExport(server, exportsDir, 'dashboard: export, 30 days', DASHBOARD, '< 2 s'),
        () => bareDashboardSql(store, tenantOf(server)),
        () => dashboardReports(server, store),
      ];
      for (const part of parts) {
        const result = await part();
        rows.push(...(typeof result[0] === 'string' ? [result as Row] : (result as Row[])));
        // Which part raised the peak: the peak is the whole run's, so it is printed after each.
        console.log(`  server peak RSS so far: ${server.peakRssMb() ?? '?'} MB`);
      }
      rows.push(['server peak RSS', String(server.peakRssMb() ?? '?'), 'MB', '', '', '< 300 MB']);
      return rows;
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(exportsDir, { recursive: true, force: true });
  }
}

async function benchStore(store: Store): Promise<string[][]> {
  try {
    const rows = await ingestion(store);
    if (INGESTION_ONLY) return rows.map((row) => [store.name, ...row]);
    const scale = await anotherStore(store);
    try {
      return [...rows, ...(await atScale(scale))].map((row) => [store.name, ...row]);
    } finally {
      await scale.drop();
    }
  } finally {
    await store.drop();
  }
}

console.log(
  `attribution: touchpoints in batches of ${BATCH_SIZE} from ${CONNECTIONS} connections for ${SECONDS} s` +
    (INGESTION_ONLY ? '' : `; then ${thousands(ORDERS)} orders, ${thousands(VISITS)} visits, ${thousands(VIEWS)} views of ${thousands(VISITORS)} visitors`),
);
// PostgreSQL's and Citus's rows are told apart by their first cell.
await benchEachStore(['store', 'part', 'value', 'unit', 'p50 ms', 'p99 ms', 'target'], 2, benchStore, { embedded: false });
