import assert from 'node:assert/strict';
import fc from 'fast-check';
import { after, test } from 'node:test';
import { keepMissingDays, keepMissingPaths } from '../src/attribution/daily-totals.js';
import { refreshKeptTotals, startKeptTotalsKeeper } from '../src/attribution/keeper.js';
import { ADMIN_TOKEN, hourlySpend, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * Reports read attribution from kept daily totals (src/exports/daily-totals.ts), which writes make
 * stale. Two clients are sent the same data; the first keeps its totals from report to report, the
 * second has them wiped before every report, so that it computes every day afresh. After each kind
 * of write that changes attribution, the two must answer the same. (That a report computed afresh
 * equals the export of the same options is test/reports.test.ts's.)
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

const kept = await service.createClient('keeps its totals');
const fresh = await service.createClient('computes afresh');
/** Keeps its totals, and has the keeper bring them up to date (with their kept paths) before every report. */
const byKeeper = await service.createClient('kept by the keeper');

async function call(client: TestClient, method: 'POST' | 'PATCH' | 'GET', url: string, payload?: unknown) {
  const response = await app.inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
  return response;
}
/** Sends the same write to every client. */
const write = async (method: 'POST' | 'PATCH', url: string, payload: unknown) => {
  for (const client of [kept, fresh, byKeeper]) await call(client, method, url, payload);
};
const setZone = async (time_zone: string) => {
  for (const client of [kept, fresh, byKeeper]) {
    const response = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: admin, payload: { time_zone } });
    assert.equal(response.statusCode, 200, response.body);
  }
};

const touch = (touchpoint_id: string, occurred_at: string, who: { visitor?: string; customer?: string }, fields: Record<string, unknown> = {}) => ({
  touchpoint_id,
  occurred_at,
  ...(who.visitor ? { visitor_id: who.visitor } : {}),
  ...(who.customer ? { customer_id: who.customer } : {}),
  ...fields,
});
const order = (order_id: string, customer_id: string, time_of_purchase: string, purchase_total: number) =>
  minimalOrder(order_id, { customer_id, time_of_purchase, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });
const spend = (hour_start_iso: string, platform_name: string, campaign_id: string, amount: number) => ({
  ...hourlySpend(campaign_id),
  hour_start_iso,
  platform_name,
  campaign_name: `${campaign_id} name`,
  spend: amount,
});
const meta = (campaign_id: string) => ({ platform_name: 'meta', campaign_id, ad_id: `${campaign_id}-ad` });
const google = (campaign_id: string) => ({ platform_name: 'google', campaign_id });

const PERIOD = { start_date: '2024-03-01', end_date: '2024-03-10' };
const METRICS = 'spend,rev,txns,roas,revFt,txnsFt,visits,newVisits';
const QUERIES: Record<string, string>[] = [
  { ...PERIOD, granularity: 'DAILY', level: 'campaign', metrics: METRICS, model: 'linear', window: '7', mode: 'cash' },
  { ...PERIOD, granularity: 'DAILY', level: 'campaign', metrics: METRICS, model: 'linear', window: '7', mode: 'accrual' },
  { ...PERIOD, granularity: 'WEEKLY', level: 'ad', breakdown: 'account', metrics: METRICS, model: 'first_touch', window: '3', mode: 'cash' },
  { ...PERIOD, granularity: 'PERIOD', level: 'total', metrics: 'rev,txns,revFt,visits,newVisits', model: 'time_decay', window: '7', mode: 'accrual' },
];

