/**
 * Order ingestion over HTTP: batches of 1,000 realistic orders from several connections for a
 * fixed time, after 3 s of them unmeasured (a warm-up), first new orders, then the same orders
 * again (updates), on each store, and on
 * PostgreSQL (and Citus) once more with two API processes (`WEB_CONCURRENCY=2`). Then the
 * ceilings, on the same store with the server stopped: (1) the same batches through the data
 * layer directly (no HTTP, no validation), (2) the same orders loaded by the database itself
 * with COPY into a table of the orders' shape (no aliases), (3) the same batches upserted as JSON
 * by one plain statement into such a table: the order writes' target is a share of that one.
 * Also validation alone (JSON parsing and the schema), and the server's start-up time to /readyz.
 * Then, on PostgreSQL (and Citus), a new database loaded with the attribution benchmark's data set
 * (1,000,000 orders, 5,500,000 touchpoints: bench/seed.ts), and the HTTP inserts and the plain
 * upsert (into a copy of its orders) measured again there.
 *
 *   npm run bench:orders                      # both stores; PostgreSQL from DATABASE_URL
 *   BENCH_SECONDS=30 BENCH_CONNECTIONS=8 npm run bench:orders
 *   BENCH_RUNS=3 npm run bench:orders         # three runs, and the median of each figure
 *   CITUS_URL=postgres://…@coordinator/db npm run bench:orders   # also on a Citus coordinator
 *   BENCH_ATTRIBUTION_ORDERS=100000 BENCH_ATTRIBUTION_VISITS=500000 npm run bench:orders   # a smaller loaded store
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import secureJson from 'secure-json-parse';
import { openDatabase } from '../src/db/index.js';
import { createValidatorCompiler } from '../src/http/request-validator.js';
import { createOrderRepository } from '../src/orders/repository.js';
import { aliasesOf } from '../src/orders/routes.js';
import { OrderBatch, type Order } from '../src/orders/schema.js';
import { BATCH_SIZE, CONNECTIONS, batchesWithIds, encodedBatchesWithIds, orderPoster, ordersPerSecond, percentile, runPhase, templates, type PhaseResult } from './load.js';
import { ORDERS, VIEWS, VISITS, loadDataSet, thousands } from './seed.js';
import { anotherStore, benchEachStore, startServer, type Store } from './server.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const WARM_UP_SECONDS = 3;
const batchBody = batchesWithIds('r');

/** The orders of a batch as COPY rows (CSV) of the orders table, ids still carrying __RUN__. */
function copyRows(batchJson: string, clientId: string): string {
  const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
  const now = new Date().toISOString();
  return (JSON.parse(batchJson) as Record<string, unknown>[])
    .map(({ alternate_order_ids: _, ...order }) =>
      [clientId, 'production', quote(String(order.order_id)), String(order.time_of_purchase), quote(JSON.stringify(order)), now, now].join(','),
    )
    .join('\n');
}
const COPY_COLUMNS = '(client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)';

/** Statements and COPY straight to the store, past the service: how the ceilings are measured. */
interface RawStore {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  copy(sql: string, csv: string): Promise<void>;
  close(): Promise<void>;
}

