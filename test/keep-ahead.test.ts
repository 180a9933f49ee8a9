import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import type { Logger } from 'pino';
import { MODEL_IDS, RULE_MODEL_IDS } from '../src/attribution/models.js';
import type { Tenant } from '../src/auth/tenant.js';
import { DUE_AHEAD, KEPT_AHEAD, keepAhead, refreshKeptTotals, startKeptTotalsKeeper } from '../src/attribution/keeper.js';
import { addDays, localToday } from '../src/calendar.js';
import { ADMIN_TOKEN, hourlySpend, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * The keeper keeps the days of the dashboard's window and mode ahead, for every model, for every
 * client with production data (src/exports/keeper.ts), so that the dashboard opens on kept days.
 * The data is dated from the real today, which the keeper's background passes go by.
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const ZONE = 'America/New_York';
/** More than the keeper's piece of 30 days: two pieces. */
const DAYS = 40;
/** The instant of every test here, the keepers' clock included: a run across midnight in ZONE has one today. */
const now = new Date();
const today = localToday(ZONE, now);
/** Noon of the local day `days` before today, as an instant (New York is 4 or 5 hours behind UTC). */
const noonBefore = (days: number) => `${addDays(today, -days)}T16:00:00Z`;

async function call(client: TestClient, method: 'POST' | 'GET', url: string, payload?: unknown, port = app) {
  const response = await port.inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
  return response;
}

async function clientWithData(name: string, port = app): Promise<TestClient> {
  const client = await service.createClient(name);
  const zone = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { time_zone: ZONE } });
  assert.equal(zone.statusCode, 200, zone.body);
  const meta = (campaign_id: string) => ({ platform_name: 'meta', campaign_id, ad_id: `${campaign_id}-ad` });
  await call(client, 'POST', '/v1/spend_hourly', { data: [{ ...hourlySpend('spring'), hour_start_iso: noonBefore(3), platform_name: 'meta', campaign_id: 'spring', spend: 20 }] }, port);
  await call(
    client,
    'POST',
    '/v1/touchpoints',
    {
      data: [
        { touchpoint_id: 't1', occurred_at: noonBefore(50), customer_id: 'c1', ...meta('autumn') },
        { touchpoint_id: 't2', occurred_at: noonBefore(6), customer_id: 'c1', ...meta('spring') },
        { touchpoint_id: 't3', occurred_at: noonBefore(4), customer_id: 'c1', utm_source: 'newsletter', utm_medium: 'email' },
        { touchpoint_id: 't4', occurred_at: noonBefore(3), visitor_id: 'v2', customer_id: 'c2', ...meta('spring') },
      ],
    },
    port,
  );
  const order = (id: string, customer_id: string, days: number, total: number) =>
    minimalOrder(id, { customer_id, time_of_purchase: noonBefore(days), currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
  await call(client, 'POST', '/v2/orders', [order('o1', 'c1', 2, 100), order('o2', 'c2', 1, 40), order('o3', 'c1', 20, 10)], port);
  return client;
}

const tenantOf = (client: TestClient): Tenant => ({ clientId: client.client_id, environment: 'production', dryRun: false });
const aheadTotals = RULE_MODEL_IDS.map((model) => `${model}/${KEPT_AHEAD.window}/${KEPT_AHEAD.accountingMode}`);

/** The kept days of a client's totals (not stale), with the transaction that wrote each (PostgreSQL's xmin). */
async function keptDays(client: TestClient, totals: string): Promise<Map<string, string>> {
  const rows = await service.db.query<{ day: string; writer: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, xmin::text AS writer FROM attribution_days WHERE client_id = $1 AND totals = $2 AND NOT stale ORDER BY day`,
    [client.client_id, totals],
  );
  return new Map(rows.map((row) => [row.day, row.writer]));
}
const lastDays = Array.from({ length: DAYS }, (_, n) => addDays(today, n - DAYS));
/** The changes a client's writes noted that no report or keeper has taken yet: instants and keys (src/attribution/changes.ts). */
const changesNoted = async (client: TestClient) =>
  (
    await service.db.query<{ n: number }>(
      'SELECT ((SELECT count(*) FROM attribution_changes WHERE client_id = $1) + (SELECT count(*) FROM attribution_change_keys WHERE client_id = $1))::int AS n',
      [client.client_id],
    )
  )[0]!.n;

/** The touchpoints of an order's kept path, by id ('': the order's own row). */
const keptPath = async (client: TestClient, orderId: string) =>
  (await service.db.query<{ touchpoint_id: string }>('SELECT touchpoint_id FROM attribution_paths WHERE client_id = $1 AND order_id = $2 ORDER BY touchpoint_id', [client.client_id, orderId])).map(
    (row) => row.touchpoint_id,
  );

const due = async (at: Date) => (await service.db.query<{ client_id: string }>(DUE_AHEAD, [at.toISOString()])).map((row) => row.client_id);

const report = async (client: TestClient, model: string, window = String(KEPT_AHEAD.window), days = lastDays, mode: string = KEPT_AHEAD.accountingMode) => {
  const query = { start_date: days[0]!, end_date: days.at(-1)!, granularity: 'DAILY', level: 'campaign', metrics: 'spend,rev,txns,revFt,visits,newVisits', model, window, mode };
  return (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(query)}`)).json() as { rows: Record<string, unknown>[]; totals: Record<string, number | null> };
};
async function wipeKeptTotals(client: TestClient) {
  for (const table of ['attribution_credit_days', 'attribution_visit_days', 'attribution_days', 'attribution_totals_kept', 'attribution_changes']) {
    await service.db.query(`DELETE FROM ${table} WHERE client_id = $1`, [client.client_id]);
  }
}

