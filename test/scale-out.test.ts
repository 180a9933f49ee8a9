import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import { test, type TestContext } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import type { Database } from '../src/db/index.js';
import { random } from '../bench/generate.js';
import { freePort } from '../bench/server.js';
import { ADMIN_TOKEN, createChildStore, minimalOrder, serverUrl, startCli, tempDir, type ChildStore } from './helpers.js';

// Two API processes and two export workers over one database: processes share a store only on
// PostgreSQL (the embedded one belongs to one process).
const postgres = Boolean(serverUrl);

const SEED = Number(process.env.SCALE_OUT_SEED ?? 20_240_308);
/** API processes, each written to by its own connections (a "writer" is one process). */
const WRITERS = 2;
/** Concurrent connections per process and per resource, each sending ROUNDS batches one after the other. */
const CONNECTIONS = 4;
const ROUNDS = 6;
/** Share of the keys each batch holds (a random subset, drawn per batch). */
const BATCH_SHARE = 0.75;
const ORDER_COUNT = 200;
const EXPORTS = 16;
/** EXPORT_CONCURRENCY of each worker process. */
const WORKER_SLOTS = 2;
const DAY = '2024-03-08';

// ---------------------------------------------------------------------------------------------
// What is written. Every batch is one "version" (vid) of the keys it holds: each field of an
// order or spend record says which version it is, so a stored record is exactly one version or
// a mix of two writes.

const vidOf = (writer: number, connection: number, round: number) => (writer * CONNECTIONS + connection) * ROUNDS + round + 1;
const writerOf = (vid: number) => Math.floor((vid - 1) / (CONNECTIONS * ROUNDS));

/** The indexes (of `count` keys) a batch of version `vid` holds. */
function subset(kind: number, vid: number, count: number): number[] {
  const rng = random(SEED * 31 + kind * 1009 + vid);
  const picked = Array.from({ length: count }, (_, i) => i).filter(() => rng() < BATCH_SHARE);
  // Shuffled: the service must not depend on the order a batch lists its keys in.
  for (let i = picked.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [picked[i], picked[j]] = [picked[j]!, picked[i]!];
  }
  return picked;
}

const ORDER_IDS = Array.from({ length: ORDER_COUNT }, (_, i) => `order-${String(i).padStart(3, '0')}`);

type Alias = { type: string; id: string };
type Json = Record<string, unknown>;

/**
 * Version `vid` of order `i`. Optional fields come and go between versions, so a stored body
 * merged from two writes differs from both. Aliases: one both writers send (`shopify`), and one
 * of each version, so the stored aliases must be the union of every write's.
 */
function orderVersion(i: number, vid: number): Json {
  const writer = writerOf(vid);
  const orderId = ORDER_IDS[i]!;
  const aliases: Alias[] = [
    { type: 'shopify', id: `gid-${orderId}` },
    { type: `custom:writer${writer}`, id: `${orderId}-v${vid}` },
  ];
  return minimalOrder(orderId, {
    customer_id: `customer-${i}-v${vid}`,
    time_of_purchase: new Date(Date.UTC(2024, 2, 8, vid % 24, i % 60, vid % 60)).toISOString(),
    currency: writer === 0 ? 'USD' : 'EUR',
    purchase_total: (10_000 + vid * 100 + (i % 100)) / 100,
    tax: vid / 10,
    shipping_cost: writer + 1,
    order_tags: [`writer-${writer}`, `v${vid}`],
    products: [{ id: 'p', name: `Product v${vid}`, quantity: 1 + (vid % 5), price: 10 + vid }],
    ...(vid % 2 === 1 ? { customer_name: `Customer v${vid}` } : {}),
    ...(vid % 3 === 0
      ? { refunds: [{ product_id: 'p', quantity: 1, refund_amount: vid + 0.5, refund_cost: 0.25, refund_made_at: '2024-03-10T12:00:00Z' }] }
      : {}),
    alternate_order_ids: aliases,
  });
}

/** What the store keeps of an order as its body: the order less its aliases. */
function orderBody(i: number, vid: number): Json {
  const { alternate_order_ids: _aliases, ...body } = orderVersion(i, vid);
  return body;
}

const aliasText = (alias: Alias) => `${alias.type} ${alias.id}`;

