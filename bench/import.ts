/**
 * The importer against the HTTP ingestion rate: BENCH_IMPORT_ORDERS orders (default 1,000,000)
 * written to an NDJSON file, then, on each store, the rate of posting as many orders over HTTP as
 * bench:orders does (batches of 1,000 from BENCH_CONNECTIONS connections), and, into a new empty
 * store, the rate of `tributary import orders` of the file (its default concurrency, 4), with the
 * importer's peak resident memory. Both fill an empty table with the same number of orders, since
 * the insert rate depends on the table's size: a rate over the first seconds only is not the
 * import's to match. That first BENCH_SECONDS' HTTP rate is printed too. The goal: at least 80%
 * of the HTTP rate, under 200 MB.
 *
 *   npm run bench:import
 *   BENCH_IMPORT_ORDERS=20000 BENCH_SECONDS=3 npm run bench:import   # a quick check
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BATCH_SIZE, CONNECTIONS, batchesWithIds, orderPoster } from './load.js';
import { anotherStore, benchEachStore, startServer, type RunningServer, type Store } from './server.js';

const ORDERS = Number(process.env.BENCH_IMPORT_ORDERS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const CLI = new URL('../dist/cli.js', import.meta.url).pathname;
const GOAL_SHARE = 80;
const GOAL_RSS_MB = 200;

/** The NDJSON file of ORDERS orders, one batch template at a time (each with ids of its own). */
async function writeOrders(file: string): Promise<number> {
  const out = fs.createWriteStream(file);
  const batchOf = batchesWithIds('i');
  for (let batch = 0; batch * BATCH_SIZE < ORDERS; batch++) {
    const orders = (JSON.parse(batchOf(batch)) as unknown[]).slice(0, ORDERS - batch * BATCH_SIZE);
    if (!out.write(`${orders.map((order) => JSON.stringify(order)).join('\n')}\n`)) await once(out, 'drain');
  }
  await new Promise((resolve) => out.end(resolve));
  return fs.statSync(file).size;
}

/**
 * ORDERS orders posted in batches from CONNECTIONS connections, as bench:orders does: the rate
 * over them all, and over the first SECONDS (the bench:orders measure).
 */
async function postOrders(server: RunningServer): Promise<{ perSecond: number; firstSeconds: number }> {
  const send = orderPoster(server);
  const batchOf = batchesWithIds('h');
  const batches = Math.ceil(ORDERS / BATCH_SIZE);
  let next = 0;
  let inFirstSeconds = 0;
  const started = performance.now();
  const connection = async () => {
    for (let batch = next++; batch < batches; batch = next++) {
      await send(batchOf(batch));
      if (performance.now() - started < SECONDS * 1000) inFirstSeconds++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: (batches * BATCH_SIZE) / seconds, firstSeconds: (inFirstSeconds * BATCH_SIZE) / Math.min(SECONDS, seconds) };
}

/** Peak resident memory of a running process, in MB, polled until it exits (Linux). */
function watchPeakRss(pid: number): () => number | undefined {
  let peak: number | undefined;
  const poll = setInterval(() => {
    try {
      const kb = Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
      if (!Number.isNaN(kb)) peak = Math.max(peak ?? 0, Math.round(kb / 1024));
    } catch {
      // gone, or not Linux
    }
  }, 100);
  return () => {
    clearInterval(poll);
    return peak;
  };
}

async function importInto(url: string, headers: Record<string, string>, file: string) {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'import', 'orders', file, '--url', url, '--checkpoint', `${file}.${Date.now()}.checkpoint`], {
    env: { ...process.env, TRIBUTARY_API_KEY: headers.authorization, TRIBUTARY_CLIENT_ID: headers['data-client-id'] },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const peakRss = watchPeakRss(child.pid!);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = (await once(child, 'exit')) as [number];
  const rss = peakRss();
  if (code !== 0) throw new Error(`the importer exited with ${code}`);
  const summary = JSON.parse(output) as { sent: number; rejected: number };
  if (summary.sent !== ORDERS || summary.rejected !== 0) throw new Error(`the importer sent ${summary.sent} and rejected ${summary.rejected} of ${ORDERS}`);
  return { perSecond: ORDERS / ((performance.now() - started) / 1000), rss };
}

/** `work` against a server on `store`, which is dropped afterwards. */
async function onServer<T>(store: Store, work: (server: RunningServer) => Promise<T>): Promise<T> {
  const server = await startServer(store);
  try {
    return await work(server);
  } finally {
    await server.stop();
    await store.drop();
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-import-bench-'));
const file = path.join(dir, 'orders.ndjson');
try {
  const bytes = await writeOrders(file);
  console.log(`${ORDERS.toLocaleString('en-US')} orders, ${(bytes / 1e6).toFixed(0)} MB of NDJSON; both into an empty table`);
  const header = ['store', `HTTP orders/s (first ${SECONDS} s)`, 'HTTP orders/s', 'import orders/s', 'share %', 'importer peak RSS MB', 'goal met'];
  await benchEachStore(header, 1, async (store: Store) => {
    const http = await onServer(store, postOrders);
    const imported = await onServer(await anotherStore(store), (server) => importInto(server.url, server.headers, file));
    const share = Math.round((100 * imported.perSecond) / http.perSecond);
    const met = share >= GOAL_SHARE && imported.rss !== undefined && imported.rss < GOAL_RSS_MB;
    const rate = (perSecond: number) => Math.round(perSecond).toLocaleString('en-US');
    return [[store.name, rate(http.firstSeconds), rate(http.perSecond), rate(imported.perSecond), String(share), String(imported.rss ?? '?'), met ? 'yes' : 'no']];
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
