import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { keepMissingPaths, markChangedDaysStale } from '../src/attribution/daily-totals.js';
import { keepAhead, refreshKeptTotals } from '../src/attribution/keeper.js';
import { inRowsTransaction } from '../src/attribution/rows.js';
import { holdOnDistinctSlots, waitingForALock } from './held-transactions.js';
import { citusUrl, startService, type TestClient } from './helpers.js';
import { keptAndFresh, order, query, randomWrites, tenantOf, tp, type Answer, type Pair, type Query } from './kept-and-fresh.js';

/*
 * A late touchpoint noted by key has the kept paths of its customer's orders found again
 * (patchKeptPaths, src/exports/daily-totals.ts) rather than their days dropped. Every scenario has
 * two clients sent the same writes: `kept` has its paths kept (as the keeper keeps them) and its
 * totals kept from report to report; `fresh` has every kept table wiped before each report, and
 * before its paths are kept for a comparison. Reports, and kept paths row for row, must be equal.
 * Every touchpoint of 2024 is more than a day late, so noted by key.
 */

const service = await startService();
after(() => service.close());
/** The tests that hold transactions open on connections of their own: PostgreSQL only (PGlite has one connection; Citus's locks are on its workers). */
const concurrencySkip = service.db.kind !== 'postgres' || citusUrl !== undefined;

const { call, pairIn, sendTouchpoints, sendLinks, sendOrders, patchOrders, sendRandomWrite, report, wipeKeptTotals, assertKeptEqualsFresh } = keptAndFresh(service);

/** Models, windows and modes over a period: cash and accrual, short and long windows, views' model. */
const queriesOver = (start: string, end: string): Query[] => [
  query(start, end, 'linear', 7, 'cash'),
  query(start, end, 'clicks_and_views', 90, 'cash', 'DAILY', 'ad'),
  query(start, end, 'first_touch', 30, 'accrual'),
  query(start, end, 'position_based', 14, 'accrual', 'WEEKLY'),
];

/** Keeps the paths of the local days [from, to) of a client, as the keeper does (after taking the changes noted). */
async function keepPaths(client: TestClient, zone: string, from: string, to: string) {
  await markChangedDaysStale(service.db, { tenant: tenantOf(client), timeZone: zone });
  await inRowsTransaction(service.db, (tx) => keepMissingPaths(tx, { tenant: tenantOf(client), timeZone: zone, period: { kind: 'days', from, to } }));
}