/** The keys of the spend records: 2 platforms × 2 accounts × 4 campaigns × 8 hours of DAY. */
const SPEND_KEYS = ['meta', 'google'].flatMap((platform) =>
  ['act_1', 'act_2'].flatMap((account) =>
    ['c1', 'c2', 'c3', 'c4'].flatMap((campaign) =>
      Array.from({ length: 8 }, (_, hour) => ({ platform, account, campaign, hour: `${DAY}T${String(hour).padStart(2, '0')}:00:00Z` })),
    ),
  ),
);
const spendKeyText = (record: Json) =>
  [record.platform_name, record.platform_account_id, record.campaign_id, record.adset_id, record.ad_id, record.hour_start_iso].join(' | ');

/** Version `vid` of spend key `k`: every value (names, measures, currency) says which version it is. */
function spendVersion(k: number, vid: number): Json {
  const key = SPEND_KEYS[k]!;
  const writer = writerOf(vid);
  return {
    hour_start_iso: key.hour,
    platform_name: key.platform,
    platform_account_id: key.account,
    campaign_id: key.campaign,
    campaign_name: `Campaign ${key.campaign} v${vid}`,
    adset_id: 'adset-1',
    adset_name: `Adset v${vid}`,
    ad_id: 'ad-1',
    ad_name: `Ad of writer ${writer}`,
    spend: (vid * 1000 + k) / 100,
    spend_currency: writer === 0 ? 'USD' : 'EUR',
    impressions: vid * 1000 + k,
    clicks: vid + (k % 7),
  };
}
const SPEND_KEY_TEXTS = SPEND_KEYS.map((_, k) => spendKeyText(spendVersion(k, 1)));

// ---------------------------------------------------------------------------------------------
// Processes and HTTP

/** `count` different free ports. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

interface Running {
  name: string;
  child: ChildProcess;
  /** The complete JSON log lines it has written since it was ready. */
  lines: string[];
}

/** Children still running when this process exits (the test was interrupted) are killed with it. */
const children = new Set<ChildProcess>();
process.once('exit', () => children.forEach((child) => child.kill('SIGKILL')));

/** Starts `tributary <command>` (helpers' startCli) and keeps the log lines it writes from then on. */
async function start(name: string, command: 'serve' | 'worker', env: NodeJS.ProcessEnv, ready: string): Promise<Running> {
  const child = await startCli(command, env, ready);
  children.add(child);
  child.once('exit', () => children.delete(child));
  const lines: string[] = [];
  let partial = '';
  child.stdout!.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  return { name, child, lines };
}

/** Stops a child (SIGTERM, then SIGKILL after `graceMs`); resolves once its output is read to the end. */
async function stop(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const closed = once(child, 'close');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await closed;
    clearTimeout(timer);
  }
}

const parseLog = (line: string): Json | undefined => {
  try {
    return JSON.parse(line) as Json;
  } catch {
    return undefined;
  }
};

interface Answer {
  status: number;
  text: string;
}

async function call(port: number, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const response = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, text: await response.text() };
}