const shop = await clientWithData('shop');
const empty = await service.createClient('no data');
const uatOnly = await clientWithData('uat data only', service.uat);

test("the dashboard opens on the keeper's window and mode", () => {
  const page = fs.readFileSync(new URL('../src/pages/dashboard.html', import.meta.url), 'utf8');
  const selected = (id: string) => new RegExp(`<select id="${id}">[^]*?<option value="([^"]+)" selected>`).exec(page)?.[1];
  assert.equal(selected('window'), String(KEPT_AHEAD.window));
  assert.equal(selected('mode'), KEPT_AHEAD.accountingMode);
});

test('every model of the last days is kept ahead for the clients with production data, once a day; reports read them', async () => {
  const dueNow = await due(now);
  assert.ok(dueNow.includes(shop.client_id));
  assert.ok(!dueNow.includes(empty.client_id), 'a client without data is not due');
  assert.ok(!dueNow.includes(uatOnly.client_id), 'UAT data is not kept ahead');

  await keepAhead(service.db, tenantOf(shop), ZONE, { days: DAYS, now });
  const accrualAhead = RULE_MODEL_IDS.map((model) => `${model}/${KEPT_AHEAD.window}/accrual`);
  for (const totals of [...aheadTotals, ...accrualAhead, 'visits']) assert.deepEqual([...(await keptDays(shop, totals)).keys()], lastDays, totals);
  assert.deepEqual(
    await service.db.query("SELECT DISTINCT to_char(orders_before, 'YYYY-MM-DD') AS day FROM attribution_days WHERE client_id = $1 AND totals LIKE '%/accrual'", [shop.client_id]),
    [{ day: today }],
    "accrual days kept without today's orders",
  );
  assert.ok(!(await due(now)).includes(shop.client_id), 'done for today');
  assert.ok((await due(new Date(now.getTime() + 86_400_000))).includes(shop.client_id), 'due again tomorrow');

  for (const [model, mode] of [['linear', 'cash'], ['first_touch', 'cash'], ['clicks_and_views', 'cash'], ['position_based', 'accrual']] as const) {
    const kept = await keptDays(shop, `${model}/${KEPT_AHEAD.window}/${mode}`);
    const fromKept = await report(shop, model, undefined, undefined, mode);
    assert.deepEqual(await keptDays(shop, `${model}/${KEPT_AHEAD.window}/${mode}`), kept, `${model}, ${mode}: the report read the days kept ahead`);
    assert.ok(fromKept.rows.some((row) => Number(row.rev) > 0), `${model}, ${mode}: credited revenue`);
    await wipeKeptTotals(shop);
    assert.deepEqual(await report(shop, model, undefined, undefined, mode), fromKept, `${model}, ${mode}: as computed by the report itself`);
    await keepAhead(service.db, tenantOf(shop), ZONE, { days: DAYS, now });
  }
  // Another window is computed when it is asked, for the model asked.
  await report(shop, 'linear', '14');
  assert.equal((await keptDays(shop, `linear/14/${KEPT_AHEAD.accountingMode}`)).size, DAYS);
  assert.equal((await keptDays(shop, `first_touch/14/${KEPT_AHEAD.accountingMode}`)).size, 0);
});