/** The days whose paths are kept and not stale, with the transaction that wrote each day's mark (xmin). */
async function keptPathDays(client: TestClient): Promise<Map<string, string>> {
  const rows = await service.db.query<{ day: string; writer: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, xmin::text AS writer FROM attribution_days WHERE client_id = $1 AND totals = 'paths' AND NOT stale ORDER BY day`,
    [client.client_id],
  );
  return new Map(rows.map((row) => [row.day, row.writer]));
}

const PATH_COLUMNS = [
  "to_char(day, 'YYYY-MM-DD') AS day",
  'reach_days',
  'order_id',
  'touchpoint_id',
  'time_of_purchase::text AS time_of_purchase',
  'purchase_total::text AS purchase_total',
  'currency',
  'first_order',
  'occurred_at::text AS occurred_at',
  'type',
  'channel',
  'platform_name',
  'platform_account_id',
  'campaign_id',
  'adset_id',
  'ad_id',
];
/** The kept path rows of a client on `days` (all their columns but `n`), in one order. */
const pathRows = (client: TestClient, days: readonly string[]) =>
  service.db.query<Record<string, unknown>>(
    `SELECT ${PATH_COLUMNS.join(', ')} FROM attribution_paths WHERE client_id = $1 AND day = ANY ($2::date[])
      ORDER BY day, order_id, touchpoint_id, reach_days`,
    [client.client_id, days],
  );
/** The touchpoints of an order's kept path ('' its own row). */
const keptPathOf = async (client: TestClient, orderId: string) =>
  (await service.db.query<{ touchpoint_id: string }>('SELECT touchpoint_id FROM attribution_paths WHERE client_id = $1 AND order_id = $2 ORDER BY touchpoint_id', [client.client_id, orderId])).map(
    (row) => row.touchpoint_id,
  );

/**
 * The kept client's kept paths, on the days whose paths it has kept and not stale, are those the
 * fresh client keeps of the same days with nothing kept before: no row missing, none twice, no
 * key reused. Leaves the fresh client's kept tables wiped.
 */
async function assertPathsAsFresh(pair: Pair, from: string, to: string, step: string) {
  const days = [...(await keptPathDays(pair.kept)).keys()];
  const duplicates = await service.db.query(
    `SELECT day, order_id, touchpoint_id, count(*)::int AS n FROM attribution_paths WHERE client_id = $1
      GROUP BY day, order_id, touchpoint_id HAVING count(*) > 1`,
    [pair.kept.client_id],
  );
  assert.deepEqual(duplicates, [], `${step}: no kept path row twice`);
  const orphans = await service.db.query(
    `SELECT DISTINCT to_char(p.day, 'YYYY-MM-DD') AS day FROM attribution_paths p
      WHERE p.client_id = $1 AND NOT EXISTS (SELECT FROM attribution_days d WHERE d.client_id = p.client_id AND d.environment = p.environment AND d.totals = 'paths' AND d.day = p.day)`,
    [pair.kept.client_id],
  );
  assert.deepEqual(orphans, [], `${step}: no kept path rows of days not kept`);
  await wipeKeptTotals(pair.fresh);
  await keepPaths(pair.fresh, pair.zone, from, to);
  assert.deepEqual(await pathRows(pair.kept, days), await pathRows(pair.fresh, days), `${step}: kept paths as found afresh`);
  await wipeKeptTotals(pair.fresh);
}

const MARCH = queriesOver('2024-03-01', '2024-03-20');

test("a customer's late touchpoints: its orders on days whose paths are kept have their paths found again, the days stay kept, reports answer as afresh", async () => {
  const pair = await pairIn('a customer');
  await sendTouchpoints(pair, [
    tp('c1-a', '2024-03-03T10:00:00Z', { customer: 'c1' }, 'base'),
    tp('c2-a', '2024-03-04T10:00:00Z', { customer: 'c2' }, 'base'),
    tp('v9-a', '2024-03-05T10:00:00Z', { visitor: 'v9' }, 'other'),
    // At o3's purchase, the day o2's path is found again on: rows of reach 0, numbered with o2's own.
    ...[1, 2, 3, 4].map((n) => tp(`c2-at-${n}`, '2024-03-12T15:00:00Z', { customer: 'c2' }, 'at')),
  ]);
  await sendLinks(pair, [{ visitor_id: 'v9', customer_id: 'c2' }]);
  await sendOrders(pair, [
    order('o1', 'c1', '2024-03-06T12:00:00Z', 100),
    order('o2', 'c1', '2024-03-12T12:00:00Z', 50),
    order('o3', 'c2', '2024-03-12T15:00:00Z', 70), // the same day as o2, another customer
    order('o4', 'c1', '2024-03-16T12:00:00Z', 20),
    order('o5', 'c2', '2024-03-07T12:00:00Z', 30),
  ]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, MARCH, 'seeded');
  const pathDays = await keptPathDays(pair.kept);

  // Between o1 and o2: o2's and o4's paths change, not o1's nor c2's.
  await sendTouchpoints(pair, [tp('c1-late', '2024-03-08T10:00:00Z', { customer: 'c1' }, 'late')]);
  await assertKeptEqualsFresh(pair, MARCH, "a late touchpoint of c1's");
  assert.deepEqual(await keptPathDays(pair.kept), pathDays, 'every day of paths stays kept');
  assert.deepEqual(await keptPathOf(pair.kept, 'o2'), ['', 'c1-a', 'c1-late']);
  assert.deepEqual(await keptPathOf(pair.kept, 'o1'), ['', 'c1-a']);
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', "c1's late touchpoint");

  // Again the same customer's (the days' rows numbered after those found again before), and c2's by its visitor, in one report.
  await sendTouchpoints(pair, [tp('c1-later', '2024-03-10T10:00:00Z', { customer: 'c1' }, 'later'), tp('c1-early', '2024-03-01T10:00:00Z', { customer: 'c1' }, 'early')]);
  await sendTouchpoints(pair, [tp('v9-late', '2024-03-11T23:00:00Z', { visitor: 'v9' }, 'late')]);
  await assertKeptEqualsFresh(pair, MARCH, 'late touchpoints of two customers, one by its visitor');
  assert.deepEqual(await keptPathDays(pair.kept), pathDays, 'every day of paths still kept');
  assert.deepEqual(await keptPathOf(pair.kept, 'o3'), ['', 'c2-a', 'c2-at-1', 'c2-at-2', 'c2-at-3', 'c2-at-4', 'v9-a', 'v9-late']);
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'two customers');
});

test('a visitor linked through an order: its late touchpoint joins the paths of every order of that order\'s customer; linked to an order to come, none', async () => {
  const pair = await pairIn('order link');
  await sendTouchpoints(pair, [tp('c3-own', '2024-03-02T10:00:00Z', { customer: 'c3' }, 'base'), tp('v-1', '2024-03-03T09:00:00Z', { visitor: 'v' }, 'spring')]);
  await sendOrders(pair, [order('o7', 'c3', '2024-03-04T12:00:00Z', 40), order('o8', 'c3', '2024-03-09T12:00:00Z', 60), order('o9', 'c3', '2024-03-15T12:00:00Z', 90)]);
  await sendLinks(pair, [{ visitor_id: 'v', order_id: 'o8' }, { visitor_id: 'w', order_id: 'o-later' }]);
  await sendTouchpoints(pair, [tp('w-1', '2024-03-05T09:00:00Z', { visitor: 'w' }, 'w')]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, MARCH, 'seeded');
  const pathDays = await keptPathDays(pair.kept);

  await sendTouchpoints(pair, [tp('v-late', '2024-03-06T09:00:00Z', { visitor: 'v' }, 'late'), tp('w-late', '2024-03-06T10:00:00Z', { visitor: 'w' }, 'w-late')]);
  await assertKeptEqualsFresh(pair, MARCH, 'late touchpoints of visitors linked through an order, and through one to come');
  assert.deepEqual(await keptPathDays(pair.kept), pathDays, 'every day of paths stays kept');
  assert.deepEqual(await keptPathOf(pair.kept, 'o9'), ['', 'c3-own', 'v-1', 'v-late']);
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'order link');

  // The order to come arrives (a changed link's key for w): its paths are found again.
  await sendOrders(pair, [order('o-later', 'c3', '2024-03-10T12:00:00Z', 25)]);
  await assertKeptEqualsFresh(pair, MARCH, 'the order to come arrives');
});

test("a touchpoint with both ids is its own customer's, not its visitor's link's", async () => {
  const pair = await pairIn('both ids');
  await sendTouchpoints(pair, [tp('x-1', '2024-03-02T10:00:00Z', { visitor: 'x' }, 'base'), tp('d1-own', '2024-03-02T11:00:00Z', { customer: 'd1' }, 'base')]);
  await sendLinks(pair, [{ visitor_id: 'x', customer_id: 'd2' }]);
  await sendOrders(pair, [order('p1', 'd1', '2024-03-10T12:00:00Z', 40), order('p2', 'd2', '2024-03-10T13:00:00Z', 60)]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, MARCH, 'seeded');
  await sendTouchpoints(pair, [tp('x-d1', '2024-03-05T10:00:00Z', { visitor: 'x', customer: 'd1' }, 'both')]);
  await assertKeptEqualsFresh(pair, MARCH, "x's touchpoint sent as d1's");
  assert.deepEqual(await keptPathOf(pair.kept, 'p1'), ['', 'd1-own', 'x-d1']);
  assert.deepEqual(await keptPathOf(pair.kept, 'p2'), ['', 'x-1']);
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'both ids');
});

test('touchpoints at the edges of the longest window: at the purchase, 90 days before it, and a millisecond more', async () => {
  const pair = await pairIn('edges');
  const queries = [
    query('2024-04-01', '2024-04-10', 'linear', 90, 'cash'),
    query('2024-04-01', '2024-04-10', 'first_touch', 90, 'cash', 'DAILY', 'ad'),
    query('2024-04-01', '2024-04-10', 'last_touch', 1, 'cash'),
    query('2024-01-01', '2024-01-14', 'linear', 90, 'accrual'),
  ];
  await sendTouchpoints(pair, [tp('e-own', '2024-04-01T10:00:00Z', { customer: 'e1' }, 'base'), tp('f-own', '2024-04-01T10:00:00Z', { customer: 'e2' }, 'base')]);
  await sendOrders(pair, [
    order('q1', 'e1', '2024-04-05T12:00:00Z', 100), // 90 days after 6 January noon
    order('q2', 'e2', '2024-04-05T12:00:00Z', 80),
    order('q3', 'e1', '2024-04-08T09:30:00.250Z', 30),
  ]);
  await keepPaths(pair.kept, pair.zone, '2024-04-01', '2024-04-10');
  await assertKeptEqualsFresh(pair, queries, 'seeded');
  const pathDays = await keptPathDays(pair.kept);
  await sendTouchpoints(pair, [
    tp('e-90', '2024-01-06T12:00:00Z', { visitor: 've', customer: 'e1' }, 'ninety'), // in q1's path, exactly (a key of its own)
    tp('e2-90+', '2024-01-06T11:59:59.999Z', { customer: 'e2' }, 'beyond'), // a millisecond before q2's window
    tp('e-at', '2024-04-08T09:30:00.250Z', { customer: 'e1' }, 'at'), // at q3's purchase
  ]);
  await assertKeptEqualsFresh(pair, queries, 'touchpoints at the edges');
  assert.deepEqual(await keptPathDays(pair.kept), pathDays, 'every day of paths stays kept');
  assert.deepEqual(await keptPathOf(pair.kept, 'q1'), ['', 'e-90', 'e-own']);
  assert.deepEqual(await keptPathOf(pair.kept, 'q2'), ['', 'f-own']);
  assert.deepEqual(await keptPathOf(pair.kept, 'q3'), ['', 'e-at', 'e-own']);
  await assertPathsAsFresh(pair, '2024-04-01', '2024-04-10', 'edges');
});

for (const zone of ['Asia/Kolkata', 'America/Los_Angeles']) {
  test(`orders near local midnight in ${zone} (Los Angeles's clocks go forward on 10 March)`, async () => {
    const pair = await pairIn(`midnight in ${zone}`, zone);
    // Instants whose local day differs from their UTC day, either way.
    const local = (day: string, time: string) => new Date(new Date(`${day}T${time}Z`).getTime() - offsetMs(zone, `${day}T${time}Z`)).toISOString();
    await sendTouchpoints(pair, [tp('m-own', local('2024-03-03', '12:00:00'), { customer: 'm1' }, 'base'), tp('n-own', local('2024-03-03', '12:00:00'), { customer: 'm2' }, 'base')]);
    await sendOrders(pair, [
      order('r1', 'm1', local('2024-03-09', '23:50:00'), 100),
      order('r2', 'm1', local('2024-03-10', '00:10:00'), 40),
      order('r3', 'm2', local('2024-03-11', '23:59:59'), 60),
      order('r4', 'm1', local('2024-03-21', '00:30:00'), 15), // a day whose paths are not kept
    ]);
    await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
    await assertKeptEqualsFresh(pair, MARCH, 'seeded');
    const pathDays = await keptPathDays(pair.kept);
    await sendTouchpoints(pair, [
      tp('m-late', local('2024-03-09', '23:40:00'), { customer: 'm1' }, 'late-m'),
      tp('n-late', local('2024-03-11', '00:00:00'), { customer: 'm2' }, 'late-n'),
    ]);
    await assertKeptEqualsFresh(pair, MARCH, 'late touchpoints before midnight orders');
    assert.deepEqual(await keptPathDays(pair.kept), pathDays, 'every day of paths stays kept');
    assert.deepEqual(await keptPathOf(pair.kept, 'r1'), ['', 'm-late', 'm-own']);
    assert.deepEqual(await keptPathOf(pair.kept, 'r4'), [], "r4's day has no kept paths");
    await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', zone);
  });
}

