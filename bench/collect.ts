/**
 * The pixel's collector under load: POST /v1/collect from BENCH_SENDERS (64) concurrent senders,
 * as many browsers, for a fixed time, as text/plain like sendBeacon, one event a request (a
 * page's beacon) and COLLECT_BATCH events a request (about the most a beacon of realistic events
 * holds under the 16 KB limit), on each store, with the collector's rate limits off. Then, with
 * the server stopped, the ceiling on the same store: events derived as the route derives them,
 * through ingest() (the touchpoint repository's upsert and link) from this process, from
 * BENCH_CONNECTIONS (4) callers, 1, COLLECT_BATCH and GROUP events a call (no HTTP, no
 * validation, no client lookup). The server's CPU time over each HTTP phase (Linux) tells what its
 * one process would take with a core of its own, the senders and the database elsewhere.
 *
 * Nine events in ten are page views (visits with the generator's mix of ad, e-mail, search and
 * direct arrivals), one in twenty an identify, one in twenty a purchase.
 *
 *   npm run bench:collect                     # both stores; PostgreSQL from DATABASE_URL
 *   BENCH_SECONDS=30 BENCH_CONNECTIONS=16 npm run bench:collect
 */
import http from 'node:http';
import type { Tenant } from '../src/auth/tenant.js';
import { deriveVisits, ingest, type Link, type Visit } from '../src/collect/ingest.js';
import { COLLECT_BODY_LIMIT_BYTES } from '../src/collect/schema.js';
import { openDatabase } from '../src/db/index.js';
import { generateVisit, random } from './generate.js';
import { CONNECTIONS, percentile, runPhase, type PhaseResult } from './load.js';
import { benchEachStore, startServer, type Store } from './server.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SENDERS = Number(process.env.BENCH_SENDERS ?? 64);
const COLLECT_BATCH = 40;
/** A call as large as the collector's groups of concurrent requests come to under load. */
const GROUP = 400;
const TEMPLATES = 64;
/** The events/s the collector must take on one process. */
const TARGET = 10_000;

type Event = Record<string, string>;

/** Events whose ids carry __RUN__, replaced per request so that every request brings new events. */
function events(seed: number, count: number): Event[] {
  const rand = random(seed);
  const occurred_at = new Date().toISOString();
  return Array.from({ length: count }, (_, n) => {
    const common = { event_id: `__RUN__-${n}`, occurred_at, visitor_id: `__RUN__-v${n}` };
    const kind = rand();
    if (kind < 0.05) return { ...common, type: 'identify', customer_id: `__RUN__-c${n}` };
    if (kind < 0.1) return { ...common, type: 'purchase', order_id: `__RUN__-o${n}` };
    const { landing_url, referrer } = generateVisit(rand, `click-${seed}-${n}`) as { landing_url: string; referrer?: string };
    return { ...common, type: 'page', url: landing_url, ...(referrer && { referrer }) };
  });
}

/** Request bodies of `perRequest` events for `clientId`, one per sequence number. */
function bodies(clientId: string, perRequest: number, prefix: string) {
  const templates = Array.from({ length: TEMPLATES }, (_, t) => JSON.stringify({ client_id: clientId, events: events(7 + t, perRequest) }));
  return (sequence: number) => templates[sequence % TEMPLATES]!.replaceAll('__RUN__', `${prefix}${sequence}`);
}

/** What the route stores of a request body: its visits derived (no source mapping) and its links. */
function stored(body: string): { visits: Visit[]; links: Link[] } {
  const visits: Visit[] = [];
  const links: Link[] = [];
  for (const event of (JSON.parse(body) as { events: Event[] }).events) {
    const { event_id, type, occurred_at, visitor_id, url, referrer, customer_id, order_id } = event as Event;
    if (type === 'page') visits.push({ input: { touchpoint_id: event_id!, occurred_at: occurred_at!, type: 'visit', visitor_id, landing_url: url, referrer }, urlLoc: '' });
    else links.push(type === 'identify' ? { visitor_id: visitor_id!, customer_id: customer_id! } : { visitor_id: visitor_id!, order_id: order_id! });
  }
  return { visits, links };
}

const rate = ([perRequest, result]: [number, PhaseResult]) => (result.batches * perRequest) / result.seconds;

interface HttpPhase {
  phase: [number, PhaseResult];
  /** The server's CPU seconds during the phase. */
  cpu: number;
}