/** The JSON of an answer that must have `status`. */
function jsonOf<T = Json>(answer: Answer, status: number, what: string): T {
  assert.equal(answer.status, status, `${what}: ${answer.text.slice(0, 1000)}`);
  return JSON.parse(answer.text) as T;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Concurrent writers

interface Write {
  writer: number;
  connection: number;
  round: number;
  vid: number;
  /** Indexes of the keys (orders, spend keys) of the batch. */
  keys: number[];
  started: number;
  ended: number;
}

/**
 * Every writer (API process) runs CONNECTIONS connections at once, each sending ROUNDS batches
 * one after the other; every batch must get `status`.
 */
async function writeConcurrently(
  ports: readonly number[],
  headers: Record<string, string>,
  url: string,
  status: number,
  batchOf: (vid: number) => { keys: number[]; body: unknown },
): Promise<Write[]> {
  const writes: Write[] = [];
  const connection = async (writer: number, connection: number) => {
    for (let round = 0; round < ROUNDS; round++) {
      const vid = vidOf(writer, connection, round);
      const { keys, body } = batchOf(vid);
      const started = performance.now();
      const answer = await call(ports[writer]!, 'POST', url, headers, body);
      assert.equal(answer.status, status, `${url} batch v${vid} (process ${writer}): ${answer.text.slice(0, 1000)}`);
      writes.push({ writer, connection, round, vid, keys, started, ended: performance.now() });
    }
  };
  await Promise.all(Array.from({ length: WRITERS * CONNECTIONS }, (_, n) => connection(Math.floor(n / CONNECTIONS), n % CONNECTIONS)));
  return writes;
}

/**
 * The versions each key may end at: for every connection, the last of its batches that held the
 * key (an earlier one was answered, hence committed, before the later one was sent).
 */
function finalCandidates(writes: readonly Write[]): Map<number, Set<number>> {
  const last = new Map<number, Map<string, number>>();
  for (const write of [...writes].sort((a, b) => a.round - b.round)) {
    for (const key of write.keys) {
      if (!last.has(key)) last.set(key, new Map());
      last.get(key)!.set(`${write.writer}/${write.connection}`, write.vid);
    }
  }
  return new Map([...last].map(([key, byConnection]) => [key, new Set(byConnection.values())]));
}

/** Pairs of batches of different processes that were in flight at the same time. */
function crossProcessOverlaps(writes: readonly Write[]): number {
  let overlaps = 0;
  for (const a of writes) for (const b of writes) if (a.writer < b.writer && a.started < b.ended && b.started < a.ended) overlaps++;
  return overlaps;
}

// ---------------------------------------------------------------------------------------------

test(
  'two API processes and two export workers on one PostgreSQL: concurrent writes of the same keys end consistent, no export runs twice',
  { skip: !postgres && 'PostgreSQL only: set DATABASE_URL', timeout: 120_000 },
  async (t) => {
    const started = performance.now();
    const phase = (() => {
      let last = started;
      const figures: string[] = [];
      return Object.assign((name: string) => {
        const now = performance.now();
        figures.push(`${name} ${((now - last) / 1000).toFixed(1)} s`);
        last = now;
      }, { figures });
    })();

    let store: ChildStore | undefined;
    const exportsDir = tempDir();
    const processes: Running[] = [];
    let locker: pg.Client | undefined;
    try {
      store = await createChildStore();
      const withStore = store.withStore;
      const [apiA, uatA, apiB, uatB] = await freePorts(4);
      const ports = [apiA!, apiB!];
      const shared = {
        ...store.env,
        EXPORTS_DIR: exportsDir,
        EXPORT_SIGNING_SECRET: randomBytes(24).toString('hex'),
        LOG_LEVEL: 'info',
      };
      const apiEnv = (port: number, uatPort: number) => ({
        ...shared,
        PORT: String(port),
        UAT_PORT: String(uatPort),
        ADMIN_TOKEN,
        EXPORT_CONCURRENCY: '0',
        AUTH_FAILURES_PER_MINUTE: '0',
        ORDER_WRITE_BYTES_PER_MINUTE: '0',
      });
      // Every slot of both workers may hold one of the client's exports at once (the per-client
      // limit has tests of its own: export-fairness).
      const workerEnv = { ...shared, EXPORT_CONCURRENCY: String(WORKER_SLOTS), EXPORT_MAX_RUNNING_PER_CLIENT: String(2 * WORKER_SLOTS) };

      // All four at once on the empty database: their migrations queue on the advisory lock.
      const starting = await Promise.allSettled([
        start('api A', 'serve', apiEnv(apiA!, uatA!), 'tributary is ready'),
        start('api B', 'serve', apiEnv(apiB!, uatB!), 'tributary is ready'),
        start('worker 1', 'worker', workerEnv, 'export worker is ready'),
        start('worker 2', 'worker', workerEnv, 'export worker is ready'),
      ]);
      for (const outcome of starting) if (outcome.status === 'fulfilled') processes.push(outcome.value);
      for (const outcome of starting) if (outcome.status === 'rejected') throw outcome.reason;
      const workers = processes.slice(2);
      phase('start');

      // A client made through process A, seen and used through process B too.
      const created = jsonOf<{ client_id: string; api_key: string }>(
        await call(apiA!, 'POST', '/admin/v1/clients', { authorization: `Bearer ${ADMIN_TOKEN}` }, { name: 'scale-out' }),
        201,
        'client creation on process A',
      );
      const clientId = created.client_id;
      const seen = jsonOf<{ client_id: string }>(
        await call(apiB!, 'GET', `/admin/v1/clients/${clientId}`, { authorization: `Bearer ${ADMIN_TOKEN}` }),
        200,
        'the client, read on process B',
      );
      assert.equal(seen.client_id, clientId);
      const headers = { authorization: created.api_key, 'data-client-id': clientId };

      // Orders and spend, written at once from both processes, every batch on keys the others write too.
      const [orderWrites, spendWrites] = await Promise.all([
        writeConcurrently(ports, headers, '/v2/orders', 200, (vid) => {
          const keys = subset(1, vid, ORDER_COUNT);
          return { keys, body: keys.map((i) => orderVersion(i, vid)) };
        }),
        writeConcurrently(ports, headers, '/v1/spend_hourly', 201, (vid) => {
          const keys = subset(2, vid, SPEND_KEYS.length);
          return { keys, body: { data: keys.map((k) => spendVersion(k, vid)) } };
        }),
      ]);
      phase('concurrent writes');
      const overlaps = crossProcessOverlaps([...orderWrites, ...spendWrites]);
      const orderOverlaps = crossProcessOverlaps(orderWrites);
      const spendOverlaps = crossProcessOverlaps(spendWrites);
      assert.ok(orderOverlaps > 0 && spendOverlaps > 0, 'batches of the two processes were in flight together');

      await t.test('orders: each id stored once, whole, as one write left it, with the union of the aliases', async (sub) => {
        await checkOrders({ t: sub, withStore, ports, headers, clientId, writes: orderWrites });
      });
      await t.test('spend: each key stored once, as one write left it', async (sub) => {
        await checkSpend({ t: sub, withStore, ports, headers, clientId, writes: spendWrites });
      });
      phase('checks');

      // Exports. Spend is locked while they are created, so that every slot of both workers
      // claims one and waits in its query: both workers take part, and no claim is made twice.
      locker = new pg.Client({ connectionString: store.env.DATABASE_URL });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE spend_hourly IN ACCESS EXCLUSIVE MODE');
      const request = {
        level: 'platform',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: `${DAY}T00:00:00Z`, period_ending_at: '2024-03-09T00:00:00Z' },
        metrics: [{ id: 'spend' }, { id: 'impressions' }, { id: 'clicks' }],
      };
      const exportIds: string[] = [];
      for (let n = 0; n < EXPORTS; n++) {
        const answer = await call(ports[n % 2]!, 'POST', '/v1/exports/data-export', headers, request);
        exportIds.push(jsonOf<{ id: string }>(answer, 201, `export ${n} created on process ${n % 2 ? 'B' : 'A'}`).id);
      }
      const claimed = () =>
        withStore((db) =>
          db.query<{ attempts: number; n: number }>(
            `SELECT attempts, count(*)::int AS n FROM exports WHERE client_id = $1 AND status = 'PENDING' GROUP BY attempts ORDER BY attempts`,
            [clientId],
          ),
        );
      const slots = workers.length * WORKER_SLOTS;
      for (const deadline = Date.now() + 15_000; ; await sleep(50)) {
        const byAttempts = await claimed();
        if (byAttempts.find((row) => row.attempts === 1)?.n === slots) break;
        assert.ok(Date.now() < deadline, `waited in vain for ${slots} claimed exports: ${JSON.stringify(byAttempts)}`);
      }
      // Longer than a worker's poll (1 s): a worker whose slots all wait claims nothing more.
      await sleep(1_500);
      assert.deepEqual(
        await claimed(),
        [
          { attempts: 0, n: EXPORTS - slots },
          { attempts: 1, n: slots },
        ],
        'each waiting slot holds one export, and no export is claimed twice',
      );
      await locker.query('ROLLBACK');
      await locker.end();
      locker = undefined;

      // Every export to SUCCESS, polled through both processes.
      const results = new Map<string, Json>();
      for (const deadline = Date.now() + 30_000; results.size < EXPORTS; await sleep(200)) {
        const pending = exportIds.filter((id) => !results.has(id));
        await Promise.all(
          pending.map(async (id, n) => {
            const result = jsonOf(await call(ports[n % 2]!, 'GET', `/v1/exports/data-export/result/${id}`, headers), 200, `export ${id}`);
            if (result.status !== 'PENDING') results.set(id, result);
          }),
        );
        assert.ok(Date.now() < deadline || results.size === EXPORTS, `exports still PENDING after 30 s: ${EXPORTS - results.size}`);
      }
      for (const [id, result] of results) assert.equal(result.status, 'SUCCESS', `export ${id}: ${JSON.stringify(result.warn)}`);
      phase('exports');

      const jobs = await withStore((db) =>
        db.query<{ export_id: string; status: string; attempts: number; lease_token: string | null; files: string[] }>(
          `SELECT export_id, status, attempts, lease_token, files FROM exports WHERE client_id = $1 ORDER BY created_at`,
          [clientId],
        ),
      );
      assert.deepEqual(jobs.map((job) => job.export_id).sort(), [...exportIds].sort(), 'the exports table holds the exports created');
      assert.deepEqual(
        jobs.filter((job) => job.status !== 'SUCCESS' || job.attempts !== 1 || job.lease_token !== null),
        [],
        'every export finished SUCCESS at its first attempt',
      );
      assert.deepEqual(fs.readdirSync(`${exportsDir}/.attempts`), [], 'every attempt published its files, or removed them');
      assert.deepEqual(
        fs.readdirSync(exportsDir).filter((name) => name !== '.attempts').sort(),
        [...exportIds].sort(),
        'one directory of files per export, in the shared EXPORTS_DIR',
      );

      // The download links, from either process's answer, work on either process, and hold the spend as stored.
      const expectedRows = await withStore((db) =>
        db.query<{ platform: string; currency: string; spend: string; impressions: string; clicks: string }>(
          `SELECT platform_name AS platform, spend_currency AS currency, sum(spend)::text AS spend,
                  sum(impressions)::text AS impressions, sum(clicks)::text AS clicks
             FROM spend_hourly WHERE client_id = $1 AND environment = 'production'
            GROUP BY 1, 2 ORDER BY 1, 2`,
          [clientId],
        ),
      );
      let firstCsv: string | undefined;
      for (const id of exportIds) {
        const links = await Promise.all(
          ports.map(async (port) => {
            const result = jsonOf<{ status: string; result: string[] }>(
              await call(port, 'GET', `/v1/exports/data-export/result/${id}`, headers),
              200,
              `export ${id} on port ${port}`,
            );
            assert.equal(result.status, 'SUCCESS');
            assert.equal(result.result.length, 1, JSON.stringify(result));
            return result.result[0]!;
          }),
        );
        for (const link of links) {
          const url = new URL(link);
          for (const port of ports) {
            const file = await call(port, 'GET', url.pathname + url.search, {});
            assert.equal(file.status, 200, `${link} downloaded from port ${port}: ${file.text}`);
            firstCsv ??= file.text;
            assert.equal(file.text, firstCsv, 'every export of the same request over the same data is the same file');
          }
        }
      }
      assert.deepEqual(csvTotals(firstCsv!), expectedRows.map((row) => ({
        platform: row.platform,
        currency: row.currency,
        spend: Number(row.spend),
        impressions: Number(row.impressions),
        clicks: Number(row.clicks),
      })), `the export sums the stored spend: ${firstCsv}`);

      // Each export finished once, by one worker: read their whole logs (they stop first).
      await Promise.all(workers.map((worker) => stop(worker.child)));
      const finishedBy = new Map<string, string[]>();
      const troubles: string[] = [];
      const perWorker = workers.map((worker) => {
        let finished = 0;
        for (const line of worker.lines) {
          const entry = parseLog(line);
          if (!entry) continue;
          if (entry.msg === 'export finished') {
            finished++;
            assert.equal(entry.attempt, 1, line);
            const id = String(entry.export_id);
            finishedBy.set(id, [...(finishedBy.get(id) ?? []), worker.name]);
          } else if (Number(entry.level) >= 40) {
            troubles.push(`${worker.name}: ${line}`);
          }
        }
        return finished;
      });
      assert.deepEqual(troubles, [], 'no export attempt failed, lost its lease or could not be claimed');
      assert.deepEqual([...finishedBy.keys()].sort(), [...exportIds].sort(), 'the workers finished every export, and none other');
      assert.deepEqual(
        [...finishedBy].filter(([, by]) => by.length !== 1),
        [],
        'each export is finished in exactly one log line of one worker',
      );
      assert.equal(perWorker.reduce((sum, n) => sum + n, 0), EXPORTS, 'the API processes ran no export');
      for (const [n, count] of perWorker.entries()) {
        assert.ok(count >= WORKER_SLOTS, `${workers[n]!.name} finished ${count} exports, fewer than its ${WORKER_SLOTS} slots held at once`);
      }
      for (const worker of workers) assert.equal(worker.child.exitCode, 0, `${worker.name} stopped cleanly on SIGTERM`);
      // The API processes logged no error (a retried deadlock or serialization failure is not one).
      const apiErrors = processes
        .slice(0, 2)
        .flatMap((api) => api.lines.filter((line) => Number(parseLog(line)?.level) >= 50).map((line) => `${api.name}: ${line}`));
      assert.deepEqual(apiErrors.slice(0, 5), [], `${apiErrors.length} error lines in the API processes' logs`);
      const apiWarnings = processes.slice(0, 2).flatMap((api) => api.lines.filter((line) => Number(parseLog(line)?.level) === 40));
      phase('export checks');

      t.diagnostic(
        `seed ${SEED}: ${WRITERS} processes × ${CONNECTIONS} connections × ${ROUNDS} batches, ` +
          `${orderWrites.reduce((sum, w) => sum + w.keys.length, 0)} order writes on ${ORDER_COUNT} ids, ` +
          `${spendWrites.reduce((sum, w) => sum + w.keys.length, 0)} spend writes on ${SPEND_KEYS.length} keys`,
      );
      t.diagnostic(`batch pairs of the two processes in flight together: orders ${orderOverlaps}, spend ${spendOverlaps}, any ${overlaps}`);
      t.diagnostic(`warnings logged by the API processes: ${apiWarnings.length}${apiWarnings.length ? ` (first: ${apiWarnings[0]})` : ''}`);
      t.diagnostic(`exports finished per worker: ${workers.map((worker, n) => `${worker.name} ${perWorker[n]}`).join(', ')}`);
      t.diagnostic(`${phase.figures.join(', ')}; total ${((performance.now() - started) / 1000).toFixed(1)} s`);
    } finally {
      const failures: unknown[] = [];
      const attempt = async (work: () => Promise<unknown>) => {
        try {
          await work();
        } catch (error) {
          failures.push(error);
        }
      };
      if (locker) await attempt(() => locker!.end());
      await Promise.all(processes.map((running) => attempt(() => stop(running.child, 5_000))));
      if (store) await attempt(() => store!.cleanup());
      fs.rmSync(exportsDir, { recursive: true, force: true });
      if (failures.length > 0) t.diagnostic(`cleanup failed: ${failures.map(String).join('; ')}`);
    }
  },
);