/** The offset of `zone` from UTC at an instant, in milliseconds. */
function offsetMs(zone: string, at: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(new Date(at))
      .map((part) => [part.type, part.value]),
  );
  const asUtc = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return asUtc - Math.floor(new Date(at).getTime() / 1000) * 1000;
}

test('late touchpoints with an instant and links noted before the same report, then the keeper', async () => {
  const pair = await pairIn('with instants and links');
  await sendTouchpoints(pair, [
    tp('g1-own', '2024-03-02T10:00:00Z', { customer: 'g1' }, 'base'),
    tp('u-1', '2024-03-11T10:00:00Z', { visitor: 'u' }, 'u'),
    tp('k-1', '2024-03-04T10:00:00Z', { visitor: 'k' }, 'k'),
  ]);
  await sendLinks(pair, [{ visitor_id: 'k', customer_id: 'g2' }]);
  await sendOrders(pair, [
    order('s1', 'g1', '2024-03-05T12:00:00Z', 100),
    order('s2', 'g1', '2024-03-13T12:00:00Z', 50),
    order('s3', 'g2', '2024-03-08T12:00:00Z', 70),
    order('s4', 'g1', '2024-03-18T12:00:00Z', 20),
    order('s5', 'g2', '2024-03-16T12:00:00Z', 35),
  ]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, MARCH, 'seeded');

  // g1's late touchpoints; u (whose first touchpoint is on the 11th) linked to g1 anew; k's link changed to g1; an order of g3 on the 15th (an instant).
  await sendTouchpoints(pair, [tp('g1-late', '2024-03-03T10:00:00Z', { customer: 'g1' }, 'late'), tp('u-late', '2024-03-09T10:00:00Z', { visitor: 'u' }, 'u-late')]);
  await sendLinks(pair, [{ visitor_id: 'u', customer_id: 'g1' }]);
  await sendOrders(pair, [order('s6', 'g3', '2024-03-15T12:00:00Z', 10)]);
  await patchOrders(pair, [{ order_id: 's4', time_of_purchase: '2024-03-17T12:00:00Z' }]); // g1's own order moved: an instant
  await assertKeptEqualsFresh(pair, MARCH, 'late touchpoints, a new link, an order');
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'late touchpoints, a new link, an order');
  await sendLinks(pair, [{ visitor_id: 'k', customer_id: 'g1' }]);
  await sendTouchpoints(pair, [tp('g2-late', '2024-03-06T10:00:00Z', { customer: 'g2' }, 'g2-late'), tp('k-late', '2024-03-07T10:00:00Z', { visitor: 'k' }, 'k-late')]);
  await assertKeptEqualsFresh(pair, MARCH, "k's link changed, late touchpoints of g2 and k");
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', "k's link changed");

  // The keeper afterwards: it keeps again what is stale; kept paths and reports still as afresh.
  await sendTouchpoints(pair, [tp('g1-later', '2024-03-12T10:00:00Z', { customer: 'g1' }, 'later')]);
  await refreshKeptTotals(service.db, tenantOf(pair.kept), pair.zone, { days: 20, now: new Date('2024-03-21T12:00:00Z') });
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'the keeper afterwards');
  await assertKeptEqualsFresh(pair, MARCH, 'the keeper afterwards');
});