test('other windows and models of cash days are credited from the paths kept with them, as from the touchpoints', async () => {
  const client = await clientWithData('kept paths');
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const asked = ['1', '7', '90'].flatMap((window) => MODEL_IDS.map((model) => [model, window] as const));
  const fromPaths = [];
  for (const [model, window] of asked) fromPaths.push(await report(client, model, window));
  await wipeKeptTotals(client);
  for (const [n, [model, window]] of asked.entries()) assert.deepEqual(await report(client, model, window), fromPaths[n], `${model}, ${window} days`);

  // The report read the kept paths: their purchase totals doubled, its revenue doubles.
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  await service.db.query('UPDATE attribution_paths SET purchase_total = purchase_total * 2 WHERE client_id = $1', [client.client_id]);
  await service.db.query("DELETE FROM attribution_days WHERE client_id = $1 AND totals = 'linear/7/cash'", [client.client_id]);
  const revenue = (answer: { totals: Record<string, number | null> }) => answer.totals.rev!;
  const doubled = await report(client, 'linear', '7');
  const original = fromPaths[asked.findIndex(([model, window]) => model === 'linear' && window === '7')]!;
  assert.ok(revenue(original) > 0);
  assert.ok(Math.abs(revenue(doubled) - 2 * revenue(original)) < 1e-5, `${revenue(doubled)} is twice ${revenue(original)}`);
});

test("kept paths hold how many days before its purchase each touchpoint came: a window's inclusive end is read from them", async () => {
  const client = await clientWithData('reach');
  const exactlyAWeekBefore = new Date(Date.parse(noonBefore(9)));
  const justOverAWeekBefore = new Date(exactlyAWeekBefore.getTime() - 1000);
  await call(client, 'POST', '/v1/touchpoints', {
    data: [
      { touchpoint_id: 'edge', occurred_at: exactlyAWeekBefore.toISOString(), customer_id: 'c9', platform_name: 'meta', campaign_id: 'edge', ad_id: 'edge-ad' },
      { touchpoint_id: 'beyond', occurred_at: justOverAWeekBefore.toISOString(), customer_id: 'c9', platform_name: 'meta', campaign_id: 'beyond', ad_id: 'beyond-ad' },
    ],
  });
  const order = minimalOrder('o9', { customer_id: 'c9', time_of_purchase: noonBefore(2), currency: 'USD', purchase_total: 70, products: [{ id: 'p', name: 'P', quantity: 1, price: 70 }] });
  await call(client, 'POST', '/v2/orders', [order]);
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const reach = await service.db.query<{ touchpoint_id: string; reach_days: number }>(
    "SELECT touchpoint_id, reach_days FROM attribution_paths WHERE client_id = $1 AND order_id = 'o9' ORDER BY reach_days",
    [client.client_id],
  );
  assert.deepEqual(reach.map((row) => [row.touchpoint_id, row.reach_days]), [['', 0], ['edge', 7], ['beyond', 8]]);

  const revenueOf = (answer: { rows: Record<string, unknown>[] }, campaign: string) =>
    answer.rows.filter((row) => row.campaign_id === campaign).reduce((sum, row) => sum + Number(row.rev), 0);
  const fromPaths = await report(client, 'linear', '7');
  assert.equal(revenueOf(fromPaths, 'edge'), 70, 'a touchpoint exactly 7 days before is within 7 days');
  assert.equal(revenueOf(fromPaths, 'beyond'), 0);
  await wipeKeptTotals(client);
  assert.deepEqual(await report(client, 'linear', '7'), fromPaths, 'as from the touchpoints');
});