/** The sums per platform and currency of an export CSV (date, platform, currency, spend, impressions, clicks). */
function csvTotals(csv: string) {
  const [header, ...rows] = csv.split('\r\n').filter((line) => line.length > 0);
  const columns = header!.split(',');
  const at = (row: string[], column: string) => {
    const index = columns.indexOf(column);
    assert.ok(index >= 0, `column ${column} in ${header}`);
    return row[index]!;
  };
  return rows
    .map((line) => line.split(','))
    .map((row) => {
      assert.equal(at(row, 'date'), DAY);
      return {
        platform: at(row, 'platform'),
        currency: at(row, 'currency'),
        spend: Number(at(row, 'spend')),
        impressions: Number(at(row, 'impressions')),
        clicks: Number(at(row, 'clicks')),
      };
    })
    .sort((a, b) => (a.platform + a.currency < b.platform + b.currency ? -1 : 1));
}

/** What the checks of the stored state need: the store, both API processes, and what was written. */
interface Check {
  t: TestContext;
  withStore: <T>(work: (db: Database) => Promise<T>) => Promise<T>;
  ports: readonly number[];
  headers: Record<string, string>;
  clientId: string;
  writes: readonly Write[];
}

async function checkOrders({ t, withStore, ports, headers, clientId, writes }: Check) {
  const candidates = finalCandidates(writes);
  const sentAliases = new Map<number, Set<string>>();
  for (const write of writes) {
    for (const i of write.keys) {
      if (!sentAliases.has(i)) sentAliases.set(i, new Set());
      for (const alias of orderVersion(i, write.vid).alternate_order_ids as Alias[]) sentAliases.get(i)!.add(aliasText(alias));
    }
  }
  const indexOf = new Map(ORDER_IDS.map((id, i) => [id, i]));
  const expectedIds = [...candidates.keys()].map((i) => ORDER_IDS[i]!).sort();

  const { rows, aliasRows, counts } = await withStore(async (db) => ({
    rows: await db.query<{ order_id: string; body: Json; time_of_purchase: string; customer_id: string; currency: string; purchase_total: string }>(
      `SELECT order_id, body, utc_iso(time_of_purchase) AS time_of_purchase, customer_id, currency, purchase_total::text AS purchase_total
         FROM orders WHERE client_id = $1 AND environment = 'production' ORDER BY order_id`,
      [clientId],
    ),
    aliasRows: await db.query<{ order_id: string; alias: string }>(
      `SELECT order_id, alias_type || ' ' || alias_id AS alias FROM order_aliases WHERE client_id = $1 AND environment = 'production'`,
      [clientId],
    ),
    counts: (
      await db.query<{ orders: number; distinct_ids: number; elsewhere: number }>(
        `SELECT (SELECT count(*)::int FROM orders) AS orders,
                (SELECT count(DISTINCT (client_id, environment, order_id))::int FROM orders) AS distinct_ids,
                (SELECT count(*)::int FROM orders WHERE client_id <> $1 OR environment <> 'production')
                  + (SELECT count(*)::int FROM order_aliases WHERE client_id <> $1 OR environment <> 'production') AS elsewhere`,
        [clientId],
      )
    )[0]!,
  }));

  assert.equal(counts.elsewhere, 0, 'nothing reached another client or the UAT environment');
  assert.equal(counts.orders, counts.distinct_ids, 'every order id is stored once');
  assert.deepEqual(rows.map((row) => row.order_id), expectedIds, 'every order id written is stored, once');

  const storedAliases = new Map<string, string[]>();
  for (const { order_id, alias } of aliasRows) storedAliases.set(order_id, [...(storedAliases.get(order_id) ?? []), alias]);
  assert.equal(new Set(aliasRows.map((row) => row.alias)).size, aliasRows.length, 'each alias is stored once');

  const problems: string[] = [];
  const winners = [0, 0];
  const storedVid = new Map<string, number>();
  for (const row of rows) {
    const i = indexOf.get(row.order_id)!;
    const vid = [...candidates.get(i)!].find((candidate) => isDeepStrictEqual(row.body, orderBody(i, candidate)));
    if (vid === undefined) {
      const anyVid = Array.from({ length: WRITERS * CONNECTIONS * ROUNDS }, (_, n) => n + 1).find((candidate) =>
        isDeepStrictEqual(row.body, orderBody(i, candidate)),
      );
      problems.push(
        anyVid === undefined
          ? `${row.order_id}: the stored body is no version sent (a mix of writes?): ${JSON.stringify(row.body)}`
          : `${row.order_id}: stored at v${anyVid}, which a later batch of its connection overwrote (candidates ${[...candidates.get(i)!]})`,
      );
      continue;
    }
    storedVid.set(row.order_id, vid);
    winners[writerOf(vid)]!++;
    const body = row.body;
    if (
      row.time_of_purchase !== body.time_of_purchase ||
      row.customer_id !== body.customer_id ||
      row.currency !== body.currency ||
      Number(row.purchase_total) !== body.purchase_total
    ) {
      problems.push(`${row.order_id}: columns ${JSON.stringify(row)} disagree with the body`);
    }
    const aliases = (storedAliases.get(row.order_id) ?? []).sort();
    if (!isDeepStrictEqual(aliases, [...sentAliases.get(i)!].sort())) {
      problems.push(`${row.order_id}: aliases ${JSON.stringify(aliases)}, sent ${JSON.stringify([...sentAliases.get(i)!].sort())}`);
    }
  }
  assert.deepEqual(problems.slice(0, 10), [], `${problems.length} orders stored wrong`);
  assert.equal(
    aliasRows.length,
    [...sentAliases.values()].reduce((sum, set) => sum + set.size, 0),
    'no alias stored that was not sent',
  );

  // Read through both processes: the same answer, and the store's content.
  const lists = await Promise.all(
    ports.map(async (port) =>
      jsonOf<{ data: Json[]; total_count: number }>(
        await call(port, 'GET', `/v2/orders?start_date=${DAY}&end_date=${DAY}&page_size=1000`, headers),
        200,
        `orders listed on port ${port}`,
      ),
    ),
  );
  assert.deepEqual(lists[0], lists[1], 'both processes list the same orders');
  assert.equal(lists[0]!.total_count, rows.length);
  assert.equal(lists[0]!.data.length, rows.length);
  for (const item of lists[0]!.data) {
    const { alternate_order_ids, created_at: _created, updated_at: _updated, ...body } = item;
    const orderId = String(item.order_id);
    const i = indexOf.get(orderId)!;
    assert.deepEqual(body, orderBody(i, storedVid.get(orderId)!), `${orderId} as listed`);
    assert.deepEqual(
      (alternate_order_ids as Alias[]).map(aliasText).sort(),
      [...sentAliases.get(i)!].sort(),
      `${orderId}: listed aliases`,
    );
  }
  t.diagnostic(`orders stored: ${rows.length}, aliases ${aliasRows.length}; last write from process A: ${winners[0]}, from B: ${winners[1]}`);
}

