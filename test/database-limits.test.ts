/**
 * The service's time limits are the database's too: a statement past DATABASE_QUERY_TIMEOUT_MS is
 * stopped by PostgreSQL (not only given up on by the driver, which left it running, holding its
 * locks and connection), and a report waits at most REPORT_LOCK_WAIT_MS for other work holding its
 * client's kept attribution. Both answer 503 saying so. PostgreSQL only: the embedded store has
 * one connection, so no statement of the service waits for another's lock there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { holdOnDistinctSlots, waitingForALock } from './held-transactions.js';
import { assertErrorEnvelope, minimalOrder, postOrders, serverUrl, startService, type TestClient, type TestService } from './helpers.js';

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

  /** Backends of the service's database that wait for a lock the backend `pid` holds. */
  const waitingFor = (pid: number) => service.db.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [pid]);

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
      assert.deepEqual(await waitingFor(held!.pid), [], 'nothing waits for the lock any more');
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
      assert.deepEqual(await waitingFor(held!.pid), []);
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