test("the keeper's days kept ahead (cash and accrual, every model), a late touchpoint, the keeper's refresh: as afresh", async () => {
  const pair = await pairIn('kept ahead', 'Europe/Paris');
  const now = new Date('2024-03-21T12:00:00Z');
  await sendTouchpoints(pair, [tp('h-own', '2024-03-02T10:00:00Z', { customer: 'h1' }, 'base'), tp('i-own', '2024-03-08T10:00:00Z', { visitor: 'i' }, 'i')]);
  await sendLinks(pair, [{ visitor_id: 'i', customer_id: 'h2' }]);
  await sendOrders(pair, [
    order('t1', 'h1', '2024-03-06T12:00:00Z', 100),
    order('t2', 'h1', '2024-03-14T22:30:00Z', 50), // the 14th, 23:30 in Paris
    order('t3', 'h2', '2024-03-12T12:00:00Z', 70),
    order('t4', 'h1', '2024-03-21T08:00:00Z', 20), // the keeper's today: paths not kept
  ]);
  await keepAhead(service.db, tenantOf(pair.kept), pair.zone, { days: 20, now });
  const queries = [query('2024-03-01', '2024-03-20', 'linear', 30, 'cash'), query('2024-03-01', '2024-03-20', 'time_decay', 30, 'accrual'), ...MARCH.slice(0, 2)];
  await assertKeptEqualsFresh(pair, queries, 'seeded');
  const pathDays = await keptPathDays(pair.kept);
  assert.equal(pathDays.size, 20);

  await sendTouchpoints(pair, [tp('h-late', '2024-03-10T10:00:00Z', { customer: 'h1' }, 'late'), tp('i-late', '2024-03-09T10:00:00Z', { visitor: 'i' }, 'i-late')]);
  await refreshKeptTotals(service.db, tenantOf(pair.kept), pair.zone, { days: 20, now });
  assert.deepEqual(await keptPathDays(pair.kept), pathDays, "the keeper's refresh found the paths again: every day of paths stays kept");
  assert.deepEqual(await keptPathOf(pair.kept, 't2'), ['', 'h-late', 'h-own']);
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'after the refresh');
  await assertKeptEqualsFresh(pair, queries, 'after the late touchpoints and the refresh');
  await keepAhead(service.db, tenantOf(pair.kept), pair.zone, { days: 20, now });
  await assertKeptEqualsFresh(pair, queries, 'kept ahead again');
});