test("a day's kept paths are those of the orders of its local day: one late in the evening, the next day in UTC, is the day's", async () => {
  const client = await clientWithData('evening order');
  const day = addDays(today, -10);
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'evening', occurred_at: `${day}T16:00:00Z`, customer_id: 'c3', platform_name: 'meta', campaign_id: 'evening' }] });
  // 03:30 UTC the next day: 22:30 or 23:30 of the day in New York.
  const evening = minimalOrder('evening', { customer_id: 'c3', time_of_purchase: `${addDays(day, 1)}T03:30:00Z`, currency: 'USD', purchase_total: 70, products: [{ id: 'p', name: 'P', quantity: 1, price: 70 }] });
  await call(client, 'POST', '/v2/orders', [evening]);
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const fromPaths = await report(client, 'linear', '7', [day]);
  assert.equal(fromPaths.totals.rev, 70);
  await wipeKeptTotals(client);
  assert.deepEqual(await report(client, 'linear', '7', [day]), fromPaths);
});

/** An order of c1 placed now (as the tests' clock goes): today's, whose path is never kept. */
const ofNow = (id: string, total: number) =>
  minimalOrder(id, { customer_id: 'c1', time_of_purchase: now.toISOString(), currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });

test("accrual days are kept from the kept paths of the orders up to a window after them, today's orders credited as they are read: live orders leave them kept", async () => {
  const client = await clientWithData('accrual from kept paths');
  // c1's touchpoints 6 and 4 days ago, t2 and t3, are in the 7-day path of an order of now: today's, whose path is not kept.
  await call(client, 'POST', '/v2/orders', [ofNow('now', 60)]);
  const days = lastDays.slice(-10);
  const afresh = await report(client, 'linear', '7', days, 'accrual');
  await wipeKeptTotals(client);
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  assert.deepEqual(await report(client, 'linear', '7', days, 'accrual'), afresh, 'the same from kept paths');
  const ordersBefore = await service.db.query<{ day: string }>(
    "SELECT DISTINCT to_char(orders_before, 'YYYY-MM-DD') AS day FROM attribution_days WHERE client_id = $1 AND totals = 'linear/7/accrual'",
    [client.client_id],
  );
  assert.deepEqual(ordersBefore, [{ day: today }], "kept with the orders before today's");

  // An order placed now: the kept days stay, and the report counts it.
  const kept = await keptDays(client, 'linear/7/accrual');
  await call(client, 'POST', '/v2/orders', [ofNow('live', 30)]);
  const revenue = (answer: { totals: Record<string, number | null> }) => answer.totals.rev!;
  const afterLive = await report(client, 'linear', '7', days, 'accrual');
  assert.deepEqual(await keptDays(client, 'linear/7/accrual'), kept, 'not computed again');
  assert.ok(Math.abs(revenue(afterLive) - (revenue(afresh) + 30)) < 1e-5, `${revenue(afterLive)}: ${revenue(afresh)} and the live order's 30, t2's and t3's`);
  // A late write before today reaches them: the path of c1's next order, o1 two days ago, and its accrual days up to 7 days before it.
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(3), customer_id: 'c1', platform_name: 'google', campaign_id: 'search' }] });
  const afterLate = await report(client, 'linear', '7', days, 'accrual');
  const recomputed = await keptDays(client, 'linear/7/accrual');
  for (const day of days) {
    if (day < addDays(today, -2 - 7)) assert.equal(recomputed.get(day), kept.get(day), `${day} kept`);
    else assert.notEqual(recomputed.get(day), kept.get(day), `${day}, which the late touchpoint reaches, computed again`);
  }
  // Once today's paths are kept (by tomorrow's keeper), they are computed again from them.
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now: new Date(now.getTime() + 86_400_000) });
  assert.deepEqual(await report(client, 'linear', '7', days, 'accrual'), afterLate);
  const movedOn = await service.db.query<{ day: string }>(
    "SELECT DISTINCT to_char(orders_before, 'YYYY-MM-DD') AS day FROM attribution_days WHERE client_id = $1 AND totals = 'linear/7/accrual' AND NOT stale",
    [client.client_id],
  );
  assert.deepEqual(movedOn, [{ day: addDays(today, 1) }], "with the orders before tomorrow's");
  await wipeKeptTotals(client);
  assert.deepEqual(await report(client, 'linear', '7', days, 'accrual'), afterLate, 'as computed from the touchpoints');

  // Read from the kept paths: their purchase totals doubled, the revenue of the orders before today
  // doubles; those of today, credited as the days are read, count as they are.
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const beforeDoubling = await report(client, 'linear', '7', days, 'accrual');
  await service.db.query('UPDATE attribution_paths SET purchase_total = purchase_total * 2 WHERE client_id = $1', [client.client_id]);
  await service.db.query("DELETE FROM attribution_days WHERE client_id = $1 AND totals = 'linear/7/accrual'", [client.client_id]);
  const doubled = await report(client, 'linear', '7', days, 'accrual');
  const ofToday = 60 + 30; // all credited to t2, t3 and the late touchpoint, in the days asked
  const expected = 2 * (revenue(beforeDoubling) - ofToday) + ofToday;
  assert.ok(Math.abs(revenue(doubled) - expected) < 1e-5, `${revenue(doubled)}: twice ${revenue(beforeDoubling) - ofToday}, and today's ${ofToday}`);
});

