/**
 * The service's time limits are the database's too: a statement past DATABASE_QUERY_TIMEOUT_MS is
 * stopped by PostgreSQL (not only given up on by the driver, which left it running, holding its
 * locks and connection), and a report waits at most REPORT_LOCK_WAIT_MS for other work holding its
 * client's kept attribution. Both answer 503 saying so. A read whose client gave up, and whatever
 * a stopping (or killed) server was running, is stopped too. PostgreSQL only: the embedded store
 * has one connection, so no statement of the service waits for another's lock there.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../bench/server.js';
import type { Queryable } from '../src/db/index.js';
import { holdOnDistinctSlots, runningStatements, waitingFor, waitingForALock, type Held } from './held-transactions.js';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  createChildStore,
  createTestDatabase,
  minimalOrder,
  postOrders,
  serverUrl,
  startCli,
  startService,
  type ChildStore,
  type TestClient,
  type TestDatabase,
  type TestService,
} from './helpers.js';

const QUERY_TIMEOUT_MS = 1_500;
const REPORT_LOCK_WAIT_MS = 500;
/** What the answer may take beyond the limit on a loaded machine: far below the limits of the driver (5 s more) and of the request. */
const SLACK_MS = 2_000;

describe('time limits reach the database', { skip: serverUrl === undefined && 'the embedded store has one connection: no lock waits' }, () => {
  let service: TestService;
  let client: TestClient;

  before(async () => {
    service = await startService({ DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), REPORT_LOCK_WAIT_MS: String(REPORT_LOCK_WAIT_MS) });
    client = await service.createClient();
  });
  after(() => service.close());

  test('a statement past DATABASE_QUERY_TIMEOUT_MS is stopped by the database and answered 503; none is left running', async () => {
    assert.equal((await postOrders(service.production, client, [minimalOrder('locked')])).statusCode, 200);
    const [held] = await holdOnDistinctSlots(service.db, 1);
    try {
      await held!.db.query("SELECT 1 FROM orders WHERE client_id = $1 AND order_id = 'locked' FOR UPDATE", [client.client_id]);
      const started = performance.now();
      const patched = service.production.inject({ method: 'PATCH', url: '/v2/orders', headers: client.headers, payload: [{ order_id: 'locked', tax: 1 }] });
      await waitingForALock(service.db, held!.pid);
      const answer = await patched;
      const took = performance.now() - started;
      const envelope = assertErrorEnvelope(answer, 503);
      assert.match(envelope.message, /^The database took longer than its time limit for a statement \(DATABASE_QUERY_TIMEOUT_MS\)/);
      assert.equal(answer.headers['retry-after'], '5');
      assert.ok(took >= QUERY_TIMEOUT_MS - 100 && took < QUERY_TIMEOUT_MS + SLACK_MS, `answered after ${took} ms`);
      assert.deepEqual(await waitingFor(service.db, held!.pid), [], 'nothing waits for the lock any more');
    } finally {
      await held!.commit();
    }
    const retried = await service.production.inject({ method: 'PATCH', url: '/v2/orders', headers: client.headers, payload: [{ order_id: 'locked', tax: 1 }] });
    assert.equal(retried.statusCode, 200, retried.body);
  });

  test("a report waits at most REPORT_LOCK_WAIT_MS for other work holding its client's kept attribution, then 503 saying so", async () => {
    const query = new URLSearchParams({ start_date: '2024-03-01', end_date: '2024-03-10', level: 'campaign', metrics: 'revAttributed', model: 'last_touch', window: '7', mode: 'cash' });
    const report = () => service.production.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers });
    assert.equal((await report()).statusCode, 200, 'the first report keeps its days');
    const [held] = await holdOnDistinctSlots(service.db, 1);
    try {
      // What the keeper holds while it computes the client's days.
      const locked = await held!.db.query('SELECT 1 FROM attribution_totals_kept WHERE client_id = $1 FOR UPDATE', [client.client_id]);
      assert.equal(locked.length, 1);
      const started = performance.now();
      const answer = await report();
      const took = performance.now() - started;
      const envelope = assertErrorEnvelope(answer, 503);
      assert.match(envelope.message, /^Other work holds this client's data \(attribution being computed, or a write\)/);
      assert.equal(answer.headers['retry-after'], '5');
      assert.ok(took >= REPORT_LOCK_WAIT_MS - 100 && took < REPORT_LOCK_WAIT_MS + SLACK_MS, `answered after ${took} ms`);
      assert.deepEqual(await waitingFor(service.db, held!.pid), []);
      // Another client's report is not held up.
      const other = await service.createClient();
      const elsewhere = await service.production.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: other.headers });
      assert.equal(elsewhere.statusCode, 200, elsewhere.body);
    } finally {
      await held!.commit();
    }
    assert.equal((await report()).statusCode, 200, 'served again once the work is done');
  });
});

