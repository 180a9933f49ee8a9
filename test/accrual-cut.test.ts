import assert from 'node:assert/strict';
import fc from 'fast-check';
import { after, test } from 'node:test';
import { LATE_TOUCHPOINTS_KEYED } from '../src/attribution/changes.js';
import type { Tenant } from '../src/auth/tenant.js';
import { keepMissingPaths, markChangedDaysStale } from '../src/attribution/daily-totals.js';
import { addDays } from '../src/calendar.js';
import { inRowsTransaction } from '../src/attribution/rows.js';
import { ADMIN_TOKEN, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * Accrual days kept without the orders placed from a cut on (migration 0022, `orders_before`: a
 * local day, the cut its first instant in the client's zone), which a report credits as it reads
 * the days (src/exports/daily-totals.ts, creditSources; attributed-rows.ts, countedAsRead), and
 * the rule by which a write makes kept days stale (markChangedDaysStale): a day of totals that
 * reach `lookback_days` back is reached by a change at L when it ends after L minus that many
 * 24-hour days, unless it was kept without the orders from a cut at or before L.
 *
 * Each scenario has two clients sent the same writes: one keeps its days (and has the paths kept
 * that the keeper would keep, over days the test chooses), the other has its kept days wiped before
 * every report, so that it computes them afresh. Local days and their starts are computed here
 * with Intl, not with the SQL under test.
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const DAY_MS = 86_400_000;

interface Pair {
  kept: TestClient;
  fresh: TestClient;
  zone: string;
}

async function call(client: TestClient, method: 'POST' | 'PATCH' | 'GET', url: string, payload?: unknown) {
  const response = await app.inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
  return response;
}

async function pairIn(zone: string, name: string): Promise<Pair> {
  const pair = { kept: await service.createClient(`${name}, kept`), fresh: await service.createClient(`${name}, afresh`), zone };
  for (const client of [pair.kept, pair.fresh]) {
    const response = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { time_zone: zone } });
    assert.equal(response.statusCode, 200, response.body);
  }
  return pair;
}

