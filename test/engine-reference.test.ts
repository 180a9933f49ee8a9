import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { random } from '../bench/generate.js';
import { localToday } from '../src/calendar.js';
import { attribute, CREDIT_PARTS, isDataDriven, MODEL_IDS, UNATTRIBUTED, WINDOWS, type AttributionWindow, type ModelId } from '../src/attribution/models.js';
import { ADMIN_TOKEN, exportedCsv, minimalOrder, startExportingService, type TestClient } from './helpers.js';

/*
 * The engine against a reference written the straightforward way: for random data of several
 * shapes, every model, window and accounting mode, the attributed revenue and transactions of
 * each day and campaign, as reports (from kept daily totals, or paths for the unlimited window)
 * and exports (from paths, in slices) answer them, equal those computed here, order by order:
 * each order's candidates found by scanning every touchpoint, credited by the TypeScript rules
 * of src/attribution/models.ts (which the SQL credits are tested against on their own), summed
 * on the local day of the purchase (cash) or of the touchpoint (accrual).
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

const ZONE = 'America/New_York';
const DAY_MS = 86_400_000;
/** The local days asked for: 8 days of March 2024 in New York, across the change of the clocks on the 10th. */
const PERIOD = { first: '2024-03-06', last: '2024-03-13' };
const PERIOD_START = Date.parse('2024-03-06T05:00:00Z');

interface Shape {
  customers: number;
  visitors: number;
  touchpoints: number;
  orders: number;
  /** Share of visitors linked to a customer (a tenth of them through one of its orders). */
  linked: number;
  /** Share of touchpoints sent with their visitor's customer id (a logged-in shopper's). */
  knownTouchpoints: number;
  /** How far before the period touchpoints go, in days. */
  historyDays: number;
}

/** The shapes of bench/attribution.ts's profiles, small. */
const SHAPES: Record<string, Shape> = {
  'visitors mostly linked': { customers: 20, visitors: 30, touchpoints: 200, orders: 40, linked: 0.9, knownTouchpoints: 0.1, historyDays: 60 },
  'anonymous visitors, half of them linked': { customers: 20, visitors: 60, touchpoints: 200, orders: 40, linked: 0.4, knownTouchpoints: 0.05, historyDays: 60 },
  'many touchpoints a customer': { customers: 3, visitors: 6, touchpoints: 300, orders: 10, linked: 1, knownTouchpoints: 0.3, historyDays: 100 },
  'few customers, many orders': { customers: 2, visitors: 4, touchpoints: 100, orders: 40, linked: 1, knownTouchpoints: 0.3, historyDays: 30 },
  'paths over years': { customers: 5, visitors: 8, touchpoints: 200, orders: 20, linked: 1, knownTouchpoints: 0.2, historyDays: 800 },
};

interface StoredTouchpoint {
  touchpoint_id: string;
  occurred_at: number;
  type: 'visit' | 'view';
  channel: string;
  platform_name: string;
  campaign_id: string;
  visitor_id: string | null;
  customer_id: string | null;
}
interface StoredOrder {
  order_id: string;
  customer_id: string | null;
  time_of_purchase: number;
  purchase_total: number;
}

async function send(client: TestClient, url: string, data: unknown[]) {
  for (let n = 0; n < data.length; n += 500) {
    const batch = data.slice(n, n + 500);
    const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? (batch as object) : { data: batch } });
    assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
  }
}