describe('a request given up, or a server stopped, leaves no statement of it running', { skip: serverUrl === undefined && 'the embedded store has one connection: no lock waits' }, () => {
  let store: ChildStore;
  let server: ChildProcess;
  let base: string;
  let client: { client_id: string; api_key: string };
  /** Held transactions, on the test's own connections, that the server's statements wait for. */
  let holding: Held[] = [];
  const reportQuery = new URLSearchParams({ start_date: '2024-03-01', end_date: '2024-03-10', level: 'campaign', metrics: 'revAttributed', model: 'last_touch', window: '7', mode: 'cash' });
  const headers = () => ({ authorization: client.api_key, 'data-client-id': client.client_id });

  async function startServer() {
    const [port, uatPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    // Limits far past the test's length: only the giving up stops what the server started.
    const env = { ...store.env, PORT: String(port), UAT_PORT: String(uatPort), ADMIN_TOKEN, LOG_LEVEL: 'info', REPORT_LOCK_WAIT_MS: '120000', DATABASE_QUERY_TIMEOUT_MS: '120000', KEEP_AHEAD_DAYS: '0' };
    server = await startCli('serve', env, 'tributary is ready');
  }

  /** The server's statements that are running (waiting for a lock included), by their text. */
  const running = () => store.withStore((db) => runningStatements(db, holding.map((held) => held.pid)));

  async function untilRunning(count: number) {
    while ((await running()).filter(({ onWorker }) => !onWorker).length < count) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  /** Waits up to `ms` for the server's statements to be gone; what is left, if any. */
  async function leftAfter(ms: number) {
    const deadline = performance.now() + ms;
    let left = await running();
    while (left.length > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      left = await running();
    }
    return left.map(({ query }) => query.replace(/\s+/g, ' ').slice(0, 80));
  }

  /** A report and an explanation that wait for the held locks until they are given up. */
  async function holdUpReads() {
    holding = await store.withStore((db) => holdOnDistinctSlots(db, 1));
    // What the keeper holds while it computes a client's days, and a table the explanation reads.
    await holding[0]!.db.query('SELECT 1 FROM attribution_totals_kept WHERE client_id = $1 FOR UPDATE', [client.client_id]);
    await holding[0]!.db.query('LOCK TABLE touchpoints IN ACCESS EXCLUSIVE MODE');
  }

  async function release() {
    for (const held of holding) await held.commit();
    holding = [];
  }

  before(async () => {
    store = await createChildStore();
    await startServer();
    const created = await fetch(`${base}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Acme' }),
    });
    client = (await created.json()) as typeof client;
    const posted = await fetch(`${base}/v2/orders`, {
      method: 'POST',
      headers: { ...headers(), 'content-type': 'application/json' },
      body: JSON.stringify([minimalOrder('o-1', { time_of_purchase: '2024-03-05T12:00:00Z' })]),
    });
    assert.equal(posted.status, 200);
    assert.equal((await fetch(`${base}/v1/reports/performance?${reportQuery}`, { headers: headers() })).status, 200, 'the first report keeps its days');
  });
  after(async () => {
    await release();
    if (server.exitCode === null) server.kill('SIGKILL');
    await store.cleanup();
  });

  test('a client that gives up on a report or an explanation: its statements are cancelled in the database, and the connections serve again', async () => {
    await holdUpReads();
    try {
      const givenUp = new AbortController();
      const reads = [`/v1/reports/performance?${reportQuery}`, '/v2/orders/o-1/attribution'].map((url) =>
        fetch(`${base}${url}`, { headers: headers(), signal: givenUp.signal }).then(
          (answer) => answer.status,
          (error: Error) => error.name,
        ),
      );
      await untilRunning(2);
      givenUp.abort();
      assert.deepEqual(await Promise.all(reads), ['AbortError', 'AbortError']);
      assert.deepEqual(await leftAfter(5_000), [], 'the statements of the abandoned requests are cancelled');
    } finally {
      await release();
    }
    const [report, explanation] = await Promise.all(
      [`/v1/reports/performance?${reportQuery}`, '/v2/orders/o-1/attribution'].map((url) => fetch(`${base}${url}`, { headers: headers() })),
    );
    assert.equal(report?.status, 200);
    assert.equal(explanation?.status, 200);
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    test(`a server stopped by ${signal} while its statements wait leaves none of them running`, { timeout: 60_000 }, async () => {
      if (server.exitCode !== null) await startServer();
      await holdUpReads();
      try {
        const reads = [`/v1/reports/performance?${reportQuery}`, '/v2/orders/o-1/attribution'].map((url) =>
          fetch(`${base}${url}`, { headers: headers() }).then(
            (answer) => answer.status,
            () => 'no answer',
          ),
        );
        await untilRunning(2);
        const exited = once(server, 'exit');
        server.kill(signal);
        await exited;
        await Promise.all(reads);
        assert.deepEqual(await leftAfter(5_000), [], 'the database stops what the server left running');
      } finally {
        await release();
      }
    });
  }
});

describe('a transaction given up by its signal', { skip: serverUrl === undefined && 'the embedded store has one connection: no lock waits' }, () => {
  let store: TestDatabase;
  before(async () => {
    store = await createTestDatabase();
  });
  after(() => store.drop());

  /** Statements of the database that are running, apart from this one's and the held transaction's. */
  const runningBesides = (pid: number) => runningStatements(store.db, [pid]);

  for (const kind of ['transaction', 'readingTogether'] as const) {
    test(`${kind}: the statement waiting is cancelled, the transaction fails with the signal's reason, and its connections serve again`, async () => {
      const [held] = await holdOnDistinctSlots(store.db, 1);
      const givenUp = new AbortController();
      const read = (tx: Queryable) => tx.query('SELECT count(*) FROM orders');
      const reading =
        kind === 'transaction'
          ? store.db.transaction(read, { signal: givenUp.signal })
          : store.db.readingTogether(3, (txs) => Promise.all(txs.map(read)), { signal: givenUp.signal });
      const outcome = reading.then(
        () => 'read',
        (error: Error) => error,
      );
      try {
        await held!.db.query('LOCK TABLE orders IN ACCESS EXCLUSIVE MODE');
        await waitingForALock(store.db, held!.pid);
        const reason = new Error('given up');
        givenUp.abort(reason);
        assert.equal(await outcome, reason);
        assert.deepEqual(await runningBesides(held!.pid), []);
      } finally {
        await held!.commit();
      }
      const again = await Promise.all(Array.from({ length: 10 }, () => store.db.transaction(read)));
      assert.deepEqual(again.flat(), Array.from({ length: 10 }, () => ({ count: '0' })));
    });
  }
});