test("one report over accrual days kept with and without today's orders counts each order once", async () => {
  const client = await clientWithData('accrual kept both ways');
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'mid', occurred_at: noonBefore(15), customer_id: 'c1', platform_name: 'meta', campaign_id: 'autumn' }] });
  await call(client, 'POST', '/v2/orders', [ofNow('now', 60)]);
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  await report(client, 'linear', '30', lastDays.slice(-10), 'accrual');
  // The first of these days have no kept paths: they are credited from the touchpoints, with every order (today's reaches 15 days back).
  const longer = Array.from({ length: DAYS + 10 }, (_, n) => addDays(today, n - DAYS - 10));
  const both = await report(client, 'linear', '30', longer, 'accrual');
  const kinds = await service.db.query<{ day: string | null }>(
    "SELECT DISTINCT to_char(orders_before, 'YYYY-MM-DD') AS day FROM attribution_days WHERE client_id = $1 AND totals = 'linear/30/accrual' ORDER BY 1",
    [client.client_id],
  );
  assert.deepEqual(kinds, [{ day: today }, { day: null }]);
  await wipeKeptTotals(client);
  assert.deepEqual(await report(client, 'linear', '30', longer, 'accrual'), both);
});

test("today's cash days a report kept are computed again after writes, but today's paths are never kept: live orders would change them at every pass", async () => {
  const client = await clientWithData('today');
  const days = [...lastDays.slice(-3), today];
  await report(client, 'linear', '14', days);
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  assert.deepEqual([...(await keptDays(client, 'paths')).keys()], lastDays, "the keeper's days' paths");
  const before = await keptDays(client, 'linear/14/cash');
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'live', occurred_at: now.toISOString(), customer_id: 'c1' }] });
  await refreshKeptTotals(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const after = await keptDays(client, 'linear/14/cash');
  assert.deepEqual([...after.keys()], days);
  assert.notEqual(after.get(today), before.get(today), 'today computed again');
  assert.equal(after.get(days[0]!), before.get(days[0]!), 'the days before kept');
  assert.deepEqual([...(await keptDays(client, 'paths')).keys()], lastDays, 'no paths of today');
});

async function waitFor(what: string, done: () => Promise<boolean>) {
  for (let waited = 0; !(await done()); waited += 20) {
    assert.ok(waited < 30_000, what);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const everyModelKept = async (client: TestClient) => {
  for (const totals of aheadTotals) if ((await keptDays(client, totals)).size < DAYS) return false;
  return true;
};

test('the keeper keeps them ahead in the background, and computes every model again after a late write', async () => {
  const other = await clientWithData('kept by the keeper');
  const keeper = startKeptTotalsKeeper({ db: service.db, intervalMs: 20, keepersDays: DAYS, clock: () => now });
  try {
    await waitFor('the keeper kept the days ahead', async () => !(await due(now)).includes(other.client_id) && (await everyModelKept(other)));
    const before = await Promise.all(aheadTotals.map((totals) => keptDays(other, totals)));
    // A touchpoint of c2 five days ago: in the path of c2's next order, o2 a day ago.
    const changed = addDays(today, -1);
    await call(other, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(5), customer_id: 'c2', platform_name: 'google', campaign_id: 'search' }] });
    await waitFor('the keeper computed the changed days again', async () => (await changesNoted(other)) === 0 && (await everyModelKept(other)));
    for (const [n, totals] of aheadTotals.entries()) {
      for (const [day, writer] of await keptDays(other, totals)) {
        if (day < changed) assert.equal(writer, before[n]!.get(day), `${totals} ${day} kept`);
        else assert.notEqual(writer, before[n]!.get(day), `${totals} ${day} computed again`);
      }
    }
  } finally {
    await keeper.stop();
  }
  const fromKept = await report(other, 'position_based');
  await wipeKeptTotals(other);
  assert.deepEqual(await report(other, 'position_based'), fromKept);
});

