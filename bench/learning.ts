/**
 * The data-driven models (markov, shapley) on several shapes of data, on PostgreSQL (DATABASE_URL's),
 * beside linear on the same data in the same run.
 *
 * For each profile (bench/seed.ts's DATA_PROFILES), on a new database loaded by set-based SQL, a
 * server without the keeper (KEEP_AHEAD_DAYS=0) is asked, after one report has brought the
 * tables' statistics up to date:
 *
 * 1. training, as GET /v1/attribution/models/{id} answers it the first time: markov and shapley on
 *    the default 90 days before the last 30 days, markov of order 2, and markov on the whole year
 *    (training_days 365: every order of the data set); then a request that finds it kept;
 * 2. the year's export (campaign, DAILY, both modes, spend, rev and txns) of linear, markov and
 *    shapley, one model each: target within 1.5× linear's;
 * 3. the dashboard's report (30 days, campaign, DAILY, cash) of linear the first time (computed
 *    from the paths; it keeps the days), again (kept days), and of markov and shapley (computed
 *    each time, the weights kept): target within 1.5× linear's first.
 *
 *   npm run bench:learning                                                   # 1,000,000 orders, 5,000,000 visits
 *   BENCH_ATTRIBUTION_ORDERS=200000 BENCH_ATTRIBUTION_VISITS=1000000 npm run bench:learning   # a fifth
 *   BENCH_LEARNING_PROFILES=benchmark,deep npm run bench:learning
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DATA_PROFILES, DAY_MS, ORDERS, TODAY, VISITS, loadDataSet, scaledProfile, seconds, thousands, type DataProfileName } from './seed.js';
import { ADMIN_TOKEN, benchEachStore, eachOnANewStore, exportOutcome, startServer, type RunningServer, type Store } from './server.js';

const PROFILES: DataProfileName[] = ['benchmark', 'anonymous', 'deep', 'loyal'];
const ASKED = process.env.BENCH_LEARNING_PROFILES?.split(',');

const dayOf = (offset: number) => new Date(TODAY + offset * DAY_MS).toISOString().slice(0, 10);

/** A row of the table: profile, part, seconds, then what it is measured against. */
type Row = [string, string, string, string];

async function get(server: RunningServer, url: string): Promise<{ took: number; body: Record<string, unknown> }> {
  const started = performance.now();
  const response = await fetch(`${server.url}${url}`, { headers: server.headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text.slice(0, 300)}`);
  return { took: seconds(started), body: JSON.parse(text) as Record<string, unknown> };
}

const report = (server: RunningServer, model: string) =>
  get(
    server,
    `/v1/reports/performance?${new URLSearchParams({ start_date: dayOf(-30), end_date: dayOf(-1), level: 'campaign', granularity: 'DAILY', metrics: 'spend,rev,txns,roas', model, window: '30', mode: 'cash' })}`,
  );

const learnt = (server: RunningServer, model: string, periodFrom = dayOf(-30)) => get(server, `/v1/attribution/models/${model}?window=30&period_from=${periodFrom}`);

async function setClient(server: RunningServer, settings: object): Promise<void> {
  const response = await fetch(`${server.url}/admin/v1/clients/${server.headers['data-client-id']}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  if (response.status !== 200) throw new Error(`settings: ${response.status} ${await response.text()}`);
}

/** The year's export of one model to SUCCESS, in seconds. */
async function yearExport(server: RunningServer, model: string): Promise<number> {
  const started = performance.now();
  const created = await fetch(`${server.url}/v1/exports/data-export`, {
    method: 'POST',
    headers: server.headers,
    body: JSON.stringify({
      period_type: 'FIXED',
      period_options: { period_starting_at: dayOf(-366), period_ending_at: dayOf(-1) },
      level: 'campaign',
      time_granularity: 'DAILY',
      attribution_options: { attribution_models: [model], attribution_windows: ['30'], accounting_modes: ['cash', 'accrual'] },
      metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'txns' }],
    }),
  });
  if (created.status !== 201) throw new Error(`export: ${created.status} ${await created.text()}`);
  const result = await exportOutcome(server, ((await created.json()) as { id: string }).id, 100);
  if (result.status !== 'SUCCESS') throw new Error(`export: ${result.status} ${JSON.stringify(result.warn)}`);
  return seconds(started);
}

async function benchProfile(store: Store, name: DataProfileName): Promise<Row[]> {
  const data = scaledProfile(DATA_PROFILES[name]);
  const exportsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-learning-'));
  const env = { EXPORTS_DIR: exportsDir, DATABASE_QUERY_TIMEOUT_MS: '1800000', KEEP_AHEAD_DAYS: '0' };
  const rows: Row[] = [];
  const row = (part: string, value: number, against = '') => {
    const text = value.toFixed(value < 10 ? 2 : 1);
    console.log(`${name}: ${part}: ${text}${against ? ` (${against})` : ''}`);
    rows.push([name, part, text, against]);
  };
  try {
    const first = await startServer(store, env);
    await first.stop();
    row('load', await loadDataSet(store, first.headers['data-client-id']!, data));
    const server = await startServer(store, env);
    server.headers = first.headers;
    try {
      // The first request after a load brings the tables' statistics up to date: not what is compared here.
      await report(server, 'first_touch');
      const linearFirst = (await report(server, 'linear')).took;
      const linearAgain = (await report(server, 'linear')).took;
      for (const model of ['markov', 'shapley']) {
        const { took, body } = await learnt(server, model);
        const paths = (body.learnt as { paths: { converting: number; not_converting: number } }).paths;
        row(`${model}: training, 90 days`, took, `${thousands(paths.converting)} converting paths, ${thousands(paths.not_converting)} not; target < 30 s`);
      }
      row('markov: kept, asked again', (await learnt(server, 'markov')).took);
      await setClient(server, { markov_order: 2 });
      row('markov of order 2: training, 90 days', (await learnt(server, 'markov')).took);
      await setClient(server, { markov_order: 1, training_days: 365 });
      const year = await learnt(server, 'markov', dayOf(0));
      const converting = (year.body.learnt as { paths: { converting: number } }).paths.converting;
      row('markov: training, the whole year', year.took, `${thousands(converting)} converting paths; target < 30 s`);
      await setClient(server, { training_days: 90 });
      await learnt(server, 'shapley');
      row('report 30 days: linear, first (computed)', linearFirst);
      row('report 30 days: linear, again (kept days)', linearAgain);
      for (const model of ['markov', 'shapley']) {
        const { took } = await report(server, model);
        row(`report 30 days: ${model} (weights kept)`, took, `${(took / linearFirst).toFixed(2)}× linear's first; target ≤ 1.5×`);
      }
      const linearExport = await yearExport(server, 'linear');
      row('year export: linear', linearExport);
      for (const model of ['markov', 'shapley']) {
        const took = await yearExport(server, model);
        row(`year export: ${model}`, took, `${(took / linearExport).toFixed(2)}× linear's; target ≤ 1.5×`);
      }
      row('server peak RSS, MB', server.peakRssMb() ?? NaN, 'target < 300 MB');
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(exportsDir, { recursive: true, force: true });
  }
  return rows;
}


console.log(`learning: ${thousands(ORDERS)} orders, ${thousands(VISITS)} visits a profile`);
await benchEachStore(['profile', 'part', 'seconds', 'against'], 2, (store) => eachOnANewStore(store, PROFILES.filter((each) => !ASKED || ASKED.includes(each)), benchProfile), { embedded: false });