function row(store: string, phase: string, [perRequest, result]: [number, PhaseResult], connections: number, ceiling?: number, cpu?: number): string[] {
  const sorted = [...result.latencies].sort((a, b) => a - b);
  const events = rate([perRequest, result]);
  const cpuShare = cpu === undefined ? undefined : cpu / result.seconds;
  return [
    store,
    phase,
    String(perRequest),
    String(connections),
    Math.round(events).toLocaleString('en-US'),
    Math.round(result.batches / result.seconds).toLocaleString('en-US'),
    percentile(sorted, 50).toFixed(1),
    percentile(sorted, 99).toFixed(1),
    ceiling ? `${Math.round((100 * events) / ceiling)}%` : '',
    cpuShare === undefined || Number.isNaN(cpuShare) ? '' : `${Math.round(100 * cpuShare)}%`,
    cpuShare === undefined || Number.isNaN(cpuShare) ? '' : Math.round(events / cpuShare).toLocaleString('en-US'),
    events >= TARGET ? 'yes' : 'no',
  ];
}

async function benchStore(store: Store): Promise<string[][]> {
  try {
    const server = await startServer(store, { COLLECT_REQUESTS_PER_MINUTE: '0', COLLECT_EVENTS_PER_MINUTE: '0' });
    const clientId = server.headers['data-client-id']!;
    // node:http rather than fetch: at thousands of small requests a second, fetch costs the
    // sending process more CPU than the server spends answering, on the same two cores.
    const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });
    const beacon = (body: string) =>
      new Promise<void>((resolve, reject) => {
        const headers = { 'content-type': 'text/plain;charset=UTF-8', 'content-length': Buffer.byteLength(body), origin: 'https://shop.example' };
        const request = http.request(`${server.url}/v1/collect`, { method: 'POST', agent, headers }, (response) => {
          let text = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          response.on('end', () => (response.statusCode === 204 ? resolve() : reject(new Error(`collect failed with ${response.statusCode}: ${text.slice(0, 500)}`))));
        });
        request.on('error', reject).end(body);
      });
    const overHttp: HttpPhase[] = [];
    try {
      for (const perRequest of [1, COLLECT_BATCH]) {
        const requests = bodies(clientId, perRequest, `h${perRequest}-`);
        const largest = Math.max(...Array.from({ length: TEMPLATES }, (_, n) => Buffer.byteLength(requests(n))));
        if (largest > COLLECT_BODY_LIMIT_BYTES) throw new Error(`a request of ${perRequest} events is ${largest} bytes: over the collector's limit`);
        const cpuBefore = server.cpuSeconds();
        const result = await runPhase(beacon, requests, SECONDS, SENDERS);
        overHttp.push({ phase: [perRequest, result], cpu: server.cpuSeconds() - cpuBefore });
      }
    } finally {
      agent.destroy();
      await server.stop();
    }

    // The ceiling: what the route stores, through the repository from this process.
    const db = await openDatabase({ databaseUrl: store.env.DATABASE_URL || undefined, dataDir: store.env.DATA_DIR ?? '', databasePoolSize: CONNECTIONS });
    const tenant: Tenant = { clientId, environment: 'production', dryRun: false };
    const direct: [number, PhaseResult][] = [];
    try {
      for (const perRequest of [1, COLLECT_BATCH, GROUP]) {
        const write = async (body: string) => {
          const { visits, links } = stored(body);
          await ingest(db, tenant, deriveVisits(visits, {}), links, new Date());
        };
        direct.push([perRequest, await runPhase(write, bodies(clientId, perRequest, `d${perRequest}-`), SECONDS)]);
      }
    } finally {
      await db.close();
    }
    // The ceiling is the data layer's best rate, whatever the size of its calls.
    const ceiling = Math.max(...direct.map(rate));
    return [
      ...overHttp.map(({ phase, cpu }) => row(store.name, 'HTTP /v1/collect', phase, SENDERS, ceiling, cpu)),
      ...direct.map((phase) => row(store.name, 'data layer', phase, CONNECTIONS)),
    ];
  } finally {
    await store.drop();
  }
}

console.log(`POST /v1/collect: ${SECONDS} s a phase, target ${TARGET.toLocaleString('en-US')} events/s on one process`);
await benchEachStore(
  ['store', 'phase', 'events/call', 'senders', 'events/s', 'calls/s', 'p50 ms', 'p99 ms', 'of ceiling', 'server CPU', 'events/CPU-s', `≥ ${TARGET / 1000}k/s`],
  3,
  benchStore,
);
