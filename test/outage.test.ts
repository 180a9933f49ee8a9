import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { freePort } from '../bench/server.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { isDatabaseUnavailable } from '../src/db/errors.js';
import { openPostgres } from '../src/db/postgres.js';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  createTestDatabase,
  hourlySpend,
  listOrders,
  minimalOrder,
  pgliteEnv,
  postOrders,
  serverUrl,
  startCli,
  startService,
  tempDir,
  type TestApp,
  type TestClient,
} from './helpers.js';

// Hardening: what the service does when its database goes away, and when it has more work than
// its event loop can do.

const postgresOnly = !serverUrl && 'PostgreSQL only: the embedded store lives in the process and cannot be cut off';

/**
 * A TCP relay to PostgreSQL that can be stopped (listener closed, every connection destroyed:
 * the server is down) and started again on the same port, or frozen (nothing passes any more,
 * new connections are accepted and never answered: a network partition).
 */
class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private frozen = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  private track(socket: net.Socket) {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  async start(port = this.port): Promise<void> {
    this.frozen = false;
    const server = net.createServer((downstream) => {
      this.track(downstream);
      downstream.on('error', () => downstream.destroy());
      if (this.frozen) return;
      const upstream = net.connect(this.target);
      this.track(upstream);
      const pair: [net.Socket, net.Socket] = [downstream, upstream];
      this.pairs.add(pair);
      for (const socket of pair) {
        socket.on('error', () => pair.forEach((end) => end.destroy()));
        socket.on('close', () => {
          this.pairs.delete(pair);
          pair.forEach((end) => end.destroy());
        });
      }
      downstream.pipe(upstream).pipe(downstream);
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  freeze() {
    this.frozen = true;
    for (const [downstream, upstream] of this.pairs) {
      downstream.unpipe(upstream);
      upstream.unpipe(downstream);
      downstream.pause();
      upstream.pause();
    }
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

/** `promise`, or a failure naming `what` once `ms` have passed: no request may hang. */
async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 100 ms until it holds; the time it took. */
async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`waited ${ms} ms in vain for ${what}`);
    await sleep(100);
  }
}

const spendHour = (campaignId: string) => ({ data: [hourlySpend(campaignId)] });

const WRONG_KEY = `trb_${'x'.repeat(43)}`;

/** The requests the outage test sends, by name, each needing the database (if only to authenticate). */
function requests(app: TestApp, client: TestClient, round: string) {
  const wrongKey = { ...client.headers, authorization: WRONG_KEY };
  return {
    'POST /v2/orders': () => postOrders(app, client, [minimalOrder(`order-${round}`)]),
    'GET /v2/orders': () => listOrders(app, client, { start_date: '2024-03-08', end_date: '2024-03-08' }),
    'POST /v1/spend_hourly': () =>
      app.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: spendHour(`campaign-${round}`) }),
    'GET /v1/exports/metrics': () => app.inject({ method: 'GET', url: '/v1/exports/metrics', headers: client.headers }),
    'POST /admin/v1/clients': () =>
      app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: `c-${round}` } }),
    'GET /v2/orders, wrong key': () => listOrders(app, { headers: wrongKey }, { start_date: '2024-03-08', end_date: '2024-03-08' }),
  } satisfies Record<string, () => Promise<LightMyRequestResponse>>;
}

/** A 503 for a database that cannot be reached: the envelope, and when to come back. */
function assertUnavailable(response: LightMyRequestResponse, what: string) {
  assert.notEqual(response.statusCode, 500, `${what}: ${response.body}`);
  assertErrorEnvelope(response, 503);
  assert.match(String(response.headers['retry-after']), /^[1-9][0-9]*$/, `${what} has no Retry-After`);
}

async function timed(what: string, send: () => Promise<LightMyRequestResponse>) {
  const started = performance.now();
  const response = await within(what, 10_000, send());
  return { response, ms: Math.round(performance.now() - started) };
}

const cleanups = new WeakMap<TestContext, (() => unknown)[]>();

/** Runs `cleanup` when the test ends, before what was deferred earlier (t.after runs its hooks first in, first out). */
function defer(t: TestContext, cleanup: () => unknown) {
  let stack = cleanups.get(t);
  if (!stack) {
    const hooks: (() => unknown)[] = [];
    cleanups.set(t, (stack = hooks));
    t.after(async () => {
      for (const hook of hooks.reverse()) await hook();
    });
  }
  stack.push(cleanup);
}