test('an unlinked visitor\'s late touchpoint changes no kept path; linked later, its customer\'s paths are dropped and kept again', async () => {
  const pair = await pairIn('unlinked');
  await sendTouchpoints(pair, [tp('j-own', '2024-03-02T10:00:00Z', { customer: 'j1' }, 'base'), tp('y-1', '2024-03-10T10:00:00Z', { visitor: 'y' }, 'y')]);
  await sendOrders(pair, [order('w1', 'j1', '2024-03-08T12:00:00Z', 100), order('w2', 'j1', '2024-03-14T12:00:00Z', 50)]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, MARCH, 'seeded');
  const pathDays = await keptPathDays(pair.kept);
  const before = await pathRows(pair.kept, [...pathDays.keys()]);
  await sendTouchpoints(pair, [tp('y-late', '2024-03-05T10:00:00Z', { visitor: 'y' }, 'y-late')]);
  await assertKeptEqualsFresh(pair, MARCH, "an unlinked visitor's late touchpoint");
  assert.deepEqual(await keptPathDays(pair.kept), pathDays);
  assert.deepEqual(await pathRows(pair.kept, [...pathDays.keys()]), before, 'no kept path row changed');
  await sendLinks(pair, [{ visitor_id: 'y', customer_id: 'j1' }]);
  await assertKeptEqualsFresh(pair, MARCH, 'the visitor linked');
  assert.deepEqual(
    [...(await keptPathDays(pair.kept)).keys()],
    [...pathDays.keys()].filter((day) => day < '2024-03-08'),
    "the paths of j1's orders from the visitor's first touchpoint on are dropped",
  );
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-21', 'kept again');
  await assertKeptEqualsFresh(pair, MARCH, 'kept again');
});

