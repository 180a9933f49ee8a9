/**
 * The attribution engine on several shapes of data, beside a straightforward PostgreSQL statement
 * and DuckDB computing the same numbers (bench/reference.ts), on PostgreSQL (DATABASE_URL's).
 *
 * For each profile (bench/seed.ts's DATA_PROFILES; `deep` twice, the second with the unlimited
 * window), on a new database loaded by set-based SQL while no server runs, and nothing vacuumed or
 * analyzed (as a shop's store is right after a load), a server without the keeper
 * (KEEP_AHEAD_DAYS=0: nothing prepares the reports) is asked, in this order:
 *
 * 1. the dashboard's report, 30 days, linear, cash: the first request, then the same again;
 * 2. the year's export: 3 models, both modes, campaign, DAILY, spend, rev and txns;
 * 3. the same figures by the reference statement on PostgreSQL, and by DuckDB over copies of the
 *    client's orders, touchpoints and identities (the copy timed apart); every row of the three
 *    compared;
 * 4. where the export's time goes in PostgreSQL: its statement under EXPLAIN ANALYZE, by part
 *    (bench/statement-profile.ts; BENCH_ENGINE_EXPLAIN=0 leaves it out);
 * 5. later, once the tables are vacuumed and analyzed (what autovacuum does in time): the report
 *    of another model (computed, not kept), and the export again.
 *
 *   npm run bench:engine                                                   # 1,000,000 orders, 5,000,000 visits
 *   BENCH_ATTRIBUTION_ORDERS=200000 BENCH_ATTRIBUTION_VISITS=1000000 npm run bench:engine   # a fifth
 *   BENCH_ENGINE_PROFILES=benchmark,deep npm run bench:engine
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { exportRowsSql, ROWS_TRANSACTION_SETTINGS } from '../src/attribution/rows.js';
import { planExport, rowsPlanOf } from '../src/exports/plan.js';
import type { ExportRequest } from '../src/exports/schema.js';
import { copyIntoDuckDb, duckDbReference, postgresReference, REFERENCE_MODELS, type ReferenceRow } from './reference.js';
import { DATA_PROFILES, DAY_MS, ORDERS, TODAY, VIEWS, VISITS, loadDataSet, scaledProfile, seconds, thousands, type DataProfileName } from './seed.js';
import { profileStatement, type StatementPart } from './statement-profile.js';
import { benchEachStore, eachOnANewStore, exportOutcome, postgresCpuSeconds, processCpu, startServer, type RunningServer, type Store } from './server.js';

interface Profile {
  name: string;
  data: DataProfileName;
  /** The export's window, in days, or null for the unlimited one. */
  windowDays: number | null;
}

const PROFILES: Profile[] = [
  { name: 'benchmark', data: 'benchmark', windowDays: 30 },
  { name: 'anonymous', data: 'anonymous', windowDays: 30 },
  { name: 'deep', data: 'deep', windowDays: 30 },
  { name: 'loyal', data: 'loyal', windowDays: 30 },
  { name: 'deep-infinity', data: 'deep', windowDays: null },
];
const ASKED = process.env.BENCH_ENGINE_PROFILES?.split(',');

const dayOf = (offset: number) => new Date(TODAY + offset * DAY_MS).toISOString().slice(0, 10);
/** The year of the data set: its 366 days, which end yesterday. */
const YEAR = { from: dayOf(-366), to: dayOf(0) };
const windowName = (windowDays: number | null) => (windowDays === null ? 'infinity' : String(windowDays));

/** A row of the table: profile, part, seconds, then what it is measured against. */
type Row = [string, string, string, string];