const report = async (client: TestClient, query: Record<string, string>) => (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(query)}`)).json();

async function wipeKeptTotals(client: TestClient) {
  for (const table of ['attribution_credit_days', 'attribution_visit_days', 'attribution_days', 'attribution_totals_kept', 'attribution_changes']) {
    await service.db.query(`DELETE FROM ${table} WHERE client_id = $1`, [client.client_id]);
  }
}

/** The keeper's work for a client, as its pass after writes does it, over the period's days. */
async function refreshAsTheKeeper(client: TestClient) {
  const [row] = await service.db.query<{ time_zone: string }>('SELECT time_zone FROM clients WHERE client_id = $1', [client.client_id]);
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  await refreshKeptTotals(service.db, tenant, row!.time_zone, { days: 10, now: new Date('2024-03-11T12:00:00Z') });
}

/**
 * Every query answers the same from kept totals as afresh, and after the keeper's work (whose cash
 * days are credited from kept paths); the answers, for checks of their own.
 */
async function assertKeptEqualsFresh(step: string): Promise<Record<string, unknown>[]> {
  const answers = [];
  await refreshAsTheKeeper(byKeeper);
  for (const query of QUERIES) {
    const fromKept = await report(kept, query);
    await wipeKeptTotals(fresh);
    const afresh = await report(fresh, query);
    assert.deepEqual(fromKept, afresh, `${step}: ${JSON.stringify(query)}`);
    assert.deepEqual(await report(byKeeper, query), afresh, `${step}, kept by the keeper: ${JSON.stringify(query)}`);
    answers.push(fromKept);
  }
  return answers;
}

/** The kept days of a client's totals (not stale), with the transaction that wrote each (PostgreSQL's xmin). */
async function keptDays(client: TestClient, totals: string): Promise<Map<string, string>> {
  const rows = await service.db.query<{ day: string; writer: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, xmin::text AS writer FROM attribution_days WHERE client_id = $1 AND totals = $2 AND NOT stale ORDER BY day`,
    [client.client_id, totals],
  );
  return new Map(rows.map((row) => [row.day, row.writer]));
}

test('after every kind of write that changes attribution, reports from kept totals equal reports computed afresh', async () => {
  await setZone('America/New_York');
  await write('POST', '/v1/spend_hourly', {
    data: [spend('2024-03-02T15:00:00Z', 'meta', 'spring', 10), spend('2024-03-05T15:00:00Z', 'meta', 'winter', 20), spend('2024-03-06T15:00:00Z', 'google', 'search', 12)],
  });
  await write('POST', '/v1/touchpoints', {
    data: [
      touch('t1', '2024-03-02T14:00:00Z', { visitor: 'v1', customer: 'c1' }, meta('spring')),
      touch('t2', '2024-03-04T23:30:00Z', { visitor: 'v1', customer: 'c1' }, google('search')),
      touch('t3', '2024-03-05T12:00:00Z', { visitor: 'v2', customer: 'c2' }, meta('winter')),
      touch('t4', '2024-03-06T02:00:00Z', { visitor: 'anon' }, meta('winter')),
      touch('t5', '2024-03-07T16:00:00Z', { visitor: 'anon' }),
      touch('t6', '2024-03-03T10:00:00Z', { visitor: 'anon2' }, { utm_source: 'newsletter', utm_medium: 'email' }),
    ],
  });
  await write('POST', '/v2/orders', [
    order('o1', 'c1', '2024-03-05T03:00:00Z', 100),
    order('o2', 'c2', '2024-03-05T20:00:00Z', 45),
    order('o3', 'c3', '2024-03-09T12:00:00Z', 30),
    order('o4', 'c4', '2024-03-08T12:00:00Z', 25),
    order('o6', 'c5', '2024-03-04T12:00:00Z', 80),
  ]);
  const [first] = await assertKeptEqualsFresh('seeded');
  assert.ok((first!.rows as unknown[]).length >= 5);
  const cashDays = await keptDays(kept, 'linear/7/cash');
  assert.equal(cashDays.size, 10);

  // A touchpoint arriving late, in the period: cash days from its day on are computed again, earlier ones kept.
  await write('POST', '/v1/touchpoints', { data: [touch('late', '2024-03-04T15:00:00Z', { customer: 'c1' }, meta('spring'))] });
  await assertKeptEqualsFresh('late touchpoint');
  const afterLate = await keptDays(kept, 'linear/7/cash');
  for (const [day, writer] of afterLate) {
    if (day < '2024-03-04') assert.equal(writer, cashDays.get(day), `${day} kept`);
    else assert.notEqual(writer, cashDays.get(day), `${day} computed again`);
  }

  // An anonymous visitor identified as a customer with an order: its earlier touchpoints join the path.
  await write('POST', '/v1/identities', { data: [{ visitor_id: 'anon', customer_id: 'c4' }] });
  await assertKeptEqualsFresh('visitor linked to a customer');

  // A visitor linked to an order that has not arrived; then the order: the visitor's touchpoints
  // join the paths of its customer's earlier order too.
  await write('POST', '/v1/identities', { data: [{ visitor_id: 'anon2', order_id: 'o5' }] });
  await assertKeptEqualsFresh('visitor linked to an order to come');
  await write('POST', '/v2/orders', [order('o5', 'c5', '2024-03-06T12:00:00Z', 60)]);
  await assertKeptEqualsFresh('the linked order arrives');
  // An order earlier than its customer's only one: that one is no longer the first.
  await write('POST', '/v2/orders', [order('o7', 'c3', '2024-03-06T18:00:00Z', 15)]);
  await assertKeptEqualsFresh('a first order before the first');

  // An order moved to another day, then given to another customer.
  await write('PATCH', '/v2/orders', [{ order_id: 'o2', time_of_purchase: '2024-03-08T09:00:00Z' }]);
  await assertKeptEqualsFresh('order moved by a patch');
  await write('POST', '/v2/orders', [order('o1', 'c2', '2024-03-05T03:00:00Z', 100)]);
  await assertKeptEqualsFresh('order given to another customer');
  await write('PATCH', '/v2/orders', [{ order_id: 'o5', customer_id: 'c1' }]);
  await assertKeptEqualsFresh('an order linked to a visitor given to another customer by a patch');

  // A touchpoint sent again with another time.
  await write('POST', '/v1/touchpoints', { data: [touch('t1', '2024-03-09T14:00:00Z', { visitor: 'v1', customer: 'c1' }, meta('spring'))] });
  await assertKeptEqualsFresh('touchpoint replaced');

  // An erasure, and a new time zone: other local days.
  await write('POST', '/v1/customers/erase', { customer_ids: ['c2'] });
  await assertKeptEqualsFresh('customer erased');
  await setZone('Asia/Tokyo');
  await assertKeptEqualsFresh('time zone changed');
});