/** A client in New York with random data of `shape`. */
async function clientWith(shape: Shape, seed: number): Promise<TestClient> {
  const rand = random(seed);
  const pick = <T,>(values: readonly T[]) => values[Math.floor(rand() * values.length)]!;
  const client = await service.createClient();
  const patched = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { time_zone: ZONE } });
  assert.equal(patched.statusCode, 200, patched.body);

  const customerOf = (visitor: number) => `cust-${visitor % shape.customers}`;
  const orders = Array.from({ length: shape.orders }, (_, n) => {
    // From 3 days before the period to 12 after it: accrual counts the credits of later orders.
    const at = PERIOD_START - 3 * DAY_MS + Math.floor(rand() * 23 * DAY_MS);
    const total = Math.round(rand() * 50_000) / 100 + 1;
    return minimalOrder(`o-${n}`, { customer_id: `cust-${n % shape.customers}`, time_of_purchase: new Date(at).toISOString(), currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
  });
  await send(client, '/v2/orders', orders);

  const identities = Array.from({ length: shape.visitors }, (_, visitor) => visitor)
    .filter(() => rand() < shape.linked)
    .map((visitor) =>
      rand() < 0.1
        ? { visitor_id: `v-${visitor}`, order_id: `o-${pick(orders.map((_, n) => n).filter((n) => `cust-${n % shape.customers}` === customerOf(visitor)).concat([shape.orders + 1]))}` }
        : { visitor_id: `v-${visitor}`, customer_id: customerOf(visitor) },
    );
  if (identities.length > 0) await send(client, '/v1/identities', identities);

  let previous = PERIOD_START;
  const touchpoints = Array.from({ length: shape.touchpoints }, (_, n) => {
    const visitor = Math.floor(rand() * shape.visitors);
    // One in twenty at the instant of the one before: ties are ordered by touchpoint_id.
    const at = rand() < 0.05 ? previous : PERIOD_START - shape.historyDays * DAY_MS + Math.floor(rand() * (shape.historyDays + 15) * DAY_MS);
    previous = at;
    const source = pick(['meta', 'google', 'meta', 'direct', 'search', 'email'] as const);
    const paid = source === 'meta' || source === 'google';
    return {
      touchpoint_id: `t-${n}`,
      occurred_at: new Date(at).toISOString(),
      ...(paid && rand() < 0.3 ? { type: 'view' } : {}),
      ...(rand() < 0.05 ? {} : { visitor_id: `v-${visitor}` }),
      ...(rand() < shape.knownTouchpoints ? { customer_id: customerOf(visitor) } : {}),
      ...(paid ? { platform_name: source, campaign_id: `${source}-${Math.floor(rand() * 3)}` } : {}),
      ...(source === 'search' ? { referrer: 'https://www.google.com/' } : {}),
      ...(source === 'email' ? { landing_url: 'https://shop.example/?utm_source=newsletter&utm_medium=email' } : {}),
    };
  });
  // A touchpoint needs a visitor or a customer.
  await send(client, '/v1/touchpoints', touchpoints.map((t) => ('visitor_id' in t || 'customer_id' in t ? t : { ...t, customer_id: 'cust-0' })));
  return client;
}

/** What the engine read from: the client's orders, touchpoints and links as stored (channel and ad objects derived). */
async function storedData(client: TestClient) {
  const params = [client.client_id];
  const touchpoints = await service.db.query<StoredTouchpoint & { occurred_at: Date }>(
    `SELECT touchpoint_id, occurred_at, type, channel, platform_name, campaign_id, visitor_id, customer_id FROM touchpoints WHERE client_id = $1 AND environment = 'production'`,
    params,
  );
  const orders = await service.db.query<{ order_id: string; customer_id: string | null; time_of_purchase: Date; purchase_total: string }>(
    `SELECT order_id, customer_id, time_of_purchase, purchase_total::text AS purchase_total FROM orders WHERE client_id = $1 AND environment = 'production'`,
    params,
  );
  const links = await service.db.query<{ visitor_id: string; customer_id: string | null; order_id: string | null }>(
    `SELECT visitor_id, customer_id, order_id FROM identities WHERE client_id = $1 AND environment = 'production'`,
    params,
  );
  return {
    touchpoints: touchpoints.map((t): StoredTouchpoint => ({ ...t, occurred_at: t.occurred_at.getTime() })),
    orders: orders.map((o): StoredOrder => ({ ...o, time_of_purchase: o.time_of_purchase.getTime(), purchase_total: Number(o.purchase_total) })),
    links,
  };
}

type Totals = Map<string, { rev: number; txns: number }>;
const inPeriod = (day: string) => day >= PERIOD.first && day <= PERIOD.last;
const localDay = (instant: number) => localToday(ZONE, new Date(instant));

/**
 * The reference: every order's path found by scanning, credited by the TypeScript rules (the
 * data-driven models by the weights `learnt`, of each touchpoint's platform or channel), summed
 * per day and campaign.
 */
function referenceTotals(
  { touchpoints, orders, links }: Awaited<ReturnType<typeof storedData>>,
  { model, window, mode }: Combination,
  learnt: Record<string, number>,
): Totals {
  const customerOfOrder = new Map(orders.map((order) => [order.order_id, order.customer_id]));
  const linkOf = new Map(links.map((link) => [link.visitor_id, link]));
  // A touchpoint is its customer's: sent with it, or sent without one by a visitor linked to it, directly or through one of its orders.
  const customerOf = (t: StoredTouchpoint) => {
    if (t.customer_id !== null) return t.customer_id;
    const link = t.visitor_id === null ? undefined : linkOf.get(t.visitor_id);
    if (!link) return null;
    return link.customer_id ?? (link.order_id === null ? null : (customerOfOrder.get(link.order_id) ?? null));
  };
  const totals: Totals = new Map();
  const add = (day: string, platform: string, campaign: string, rev: number, txns: number) => {
    const key = `${day}|${platform}|${campaign}`;
    const sum = totals.get(key) ?? { rev: 0, txns: 0 };
    totals.set(key, { rev: sum.rev + rev, txns: sum.txns + txns });
  };
  for (const order of orders) {
    const orderDay = localDay(order.time_of_purchase);
    const candidates = order.customer_id === null ? [] : touchpoints.filter((t) => customerOf(t) === order.customer_id && t.occurred_at <= order.time_of_purchase);
    const states = candidates.map((t) => ({ ...t, state: t.platform_name !== '' ? t.platform_name : t.channel }));
    const credits = attribute(order.time_of_purchase, model, window, states, learnt);
    if (credits === UNATTRIBUTED) {
      if (inPeriod(orderDay)) add(orderDay, 'unattributed', '', order.purchase_total, 1);
      continue;
    }
    for (const { touchpoint, parts } of credits) {
      if (parts === 0) continue;
      const day = mode === 'cash' ? orderDay : localDay(touchpoint.occurred_at);
      if (!inPeriod(day)) continue;
      const paid = touchpoint.platform_name !== '';
      add(day, paid ? touchpoint.platform_name : touchpoint.channel, paid ? touchpoint.campaign_id : '', (parts * order.purchase_total) / CREDIT_PARTS, parts / CREDIT_PARTS);
    }
  }
  return totals;
}

/** Rows of the engine with credits, keyed as the reference's. */
function engineTotals(rows: Record<string, unknown>[]): Totals {
  const totals: Totals = new Map();
  for (const row of rows) {
    const rev = Number(row.rev);
    const txns = Number(row.txns);
    if (rev === 0 && txns === 0) continue;
    const key = `${row.date}|${row.platform}|${row.campaign_id ?? ''}`;
    assert.ok(!totals.has(key), `one row per day and campaign: ${key}`);
    totals.set(key, { rev, txns });
  }
  return totals;
}

function assertSameTotals(engine: Totals, reference: Totals, what: string) {
  // Amounts are written rounded to 6 decimals: a row of a few billionths of a credit reads as zeros.
  const close = (a: number, b: number) => Math.abs(a - b) <= 2e-6 + 1e-12 * Math.abs(b);
  const missing = [...reference].filter(([key, sum]) => !engine.has(key) && !(close(sum.rev, 0) && close(sum.txns, 0))).map(([key]) => key);
  assert.deepEqual(missing, [], `${what}: rows the reference has; the engine's: ${[...engine.keys()].join(', ')}`);
  for (const [key, sum] of engine) {
    const expected = reference.get(key);
    assert.ok(expected, `${what}: a row the reference does not have: ${key}`);
    assert.ok(close(sum.rev, expected.rev) && close(sum.txns, expected.txns), `${what}, ${key}: rev ${sum.rev}, txns ${sum.txns}; the reference: rev ${expected.rev}, txns ${expected.txns}`);
  }
}

interface Combination {
  model: ModelId;
  window: AttributionWindow;
  mode: 'cash' | 'accrual';
}
const COMBINATIONS: Combination[] = MODEL_IDS.flatMap((model) => WINDOWS.flatMap((window) => (['cash', 'accrual'] as const).map((mode) => ({ model, window, mode }))));

/** The weights a data-driven model learnt before the period, as the API shows them, in parts; none for the other models. */
async function learntWeights(client: TestClient, { model, window }: Combination): Promise<Record<string, number>> {
  if (!isDataDriven(model)) return {};
  const query = new URLSearchParams({ window: String(window), period_from: PERIOD.first });
  const response = await app.inject({ method: 'GET', url: `/v1/attribution/models/${model}?${query}`, headers: client.headers });
  assert.equal(response.statusCode, 200, response.body);
  const { channels } = response.json().learnt as { channels: { channel: string; weight: number }[] };
  return Object.fromEntries(channels.map(({ channel, weight }) => [channel, Math.round(weight * CREDIT_PARTS)]));
}

async function reportRows(client: TestClient, model: ModelId, window: AttributionWindow, mode: string) {
  const query = new URLSearchParams({ start_date: PERIOD.first, end_date: PERIOD.last, level: 'campaign', metrics: 'rev,txns', model, window: String(window), mode });
  const response = await app.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { rows: Record<string, unknown>[] }).rows;
}