/** An app over `connectionString`, as the server builds it, with a pool of 4. */
async function appOver(t: TestContext, connectionString: string, env: NodeJS.ProcessEnv = {}) {
  const config = loadConfig({ ADMIN_TOKEN, OVERLOAD_EVENT_LOOP_DELAY_MS: '0', AUTH_FAILURES_PER_MINUTE: '3', ...env });
  const db = openPostgres({ connectionString, poolSize: 4, queryTimeoutMs: config.databaseQueryTimeoutMs });
  defer(t, () => db.close());
  const app = await buildApp({ config, db, environment: 'production' });
  defer(t, () => app.close());
  return app;
}

/** A fresh test database, and a stopped proxy to it whose URL the app is given. */
async function databaseBehindProxy(t: TestContext) {
  const store = await createTestDatabase();
  defer(t, () => store.drop());
  const real = new URL(store.url!);
  const proxy = new TcpProxy({ host: real.hostname, port: Number(real.port || 5432) });
  defer(t, () => proxy.stop());
  const url = () => {
    const viaProxy = new URL(real);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    return viaProxy.toString();
  };
  return { store, proxy, url };
}

async function createClient(app: TestApp): Promise<TestClient> {
  const created = await app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'Acme' } });
  assert.equal(created.statusCode, 201, created.body);
  const body = created.json() as Omit<TestClient, 'headers'>;
  return { ...body, headers: { authorization: body.api_key, 'data-client-id': body.client_id } };
}

async function orderIds(app: TestApp, client: TestClient): Promise<string[]> {
  const response = await listOrders(app, client, { start_date: '2024-03-08', end_date: '2024-03-08' });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { data: { order_id: string }[] }).data.map((order) => order.order_id).sort();
}

test('database outage: every request gets 503 with Retry-After, /readyz says 503, and the service recovers by itself', { skip: postgresOnly }, async (t) => {
  const { proxy, url } = await databaseBehindProxy(t);
  await proxy.start();
  const app = await appOver(t, url());
  const client = await createClient(app);
  assert.equal((await postOrders(app, client, [minimalOrder('before')])).statusCode, 200);
  // The pool now holds open connections, which the outage cuts.
  assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200);

  await proxy.stop();
  const timings: Record<string, number> = {};
  for (const [what, send] of Object.entries(requests(app, client, 'outage'))) {
    // Twice: the first may meet a pooled connection that died, the second finds none to open.
    for (const attempt of [1, 2]) {
      const { response, ms } = await timed(what, send);
      assertUnavailable(response, `${what} (attempt ${attempt})`);
      timings[`${what} #${attempt}`] = ms;
    }
  }
  const ready = await timed('/readyz', () => app.inject({ url: '/readyz' }));
  assertUnavailable(ready.response, '/readyz');
  timings['GET /readyz'] = ready.ms;
  assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness does not depend on the database');
  assertErrorEnvelope(await app.inject({ url: '/v1/exports/metrics' }), 401); // no credentials: nothing to look up
  t.diagnostic(`answers during the outage (ms): ${JSON.stringify(timings)}`);
  for (const [what, ms] of Object.entries(timings)) assert.ok(ms < 6_000, `${what} took ${ms} ms`);

  await proxy.start();
  const recovery = await until('/readyz to say 200', 15_000, async () => (await within('/readyz', 10_000, app.inject({ url: '/readyz' }))).statusCode === 200);
  t.diagnostic(`/readyz said 200 again ${recovery} ms after the database came back`);
  // A wrong key now gets 401, not 429: of the outage, the request without credentials (401) was
  // counted as a failed authentication, the two wrong-key 503s were not (the limit is 3).
  const expected: Record<string, number> = { 'POST /v1/spend_hourly': 201, 'POST /admin/v1/clients': 201, 'GET /v2/orders, wrong key': 401 };
  for (const [what, send] of Object.entries(requests(app, client, 'after'))) {
    const { response } = await timed(what, send);
    assert.equal(response.statusCode, expected[what] ?? 200, `${what}: ${response.body}`);
  }
  assert.deepEqual(await orderIds(app, client), ['before', 'order-after'], 'nothing of the outage was stored');
});