/*
 * The paths are found again in statements of their own, after the instants were read: a write
 * committed meanwhile is read, its instant left for the next report. Here an order of the late
 * touchpoint's customer is moved from one kept day to another then: the report must not count it
 * on both days, nor leave its kept path on both.
 */
test('an order moved while the report that finds its paths again marks days stale: kept on one day, credited as before or after the move', { skip: concurrencySkip }, async () => {
  const pair = await pairIn('moved meanwhile');
  const q = query('2024-03-01', '2024-03-20', 'linear', 30, 'cash');
  await sendTouchpoints(pair, [tp('z-own', '2024-03-02T10:00:00Z', { customer: 'z1' }, 'base')]);
  await sendOrders(pair, [order('x1', 'z1', '2024-03-08T12:00:00Z', 100), order('x2', 'z1', '2024-03-12T12:00:00Z', 50)]);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-21');
  await assertKeptEqualsFresh(pair, [q], 'seeded');
  await sendTouchpoints(pair, [tp('z-late', '2024-03-05T10:00:00Z', { customer: 'z1' }, 'late')]);
  await wipeKeptTotals(pair.fresh);
  const beforeMove = await report(pair.fresh, q);
  // The kept client's report is held at its marking of stale days (a kept day it marks is locked); x2 is moved from the 12th to the 14th meanwhile.
  const [held] = await holdOnDistinctSlots(service.db, 1);
  await held!.db.query("SELECT FROM attribution_days WHERE client_id = $1 AND totals = 'linear/30/cash' AND day = '2024-03-15' FOR UPDATE", [pair.kept.client_id]);
  const reading = report(pair.kept, q);
  await waitingForALock(service.db, held!.pid);
  const move = [{ order_id: 'x2', time_of_purchase: '2024-03-14T12:00:00Z' }];
  await call(pair.kept, 'PATCH', '/v2/orders', move);
  await held!.commit();
  const raced = await reading;
  await call(pair.fresh, 'PATCH', '/v2/orders', move);
  await wipeKeptTotals(pair.fresh);
  const afterMove = await report(pair.fresh, q);
  const credited = (answer: Answer) => answer.rows.filter((row) => Number(row.rev) !== 0).map((row) => `${String(row.date)} ${String(row.campaign_id)} ${String(row.rev)}`);
  assert.ok(
    isDeepStrictEqual(raced, beforeMove) || isDeepStrictEqual(raced, afterMove),
    `the raced report credits as before the move (${credited(beforeMove).join(', ')}) or after it (${credited(afterMove).join(', ')}), not ${credited(raced).join(', ')}`,
  );
  const days = await service.db.query<{ day: string }>("SELECT DISTINCT to_char(day, 'YYYY-MM-DD') AS day FROM attribution_paths WHERE client_id = $1 AND order_id = 'x2' ORDER BY 1", [
    pair.kept.client_id,
  ]);
  assert.ok(days.length <= 1, `x2's kept path on one day at most, not on ${days.map((row) => row.day).join(' and ')}`);
  await assertKeptEqualsFresh(pair, [q], 'the next report');
});

