/**
 * Order ingestion over HTTP: batches of 1,000 realistic orders from several connections for a
 * fixed time, first new orders, then the same orders again (updates), on each store.
 *
 *   npm run bench:orders                      # both stores; PostgreSQL from DATABASE_URL
 *   BENCH_SECONDS=30 BENCH_CONNECTIONS=8 npm run bench:orders
 */
import { generateOrders } from './generate.js';
import { benchEachStore, startServer, type RunningServer, type Store } from './server.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const BATCH_SIZE = 1000;
const TEMPLATES = 8;

// Distinct batches whose order ids carry a placeholder, so that each batch sent can get new ids
// by a string replacement instead of being generated and encoded during the measurement.
const templates = Array.from({ length: TEMPLATES }, (_, t) => JSON.stringify(generateOrders(42 + t, `__RUN__-${t}`, BATCH_SIZE)));
const batchBody = (sequence: number) => templates[sequence % TEMPLATES]!.replaceAll('__RUN__', `r${sequence}`);

interface PhaseResult {
  batches: number;
  seconds: number;
  bytes: number;
  latencies: number[];
}

async function runPhase(server: RunningServer, bodyFor: (sequence: number) => string): Promise<PhaseResult> {
  let next = 0;
  let bytes = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const connection = async () => {
    while (performance.now() < deadline) {
      const body = bodyFor(next++);
      const sent = performance.now();
      const response = await fetch(`${server.url}/v2/orders`, { method: 'POST', headers: server.headers, body });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`batch failed with ${response.status}: ${text.slice(0, 500)}`);
      latencies.push(performance.now() - sent);
      bytes += Buffer.byteLength(body);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  return { batches: latencies.length, seconds: (performance.now() - started) / 1000, bytes, latencies };
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
  const server = await startServer(store);
  try {
    const inserts = await runPhase(server, batchBody);
    // The same orders again: every row exists, so each is an update.
    const updates = await runPhase(server, (sequence) => batchBody(sequence % inserts.batches));
    return [row(store.name, 'insert', inserts, server.peakRssMb()), row(store.name, 'update', updates, server.peakRssMb())];
  } finally {
    await server.stop();
    await store.drop();
  }
}

const header = ['store', 'phase', 'batches', 'orders/s', 'MB/s', 'p50 ms', 'p99 ms', 'peak RSS MB'];
console.log(
  `order upsert over HTTP: ${BATCH_SIZE} orders a batch (${(Buffer.byteLength(templates[0]!) / BATCH_SIZE).toFixed(0)} bytes an order), ` +
    `${CONNECTIONS} connections, ${SECONDS} s a phase`,
);
await benchEachStore(header, benchStore);
