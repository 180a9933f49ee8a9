/**
 * One customer of 1,000 orders and 1,000 touchpoints (test/one-customer-data.ts), whose kept
 * paths stopped the embedded store for minutes (all of the process: health checks, other
 * clients, signals) and ran past PostgreSQL's statement limit. Without table statistics, as
 * right after a load: the planner then estimates one row of everything.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { keepMissingPaths } from '../src/attribution/daily-totals.js';
import { startService, type TestClient, type TestService } from './helpers.js';
import { ORDERS, TOUCHPOINTS, oneCustomerRequests, orderTime, touchpointTime } from './one-customer-data.js';

/** Far below what the kept paths took (84 s on PostgreSQL), far above what they take (3 s). */
const QUERY_TIMEOUT_MS = 20_000;

let service: TestService;
let client: TestClient;

before(async () => {
  service = await startService({ DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS) });
  client = await service.createClient();
  for (const [url, payload] of oneCustomerRequests()) {
    const answer = await service.production.inject({ method: 'POST', url, headers: client.headers, payload: payload as object });
    assert.ok(answer.statusCode < 300, `${url}: ${answer.statusCode} ${answer.body}`);
  }
});
after(() => service.close());

/** The longest wait for /healthz while `work` runs, asked every 50 ms. */
async function longestHealthCheckDuring(work: Promise<unknown>): Promise<number> {
  let longest = 0;
  let done = false;
  const watching = (async () => {
    while (!done) {
      const asked = performance.now();
      const answer = await service.production.inject({ method: 'GET', url: '/healthz' });
      assert.equal(answer.statusCode, 200);
      longest = Math.max(longest, performance.now() - asked);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    await work;
  } finally {
    done = true;
    await watching;
  }
  return longest;
}

test("the keeper keeps the customer's paths within the statement limit while the process answers", async () => {
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  const keeping = service.db.transaction((tx) => keepMissingPaths(tx, { tenant, timeZone: 'UTC', period: { kind: 'days', from: '2024-03-01', to: '2024-04-01' } }));
  const longest = await longestHealthCheckDuring(keeping);
  const [{ rows } = { rows: 0 }] = await service.db.query<{ rows: number }>('SELECT count(*)::int AS rows FROM attribution_paths WHERE client_id = $1', [client.client_id]);
  // All 25 days are within the kept window (90 days): an order's row, and one per touchpoint before it.
  const touchpointsBefore = Array.from({ length: ORDERS }, (_, o) => Array.from({ length: TOUCHPOINTS }, (_, t) => touchpointTime(t) <= orderTime(o)).filter(Boolean).length);
  assert.equal(rows, ORDERS + touchpointsBefore.reduce((sum, count) => sum + count, 0));
  assert.ok(longest < 1_000, `/healthz waited ${Math.round(longest)} ms`);
});

test('a 30-day report of the customer is answered within the statement limit while the process answers', async () => {
  const query = new URLSearchParams({ start_date: '2024-03-01', end_date: '2024-03-30', level: 'campaign', metrics: 'rev,txns', model: 'linear', window: '30', mode: 'cash' });
  let answer: Awaited<ReturnType<TestService['production']['inject']>> | undefined;
  const reporting = service.production.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers }).then((answered) => (answer = answered));
  const longest = await longestHealthCheckDuring(reporting);
  assert.equal(answer!.statusCode, 200, answer!.body);
  const { totals } = answer!.json() as { totals: Record<string, number> };
  assert.ok(Math.abs(totals.txns! - ORDERS) < 0.001, `${totals.txns} orders attributed: each has touchpoints within 30 days`);
  assert.ok(longest < 1_000, `/healthz waited ${Math.round(longest)} ms`);
});