// Random writes (late touchpoints of customers and visitors, links, orders and their moves), the
// paths kept again between some of them, reports between others: kept paths and reports as afresh.
const writes = randomWrites({ days: 22, visitors: 3, orders: 5, offsetMs: 1_800_000 });
const step = fc.oneof(
  { arbitrary: writes.touchpoints, weight: 5 },
  { arbitrary: writes.link, weight: 1 },
  { arbitrary: writes.orders, weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('move' as const), id: writes.pick('o', 5), at: writes.hour }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'keep' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'report' as const }), weight: 2 },
);
type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;
const ZONES = ['UTC', 'Asia/Kolkata', 'America/Los_Angeles'];

async function runSteps(steps: readonly Step[], run: number): Promise<void> {
  const pair = await pairIn(`property ${run}`, ZONES[run % ZONES.length]);
  const queries = [query('2024-03-01', '2024-03-16', 'linear', 7, 'cash'), query('2024-03-01', '2024-03-16', 'first_touch', 14, 'accrual', 'WEEKLY')];
  const orders = new Set<string>();
  const label = (n: number) => `run ${run}, after step ${n} of ${JSON.stringify(steps)}`;
  await sendTouchpoints(pair, [tp('seed', '2024-03-04T12:00:00Z', { customer: 'c1' }, 'cmp1'), tp('seed-v', '2024-03-05T12:00:00Z', { visitor: 'v1' }, 'cmp2')]);
  await sendLinks(pair, [{ visitor_id: 'v1', customer_id: 'c1' }, { visitor_id: 'v2', order_id: 'o2' }]);
  await sendOrders(pair, [order('o1', 'c1', '2024-03-08T12:00:00Z', 100), order('o2', 'c2', '2024-03-11T20:00:00Z', 40), order('o3', 'c1', '2024-03-13T03:00:00Z', 70)]);
  for (const id of ['o1', 'o2', 'o3']) orders.add(id);
  await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-17');
  await assertKeptEqualsFresh(pair, queries, label(-1));
  for (const [n, s] of steps.entries()) {
    if (s.kind === 'touchpoints') {
      await sendTouchpoints(pair, [...new Map(s.items.map((item) => [item.touchpoint_id, item])).values()]);
    } else if (s.kind === 'link' || s.kind === 'orders') {
      await sendRandomWrite(pair, s, orders);
    } else if (s.kind === 'move') {
      if (orders.has(s.id)) await patchOrders(pair, [{ order_id: s.id, time_of_purchase: s.at }]);
    } else if (s.kind === 'keep') {
      await keepPaths(pair.kept, pair.zone, '2024-03-01', '2024-03-17');
      await assertPathsAsFresh(pair, '2024-03-01', '2024-03-17', label(n));
    } else {
      await assertKeptEqualsFresh(pair, queries, label(n));
    }
  }
  await assertKeptEqualsFresh(pair, queries, label(steps.length));
  await assertPathsAsFresh(pair, '2024-03-01', '2024-03-17', label(steps.length));
}

test('property: random late touchpoints, links, orders and moves, paths kept again between some: kept paths and reports as afresh', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 8 }), (steps) => runSteps(steps, ++run)),
    { numRuns: Number(process.env.KEPT_PATHS_PATCH_RUNS ?? 3), interruptAfterTimeLimit: Number(process.env.KEPT_PATHS_PATCH_MS ?? 20_000), markInterruptAsFailure: false },
  );
});