test('database outage in the middle of a transaction: the request gets 503 and nothing of it is stored', { skip: postgresOnly }, async (t) => {
  const { store, proxy, url } = await databaseBehindProxy(t);
  await proxy.start();
  const app = await appOver(t, url());
  const client = await createClient(app);

  // The orders table stays locked, so the order write waits inside its transaction.
  const locker = new pg.Client({ connectionString: store.url });
  await locker.connect();
  defer(t, () => locker.end());
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE orders IN ACCESS EXCLUSIVE MODE');
  const pending = within('the order write cut off by the outage', 10_000, postOrders(app, client, [minimalOrder('in-flight')]));
  await until('the order write to wait for the lock', 5_000, async () => {
    const [row] = (await locker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows;
    return row.n > 0;
  });

  const cut = performance.now();
  await proxy.stop();
  const response = await pending;
  assertUnavailable(response, 'the order write cut off by the outage');
  t.diagnostic(`the write cut off mid-transaction answered 503 ${Math.round(performance.now() - cut)} ms after the cut`);
  await locker.query('ROLLBACK');

  await proxy.start();
  await until('/readyz to say 200', 15_000, async () => (await app.inject({ url: '/readyz' })).statusCode === 200);
  assert.deepEqual(await orderIds(app, client), [], 'the transaction was rolled back');
  assert.equal((await postOrders(app, client, [minimalOrder('in-flight')])).statusCode, 200, 'sent again, it is stored');
  assert.deepEqual(await orderIds(app, client), ['in-flight']);
});

test('database unreachable from the start: /readyz and authenticated requests get 503, and it recovers once the database listens', { skip: postgresOnly }, async (t) => {
  const { proxy, url } = await databaseBehindProxy(t);
  proxy.port = await freePort(); // nothing listens there
  // Building the app reads the export signing secret from the store unless it is configured (the
  // server could not start anyway: it migrates first); it may refuse, quickly, but not hang.
  const built = await within(
    'building the app',
    10_000,
    appOver(t, url()).then(
      () => 'is built',
      (error: unknown) => {
        assert.ok(isDatabaseUnavailable(error), String(error));
        return `fails (${(error as { code?: string }).code})`;
      },
    ),
  );
  t.diagnostic(`without EXPORT_SIGNING_SECRET, the app ${built}`);
  const app = await appOver(t, url(), { EXPORT_SIGNING_SECRET: 's'.repeat(32) });

  const ready = await timed('/readyz', () => app.inject({ url: '/readyz' }));
  assertUnavailable(ready.response, '/readyz');
  const fakeClient = { headers: { authorization: WRONG_KEY, 'data-client-id': '6f1c2a3b-0000-4000-8000-000000000001' } };
  const listed = await timed('GET /v2/orders', () => listOrders(app, fakeClient, { start_date: '2024-03-08', end_date: '2024-03-08' }));
  assertUnavailable(listed.response, 'GET /v2/orders');
  const admin = await timed('POST /admin/v1/clients', () =>
    app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'Acme' } }),
  );
  assertUnavailable(admin.response, 'POST /admin/v1/clients');
  t.diagnostic(`answers (ms): /readyz ${ready.ms}, GET /v2/orders ${listed.ms}, POST /admin/v1/clients ${admin.ms}`);

  await proxy.start(); // the database appears on that port
  const recovery = await until('/readyz to say 200', 15_000, async () => (await app.inject({ url: '/readyz' })).statusCode === 200);
  t.diagnostic(`/readyz said 200 ${recovery} ms after the database appeared`);
  const client = await createClient(app);
  assert.equal((await postOrders(app, client, [minimalOrder('first')])).statusCode, 200);
  assert.deepEqual(await orderIds(app, client), ['first']);
});

