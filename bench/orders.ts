/**
 * Order ingestion over HTTP: batches of 1,000 realistic orders from several connections for a
 * fixed time, first new orders, then the same orders again (updates), on each store. Then the
 * ceilings, on the same store with the server stopped: (1) the same batches through the data
 * layer directly (no HTTP, no validation), (2) the same orders loaded by the database itself
 * with COPY into a table of the orders' shape (no aliases). Also validation alone (JSON parsing
 * and the schema), and the server's start-up time to /readyz.
 *
 *   npm run bench:orders                      # both stores; PostgreSQL from DATABASE_URL
 *   BENCH_SECONDS=30 BENCH_CONNECTIONS=8 npm run bench:orders
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import secureJson from 'secure-json-parse';
import { openDatabase } from '../src/db/index.js';
import { createValidatorCompiler } from '../src/http/validation.js';
import { createOrderRepository } from '../src/orders/repository.js';
import { aliasesOf } from '../src/orders/routes.js';
import { OrderBatch, type Order } from '../src/orders/schema.js';
import { generateOrders } from './generate.js';
import { benchEachStore, startServer, type Store } from './server.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const BATCH_SIZE = 1000;
const TEMPLATES = 8;

// Distinct batches whose order ids carry a placeholder, so that each batch sent can get new ids
// by a string replacement instead of being generated and encoded during the measurement.
const templates = Array.from({ length: TEMPLATES }, (_, t) => JSON.stringify(generateOrders(42 + t, `__RUN__-${t}`, BATCH_SIZE)));
const batchesWithIds = (prefix: string) => (sequence: number) => templates[sequence % TEMPLATES]!.replaceAll('__RUN__', `${prefix}${sequence}`);
const batchBody = batchesWithIds('r');

interface PhaseResult {
  batches: number;
  seconds: number;
  bytes: number;
  latencies: number[];
}

/** Sends batches with `send` from CONNECTIONS concurrent callers for SECONDS. */
async function runPhase(send: (body: string) => Promise<void>, bodyFor: (sequence: number) => string): Promise<PhaseResult> {
  let next = 0;
  let bytes = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const connection = async () => {
    while (performance.now() < deadline) {
      const body = bodyFor(next++);
      const sent = performance.now();
      await send(body);
      latencies.push(performance.now() - sent);
      bytes += Buffer.byteLength(body);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  return { batches: latencies.length, seconds: (performance.now() - started) / 1000, bytes, latencies };
}

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

/** COPY into a table of the orders' shape (columns, generated columns, indexes): a sender per store. */
async function copySender(store: Store): Promise<{ send: (csv: string) => Promise<void>; close: () => Promise<void> }> {
  const create = 'CREATE TABLE orders_copy (LIKE orders INCLUDING ALL)';
  if (store.env.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: store.env.DATABASE_URL, max: CONNECTIONS });
    await pool.query(create);
    return {
      async send(csv) {
        const client = await pool.connect();
        try {
          await new Promise<void>((resolve, reject) => {
            const stream = client.query(copyFrom(`COPY orders_copy ${COPY_COLUMNS} FROM STDIN WITH (FORMAT csv)`));
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
  await db.exec(create);
  return {
    async send(csv) {
      await db.query(`COPY orders_copy ${COPY_COLUMNS} FROM '/dev/blob' WITH (FORMAT csv)`, [], { blob: new Blob([csv]) });
    },
    close: () => db.close(),
  };
}

/** Batches parsed and validated as the API does, on this process's one core: orders/s. */
function validationAlone(): number {
  const validate = createValidatorCompiler()({ schema: OrderBatch, httpPart: 'body', method: 'POST', url: '/v2/orders' } as never) as (value: unknown) => boolean;
  const rounds = 40;
  const started = performance.now();
  for (let n = 0; n < rounds; n++) {
    if (!validate(secureJson.parse(batchBody(n), null, { protoAction: 'error', constructorAction: 'error' }))) throw new Error('invalid batch');
  }
  return (rounds * BATCH_SIZE) / ((performance.now() - started) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
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

async function benchStore(store: Store): Promise<string[][]> {
  try {
    const server = await startServer(store);
    const clientId = server.headers['data-client-id']!;
    let http: [PhaseResult, PhaseResult];
    let rss: number | undefined;
    try {
      const post = async (body: string) => {
        const response = await fetch(`${server.url}/v2/orders`, { method: 'POST', headers: server.headers, body });
        const text = await response.text();
        if (response.status !== 200) throw new Error(`batch failed with ${response.status}: ${text.slice(0, 500)}`);
      };
      const inserts = await runPhase(post, batchBody);
      // The same orders again: every row exists, so each is an update.
      http = [inserts, await runPhase(post, (sequence) => batchBody(sequence % inserts.batches))];
      rss = server.peakRssMb();
    } finally {
      await server.stop();
    }
    console.log(`${store.name}: started in ${server.startupMs} ms (to /readyz)`);

    // Ceiling 1: the data layer, on new order ids.
    const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL || undefined, dataDir: store.env.DATA_DIR ?? '', databasePoolSize: CONNECTIONS });
    const orders = createOrderRepository(db);
    const tenant = { clientId, environment: 'production' as const, dryRun: false };
    const direct = await runPhase(
      async (body) => void (await orders.upsert(tenant, body, aliasesOf(JSON.parse(body) as Order[]))),
      batchesWithIds('d'),
    );
    await db.close();

    // Ceiling 2: COPY of the same orders.
    const csvTemplates = templates.map((template) => copyRows(template, clientId));
    const copy = await copySender(store);
    const copied = await runPhase(copy.send, (sequence) => csvTemplates[sequence % TEMPLATES]!.replaceAll('__RUN__', `c${sequence}`));
    await copy.close();

    const ordersPerSecond = (result: PhaseResult) => (result.batches * BATCH_SIZE) / result.seconds;
    const [inserts] = http;
    console.log(
      `${store.name}: HTTP inserts are ${Math.round((100 * ordersPerSecond(inserts)) / ordersPerSecond(direct))}% of the data layer ` +
        `and ${Math.round((100 * ordersPerSecond(inserts)) / ordersPerSecond(copied))}% of COPY`,
    );
    return [
      row(store.name, 'HTTP insert', http[0], rss),
      row(store.name, 'HTTP update', http[1], rss),
      row(store.name, 'data layer insert', direct, undefined),
      row(store.name, 'COPY (no aliases)', copied, undefined),
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
await benchEachStore(header, benchStore);