test('a write after the period keeps every day of it; the unlimited window and hourly reports are computed every time', async () => {
  const before = await keptDays(kept, 'linear/7/cash');
  await report(kept, QUERIES[0]!);
  assert.deepEqual(await keptDays(kept, 'linear/7/cash'), before);
  await write('POST', '/v1/touchpoints', { data: [touch('next-month', '2024-04-02T10:00:00Z', { customer: 'c9' }, meta('spring'))] });
  await write('POST', '/v2/orders', [order('next-month', 'c9', '2024-04-02T12:00:00Z', 9)]);
  await report(kept, QUERIES[0]!);
  assert.deepEqual(await keptDays(kept, 'linear/7/cash'), before);

  const unlimited = { ...QUERIES[0]!, window: 'infinity' };
  const hourly = { ...QUERIES[0]!, granularity: 'HOURLY', end_date: '2024-03-02' };
  for (const query of [unlimited, hourly]) {
    await wipeKeptTotals(fresh);
    assert.deepEqual(await report(kept, query), await report(fresh, query));
  }
  const [{ n }] = (await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM attribution_days WHERE client_id = $1 AND totals LIKE '%/infinity/%'`, [kept.client_id])) as [{ n: number }];
  assert.equal(n, 0);
});

test('the keeper computes again in the background the days a write made stale: the next report only reads them', async () => {
  const changesNoted = async () =>
    (
      await service.db.query<{ n: number }>(
        `SELECT ((SELECT count(*) FROM attribution_changes WHERE client_id = $1) + (SELECT count(*) FROM attribution_change_keys WHERE client_id = $1))::int AS n`,
        [kept.client_id],
      )
    )[0]!.n;
  const before = await keptDays(kept, 'linear/7/cash');
  const visitsBefore = await keptDays(kept, 'visits');
  assert.equal(before.size, 10);
  const keeper = startKeptTotalsKeeper({ db: service.db, intervalMs: 20, keepersDays: 10, clock: () => new Date('2024-03-11T12:00:00Z') });
  try {
    // Noon of 5 March in Tokyo, the client's zone since the first test. The first order of c1
    // after it is o5, on the evening of the 6th (o1 went to c2): the cash days from then on may
    // change, and the visits of the 5th.
    await write('POST', '/v1/touchpoints', { data: [touch('keeper-late', '2024-03-05T03:00:00Z', { customer: 'c1' }, meta('spring'))] });
    for (let waited = 0; (await changesNoted()) > 0 || (await keptDays(kept, 'linear/7/cash')).size < 10 || (await keptDays(kept, 'visits')).size < 10; waited += 20) {
      assert.ok(waited < 20_000, 'the keeper brought the kept days up to date');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await keeper.stop();
  }
  const refreshed = await keptDays(kept, 'linear/7/cash');
  for (const [day, writer] of refreshed) {
    if (day < '2024-03-06') assert.equal(writer, before.get(day), `${day} kept`);
    else assert.notEqual(writer, before.get(day), `${day} computed again by the keeper`);
  }
  for (const [day, writer] of await keptDays(kept, 'visits')) {
    if (day === '2024-03-05') assert.notEqual(writer, visitsBefore.get(day), `visits of ${day} computed again by the keeper`);
    else assert.equal(writer, visitsBefore.get(day), `visits of ${day} kept`);
  }
  await assertKeptEqualsFresh('after the keeper');
  assert.deepEqual(await keptDays(kept, 'linear/7/cash'), refreshed, 'the reports read the days the keeper computed');
});

test('computing the kept days a report lacks sets the planner back for the statement that reads them: sorting and whole-table reads allowed', async () => {
  const client = await service.createClient('planner settings');
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  const combinations = [{ model: 'linear', modelAsked: 'linear', window: 7, accountingMode: 'cash' }] as const;
  const settings = async (pathsKept: boolean) => {
    const [setting] = await service.db.transaction(async (tx) => {
      const asked = { tenant, timeZone: 'UTC', period: { kind: 'days', from: '2024-03-01', to: '2024-03-03' } } as const;
      // From the kept paths where they are kept, from the touchpoints elsewhere.
      if (pathsKept) await keepMissingPaths(tx, asked);
      await keepMissingDays(tx, { ...asked, combinations });
      return tx.query("SELECT current_setting('enable_sort') AS enable_sort, current_setting('enable_seqscan') AS enable_seqscan");
    });
    return setting;
  };
  assert.deepEqual(await settings(false), { enable_sort: 'on', enable_seqscan: 'on' });
  await wipeKeptTotals(client);
  assert.deepEqual(await settings(true), { enable_sort: 'on', enable_seqscan: 'on' });
});

// Times over six days of the period, so that most touchpoints are in the paths of most orders.
const day = fc.integer({ min: 0, max: 6 * 24 - 1 }).map((hours) => new Date(Date.UTC(2024, 2, 2) + hours * 3_600_000).toISOString());
const pick = (prefix: string, count: number) => fc.integer({ min: 1, max: count }).map((n) => `${prefix}${n}`);
/** A write of touchpoints; `customer` gives some of them a customer of their own. */
const touchpointsWrite = (customer: fc.Arbitrary<string | undefined>) =>
  fc
    .array(fc.record({ id: pick('t', 8), at: day, visitor: pick('v', 3), customer, campaign: pick('cmp', 2) }), { minLength: 1, maxLength: 3 })
    .map((items) => ({ kind: 'touchpoints' as const, items }));
const linkWrite = fc
  .record({ visitor: pick('v', 3), to: fc.oneof(pick('c', 2).map((customer_id) => ({ customer_id })), pick('o', 3).map((order_id) => ({ order_id }))) })
  .map((link) => ({ kind: 'link' as const, link }));
const ordersWrite = fc
  .array(fc.record({ id: pick('o', 3), customer: pick('c', 2), at: day, total: fc.integer({ min: 1, max: 500 }) }), { minLength: 1, maxLength: 2 })
  .map((items) => ({ kind: 'orders' as const, items }));
const patchWrite = fc.record({ id: pick('o', 3), at: day }).map((patch) => ({ kind: 'patch' as const, patch }));
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;
type Write = ValueOf<ReturnType<typeof touchpointsWrite> | typeof linkWrite | typeof ordersWrite | typeof patchWrite>;

/** Sends `writes` to new clients, one keeping its totals, one kept by the keeper, one computing afresh, and compares their reports after each. */
async function assertKeptEqualsFreshAfter(writes: readonly Write[], run: string): Promise<void> {
  const queries = [
    { ...PERIOD, granularity: 'DAILY', level: 'campaign', metrics: METRICS, model: 'linear', window: '7', mode: 'cash' },
    { ...PERIOD, granularity: 'PERIOD', level: 'ad', metrics: METRICS, model: 'position_based', window: '7', mode: 'accrual' },
  ];
  const pair = [await service.createClient(`kept ${run}`), await service.createClient(`fresh ${run}`)] as const;
  const keptByKeeper = await service.createClient(`kept by the keeper ${run}`);
  const orders = new Set<string>();
  const send = async (method: 'POST' | 'PATCH', url: string, payload: unknown) => {
    for (const client of [...pair, keptByKeeper]) await call(client, method, url, payload);
  };
  for (const step of writes) {
    if (step.kind === 'touchpoints') {
      const items = [...new Map(step.items.map((item) => [item.id, item])).values()];
      await send('POST', '/v1/touchpoints', {
        data: items.map((item) => touch(item.id, item.at, { visitor: item.visitor, customer: item.customer }, meta(item.campaign))),
      });
    } else if (step.kind === 'link') {
      await send('POST', '/v1/identities', { data: [{ visitor_id: step.link.visitor, ...step.link.to }] });
    } else if (step.kind === 'orders') {
      const items = [...new Map(step.items.map((item) => [item.id, item])).values()];
      await send('POST', '/v2/orders', items.map((item) => order(item.id, item.customer, item.at, item.total)));
      for (const item of items) orders.add(item.id);
    } else if (orders.has(step.patch.id)) {
      await send('PATCH', '/v2/orders', [{ order_id: step.patch.id, time_of_purchase: step.patch.at }]);
    }
    await refreshAsTheKeeper(keptByKeeper);
    for (const query of queries) {
      const fromKept = await report(pair[0], query);
      await wipeKeptTotals(pair[1]);
      const afresh = await report(pair[1], query);
      assert.deepEqual(fromKept, afresh, `${JSON.stringify(writes)}: ${JSON.stringify(query)}`);
      assert.deepEqual(await report(keptByKeeper, query), afresh, `${JSON.stringify(writes)}, kept by the keeper: ${JSON.stringify(query)}`);
    }
  }
}

test('property: after random writes of every kind, kept totals answer as totals computed afresh', async () => {
  const write = fc.oneof(touchpointsWrite(fc.option(pick('c', 2), { nil: undefined, freq: 2 })), linkWrite, ordersWrite, patchWrite);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(write, { minLength: 2, maxLength: 6 }), (writes) => assertKeptEqualsFreshAfter(writes, `any ${++run}`)),
    { numRuns: 10 },
  );
});

test("property: links made after their visitors' touchpoints and their customers' orders, as a shop's sign-ins and purchases come", async () => {
  // Random orders of every kind seldom link a visitor after its touchpoints and its customer's
  // orders: the links' change notes need sequences built that way to be tried.
  const writes = fc
    .tuple(fc.array(touchpointsWrite(fc.constant(undefined)), { minLength: 1, maxLength: 2 }), fc.array(ordersWrite, { minLength: 1, maxLength: 2 }), fc.array(linkWrite, { minLength: 1, maxLength: 3 }))
    .map(([touchpoints, orders, links]) => [...touchpoints, ...orders, ...links]);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(writes, (sequence) => assertKeptEqualsFreshAfter(sequence, `links ${++run}`)),
    { numRuns: 10 },
  );
});