const touch = (touchpoint_id: string, customer_id: string, occurred_at: string, campaign_id = 'a') => ({
  touchpoint_id,
  occurred_at,
  customer_id,
  platform_name: 'meta',
  campaign_id,
  ad_id: `${campaign_id}-ad`,
});
const order = (order_id: string, customer_id: string, time_of_purchase: string, total: number) =>
  minimalOrder(order_id, { customer_id, time_of_purchase, currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
let padded = 0;
/**
 * `items` and, at the earliest of their times, more views of a visitor linked to nobody than a
 * write notes by key (they change no credit and no visit): the write notes that time, the change
 * whose rule these tests check, rather than its touchpoints' keys (test/change-keys.test.ts).
 */
const notedAsAnInstant = <T extends { occurred_at: string }>(items: T[]) => {
  const at = items.map((item) => item.occurred_at).sort()[0]!;
  return [...items, ...Array.from({ length: LATE_TOUCHPOINTS_KEYED }, () => ({ touchpoint_id: `view-${++padded}`, occurred_at: at, type: 'view', visitor_id: 'nobody' }))];
};
const sendTouchpoints = async (pair: Pair, items: { occurred_at: string }[]) => {
  const data = notedAsAnInstant(items);
  for (const client of [pair.kept, pair.fresh]) await call(client, 'POST', '/v1/touchpoints', { data });
};
const sendOrders = async (pair: Pair, items: unknown[]) => {
  for (const client of [pair.kept, pair.fresh]) await call(client, 'POST', '/v2/orders', items);
};

const tenantOf = (client: TestClient): Tenant => ({ clientId: client.client_id, environment: 'production', dryRun: false });
/** What a report does first: marks stale the kept days the change noted since reaches. */
const markStale = (pair: Pair) => markChangedDaysStale(service.db, { tenant: tenantOf(pair.kept), timeZone: pair.zone });
/**
 * Keeps the paths of the kept client's orders of the local days [from, to) that lack them, as the
 * keeper does: after marking stale what the writes before reached.
 */
async function keepPaths(pair: Pair, from: string, to: string) {
  await markStale(pair);
  await inRowsTransaction(service.db, (tx) => keepMissingPaths(tx, { tenant: tenantOf(pair.kept), timeZone: pair.zone, period: { kind: 'days', from, to } }));
}

type Query = Record<string, string>;
const accrual = (first: string, last: string, window: number, model = 'linear'): Query => ({
  start_date: first,
  end_date: last,
  granularity: 'DAILY',
  level: 'campaign',
  metrics: 'rev,txns,revFt,txnsFt,visits,newVisits',
  model,
  window: String(window),
  mode: 'accrual',
});
type Answer = { rows: Record<string, unknown>[]; totals: Record<string, number | null> };
const report = async (client: TestClient, query: Query) => (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(query)}`)).json() as Answer;

async function wipeKeptTotals(client: TestClient) {
  for (const table of ['attribution_credit_days', 'attribution_visit_days', 'attribution_paths', 'attribution_days', 'attribution_totals_kept', 'attribution_changes']) {
    await service.db.query(`DELETE FROM ${table} WHERE client_id = $1`, [client.client_id]);
  }
}

/** The kept client's report equals the one computed afresh; the kept client's answer. */
async function assertKeptEqualsFresh(pair: Pair, query: Query, step: string): Promise<Answer> {
  const fromKept = await report(pair.kept, query);
  await wipeKeptTotals(pair.fresh);
  assert.deepEqual(fromKept, await report(pair.fresh, query), `${pair.zone}, ${step}: ${JSON.stringify(query)}`);
  return fromKept;
}

interface KeptDay {
  totals: string;
  day: string;
  stale: boolean;
  orders_before: string | null;
  lookback_days: number;
  /** The transaction that wrote the row (PostgreSQL's xmin): another one when the day was computed again. */
  writer: string;
}
const keptDays = (pair: Pair): Promise<KeptDay[]> =>
  service.db.query<KeptDay>(
    `SELECT totals, to_char(day, 'YYYY-MM-DD') AS day, stale, to_char(orders_before, 'YYYY-MM-DD') AS orders_before, lookback_days, xmin::text AS writer
       FROM attribution_days WHERE client_id = $1 ORDER BY totals, day`,
    [pair.kept.client_id],
  );
const daysOf = (rows: KeptDay[], totals: string, which: (row: KeptDay) => boolean = () => true) => rows.filter((row) => row.totals === totals && which(row)).map((row) => row.day);
/** Each kept day of `totals` and the day before which it counts orders. */
const cutsOf = async (pair: Pair, totals: string) => Object.fromEntries((await keptDays(pair)).filter((row) => row.totals === totals).map((row) => [row.day, row.orders_before]));

/** The local date of an instant in `zone`, by Intl. */
function localDate(instant: number, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date(instant)).map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}`;
}
/** The first instant (ms) of the local day `day` in `zone`: searched for, whatever the clocks do at midnight. */
function dayStart(day: string, zone: string): number {
  let [before, from] = [Date.parse(`${day}T00:00:00Z`) - 36 * 3_600_000, Date.parse(`${day}T00:00:00Z`) + 36 * 3_600_000];
  while (from - before > 1) {
    const middle = Math.floor((before + from) / 2);
    if (localDate(middle, zone) >= day) from = middle;
    else before = middle;
  }
  return from;
}
const iso = (instant: number) => new Date(instant).toISOString();

/**
 * Whether a change at `at` should reach a kept day: the day ends after `at` minus its lookback
 * (accrual: a credit counts at a touchpoint up to a window of 24-hour days before its order),
 * and it was not kept without the orders from a cut at or before `at` (those are credited as read).
 */
const reachedBy = (row: KeptDay, at: number, zone: string) =>
  dayStart(addDays(row.day, 1), zone) > at - row.lookback_days * DAY_MS && (row.orders_before === null || at < dayStart(row.orders_before, zone));

/**
 * Runs `write` (which notes a change at `at`), marks stale as a report would, and checks every day
 * kept before against the rule; answers the days before and after.
 */
async function assertMarkedByRule(pair: Pair, at: number, write: () => Promise<unknown>, step: string): Promise<{ before: KeptDay[]; after: KeptDay[] }> {
  const before = await keptDays(pair);
  await write();
  await markStale(pair);
  const after = await keptDays(pair);
  const stale = new Map(after.map((row) => [`${row.totals} ${row.day}`, row.stale]));
  for (const row of before.filter((kept) => !kept.stale)) {
    assert.equal(stale.get(`${row.totals} ${row.day}`), reachedBy(row, at, pair.zone), `${pair.zone}, ${step}: a change at ${iso(at)}, ${row.totals} ${row.day} (orders before ${row.orders_before})`);
  }
  return { before, after };
}

test('one report over accrual days kept with two different cuts counts each order once, as afresh', async () => {
  // New York in June: UTC-4. Paths are kept before 20 June and from 21 to 24 June, not of the 20th.
  const pair = await pairIn('America/New_York', 'two cuts');
  const [cut1, cut2] = ['2024-06-20', '2024-06-25'];
  assert.equal(iso(dayStart(cut1, pair.zone)), '2024-06-20T04:00:00.000Z');
  await sendTouchpoints(pair, [
    touch('t1', 'c1', '2024-06-08T16:00:00Z', 'a'),
    touch('t2', 'c1', '2024-06-14T16:00:00Z', 'b'),
    touch('t3', 'c1', '2024-06-21T16:00:00Z', 'c'),
    touch('t4', 'c1', '2024-06-23T14:00:00Z', 'a'),
    touch('t5', 'c2', '2024-06-20T03:30:00Z', 'b'), // 23:30 on the 19th
    touch('t6', 'c3', '2024-06-22T16:00:00Z', 'c'),
  ]);
  const orders: [string, string, string, number][] = [
    ['o1', 'c1', '2024-06-10T16:00:00Z', 100], // before both cuts
    ['o2', 'c1', '2024-06-21T02:00:00Z', 40], // 22:00 on the 20th: the first cut's day, whose paths are not kept
    ['o3', 'c1', '2024-06-23T22:00:00Z', 60], // between the cuts: kept on the second cut's days, read on the first's (t2's day)
    ['o4', 'c1', '2024-06-27T16:00:00Z', 80], // after both
    ['o5', 'c2', '2024-06-20T03:50:00Z', 30], // 23:50 on the 19th, just before the first cut
    ['o6', 'c2', '2024-06-20T04:00:00Z', 20], // at the first cut
    ['o7', 'c3', '2024-06-25T03:30:00Z', 70], // 23:30 on the 24th, just before the second cut
    ['o8', 'c3', '2024-06-25T04:00:00Z', 90], // at the second cut
    ['o9', 'c4', '2024-06-12T16:00:00Z', 15], // unattributed, counted at its purchase
    ['o10', 'c4', '2024-06-22T16:00:00Z', 25],
  ];
  await sendOrders(pair, orders.map(([id, customer, at, total]) => order(id, customer, at, total)));
  await keepPaths(pair, '2024-05-25', cut1);
  await keepPaths(pair, addDays(cut1, 1), cut2);

  // The later days first, so that their run of kept paths ends at the second cut.
  await assertKeptEqualsFresh(pair, accrual('2024-06-21', '2024-06-24', 14), 'the later days');
  const answer = await assertKeptEqualsFresh(pair, accrual('2024-06-01', '2024-06-24', 14), 'both cuts');
  const cuts = await cutsOf(pair, 'linear/14/accrual');
  for (const day of Object.keys(cuts)) assert.equal(cuts[day], day < '2024-06-21' ? cut1 : cut2, `${day}: kept with the orders before its own cut`);
  // Every order's path lies within the days asked: each is one transaction, its whole total.
  assert.ok(Math.abs(answer.totals.txns! - orders.length) < 1e-4, `txns ${answer.totals.txns}`);
  assert.ok(Math.abs(answer.totals.rev! - orders.reduce((sum, [, , , total]) => sum + total, 0)) < 1e-4, `rev ${answer.totals.rev}`);

  // Once the first cut's day has its paths (the keeper's next day), its days are computed again, with the second cut; the others are read.
  const before = await keptDays(pair);
  await keepPaths(pair, cut1, addDays(cut1, 1));
  await assertKeptEqualsFresh(pair, accrual('2024-06-01', '2024-06-24', 14), 'the first cut moved on');
  const after = await keptDays(pair);
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/14/accrual'))), new Set([cut2]));
  const writer = (rows: KeptDay[], day: string) => rows.find((row) => row.totals === 'linear/14/accrual' && row.day === day)!.writer;
  for (const day of daysOf(after, 'linear/14/accrual')) {
    if (day < '2024-06-21') assert.notEqual(writer(after, day), writer(before, day), `${day} computed again`);
    else assert.equal(writer(after, day), writer(before, day), `${day} read as kept`);
  }
});

test('a write just before the cut makes the days it reaches stale; one exactly at the cut leaves them kept; reports answer as afresh', async () => {
  // New York in June (UTC-4): the cut, 20 June, starts at 04:00 UTC.
  const pair = await pairIn('America/New_York', 'at the cut');
  const cut = '2024-06-20';
  const cutAt = dayStart(cut, pair.zone);
  assert.equal(iso(cutAt), '2024-06-20T04:00:00.000Z');
  await sendTouchpoints(pair, [
    touch('t1', 'c1', '2024-06-13T16:00:00Z', 'a'),
    touch('t2', 'c1', '2024-06-18T16:00:00Z', 'b'),
    touch('t3', 'c2', '2024-06-16T16:00:00Z', 'a'),
    touch('t4', 'c3', '2024-06-09T16:00:00Z', 'c'),
  ]);
  // c1's order late in the evening before the cut: after midnight UTC, before the local midnight.
  await sendOrders(pair, [order('evening', 'c1', '2024-06-20T01:00:00Z', 40), order('early', 'c3', '2024-06-10T16:00:00Z', 25)]);
  await keepPaths(pair, '2024-05-25', cut);
  const accrualDays = accrual('2024-06-05', cut, 7);
  const cashDays = { ...accrualDays, mode: 'cash' };
  const both = async (step: string) => {
    await assertKeptEqualsFresh(pair, accrualDays, step);
    await assertKeptEqualsFresh(pair, cashDays, step);
  };
  await both('kept');
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/7/accrual'))), new Set([cut]));
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/7/cash'))), new Set([null]));

  // Exactly at the cut: a touchpoint of c2, then c2's order, both at 00:00 local. Only the cash
  // day of the cut and its visits are reached; the accrual days count neither the order nor its
  // credits, which are read.
  const atCut = await assertMarkedByRule(
    pair,
    cutAt,
    async () => {
      await sendTouchpoints(pair, [touch('at-cut', 'c2', iso(cutAt), 'c')]);
      await sendOrders(pair, [order('at-cut', 'c2', iso(cutAt), 50)]);
    },
    'at the cut',
  );
  assert.deepEqual(daysOf(atCut.after, 'linear/7/accrual', (row) => row.stale), [], 'no accrual day stale');
  assert.deepEqual(daysOf(atCut.after, 'linear/7/cash', (row) => row.stale), [cut]);
  assert.deepEqual(daysOf(atCut.after, 'visits', (row) => row.stale), [cut]);
  assert.deepEqual(daysOf(atCut.after, 'paths', (row) => row.stale), []);
  await both('a write at the cut');
  const afterAtCut = await keptDays(pair);
  assert.deepEqual(
    afterAtCut.filter((row) => row.totals === 'linear/7/accrual'),
    atCut.after.filter((row) => row.totals === 'linear/7/accrual'),
    'the accrual days read as they were kept',
  );

  // A millisecond before the cut: c1's order at 23:59:59.999 of the 19th reaches the accrual days
  // from 7 × 24 hours before it (the 12th, local), the cash days and paths of the 19th on.
  const justBefore = cutAt - 1;
  assert.equal(localDate(justBefore - 7 * DAY_MS, pair.zone), '2024-06-12');
  const before = await assertMarkedByRule(pair, justBefore, () => sendOrders(pair, [order('before-cut', 'c1', iso(justBefore), 35)]), 'just before the cut');
  const accrualReached = Array.from({ length: 9 }, (_, n) => addDays('2024-06-12', n));
  assert.deepEqual(daysOf(before.after, 'linear/7/accrual', (row) => row.stale), accrualReached);
  assert.deepEqual(daysOf(before.after, 'linear/7/cash', (row) => row.stale), ['2024-06-19', cut]);
  assert.deepEqual(daysOf(before.after, 'paths', (row) => row.stale), ['2024-06-19']);
  await both('a write just before the cut');
  // Computed again without the orders of the 19th, whose paths are stale: a second cut.
  const cuts = await cutsOf(pair, 'linear/7/accrual');
  for (const day of Object.keys(cuts)) assert.equal(cuts[day], day < '2024-06-12' ? cut : '2024-06-19', day);

  // A write at the second cut leaves every accrual day kept, one before it reaches back again.
  const secondCutAt = dayStart('2024-06-19', pair.zone);
  const atSecond = await assertMarkedByRule(pair, secondCutAt, () => sendTouchpoints(pair, [touch('at-second-cut', 'c2', iso(secondCutAt), 'b')]), 'at the second cut');
  assert.deepEqual(daysOf(atSecond.after, 'linear/7/accrual', (row) => row.stale), []);
  await both('a write at the second cut');
  const beforeSecond = await assertMarkedByRule(pair, secondCutAt - 1, () => sendTouchpoints(pair, [touch('before-second-cut', 'c1', iso(secondCutAt - 1), 'c')]), 'before the second cut');
  assert.deepEqual(daysOf(beforeSecond.after, 'linear/7/accrual', (row) => row.stale), Array.from({ length: 10 }, (_, n) => addDays('2024-06-11', n)));
  await both('a write before the second cut');

  // The keeper keeps the stale paths again: the days kept without them are computed again.
  await keepPaths(pair, '2024-06-18', cut);
  await both('paths kept again');
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/7/accrual'))), new Set([cut]));
});

test('Havana, where midnight comes twice when clocks go back: the cut is the first midnight; the orders of both midnight hours are counted once', async () => {
  // 3 November 2024: 01:00 CDT (05:00 UTC) becomes 00:00 CST, so the day starts at 04:00 UTC
  // and its first hour comes twice; the day has 25 hours.
  const pair = await pairIn('America/Havana', 'Havana, clocks back');
  const cut = '2024-11-03';
  const cutAt = dayStart(cut, pair.zone);
  assert.equal(iso(cutAt), '2024-11-03T04:00:00.000Z');
  assert.equal(dayStart('2024-11-04', pair.zone) - cutAt, 25 * 3_600_000);
  await sendTouchpoints(pair, [
    touch('t1', 'c1', '2024-11-01T16:00:00Z', 'a'),
    touch('t2', 'c1', '2024-11-03T03:30:00Z', 'b'), // 23:30 CDT on the 2nd
    touch('t3', 'c2', '2024-11-02T16:00:00Z', 'a'),
  ]);
  await sendOrders(pair, [
    order('first-midnight', 'c1', '2024-11-03T04:30:00Z', 40), // 00:30 CDT on the 3rd
    order('second-midnight', 'c1', '2024-11-03T05:30:00Z', 60), // 00:30 CST on the 3rd
    order('before', 'c2', '2024-11-02T20:00:00Z', 30),
  ]);
  await keepPaths(pair, '2024-10-20', cut);
  const days = accrual('2024-10-28', cut, 3);
  const answer = await assertKeptEqualsFresh(pair, days, 'kept');
  assert.ok(Math.abs(answer.totals.rev! - 130) < 1e-4, `every order counted once: ${answer.totals.rev}`);
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/3/accrual'))), new Set([cut]));

  // At the first midnight (a touchpoint and an order): the accrual days stay kept; in the first
  // of the two midnight hours too. A millisecond before: they reach back 3 × 24 hours.
  for (const [at, id] of [
    [cutAt, 'at-cut'],
    [cutAt + 30 * 60_000, 'first-hour'],
  ] as const) {
    const marked = await assertMarkedByRule(
      pair,
      at,
      async () => {
        await sendTouchpoints(pair, [touch(id, 'c3', iso(at), 'b')]);
        await sendOrders(pair, [order(id, 'c3', iso(at), 20)]);
      },
      id,
    );
    assert.deepEqual(daysOf(marked.after, 'linear/3/accrual', (row) => row.stale), [], id);
    await assertKeptEqualsFresh(pair, days, id);
  }
  const justBefore = await assertMarkedByRule(pair, cutAt - 1, () => sendOrders(pair, [order('before-cut', 'c2', iso(cutAt - 1), 10)]), 'just before the cut');
  assert.deepEqual(daysOf(justBefore.after, 'linear/3/accrual', (row) => row.stale), ['2024-10-30', '2024-10-31', '2024-11-01', '2024-11-02', cut]);
  await assertKeptEqualsFresh(pair, days, 'a write just before the cut');
});

test('Havana, where midnight does not come when clocks go forward: a 23-hour day; what a change reaches and what a day counts go by 24-hour days', async () => {
  // 10 March 2024: 00:00 CST (05:00 UTC) becomes 01:00 CDT; the day has 23 hours.
  const pair = await pairIn('America/Havana', 'Havana, clocks forward');
  assert.equal(iso(dayStart('2024-03-10', pair.zone)), '2024-03-10T05:00:00.000Z');
  assert.equal(iso(dayStart('2024-03-11', pair.zone)), '2024-03-11T04:00:00.000Z');
  await sendTouchpoints(pair, [
    touch('t1', 'c1', '2024-03-10T04:45:00Z', 'a'), // 23:45 CST on the 9th
    touch('t2', 'c2', '2024-03-08T17:00:00Z', 'b'),
  ]);
  // 00:30 CDT on the 11th: 23 h 45 min after t1, so in its 1-day path, though two local days after it.
  await sendOrders(pair, [order('after-short-day', 'c1', '2024-03-11T04:30:00Z', 40), order('before', 'c2', '2024-03-09T15:00:00Z', 20)]);
  // Paths kept to the 10th: the days to the 9th count the orders of a window and a day after them,
  // to the 11th, whose paths are not kept: they are kept without the 11th's orders.
  await keepPaths(pair, '2024-02-25', '2024-03-11');
  const days = accrual('2024-03-05', '2024-03-09', 1);
  const answer = await assertKeptEqualsFresh(pair, days, 'the 11th not kept');
  assert.ok(Math.abs(answer.totals.rev! - 60) < 1e-4, `both orders: ${answer.totals.rev}`);
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/1/accrual'))), new Set(['2024-03-11']));
  // The 11th's paths kept: computed again with every order.
  await keepPaths(pair, '2024-03-11', '2024-03-12');
  await assertKeptEqualsFresh(pair, days, 'the 11th kept');
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/1/accrual'))), new Set([null]));

  // An order of c1 at 00:20 CDT on the 11th: 24 hours before it is 23:20 CST on the 9th, two local days back.
  const at = Date.parse('2024-03-11T04:20:00Z');
  assert.equal(localDate(at - DAY_MS, pair.zone), '2024-03-09');
  const marked = await assertMarkedByRule(pair, at, () => sendOrders(pair, [order('late', 'c1', iso(at), 30)]), 'an order after the short day');
  assert.deepEqual(daysOf(marked.after, 'linear/1/accrual', (row) => row.stale), ['2024-03-09']);
  await assertKeptEqualsFresh(pair, days, 'an order after the short day');
});

test('London, where the last day of summer time has 25 hours: the cut starts at 23:00 UTC, a change reaches back 24 hours', async () => {
  // 27 October 2024: 02:00 BST (01:00 UTC) becomes 01:00 GMT.
  const pair = await pairIn('Europe/London', 'London, clocks back');
  const cut = '2024-10-27';
  const cutAt = dayStart(cut, pair.zone);
  assert.equal(iso(cutAt), '2024-10-26T23:00:00.000Z');
  assert.equal(dayStart('2024-10-28', pair.zone) - cutAt, 25 * 3_600_000);
  await sendTouchpoints(pair, [
    touch('t1', 'c1', '2024-10-26T22:30:00Z', 'a'), // 23:30 BST on the 26th
    touch('t2', 'c2', '2024-10-26T12:00:00Z', 'b'),
    touch('t3', 'c3', '2024-10-27T00:30:00Z', 'a'), // 01:30 BST on the 27th
  ]);
  await sendOrders(pair, [
    order('before-utc-midnight', 'c1', '2024-10-26T23:30:00Z', 40), // 00:30 BST on the 27th: the cut's day, still the 26th in UTC
    order('second-one-thirty', 'c1', '2024-10-27T01:30:00Z', 50), // 01:30 GMT, the hour that comes twice
    order('before', 'c2', '2024-10-26T20:00:00Z', 30), // 21:00 BST on the 26th
    order('end-of-long-day', 'c3', '2024-10-27T23:30:00Z', 60), // 23:30 GMT on the 27th: 23 hours after t3
  ]);
  await keepPaths(pair, '2024-10-15', cut);
  const days = accrual('2024-10-22', cut, 1);
  const answer = await assertKeptEqualsFresh(pair, days, 'kept');
  assert.ok(Math.abs(answer.totals.rev! - 180) < 1e-4, `every order counted once: ${answer.totals.rev}`);
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/1/accrual'))), new Set([cut]));

  const atCut = await assertMarkedByRule(pair, cutAt, () => sendTouchpoints(pair, [touch('at-cut', 'c2', iso(cutAt), 'b')]), 'at the cut');
  assert.deepEqual(daysOf(atCut.after, 'linear/1/accrual', (row) => row.stale), []);
  await assertKeptEqualsFresh(pair, days, 'a write at the cut');
  const justBefore = await assertMarkedByRule(pair, cutAt - 1, () => sendOrders(pair, [order('before-cut', 'c2', iso(cutAt - 1), 10)]), 'just before the cut');
  assert.deepEqual(daysOf(justBefore.after, 'linear/1/accrual', (row) => row.stale), ['2024-10-25', '2024-10-26', cut]);
  await assertKeptEqualsFresh(pair, days, 'a write just before the cut');

  // The paths of the 26th (stale) and the 27th kept: the days are kept without the 28th's orders, from 00:00 UTC.
  await keepPaths(pair, '2024-10-26', '2024-10-28');
  await assertKeptEqualsFresh(pair, days, 'the long day kept');
  assert.deepEqual(new Set(Object.values(await cutsOf(pair, 'linear/1/accrual'))), new Set(['2024-10-28']));
  // An order of c3 at 23:40 GMT on the 27th: 24 hours before it is 00:40 BST the same day, so
  // the 26th is not reached; t3's day is.
  const at = Date.parse('2024-10-27T23:40:00Z');
  const marked = await assertMarkedByRule(pair, at, () => sendOrders(pair, [order('late', 'c3', iso(at), 70)]), 'late on the long day');
  assert.deepEqual(daysOf(marked.after, 'linear/1/accrual', (row) => row.stale), [cut]);
  await assertKeptEqualsFresh(pair, days, 'late on the long day');
});

test('around clocks changing and cuts, a change marks stale exactly the kept days it can reach', async () => {
  // Each kept day against changes at the instants where the rule turns: the cut, a millisecond
  // either side, the clocks' change, and the last instant from which the day is reached (its end
  // plus its lookback) and the first from which it is not. Changes are visits of a visitor of no
  // customer, which note their time as every write does.
  const scenarios = [
    { zone: 'America/Havana', cut: '2024-11-03', window: 3, clocks: '2024-11-03T05:00:00Z' },
    { zone: 'America/Havana', cut: '2024-03-10', window: 3, clocks: '2024-03-10T05:00:00Z' },
    { zone: 'America/Havana', cut: '2024-03-11', window: 1, clocks: '2024-03-10T05:00:00Z' },
    { zone: 'America/Havana', cut: '2024-03-12', window: 1, clocks: '2024-03-10T05:00:00Z' },
    { zone: 'Europe/London', cut: '2024-10-27', window: 1, clocks: '2024-10-27T01:00:00Z' },
    { zone: 'Europe/London', cut: '2024-04-01', window: 1, clocks: '2024-03-31T01:00:00Z' },
    // Santiago's clocks go back at midnight to 23:00: the hour before midnight comes twice.
    { zone: 'America/Santiago', cut: '2024-04-07', window: 1, clocks: '2024-04-07T03:00:00Z' },
  ];
  for (const { zone, cut, window, clocks } of scenarios) {
    const pair = await pairIn(zone, `rule ${zone} ${cut}`);
    await sendTouchpoints(pair, [touch('t1', 'c1', iso(dayStart(addDays(cut, -2), zone) + 3_600_000))]);
    await sendOrders(pair, [order('o1', 'c1', iso(dayStart(cut, zone) + 3_600_000), 10)]);
    await keepPaths(pair, addDays(cut, -10), cut);
    const [first, last] = [addDays(cut, -4), addDays(cut, 2)];
    await report(pair.kept, accrual(first, last, window));
    await report(pair.kept, { ...accrual(first, last, window), mode: 'cash' });
    const kept = await keptDays(pair);
    assert.deepEqual(new Set(kept.filter((row) => row.totals.endsWith('/accrual')).map((row) => row.orders_before)), new Set([cut]));
    const cutAt = dayStart(cut, zone);
    const instants = new Set([cutAt - 1, cutAt, cutAt + 1, Date.parse(clocks) - 1, Date.parse(clocks)]);
    for (const row of kept.filter((one) => one.day >= addDays(first, -1))) {
      const reachedUntil = dayStart(addDays(row.day, 1), zone) + row.lookback_days * DAY_MS;
      instants.add(reachedUntil - 1).add(reachedUntil);
    }
    let n = 0;
    for (const at of [...instants].sort((a, b) => a - b)) {
      await assertMarkedByRule(pair, at, () => call(pair.kept, 'POST', '/v1/touchpoints', { data: notedAsAnInstant([{ touchpoint_id: `v${++n}`, occurred_at: iso(at), visitor_id: 'anonymous' }]) }), `${zone} ${cut}`);
      await service.db.query('UPDATE attribution_days SET stale = false WHERE client_id = $1', [pair.kept.client_id]);
    }
  }
});

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

// Random orders and touchpoints of three customers on both sides of a cut, in zones whose clocks
// change at or near it.
const SCENARIOS = [
  { zone: 'America/New_York', cut: '2024-06-20' },
  { zone: 'Asia/Tokyo', cut: '2024-06-20' },
  { zone: 'America/Havana', cut: '2024-11-03' },
  { zone: 'America/Havana', cut: '2024-03-10' },
  { zone: 'America/Havana', cut: '2024-03-11' },
  { zone: 'Europe/London', cut: '2024-10-27' },
  { zone: 'America/Santiago', cut: '2024-04-07' },
];
/** An instant as milliseconds from the cut: from six days before it to two after, or right at it. */
const fromCut = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -6 * 1440, max: 2 * 1440 }).map((minutes) => minutes * 60_000) },
  { weight: 1, arbitrary: fc.constantFrom(0, -1, 1) },
);
const item = fc.record({ customer: fc.constantFrom('c1', 'c2', 'c3'), at: fromCut, campaign: fc.constantFrom('a', 'b'), total: fc.integer({ min: 1, max: 500 }) });
const items = fc.array(item, { minLength: 1, maxLength: 2 });
const step = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('touchpoints' as const), items }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('orders' as const), items }) },
  // The keeper keeps the paths that lack them, up to `days` after the cut: the cut moves on.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('keeper' as const), days: fc.constantFrom(0, 1, 2) }) },
);