async function report(server: RunningServer, model: string): Promise<number> {
  const query = new URLSearchParams({ start_date: dayOf(-30), end_date: dayOf(-1), level: 'campaign', granularity: 'DAILY', metrics: 'spend,rev,txns,roas', model, window: '30', mode: 'cash' });
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/reports/performance?${query}`, { headers: server.headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`report: ${response.status} ${text.slice(0, 300)}`);
  return seconds(started);
}

/** The year's export: 3 models, both modes, campaign, DAILY, spend, rev and txns. */
const yearExportRequest = (windowDays: number | null): ExportRequest => ({
  period_type: 'FIXED',
  period_options: { period_starting_at: YEAR.from, period_ending_at: dayOf(-1) },
  level: 'campaign',
  time_granularity: 'DAILY',
  attribution_options: { attribution_models: [...REFERENCE_MODELS], attribution_windows: [windowName(windowDays)], accounting_modes: ['cash', 'accrual'] },
  metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'txns' }],
  options: { include_ids: true },
});

/** The year's export to SUCCESS; its seconds and its rows as the reference's. */
async function yearExport(server: RunningServer, exportsDir: string, windowDays: number | null): Promise<{ took: number; rows: ReferenceRow[] }> {
  const started = performance.now();
  const created = await fetch(`${server.url}/v1/exports/data-export`, {
    method: 'POST',
    headers: server.headers,
    body: JSON.stringify(yearExportRequest(windowDays)),
  });
  if (created.status !== 201) throw new Error(`export: ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const result = await exportOutcome(server, id, 100);
  const took = seconds(started);
  if (result.status !== 'SUCCESS') throw new Error(`export: ${result.status} ${JSON.stringify(result.warn)}`);
  const rows: ReferenceRow[] = [];
  for (const file of fs.readdirSync(path.join(exportsDir, id)).sort()) {
    const [header, ...lines] = fs.readFileSync(path.join(exportsDir, id, file), 'utf8').trimEnd().split('\r\n');
    const at = Object.fromEntries(header!.split(',').map((name, i) => [name, i]));
    for (const line of lines) {
      // Campaign names and ids of the data set hold no commas or quotes.
      const cells = line.split(',');
      rows.push({
        model: cells[at.attribution_model!]!,
        mode: cells[at.accounting_mode!]!,
        day: cells[at.date!]!,
        platform: cells[at.platform!]!,
        campaign: cells[at.campaign_id!]!,
        currency: cells[at.currency!]!,
        rev: Number(cells[at.rev!]),
        txns: Number(cells[at.txns!]),
        spend: Number(cells[at.spend!]),
      });
    }
  }
  return { took, rows };
}

/**
 * Where the year export's time goes in PostgreSQL: its rows' statement over the whole year, as
 * the export runs it in slices (the client's time zone is UTC, its environment production).
 */
async function profileYearExport(dbUrl: string, clientId: string, windowDays: number | null): Promise<{ ms: number; parts: StatementPart[] }> {
  const planned = planExport(yearExportRequest(windowDays), 'UTC', new Date(TODAY));
  if (!('plan' in planned)) throw new Error(`the year's export: ${JSON.stringify(planned.problems)}`);
  const { sql, params } = exportRowsSql({ tenant: { clientId, environment: 'production', dryRun: false }, ...rowsPlanOf(planned.plan) });
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    // Through its cursor the export's statement has no parallel workers.
    return await profileStatement(client, sql, params, [...ROWS_TRANSACTION_SETTINGS, 'SET LOCAL max_parallel_workers_per_gather = 0']);
  } finally {
    await client.end();
  }
}

/** Rows of `theirs` that differ from `ours` (rows of zeros left out), and how many rows were compared. */
function differences(ours: ReferenceRow[], theirs: ReferenceRow[]): { compared: number; differing: string[] } {
  const key = (row: ReferenceRow) => [row.model, row.mode, row.day, row.platform, row.campaign, row.currency].join('|');
  // What rounds to zero at 6 decimals is written as zeros.
  const zero = (row: ReferenceRow) => [row.rev, row.txns, row.spend].every((value) => Math.abs(value) < 5e-7);
  const credited = (rows: ReferenceRow[]) => new Map(rows.filter((row) => !zero(row)).map((row) => [key(row), row]));
  const [a, b] = [credited(ours), credited(theirs)];
  const differing: string[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    const [x, y] = [a.get(k), b.get(k)];
    const same = x && y && Math.abs(x.rev - y.rev) <= 2e-6 && Math.abs(x.txns - y.txns) <= 2e-6 && Math.abs(x.spend - y.spend) <= 2e-6;
    if (!same) differing.push(`${k}: ${x ? `${x.spend} ${x.rev} ${x.txns}` : 'none'} / ${y ? `${y.spend} ${y.rev} ${y.txns}` : 'none'}`);
  }
  return { compared: a.size, differing };
}

/** `work` timed: seconds of wall clock, and of CPU in PostgreSQL and in this process (DuckDB's threads). */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; wall: number; postgresCpu: number; thisCpu: number }> {
  const [wallFrom, postgresFrom, thisFrom] = [performance.now(), postgresCpuSeconds(), process.cpuUsage()];
  const value = await work();
  const cpu = process.cpuUsage(thisFrom);
  return { value, wall: seconds(wallFrom), postgresCpu: postgresCpuSeconds() - postgresFrom, thisCpu: (cpu.user + cpu.system) / 1e6 };
}