/** One export of every combination; its rows by combination. */
async function exportRowsByCombination(client: TestClient) {
  const { rows: [header, ...rows] } = await exportedCsv(app, client, {
    period_type: 'FIXED',
    period_options: { period_starting_at: PERIOD.first, period_ending_at: PERIOD.last },
    level: 'campaign',
    time_granularity: 'DAILY',
    attribution_options: { attribution_models: MODEL_IDS, attribution_windows: WINDOWS.map(String), accounting_modes: ['cash', 'accrual'] },
    metrics: [{ id: 'rev' }, { id: 'txns' }],
    options: { include_ids: true },
  });
  const byCombination = new Map<string, Record<string, string>[]>();
  for (const cells of rows) {
    const row = Object.fromEntries(header!.map((name, i) => [name, cells[i]!]));
    const key = `${row.attribution_model}/${row.attribution_window}/${row.accounting_mode}`;
    byCombination.set(key, [...(byCombination.get(key) ?? []), row]);
  }
  return byCombination;
}

/*
 * Every shape is exported in every combination (one export computes them all). Reports compute
 * and keep each combination's days apart, a statement or more each: each shape is reported in a
 * fifth of the combinations, every combination in one shape, both modes in every shape.
 */
describe('the engine equals the straightforward reference, every model, window and mode', () => {
  const shapes = Object.entries(SHAPES);
  const shapesLearnt = new Set<string>();
  for (const [index, [name, shape]] of shapes.entries()) {
    test(name, async () => {
      const client = await clientWith(shape, index + 1);
      const data = await storedData(client);
      const exported = await exportRowsByCombination(client);
      let credited = 0;
      for (const [at, combination] of COMBINATIONS.entries()) {
        const { model, window, mode } = combination;
        const weights = await learntWeights(client, combination);
        if (new Set(Object.values(weights)).size > 1) shapesLearnt.add(name);
        const reference = referenceTotals(data, combination, weights);
        credited += reference.size;
        if (at % shapes.length === index) assertSameTotals(engineTotals(await reportRows(client, model, window, mode)), reference, `report ${model}/${window}/${mode}`);
        assertSameTotals(engineTotals(exported.get(`${model}/${window}/${mode}`) ?? []), reference, `export ${model}/${window}/${mode}`);
      }
      assert.ok(credited > COMBINATIONS.length * 5, `the data credits campaigns in every combination (${credited} rows)`);
    });
  }
  test('the data-driven models learnt weights that differ between channels, in most shapes', () => {
    assert.ok(shapesLearnt.size >= 3, [...shapesLearnt].join(', '));
  });
});
