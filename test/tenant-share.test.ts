/**
 * One client's reads (reports, explanations) hold at most its share of the process's database
 * connections (src/db/tenant-share.ts): however many it sends or abandons, another client's
 * reads, writes and health checks are served at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTenantShare, TenantBusyError, WAITING_PER_CONNECTION } from '../src/db/tenant-share.js';
import { holdOnDistinctSlots } from './held-transactions.js';
import { assertErrorEnvelope, makeOrder, postOrders, serverUrl, startService, type TestClient, type TestService } from './helpers.js';

const tenant = (clientId: string) => ({ clientId, environment: 'production' as const, dryRun: false });

/** A read that runs until `finish` is called. */
function gatedRead() {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  return { finish, read: () => finished };
}

test("a client's reads past its share wait their turn in order, are refused past the queue or the wait, and leave other clients alone", async () => {
  const share = createTenantShare({ connections: 2, waitMs: 300 });
  const started: number[] = [];
  const gates = Array.from({ length: 2 + 2 * WAITING_PER_CONNECTION + 1 }, () => gatedRead());
  const runs = gates.map((gate, n) =>
    share
      .run(tenant('a'), () => {
        started.push(n);
        return gate.read();
      })
      .then(
        () => 'done',
        (error: unknown) => error,
      ),
  );
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(started, [0, 1], 'two run, the rest wait');
  const refused = await runs.at(-1);
  assert.ok(refused instanceof TenantBusyError, 'past the queue: refused at once');
  assert.equal(refused.retryAfterSeconds, 1);

  // Another client is not counted with the first; the first's other environment is, as it uses the same pool.
  const other = gatedRead();
  const otherRun = share.run(tenant('b'), () => (other.finish(), other.read()));
  await otherRun;
  const uat = await share.run({ ...tenant('a'), environment: 'uat' }, async () => 'ran').catch((error: unknown) => error);
  assert.ok(uat instanceof TenantBusyError, "the client's UAT reads share its production reads' share");

  gates[0]!.finish();
  gates[1]!.finish();
  await Promise.all([runs[0], runs[1]]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(started, [0, 1, 2, 3], 'the first two waiting took the places, in order');
  // The others wait past waitMs: refused.
  const timedOut = await Promise.all(runs.slice(4, -1));
  assert.ok(timedOut.every((outcome) => outcome instanceof TenantBusyError));
  gates[2]!.finish();
  gates[3]!.finish();
  assert.deepEqual(await Promise.all([runs[2], runs[3]]), ['done', 'done']);
  // All places are free again.
  const again = await Promise.all([0, 1].map(() => share.run(tenant('a'), async () => 'ran')));
  assert.deepEqual(again, ['ran', 'ran']);
});

describe('a client whose reports wait does not take the pool from others', { skip: serverUrl === undefined && 'the embedded store has one connection: no lock waits' }, () => {
  let service: TestService;
  let busy: TestClient;
  let other: TestClient;
  const REPORT_LOCK_WAIT_MS = 3_000;
  const query = new URLSearchParams({ start_date: '2024-03-01', end_date: '2024-03-10', level: 'campaign', metrics: 'revAttributed', model: 'last_touch', window: '7', mode: 'cash' });
  const report = (client: TestClient) => service.production.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers });

  before(async () => {
    service = await startService({ TENANT_READ_CONNECTIONS: '2', REPORT_LOCK_WAIT_MS: String(REPORT_LOCK_WAIT_MS) });
    [busy, other] = [await service.createClient(), await service.createClient()];
    for (const client of [busy, other]) {
      assert.equal((await postOrders(service.production, client, [makeOrder('o-1', { time_of_purchase: '2024-03-05T12:00:00Z' })])).statusCode, 200);
      assert.equal((await report(client)).statusCode, 200, 'the first report keeps its days');
    }
  });
  after(() => service.close());

  test('thirty reports held up by a lock take two connections; the others are refused 429 at once; a second client is served within a second', async () => {
    const [held] = await holdOnDistinctSlots(service.db, 1);
    // What the keeper holds while it computes the client's days: the busy client's reports wait for it.
    await held!.db.query('SELECT 1 FROM attribution_totals_kept WHERE client_id = $1 FOR UPDATE', [busy.client_id]);
    const sent = performance.now();
    const answeredAt: number[] = [];
    const reports = Array.from({ length: 30 }, () => report(busy).then((answer) => (answeredAt.push(performance.now() - sent), answer)));
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));

      const served: [string, number, number][] = [];
      const timed = async (name: string, call: () => Promise<{ statusCode: number }>) => {
        const start = performance.now();
        const { statusCode } = await call();
        served.push([name, statusCode, Math.round(performance.now() - start)]);
      };
      await timed('report', () => report(other));
      await timed('orders read', () => service.production.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers: other.headers }));
      await timed('orders write', () => postOrders(service.production, other, [makeOrder('o-2', { time_of_purchase: '2024-03-06T12:00:00Z' })]));
      await timed('explanation', () => service.production.inject({ method: 'GET', url: '/v2/orders/o-1/attribution', headers: other.headers }));
      await timed('readyz', () => service.production.inject({ method: 'GET', url: '/readyz' }));
      for (const [name, status, ms] of served) {
        assert.equal(status, 200, name);
        assert.ok(ms < 1_000, `${name} took ${ms} ms`);
      }

      const refusedAtOnce = answeredAt.filter((ms) => ms < 1_000).length;
      assert.equal(refusedAtOnce, 30 - 2 - 2 * 4, 'past the two running and the eight waiting: refused at once');
    } finally {
      await held!.commit();
    }
    const answers = await Promise.all(reports);
    const refused = answers.filter((answer) => answer.statusCode === 429);
    assert.ok(refused.length >= 20, `${refused.length} refused`);
    const envelope = assertErrorEnvelope(refused[0]!, 429, ['retry_after_seconds']);
    assert.match(envelope.message, /^This client already has 2 reports or explanations running, its share of the database \(TENANT_READ_CONNECTIONS\)/);
    assert.equal(refused[0]!.headers['retry-after'], '3');
    assert.ok(answers.every((answer) => [200, 429, 503].includes(answer.statusCode)), answers.map((answer) => answer.statusCode).join());
    assert.equal((await report(busy)).statusCode, 200, 'served again once the lock is gone');
  });
});