test('property: with orders and touchpoints on both sides of cuts, kept accrual days are marked by the rule and answer as afresh', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        scenario: fc.constantFrom(...SCENARIOS),
        window: fc.constantFrom(1, 3, 7),
        model: fc.constantFrom('linear', 'time_decay', 'first_touch'),
        // Paths not kept of a day this many days before the cut: the days after it are kept with
        // the orders before the cut, those before it with the orders before that day.
        gap: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        touchpoints: fc.array(item, { minLength: 1, maxLength: 6 }),
        orders: fc.array(item, { minLength: 1, maxLength: 4 }),
        steps: fc.array(step, { minLength: 1, maxLength: 4 }),
      }),
      async ({ scenario: { zone, cut }, window, model, gap, touchpoints, orders, steps }) => {
        const pair = await pairIn(zone, `random ${++run}`);
        const cutAt = dayStart(cut, zone);
        let n = 0;
        const send = async (kind: 'touchpoints' | 'orders', sent: readonly ValueOf<typeof item>[]) => {
          if (kind === 'touchpoints') await sendTouchpoints(pair, sent.map((one) => touch(`t${++n}`, one.customer, iso(cutAt + one.at), one.campaign)));
          else await sendOrders(pair, sent.map((one) => order(`o${++n}`, one.customer, iso(cutAt + one.at), one.total)));
        };
        await send('touchpoints', touchpoints);
        await send('orders', orders);
        const days = accrual(addDays(cut, -5), addDays(cut, 1), window, model);
        if (gap === undefined) await keepPaths(pair, addDays(cut, -20), cut);
        else {
          await keepPaths(pair, addDays(cut, -20), addDays(cut, -gap));
          await keepPaths(pair, addDays(cut, 1 - gap), cut);
          await assertKeptEqualsFresh(pair, { ...days, start_date: addDays(cut, 1 - gap) }, `run ${run}, the days after the gap`);
        }
        await assertKeptEqualsFresh(pair, days, `run ${run}, kept`);
        for (const [index, next] of steps.entries()) {
          const what = `run ${run}, step ${index}: ${JSON.stringify(next)}`;
          if (next.kind === 'keeper') await keepPaths(pair, addDays(cut, -20), addDays(cut, next.days));
          else await assertMarkedByRule(pair, cutAt + Math.min(...next.items.map((one) => one.at)), () => send(next.kind, next.items), what);
          await assertKeptEqualsFresh(pair, days, what);
        }
      },
    ),
    { numRuns: 25 },
  );
});