test('database outage, whole server process: it stays up (export worker included), answers 503 over HTTP and serves again once the database is back', { skip: postgresOnly }, async (t) => {
  const { proxy, url } = await databaseBehindProxy(t);
  await proxy.start();
  const dataDir = tempDir();
  defer(t, () => fs.rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const env = { ...pgliteEnv(dataDir), DATABASE_URL: url(), PORT: String(port), UAT_PORT: String(await freePort()), ADMIN_TOKEN, LOG_LEVEL: 'info' };
  const server = await startCli('serve', env, 'tributary is ready');
  defer(t, async () => {
    if (server.exitCode !== null) return;
    server.kill('SIGKILL');
    await once(server, 'exit');
  });
  let output = '';
  server.stdout!.on('data', (chunk: string) => (output += chunk));

  const base = `http://127.0.0.1:${port}`;
  const call = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  const json = (headers: Record<string, string>, body: unknown): RequestInit => ({
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const created = await call('/admin/v1/clients', json({ authorization: `Bearer ${ADMIN_TOKEN}` }, { name: 'Acme' }));
  assert.equal(created.status, 201);
  const headers = { authorization: String(created.body.api_key), 'data-client-id': String(created.body.client_id) };
  assert.equal((await call('/v2/orders', json(headers, [minimalOrder('before')]))).status, 200);

  await proxy.stop();
  await sleep(2_500); // the export worker polls every second: it meets the outage too
  for (const [path, init] of [['/readyz', {}], ['/v2/orders', json(headers, [minimalOrder('outage')])]] as const) {
    const answer = await call(path, init);
    assert.equal(answer.status, 503, `${path}: ${JSON.stringify(answer.body)}`);
    assert.match(answer.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/, `${path}: Retry-After`);
    assert.deepEqual(Object.keys(answer.body).sort(), ['errors', 'message', 'request_id'], path);
    assert.equal(answer.body.request_id, answer.headers.get('x-request-id'));
  }
  assert.equal(server.exitCode, null, 'the server is still running');

  await proxy.start();
  const recovery = await until('/readyz to say 200', 15_000, async () => (await call('/readyz')).status === 200);
  t.diagnostic(`the server's /readyz said 200 ${recovery} ms after the database came back`);
  assert.equal((await call('/v2/orders', json(headers, [minimalOrder('after')]))).status, 200);
  assert.equal(server.exitCode, null, 'the server is still running');
  const logged = output
    .split('\n')
    .slice(0, -1) // whole lines only
    .map((line) => JSON.parse(line) as { level: number; msg: string; status?: number; err?: unknown });
  assert.ok(logged.some((line) => line.msg === 'database unavailable'), 'the 503s are logged as such');
  // The export worker logs an error each time it cannot claim a job (every second of the outage).
  const workerMisses = logged.filter((line) => line.msg === 'export worker could not claim a job');
  assert.ok(workerMisses.every((line) => isDatabaseUnavailable(line.err)), JSON.stringify(workerMisses));
  t.diagnostic(`the export worker logged ${workerMisses.length} errors "export worker could not claim a job" during the outage`);
  const errors = logged.filter((line) => line.level >= 50 && !workerMisses.includes(line));
  assert.deepEqual(errors, [], 'no other error (no 500, no crash) was logged');
  assert.ok(logged.every((line) => line.status === undefined || line.status < 500 || line.status === 503), 'nothing answered 500');
});

test(
  'network partition (packets go nowhere): a request on an already open connection gets its 503 within DATABASE_QUERY_TIMEOUT_MS and 5 s more',
  { skip: postgresOnly },
  async (t) => {
    const { proxy, url } = await databaseBehindProxy(t);
    await proxy.start();
    const app = await appOver(t, url(), { DATABASE_QUERY_TIMEOUT_MS: '2000' });
    defer(t, () => proxy.stop()); // first: the pool only closes once the stuck queries fail
    const client = await createClient(app);
    assert.equal((await postOrders(app, client, [minimalOrder('before')])).statusCode, 200);

    proxy.freeze();
    // As many requests as the pool has connections: those that take an open one send into the void.
    const started = performance.now();
    const answers = await Promise.allSettled(
      // The database would stop the statement at 2 s; in a partition its answer never comes, and
      // the driver gives up 5 s later.
      [1, 2, 3, 4].map((n) => within(`request ${n} during the partition`, 10_000, listOrders(app, client, { start_date: '2024-03-08', end_date: '2024-03-08' }))),
    );
    t.diagnostic(`after ${Math.round(performance.now() - started)} ms: ${answers.map((answer) => (answer.status === 'fulfilled' ? answer.value.statusCode : 'no answer')).join(', ')}`);
    const ready = await timed('/readyz', () => app.inject({ url: '/readyz' }));
    assertUnavailable(ready.response, '/readyz'); // its own 2 s timeout
    for (const answer of answers) {
      if (answer.status === 'rejected') throw answer.reason;
      assertUnavailable(answer.value, 'a request during the partition');
    }
  },
);

/** Busy-waits for `ms`: the event loop does nothing else meanwhile. */
function block(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * Keeps the event loop lagging (busy 250 ms at a time, as under more requests than it can serve)
 * until `check` holds, within `ms`; the time it took.
 */
async function underLag(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    block(250);
    await new Promise((resolve) => setImmediate(resolve));
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`lagged ${ms} ms in vain for ${what}`);
  }
}

function assertShed(response: LightMyRequestResponse, what: string) {
  assertErrorEnvelope(response, 503);
  assert.equal(response.headers['retry-after'], '2', `${what}: Retry-After`);
}

test('overload: while the event loop lags past OVERLOAD_EVENT_LOOP_DELAY_MS requests get 503 with Retry-After and do nothing; then they are served again', async (t) => {
  const service = await startService({ OVERLOAD_EVENT_LOOP_DELAY_MS: '100' });
  defer(t, () => service.close());
  const app = service.production;
  const client = await service.createClient();
  // A busy machine can make the loop lag past 100 ms by itself (just after start, say): the calm
  // write is asked until a sample finds the loop calm (a shed write stores nothing).
  await until('a calm write to be served', 10_000, async () => {
    const response = await postOrders(app, client, [minimalOrder('calm')]);
    if (response.statusCode !== 503) assert.equal(response.statusCode, 200, response.body);
    return response.statusCode === 200;
  });

  let sent = 0;
  let shed: LightMyRequestResponse | undefined;
  const served: string[] = ['calm'];
  const toShed = await underLag('an order write to be shed', 5_000, async () => {
    const orderId = `busy-${++sent}`;
    const response = await postOrders(app, client, [minimalOrder(orderId)]);
    if (response.statusCode === 503) shed = response;
    else assert.equal(response.statusCode, 200, response.body);
    if (response.statusCode === 200) served.push(orderId);
    return response.statusCode === 503;
  });
  assertShed(shed!, 'POST /v2/orders');
  // Until under-pressure samples again (every second), the other routes are shed too, readiness
  // included (which takes the process out of a load balancer's rotation meanwhile).
  for (const url of ['/readyz', '/v1/exports/metrics']) {
    assertShed(await app.inject({ url, headers: client.headers }), url);
  }
  const liveness = (await app.inject({ url: '/healthz' })).statusCode;
  assert.equal(liveness, 200, 'liveness is never shed: a busy process is alive');
  // The UAT app sheds on its own.
  const uatToShed = await underLag('a UAT request to be shed', 5_000, async () => {
    const response = await service.uat.inject({ url: '/v1/exports/metrics', headers: { authorization: 'None', 'data-client-id': 'test' } });
    if (response.statusCode === 503) assertShed(response, 'UAT GET /v1/exports/metrics');
    return response.statusCode === 503;
  });

  // Served again once a sample finds the loop calm; on a busy test machine a later sample can
  // still find it lagging, so each app is asked until it serves (a shed write stores nothing).
  const recovery = await until('requests to be served again', 5_000, async () => {
    const response = await postOrders(app, client, [minimalOrder('after')]);
    if (response.statusCode !== 503) assert.equal(response.statusCode, 200, response.body);
    return response.statusCode === 200;
  });
  await until('UAT requests to be served again', 5_000, async () => {
    const response = await service.uat.inject({ url: '/v1/exports/metrics', headers: { authorization: 'None', 'data-client-id': 'test' } });
    return response.statusCode === 200;
  });
  t.diagnostic(`first 503 after ${toShed} ms of lag (UAT: ${uatToShed} ms); served again ${recovery} ms after the lag stopped; /healthz meanwhile: ${liveness}`);
  assert.deepEqual(await orderIds(app, client), [...served, 'after'].sort(), `the shed order busy-${sent} was not stored`);
});