test("after a report took a late write's change, the keeper computes again what it made stale: the other models' days; the paths of the customer's order are found again at once", async () => {
  const client = await clientWithData('a report first');
  await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
  const kept = [...aheadTotals, 'paths', 'visits'];
  const before = await Promise.all(kept.map((totals) => keptDays(client, totals)));
  // A touchpoint of c2 five days ago: the credits from c2's next order on (o2, a day ago), and the visits of its day.
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(5), customer_id: 'c2', platform_name: 'google', campaign_id: 'search' }] });
  const changed = addDays(today, -1);
  const reached = (totals: string, day: string) => (totals === 'visits' ? day === addDays(today, -5) : day >= changed);
  const afterLate = await report(client, 'linear');
  assert.equal(await changesNoted(client), 0, 'the report took the change');
  const untouched = lastDays.filter((day) => day < changed);
  assert.deepEqual([...(await keptDays(client, 'first_touch/30/cash')).keys()], untouched, "another model's changed days are stale");
  assert.deepEqual(await keptDays(client, 'paths'), before[kept.indexOf('paths')], 'the paths stay kept');
  assert.deepEqual(await keptPath(client, 'o2'), ['', 'late', 't4'], "o2's kept path holds the late touchpoint");

  const keeper = startKeptTotalsKeeper({ db: service.db, intervalMs: 20, keepersDays: DAYS, clock: () => now });
  const staleDays = async () => (await service.db.query('SELECT FROM attribution_days WHERE client_id = $1 AND stale', [client.client_id])).length;
  try {
    await waitFor('the keeper computed the stale days again', async () => (await staleDays()) === 0 && (await everyModelKept(client)));
  } finally {
    await keeper.stop();
  }
  for (const [n, totals] of kept.entries()) {
    const after = await keptDays(client, totals);
    assert.deepEqual([...after.keys()], lastDays, `${totals}: every day kept`);
    for (const [day, writer] of after) {
      if (!reached(totals, day) || totals === 'paths') assert.equal(writer, before[n]!.get(day), `${totals} ${day} kept`);
      else if (totals !== 'linear/30/cash') assert.notEqual(writer, before[n]!.get(day), `${totals} ${day} computed again`);
    }
  }
  const fromKept = await report(client, 'first_touch', '7');
  await wipeKeptTotals(client);
  assert.deepEqual(await report(client, 'first_touch', '7'), fromKept);
  // The report that found o2's path again read the days credited from it as a client sent everything at once reads them.
  const inOrder = await clientWithData('the late touchpoint with the rest');
  await call(inOrder, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(5), customer_id: 'c2', platform_name: 'google', campaign_id: 'search' }] });
  assert.deepEqual(await report(inOrder, 'linear'), afterLate);
});

