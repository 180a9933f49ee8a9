/** Runs the service as a user would, in a child process, for the benchmarks. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createScratchDatabase } from '../test/databases.js';

export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const CLI = new URL('../dist/cli.js', import.meta.url).pathname;

export interface Store {
  name: 'pglite' | 'postgres' | 'citus';
  env: NodeJS.ProcessEnv;
  drop(): Promise<void>;
}

/** An empty embedded store in a temporary directory. */
export function pgliteStore(): Store {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-'));
  return {
    name: 'pglite',
    env: { DATA_DIR: dataDir, DATABASE_URL: '' },
    drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }),
  };
}

const POSTGRES_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
/** A Citus coordinator, as the test suite's CITUS_URL: the benchmarks run there too when it is set. */
const CITUS_URL = process.env.CITUS_URL || undefined;

/**
 * A new, empty database, dropped afterwards: on the PostgreSQL server of DATABASE_URL, or on the
 * Citus coordinator of CITUS_URL and its workers, made as the test suite makes its own.
 */
export async function serverStore(name: 'postgres' | 'citus'): Promise<Store> {
  const server = name === 'citus' ? { url: CITUS_URL!, citus: true } : { url: POSTGRES_URL, citus: false };
  const database = await createScratchDatabase(server, 'tributary_bench');
  return { name, env: { DATABASE_URL: database.url }, drop: database.drop };
}

/** A new, empty store of the same kind as `store`. */
export const anotherStore = (store: Store): Promise<Store> => (store.name === 'pglite' ? Promise.resolve(pgliteStore()) : serverStore(store.name));

/**
 * The rows of `bench` on a new store of the kind of `store` for each of `profiles`, each dropped
 * after it; `store` itself is dropped last (benchEachStore made it, and the profiles do not use it).
 */
export async function eachOnANewStore<P, R>(store: Store, profiles: readonly P[], bench: (database: Store, profile: P) => Promise<R[]>): Promise<R[]> {
  const rows: R[] = [];
  try {
    for (const profile of profiles) {
      const database = await anotherStore(store);
      try {
        rows.push(...(await bench(database, profile)));
      } finally {
        await database.drop();
      }
    }
  } finally {
    await store.drop();
  }
  return rows;
}

const RUNS = Number(process.env.BENCH_RUNS ?? 1);

/**
 * Runs a benchmark on a new database of the PostgreSQL server of DATABASE_URL (default: the
 * local one), on a new database of the Citus coordinator of CITUS_URL when it is set (each
 * skipped, saying why, when it fails there) and on a new embedded store (unless `embedded` is
 * false), BENCH_RUNS times (default 1), then prints the rows it measured as one table under
 * `header`: each run's, and with several runs the median of every figure, rows matched by their
 * first `labels` cells.
 */
export async function benchEachStore(
  header: string[],
  labels: number,
  bench: (store: Store) => Promise<string[][]>,
  { embedded = true }: { embedded?: boolean } = {},
): Promise<void> {
  const servers = CITUS_URL ? (['postgres', 'citus'] as const) : (['postgres'] as const);
  const runs: string[][][] = [];
  for (let run = 1; run <= RUNS; run++) {
    const rows: string[][] = [];
    for (const server of servers) {
      try {
        rows.push(...(await bench(await serverStore(server))));
      } catch (error) {
        console.log(`${server === 'citus' ? 'Citus' : 'PostgreSQL'} skipped: ${(error as Error).message}`);
      }
    }
    if (embedded) rows.push(...(await bench(pgliteStore())));
    runs.push(rows);
    if (RUNS > 1) console.log(`\nrun ${run} of ${RUNS}`);
    printTable(header, rows);
  }
  if (RUNS > 1) {
    console.log(`\nmedians of ${RUNS} runs`);
    const label = (row: string[]) => row.slice(0, labels).join('\u0000');
    const rowsByLabel = new Map<string, string[][]>();
    for (const row of runs.flat()) rowsByLabel.set(label(row), [...(rowsByLabel.get(label(row)) ?? []), row]);
    printTable(header, [...rowsByLabel.values()].map((same) => same[0]!.map((_, c) => medianCell(same.map((row) => row[c]!)))));
  }
}

function printTable(header: string[], rows: string[][]) {
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((row) => row[i]!.length)));
  for (const line of [header, ...rows]) console.log(line.map((cell, i) => cell.padStart(widths[i]!)).join('  '));
}

/** The median of one cell over the runs, written as the first run wrote it; a label stays as it is. */
function medianCell(cells: string[]): string {
  if (!cells.every((cell) => /^-?[\d,]+(\.\d+)?$/.test(cell))) return cells[0]!;
  const values = cells.map((cell) => Number(cell.replaceAll(',', '')));
  values.sort((a, b) => a - b);
  const middle = values.length / 2;
  const median = values.length % 2 ? values[Math.floor(middle)]! : (values[middle - 1]! + values[middle]!) / 2;
  const digits = cells[0]!.split('.')[1]?.length ?? 0;
  return cells[0]!.includes(',')
    ? median.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : median.toFixed(digits);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface RunningServer {
  url: string;
  /** The UAT port's address. */
  uatUrl: string;
  process: ChildProcess;
  /** Headers of a client created for the run. */
  headers: Record<string, string>;
  /** Milliseconds from starting the process to its first 200 from /readyz. */
  startupMs: number;
  /**
   * Peak resident memory of the server so far, in MB (Linux): its process's, plus each of its
   * cluster workers' (the sum of their peaks: at most the peak of their total).
   */
  peakRssMb(): number | undefined;
  /** Resident memory of the server now, in MB, counted the same way. */
  rssMb(): number | undefined;
  /** CPU seconds the server has used so far, its cluster workers' included (NaN but on Linux). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** A port freePort found was taken again (by a connection's local port, say) before the server listened on it. */
class PortTaken extends Error {}

/** Starts the service as startServerOnce does, on other ports when one it was given was taken meanwhile. */
export async function startServer(store: Store, extraEnv: NodeJS.ProcessEnv = {}): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(store, extraEnv);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error;
    }
  }
}