async function checkSpend({ t, withStore, ports, headers, clientId, writes }: Check) {
  const candidates = finalCandidates(writes);
  const rows = await withStore((db) =>
    db.query<Json & { spend: string; impressions: string; clicks: string }>(
      `SELECT to_char(period AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS hour_start_iso, platform_name, platform_account_id,
              campaign_id, campaign_name, adset_id, adset_name, ad_id, ad_name, spend::text AS spend, spend_currency,
              impressions::text AS impressions, clicks::text AS clicks
         FROM spend_hourly WHERE client_id = $1 AND environment = 'production'`,
      [clientId],
    ),
  );
  const elsewhere = await withStore((db) =>
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM spend_hourly WHERE client_id <> $1 OR environment <> 'production'`, [clientId]),
  );
  assert.equal(elsewhere[0]!.n, 0, 'nothing reached another client or the UAT environment');

  const keyIndex = new Map(SPEND_KEY_TEXTS.map((text, k) => [text, k]));
  const stored: Json[] = rows.map((row) => ({ ...row, spend: Number(row.spend), impressions: Number(row.impressions), clicks: Number(row.clicks) }));
  const keys = stored.map(spendKeyText);
  assert.equal(new Set(keys).size, keys.length, 'every key is stored once');
  assert.deepEqual(
    keys.map((key) => keyIndex.get(key)).sort((a, b) => a! - b!),
    [...candidates.keys()].sort((a, b) => a - b),
    'every key written is stored, and no other',
  );

  const problems: string[] = [];
  const winners = [0, 0];
  const storedVid = new Map<number, number>();
  for (const record of stored) {
    const k = keyIndex.get(spendKeyText(record))!;
    const vid = [...candidates.get(k)!].find((candidate) => isDeepStrictEqual(record, spendVersion(k, candidate)));
    if (vid === undefined) {
      problems.push(`${spendKeyText(record)}: ${JSON.stringify(record)} is not the last version of any connection (${[...candidates.get(k)!]})`);
      continue;
    }
    storedVid.set(k, vid);
    winners[writerOf(vid)]!++;
  }
  assert.deepEqual(problems.slice(0, 10), [], `${problems.length} spend records stored wrong`);

  for (const account of ['act_1', 'act_2']) {
    const lists = await Promise.all(
      ports.map(async (port) =>
        jsonOf<{ data: Json[]; total_count: number }>(
          await call(port, 'GET', `/v1/spend_hourly?platform_account_id=${account}&date=${DAY}&page_size=1000`, headers),
          200,
          `spend of ${account} listed on port ${port}`,
        ),
      ),
    );
    assert.deepEqual(lists[0], lists[1], `both processes list the same spend of ${account}`);
    const listed = lists[0]!.data;
    assert.equal(listed.length, stored.filter((record) => record.platform_account_id === account).length);
    for (const item of listed) {
      const { created_at: _created, updated_at: _updated, ...record } = item;
      const k = keyIndex.get(spendKeyText(record))!;
      assert.deepEqual(record, spendVersion(k, storedVid.get(k)!), `${spendKeyText(record)} as listed`);
    }
  }
  t.diagnostic(`spend records stored: ${stored.length}; last write from process A: ${winners[0]}, from B: ${winners[1]}`);
}