test("keeping ahead computes again the other cash days a write changed, drops those before the keeper's days, and starts over in a new zone", async () => {
  const client = await clientWithData('changes and zones');
  const tenant = tenantOf(client);
  const older = Array.from({ length: 5 }, (_, n) => addDays(today, n - DAYS - 10));
  await keepAhead(service.db, tenant, ZONE, { days: DAYS, now });
  await report(client, 'linear', '14');
  await report(client, 'linear', '14', lastDays, 'accrual');
  await report(client, 'linear', '30', older);
  assert.equal((await keptDays(client, 'linear/30/cash')).size, DAYS + older.length);

  const before = await keptDays(client, 'linear/14/cash');
  const accrualBefore = await keptDays(client, 'linear/14/accrual');
  assert.equal(accrualBefore.size, DAYS);
  // A touchpoint of c1 five days ago: in the path of c1's next order, o1 two days ago.
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(5), customer_id: 'c1', platform_name: 'google', campaign_id: 'search' }] });
  await keepAhead(service.db, tenant, ZONE, { days: DAYS, now: new Date(now.getTime() + 86_400_000) });
  const after = await keptDays(client, 'linear/14/cash');
  const tomorrowsDays = lastDays.slice(1);
  assert.deepEqual([...after.keys()], tomorrowsDays, "the changed days of another window computed again; the one before tomorrow's days dropped");
  for (const day of tomorrowsDays) {
    if (day < addDays(today, -2)) assert.equal(after.get(day), before.get(day), `${day} kept`);
    else assert.notEqual(after.get(day), before.get(day), `${day} computed again`);
  }
  assert.deepEqual([...(await keptDays(client, 'linear/30/cash')).keys()], [...tomorrowsDays, today], 'the older days asked dropped');
  // Accrual credits count at touchpoints up to a window before their orders: the write reached 14 days further back.
  const accrualAfter = await keptDays(client, 'linear/14/accrual');
  const accrualReached = addDays(today, -2 - 14);
  assert.deepEqual([...accrualAfter.keys()], tomorrowsDays.filter((day) => day < accrualReached), 'the accrual days the write reached are left to the next report');
  for (const [day, writer] of accrualAfter) assert.equal(writer, accrualBefore.get(day), `accrual ${day} kept`);
  await report(client, 'linear', '14', tomorrowsDays, 'accrual');
  assert.deepEqual([...(await keptDays(client, 'linear/14/accrual')).keys()], tomorrowsDays, 'the report computed them');
  assert.equal(await changesNoted(client), 0);

  const zone = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { time_zone: 'Asia/Tokyo' } });
  assert.equal(zone.statusCode, 200, zone.body);
  const tokyoDays = Array.from({ length: 3 }, (_, n) => addDays(localToday('Asia/Tokyo', now), n - 3));
  await report(client, 'linear', '30', tokyoDays);
  assert.ok((await due(now)).includes(client.client_id), "the days kept ahead were another zone's: due again");
  assert.deepEqual([...(await keptDays(client, 'first_touch/30/cash')).keys()], [], "the other zone's days are gone");
});

test('a client whose kept totals cannot be computed is logged and left alone for a while; the others are kept', async () => {
  const [failing, healthy] = [await clientWithData('fails'), await clientWithData('healthy')];
  // Both are kept ahead (so that the keeper's first pass has only stale refreshes to do), then changed.
  for (const client of [failing, healthy]) {
    await keepAhead(service.db, tenantOf(client), ZONE, { days: DAYS, now });
    await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: noonBefore(5), customer_id: 'c1' }] });
  }
  const failingDb = new Proxy(service.db, {
    get: (db, property) =>
      property === 'query'
        ? (sql: string, params?: unknown[]) => (params?.[0] === failing.client_id ? Promise.reject(new Error('statement timeout')) : db.query(sql, params))
        : Reflect.get(db, property),
  });
  const errors: { client_id?: string }[] = [];
  const logger = { error: (fields: { client_id?: string }) => errors.push(fields) } as unknown as Logger;
  const keeper = startKeptTotalsKeeper({ db: failingDb, intervalMs: 10, keepersDays: DAYS, logger, clock: () => now });
  /** A change noted, or days it made stale: what the keeper has to compute. */
  const toCompute = async (client: TestClient) =>
    (await changesNoted(client)) +
    (await service.db.query('SELECT FROM attribution_days WHERE client_id = $1 AND stale', [client.client_id])).length;
  try {
    for (let waited = 0; (await toCompute(healthy)) > 0; waited += 20) {
      assert.ok(waited < 30_000, 'the healthy client was refreshed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 300)); // dozens of passes more
  } finally {
    await keeper.stop();
  }
  assert.deepEqual(
    errors.map((error) => error.client_id),
    [failing.client_id],
    'logged once, not at every pass',
  );
  assert.ok((await toCompute(failing)) > 0, "the failing client's changed days are still to compute, by its next report");
});