async function rawStore(store: Store): Promise<RawStore> {
  if (store.env.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: store.env.DATABASE_URL, max: CONNECTIONS });
    // end() resolves before its connections have closed; the store's DROP … WITH (FORCE) right
    // after may end one still closing, whose error would otherwise stop the benchmark.
    pool.on('error', () => {});
    return {
      query: (sql, params) => pool.query(sql, params),
      async copy(sql, csv) {
        const client = await pool.connect();
        try {
          await new Promise<void>((resolve, reject) => {
            const stream = client.query(copyFrom(`${sql} FROM STDIN WITH (FORMAT csv)`));
            stream.on('finish', resolve).on('error', reject);
            stream.end(csv);
          });
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const db = new PGlite(`${store.env.DATA_DIR}/pglite`);
  return {
    query: (sql, params) => db.query(sql, params),
    copy: async (sql, csv) => void (await db.query(`${sql} FROM '/dev/blob' WITH (FORMAT csv)`, [], { blob: new Blob([csv]) })),
    close: () => db.close(),
  };
}

/**
 * A table of the orders' shape (columns, generated columns, indexes), placed as orders is on
 * Citus: its rows go to the client's shard, through the coordinator.
 */
async function createTableLikeOrders(raw: RawStore, store: Store, table: string) {
  await raw.query(`CREATE TABLE ${table} (LIKE orders INCLUDING ALL)`);
  if (store.name === 'citus') await raw.query(`SELECT create_distributed_table('${table}', 'client_id', colocate_with => 'orders')`);
}

/** Ceiling 2: the orders loaded by the database itself with COPY (no aliases, no upsert). */
async function copySender(raw: RawStore, store: Store) {
  await createTableLikeOrders(raw, store, 'orders_copy');
  return (csv: string) => raw.copy(`COPY orders_copy ${COPY_COLUMNS}`, csv);
}

/**
 * Ceiling 3: the batch as sent, upserted as JSON by one plain statement into a table of the
 * orders' shape: what an order write would cost with nothing but storing itself (no validation,
 * aliases, change notes or locks taken ahead). `withStoredOrders`: the table holds a copy of the
 * store's orders first, as the orders table does.
 */
async function plainUpsertSender(raw: RawStore, store: Store, clientId: string, { withStoredOrders = false } = {}) {
  await createTableLikeOrders(raw, store, 'orders_plain');
  if (withStoredOrders) {
    await raw.query(`INSERT INTO orders_plain ${COPY_COLUMNS} SELECT ${COPY_COLUMNS.slice(1, -1)} FROM orders`);
    await raw.query('ANALYZE orders_plain');
  }
  return async (batchJson: string) =>
    void (await raw.query(
      `INSERT INTO orders_plain (client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)
       SELECT $1, 'production', b->>'order_id', (b->>'time_of_purchase')::timestamptz, b, now(), now()
         FROM jsonb_array_elements($2::jsonb) AS b ORDER BY 3
       ON CONFLICT (client_id, environment, order_id) DO UPDATE SET time_of_purchase = excluded.time_of_purchase, body = excluded.body, updated_at = excluded.updated_at`,
      [clientId, batchJson],
    ));
}

/** Batches parsed and validated as the API does, on this process's one core: orders/s. */
function validationAlone(): number {
  const validate = createValidatorCompiler()({ schema: OrderBatch, httpPart: 'body', method: 'POST', url: '/v2/orders' } as never) as (value: unknown) => unknown;
  const rounds = 40;
  const started = performance.now();
  for (let n = 0; n < rounds; n++) {
    if (validate(secureJson.parse(batchBody(n), null, { protoAction: 'error', constructorAction: 'error' })) !== true) throw new Error('invalid batch');
  }
  return (rounds * BATCH_SIZE) / ((performance.now() - started) / 1000);
}

function row(store: string, phase: string, result: PhaseResult, rss: number | undefined): string[] {
  const sorted = [...result.latencies].sort((a, b) => a - b);
  return [
    store,
    phase,
    String(result.batches),
    Math.round((result.batches * BATCH_SIZE) / result.seconds).toLocaleString('en-US'),
    (result.bytes / 1e6 / result.seconds).toFixed(1),
    percentile(sorted, 50).toFixed(0),
    percentile(sorted, 99).toFixed(0),
    rss === undefined ? '?' : String(rss),
  ];
}

/** Inserts, then the same orders again (updates), over HTTP to a server of `processes` API processes. */
async function httpPhases(store: Store, processes: number) {
  const server = await startServer(store, processes > 1 ? { WEB_CONCURRENCY: String(processes) } : {});
  try {
    const post = orderPoster(server);
    // Unmeasured: the first requests of a process compile its schemas and warm V8 and the
    // database's caches (the slowest batches of a cold run were all among its first 25).
    await runPhase(post, encodedBatchesWithIds(`w${processes}-`), WARM_UP_SECONDS);
    const bodies = encodedBatchesWithIds(`h${processes}-`);
    const inserts = await runPhase(post, bodies, SECONDS);
    // The same orders again: every row exists, so each is an update.
    const updates = await runPhase(post, (sequence) => bodies(sequence % inserts.batches), SECONDS);
    return { server, inserts, updates, rss: server.peakRssMb() };
  } finally {
    await server.stop();
  }
}

async function onAnotherStore<T>(store: Store, work: (fresh: Store) => Promise<T>): Promise<T> {
  const fresh = await anotherStore(store);
  try {
    return await work(fresh);
  } finally {
    await fresh.drop();
  }
}

/**
 * HTTP inserts and their plain upsert again, on a store already holding the attribution
 * benchmark's data set (bench/seed.ts), loaded while no server runs: what a batch costs where
 * indexes and the tables its writes read are large.
 */
async function loadedStorePhases(store: Store): Promise<string[][]> {
  const first = await startServer(store);
  await first.stop();
  const clientId = first.headers['data-client-id']!;
  console.log(`${store.name}: loading ${thousands(ORDERS)} orders and ${thousands(VISITS + VIEWS)} touchpoints (set-based SQL)`);
  console.log(`${store.name}: loaded in ${(await loadDataSet(store, clientId)).toFixed(0)} s`);
  const server = await startServer(store);
  server.headers = first.headers; // the client of the first start holds the data
  let inserts: PhaseResult;
  let rss: number | undefined;
  try {
    const post = orderPoster(server);
    await runPhase(post, encodedBatchesWithIds('lw-'), WARM_UP_SECONDS);
    inserts = await runPhase(post, encodedBatchesWithIds('lh-'), SECONDS);
    rss = server.peakRssMb();
  } finally {
    await server.stop();
  }
  const raw = await rawStore(store);
  let plain: PhaseResult;
  try {
    plain = await runPhase(await plainUpsertSender(raw, store, clientId, { withStoredOrders: true }), batchesWithIds('lp'), SECONDS);
  } finally {
    await raw.close();
  }
  console.log(`${store.name}, loaded store: HTTP inserts are ${(ordersPerSecond(inserts) / ordersPerSecond(plain)).toFixed(2)} of the plain upsert`);
  return [row(store.name, 'HTTP insert, loaded store', inserts, rss), row(store.name, 'plain upsert, loaded store (ceiling)', plain, undefined)];
}

async function benchStore(store: Store): Promise<string[][]> {
  try {
    const single = await httpPhases(store, 1);
    const clientId = single.server.headers['data-client-id']!;
    console.log(`${store.name}: started in ${single.server.startupMs} ms (to /readyz)`);
    // Several API processes share one database, which the embedded store cannot. A new database,
    // so that both server configurations start from empty tables.
    const two = store.name !== 'pglite' ? await onAnotherStore(store, (fresh) => httpPhases(fresh, 2)) : undefined;

    // Ceiling 1: the data layer, on new order ids.
    const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL || undefined, dataDir: store.env.DATA_DIR ?? '', databasePoolSize: CONNECTIONS });
    const orders = createOrderRepository(db);
    const tenant = { clientId, environment: 'production' as const, dryRun: false };
    const direct = await runPhase(
      async (body) => {
        const batch = JSON.parse(body) as Order[];
        await orders.upsert(tenant, body, batch.map((order) => order.order_id), aliasesOf(batch));
      },
      batchesWithIds('d'),
      SECONDS,
    );
    await db.close();

    // Ceilings 2 and 3: COPY of the same orders, and their plain upsert.
    const raw = await rawStore(store);
    const copied = await runPhase(await copySender(raw, store), batchesWithIds('c', templates.map((template) => copyRows(template, clientId))), SECONDS);
    const plain = await runPhase(await plainUpsertSender(raw, store, clientId), batchesWithIds('p'), SECONDS);
    await raw.close();

    const share = (ceiling: PhaseResult) => (ordersPerSecond(single.inserts) / ordersPerSecond(ceiling)).toFixed(2);
    console.log(`${store.name}: HTTP inserts are ${share(plain)} of the plain upsert, ${share(direct)} of the data layer and ${share(copied)} of COPY`);
    return [
      row(store.name, 'HTTP insert', single.inserts, single.rss),
      row(store.name, 'HTTP update', single.updates, single.rss),
      ...(two ? [row(store.name, 'HTTP insert, 2 processes', two.inserts, two.rss), row(store.name, 'HTTP update, 2 processes', two.updates, two.rss)] : []),
      row(store.name, 'data layer insert', direct, undefined),
      row(store.name, 'plain upsert (ceiling)', plain, undefined),
      row(store.name, 'COPY (no aliases)', copied, undefined),
      ...(store.name !== 'pglite' ? await onAnotherStore(store, loadedStorePhases) : []),
    ];
  } finally {
    await store.drop();
  }
}

const header = ['store', 'phase', 'batches', 'orders/s', 'MB/s', 'p50 ms', 'p99 ms', 'peak RSS MB'];
console.log(
  `order upsert over HTTP: ${BATCH_SIZE} orders a batch (${(Buffer.byteLength(templates[0]!) / BATCH_SIZE).toFixed(0)} bytes an order), ` +
    `${CONNECTIONS} connections, ${SECONDS} s a phase`,
);
console.log(`validation alone (JSON parsing and the schema): ${Math.round(validationAlone()).toLocaleString('en-US')} orders/s on one core`);
await benchEachStore(header, 2, benchStore);