async function startServerOnce(store: Store, extraEnv: NodeJS.ProcessEnv): Promise<RunningServer> {
  const [port, uatPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [CLI, 'serve'], {
    // Throughput is measured: not the per-key write budgets an operator would raise for a backfill,
    // nor load shedding (the embedded store's queries run on the event loop, which then lags).
    env: {
      ...process.env,
      ORDER_WRITE_BYTES_PER_MINUTE: '0',
      SPEND_WRITE_BYTES_PER_MINUTE: '0',
      TOUCHPOINT_WRITE_BYTES_PER_MINUTE: '0',
      OVERLOAD_EVENT_LOOP_DELAY_MS: '0',
      WEB_CONCURRENCY: '1',
      ...store.env,
      ...extraEnv,
      PORT: String(port),
      UAT_PORT: String(uatPort),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Warnings and errors are shown; the readiness of every API process is watched for.
  const readyMessage = Number(extraEnv.WEB_CONCURRENCY ?? 1) > 1 ? 'all API processes are ready' : 'tributary is ready';
  let allReady = false;
  let portTaken = false;
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.includes('EADDRINUSE')) portTaken = true;
    const entry = (() => {
      try {
        return JSON.parse(line) as { level: number; msg: string };
      } catch {
        return { level: 40, msg: line }; // not a log line: shown
      }
    })();
    if (entry.level >= 40) console.error(line);
    if (entry.msg === readyMessage) allReady = true;
  });
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  // Polled every 20 ms: the start-up time measured is within 20 ms of the truth.
  for (;;) {
    if (child.exitCode !== null) throw portTaken ? new PortTaken() : new Error(`server exited with ${child.exitCode}`);
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() - started > 60_000) throw new Error('server did not become ready in 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const startupMs = Date.now() - started;
  while (!allReady) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (Date.now() - started > 60_000) throw new Error('the server\'s API processes were not all ready in 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const created = await fetch(`${url}/admin/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const client = (await created.json()) as { client_id: string; api_key: string };
  return {
    url,
    uatUrl: `http://127.0.0.1:${uatPort}`,
    process: child,
    startupMs,
    headers: { authorization: client.api_key, 'data-client-id': client.client_id, 'content-type': 'application/json' },
    peakRssMb: () => memoryMb(child.pid!, 'VmHWM'),
    rssMb: () => memoryMb(child.pid!, 'VmRSS'),
    cpuSeconds: () => cpuSeconds(child.pid!),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Clock ticks a second of /proc/<pid>/stat's times: USER_HZ, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** A process's command and CPU seconds (user and system) so far, from /proc (Linux); undefined when it is gone or there is no /proc. */
export function processCpu(pid: number): { command: string; seconds: number } | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const [utime, stime] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, 13).map(Number);
  return { command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), seconds: (utime! + stime!) / TICKS_PER_SECOND };
}

/** CPU seconds used so far by a process and its children (cluster workers): NaN but on Linux. */
function cpuSeconds(pid: number): number {
  const children = (() => {
    try {
      return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  })();
  return [pid, ...children].reduce((sum, each) => sum + (processCpu(each)?.seconds ?? NaN), 0);
}

/** CPU seconds used so far by the PostgreSQL server of this machine, every process of it: 0 when it runs elsewhere, NaN but on Linux. */
export function postgresCpuSeconds(): number {
  if (!fs.existsSync('/proc')) return NaN;
  const pids = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  return pids.map((pid) => processCpu(Number(pid))).reduce((sum, each) => sum + (each?.command === 'postgres' ? each.seconds : 0), 0);
}

/** A /proc/<pid>/status memory figure of a process and its children (cluster workers), in MB. */
function memoryMb(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    const kilobytes = [pid, ...children].map((each) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${each}/status`, 'utf8'))?.[1]));
    return kilobytes.some(Number.isNaN) ? undefined : Math.round(kilobytes.reduce((sum, kb) => sum + kb, 0) / 1024);
  } catch {
    return undefined; // not Linux, or the process is gone
  }
}

/** Polls an export of `server` every `pollMs` until it is no longer PENDING; its status and warnings. */
export async function exportOutcome(server: RunningServer, id: string, pollMs: number): Promise<{ status: string; warn: unknown }> {
  let result: { status: string; warn: unknown };
  do {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    result = (await (await fetch(`${server.url}/v1/exports/data-export/result/${id}`, { headers: server.headers })).json()) as typeof result;
  } while (result.status === 'PENDING');
  return result;
}