async function benchProfile(store: Store, profile: Profile): Promise<Row[]> {
  const data = scaledProfile(DATA_PROFILES[profile.data]);
  const exportsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-engine-'));
  // No keeper: what is measured is what a request computes. An export's statement may run past the default 60 s.
  const env = { EXPORTS_DIR: exportsDir, DATABASE_QUERY_TIMEOUT_MS: '1800000', KEEP_AHEAD_DAYS: '0' };
  const rows: Row[] = [];
  const row = (part: string, value: string, against = '') => {
    console.log(`${profile.name}: ${part}: ${value}${against ? ` (${against})` : ''}`);
    rows.push([profile.name, part, value, against]);
  };
  try {
    const first = await startServer(store, env);
    await first.stop();
    const clientId = first.headers['data-client-id']!;
    console.log(`${profile.name}: ${thousands(data.customers)} customers, ${thousands(data.visitors)} visitors (${thousands(data.linkedVisitors)} linked, ${thousands(data.knownVisitors)} known)`);
    row('load', (await loadDataSet(store, clientId, data)).toFixed(0));
    const server = await startServer(store, env);
    server.headers = first.headers;
    try {
      const firstReport = await report(server, 'linear');
      row('report, first request after the load', firstReport.toFixed(2), 'target < 1 s');
      row('report, again', (await report(server, 'linear')).toFixed(2));
      const exported = await timed(() => yearExport(server, exportsDir, profile.windowDays));
      const ours = exported.value.rows;
      const dbUrl = store.env.DATABASE_URL!;
      // Its backend's CPU, read before the connection closes: a backend's time is gone with it.
      const referenceConnection = new pg.Client({ connectionString: dbUrl });
      await referenceConnection.connect();
      const backendCpu = async () => processCpu((await referenceConnection.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)?.seconds ?? NaN;
      const cpuBefore = await backendCpu();
      const reference = await postgresReference(referenceConnection, clientId, { ...YEAR, windowDays: profile.windowDays });
      const referenceCpu = (await backendCpu()) - cpuBefore;
      await referenceConnection.end();
      const copyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-duckdb-'));
      try {
        const copied = await timed(() => copyIntoDuckDb(dbUrl, clientId, copyDir));
        try {
          const duck = await timed(() => duckDbReference(copied.value, { ...YEAR, windowDays: profile.windowDays }));
          row('year export', exported.wall.toFixed(1), `PostgreSQL CPU ${exported.postgresCpu.toFixed(1)} s; ${(exported.wall / duck.value.seconds).toFixed(1)}× DuckDB; target ≤ 3× DuckDB and < 60 s`);
          row('year, reference statement on PostgreSQL', reference.seconds.toFixed(1), `its CPU ${referenceCpu.toFixed(1)} s, reading its rows out included`);
          row('year, DuckDB', duck.value.seconds.toFixed(1), `CPU ${duck.thisCpu.toFixed(1)} s, reading its rows out included; its copy of the data ${copied.wall.toFixed(1)} s`);
          for (const [name, theirs] of [['PostgreSQL reference', reference.rows], ['DuckDB', duck.value.rows]] as const) {
            const { compared, differing } = differences(ours, theirs);
            row(`rows equal to ${name}'s`, `${thousands(compared - differing.length)} of ${thousands(compared)}`, differing.slice(0, 3).join('; '));
          }
        } finally {
          copied.value.close();
        }
      } finally {
        fs.rmSync(copyDir, { recursive: true, force: true });
      }
      if (process.env.BENCH_ENGINE_EXPLAIN !== '0') {
        const profiled = await profileYearExport(dbUrl, clientId, profile.windowDays);
        const shown = profiled.parts.slice(0, 8);
        row('year, its statement under EXPLAIN ANALYZE', (profiled.ms / 1000).toFixed(1), 'the whole year in one statement; its largest parts below, each node\'s own time summed');
        for (const { part, ms } of shown) row(`  ${part}`, (ms / 1000).toFixed(1));
      }
      const vacuumed = await timed(async () => {
        const client = new pg.Client({ connectionString: dbUrl });
        await client.connect();
        await client.query('VACUUM ANALYZE').finally(() => client.end());
      });
      row('later: VACUUM ANALYZE', vacuumed.wall.toFixed(0));
      row('later: report of another model (computed)', (await report(server, 'time_decay')).toFixed(2), 'target < 1 s');
      row('later: year export', (await yearExport(server, exportsDir, profile.windowDays)).took.toFixed(1));
      row('server peak RSS, MB', String(server.peakRssMb() ?? '?'), 'target < 300 MB');
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(exportsDir, { recursive: true, force: true });
  }
  return rows;
}


console.log(`engine: ${thousands(ORDERS)} orders, ${thousands(VISITS)} visits, ${thousands(VIEWS)} views a profile; the year ${YEAR.from} to ${dayOf(-1)}`);
await benchEachStore(['profile', 'part', 'seconds', 'against'], 2, (store) => eachOnANewStore(store, PROFILES.filter((each) => !ASKED || ASKED.includes(each.name)), benchProfile), { embedded: false });
