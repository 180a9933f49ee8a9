import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { creditsSql } from '../src/attribution/credits-sql.js';
import { UNLIMITED, type AttributionWindow, type ModelId } from '../src/attribution/models.js';
import { pathsSql, type PathsSpec } from '../src/attribution/paths.js';
import { KEPT_PATHS } from '../src/attribution/attributed-rows.js';
import { keepMissingPaths } from '../src/attribution/daily-totals.js';
import { minimalOrder, postOrders, startService, type TestApp, type TestClient } from './helpers.js';

/*
 * The candidates of orders' paths (src/attribution/paths.ts), from data sent over HTTP: which
 * touchpoints are an order's customer's, and the credits creditsSql gives them.
 */

const service = await startService();
after(() => service.close());

const PURCHASE = '2024-03-20T12:00:00.000Z';
const before = (hours: number) => new Date(Date.parse(PURCHASE) - hours * 3_600_000).toISOString();

async function send(client: Pick<TestClient, 'headers'>, url: string, data: unknown[], app: TestApp = service.production) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? data : { data } });
  assert.ok(response.statusCode < 300, response.body);
}
const sendOrders = async (client: Pick<TestClient, 'headers'>, orders: unknown[], app: TestApp = service.production) =>
  assert.equal((await postOrders(app, client, orders)).statusCode, 200);
const order = (orderId: string, customerId: string, fields: Record<string, unknown> = {}) =>
  minimalOrder(orderId, { customer_id: customerId, time_of_purchase: PURCHASE, ...fields });
const visit = (touchpoint_id: string, hoursBefore: number, fields: Record<string, unknown>) => ({ touchpoint_id, occurred_at: before(hoursBefore), ...fields });

interface Candidate {
  path_id: string;
  order_id: string;
  window_days: number;
  touchpoint_id: string;
  first_order: boolean;
}

/** Every order of a client, as the period shape of pathsSql selects them. */
const EVERY_ORDER = { purchasedFrom: "'-infinity'::timestamptz", purchasedBefore: "'infinity'::timestamptz" };

/** The candidates of the client's orders that `orders` selects, as `order/window: touchpoint ids` sorted. */
async function candidates(client: TestClient, orders: PathsSpec['orders'], params: unknown[], windows: AttributionWindow[] = [30], environment = 'production') {
  const rows = await service.db.query<Candidate>(
    `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders, windows })}
     SELECT path_id, order_id, window_days, touchpoint_id, first_order FROM candidates WHERE touchpoint_id IS NOT NULL ORDER BY path_id, touchpoint_id`,
    [client.client_id, environment, ...params],
  );
  const byPath: Record<string, string[]> = {};
  for (const row of rows) (byPath[row.path_id] ??= []).push(row.touchpoint_id);
  return byPath;
}

/** The local days (UTC) around PURCHASE whose paths the tests keep: every order's. */
const KEPT_DAYS = { from: '2024-01-01', to: '2024-05-01' };

/** The client's paths of KEPT_DAYS kept afresh, as the keeper keeps them (src/exports/daily-totals.ts). */
async function keepPaths(client: TestClient) {
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  await service.db.query(`DELETE FROM attribution_days WHERE client_id = $1 AND totals = $2`, [client.client_id, KEPT_PATHS]);
  await service.db.transaction((tx) => keepMissingPaths(tx, { tenant, timeZone: 'UTC', period: { kind: 'days', ...KEPT_DAYS } }));
}

/** Only the paths' own entries: `order/window` ids of `orderId`. */
const ofOrder = (byPath: Record<string, string[]>, orderId: string) => Object.fromEntries(Object.entries(byPath).filter(([pathId]) => pathId.startsWith(`${orderId}/`)));

/**
 * An order's candidates, found from the order (as its explanation finds them), among those of
 * every order's period (as exports find them) and, for windows up to the longest kept, among the
 * kept paths of its day (as reports credit them): the ways must agree.
 */
async function candidatesOf(client: TestClient, orderId: string, windows: AttributionWindow[] = [30]) {
  const fromOrder = await candidates(client, { orderId: '$3' }, [orderId], windows);
  assert.deepEqual(ofOrder(await candidates(client, EVERY_ORDER, [], windows), orderId), fromOrder, "the period's candidates of the order are those found from the order");
  if (!windows.includes(UNLIMITED)) {
    await keepPaths(client);
    const kept = await candidates(client, { keptFrom: `'${KEPT_DAYS.from}'::date`, keptBefore: `'${KEPT_DAYS.to}'::date` }, [], windows);
    assert.deepEqual(ofOrder(kept, orderId), fromOrder, 'the kept paths of the order are those found from the order');
  }
  return fromOrder;
}

describe('the candidates of an order', () => {
  test('touchpoints sent with its customer_id, within the largest window, ends included', async () => {
    const client = await service.createClient();
    await sendOrders(client, [order('o1', 'c1')]);
    await send(client, '/v1/touchpoints', [
      visit('in', 24, { customer_id: 'c1' }),
      visit('start', 30 * 24, { customer_id: 'c1' }),
      visit('too early', 30 * 24 + 1 / 3_600_000, { customer_id: 'c1' }),
      visit('at purchase', 0, { customer_id: 'c1' }),
      visit('after', -1, { customer_id: 'c1' }),
      visit('view', 2, { customer_id: 'c1', type: 'view' }),
      visit('other customer', 2, { customer_id: 'c2' }),
    ]);
    assert.deepEqual(await candidatesOf(client, 'o1'), { 'o1/30': ['at purchase', 'in', 'start', 'view'] });
    // Each window a path of the same candidates (creditsSql keeps those of its window).
    assert.deepEqual(await candidatesOf(client, 'o1', [1, 7]), {
      'o1/1': ['at purchase', 'in', 'view'],
      'o1/7': ['at purchase', 'in', 'view'],
    });
  });

  test('the unlimited window takes touchpoints from any time before the purchase, by customer and by linked visitor', async () => {
    const client = await service.createClient();
    await send(client, '/v1/identities', [{ visitor_id: 'v1', customer_id: 'c1' }]);
    await sendOrders(client, [order('o1', 'c1')]);
    await send(client, '/v1/touchpoints', [
      visit('customer, 400 days', 400 * 24, { customer_id: 'c1' }),
      visit('visitor, 400 days', 400 * 24, { visitor_id: 'v1' }),
      visit('in', 24, { customer_id: 'c1' }),
      visit('after', -1, { customer_id: 'c1' }),
    ]);
    assert.deepEqual(await candidatesOf(client, 'o1', [90]), { 'o1/90': ['in'] });
    const every = ['customer, 400 days', 'in', 'visitor, 400 days'];
    assert.deepEqual(await candidatesOf(client, 'o1', [30, UNLIMITED]), { 'o1/30': every, 'o1/infinity': every });
  });

  test('touchpoints of a visitor linked to its customer directly, whenever the link was sent', async () => {
    const client = await service.createClient();
    await send(client, '/v1/touchpoints', [visit('earlier', 5, { visitor_id: 'v1' })]);
    await send(client, '/v1/identities', [{ visitor_id: 'v1', customer_id: 'c1' }]);
    await send(client, '/v1/touchpoints', [visit('later', 4, { visitor_id: 'v1' }), visit('own customer', 3, { visitor_id: 'v1', customer_id: 'c9' })]);
    await sendOrders(client, [order('o1', 'c1')]);
    // A touchpoint sent with a customer is that customer's, whatever its visitor's link says.
    assert.deepEqual(await candidatesOf(client, 'o1'), { 'o1/30': ['earlier', 'later'] });
  });

  test("touchpoints of a visitor linked through another of the customer's orders, sent before that order existed", async () => {
    const client = await service.createClient();
    await send(client, '/v1/identities', [{ visitor_id: 'v1', order_id: 'first' }]);
    await send(client, '/v1/touchpoints', [visit('browsing', 40, { visitor_id: 'v1' })]);
    await sendOrders(client, [order('second', 'c1')]);
    assert.deepEqual(await candidatesOf(client, 'second'), {}, 'no order "first" yet: the link names no customer');
    await sendOrders(client, [order('first', 'c1', { time_of_purchase: before(30) })]);
    assert.deepEqual(await candidatesOf(client, 'second'), { 'second/30': ['browsing'] });
    // The order link follows the order: sent again for another customer, it takes the visitor along.
    await sendOrders(client, [order('first', 'c2', { time_of_purchase: before(30) })]);
    assert.deepEqual(await candidatesOf(client, 'second'), {});
  });

  test("a visitor's later link replaces its earlier one", async () => {
    const client = await service.createClient();
    await sendOrders(client, [order('o1', 'c1'), order('o2', 'c2')]);
    await send(client, '/v1/touchpoints', [visit('t', 5, { visitor_id: 'v1' })]);
    await send(client, '/v1/identities', [{ visitor_id: 'v1', customer_id: 'c1' }]);
    assert.deepEqual([await candidatesOf(client, 'o1'), await candidatesOf(client, 'o2')], [{ 'o1/30': ['t'] }, {}]);
    await send(client, '/v1/identities', [{ visitor_id: 'v1', order_id: 'o2' }]);
    assert.deepEqual([await candidatesOf(client, 'o1'), await candidatesOf(client, 'o2')], [{}, { 'o2/30': ['t'] }]);
  });

  test("another client's and the UAT environment's touchpoints, identities and orders never count", async () => {
    const [client, other] = [await service.createClient(), await service.createClient()];
    await sendOrders(client, [order('o1', 'c1')]);
    for (const [who, app] of [[other, service.production], [client, service.uat]] as const) {
      await sendOrders(who, [order('o0', 'c1', { time_of_purchase: before(48) })], app);
      await send(who, '/v1/touchpoints', [visit(`own ${app === service.uat ? 'uat' : 'other'}`, 2, { customer_id: 'c1' }), visit('v', 2, { visitor_id: 'v1' })], app);
      await send(who, '/v1/identities', [{ visitor_id: 'v1', customer_id: 'c1' }, { visitor_id: 'v2', order_id: 'o0' }], app);
    }
    // The client's own visitor v2 is linked through order o0, which exists only for the others.
    await send(client, '/v1/touchpoints', [visit('v2 visit', 3, { visitor_id: 'v2' })]);
    assert.deepEqual(await candidatesOf(client, 'o1'), {});
    assert.deepEqual(
      (await service.db.query<{ first_order: boolean }>(
        `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders: EVERY_ORDER, windows: [30] })} SELECT first_order FROM paths`,
        [client.client_id, 'production'],
      )).map((row) => row.first_order),
      [true],
      "the others' earlier order of c1 does not make o1 a returning customer's",
    );
  });
});

test('property: for random orders, touchpoints and links, the period finds the candidates each order finds', async () => {
  const generated = fc.record({
    orders: fc.array(fc.record({ customer: fc.nat(3), hoursBefore: fc.integer({ min: -48, max: 24 * 40 }) }), { minLength: 1, maxLength: 6 }),
    links: fc.array(fc.record({ visitor: fc.nat(4), customer: fc.option(fc.nat(3), { freq: 2 }), order: fc.nat(7) }), { maxLength: 6 }),
    touchpoints: fc.array(
      fc.record({ visitor: fc.option(fc.nat(4), { freq: 4 }), customer: fc.option(fc.nat(3), { freq: 2 }), hoursBefore: fc.integer({ min: -48, max: 24 * 400 }), view: fc.boolean() }),
      { maxLength: 12 },
    ),
    windows: fc.constantFrom<AttributionWindow[]>([1, 30, 90], [7, UNLIMITED]),
  });
  await fc.assert(
    fc.asyncProperty(generated, async ({ orders, links, touchpoints, windows }) => {
      const client = await service.createClient();
      await sendOrders(client, orders.map((o, n) => order(`o${n}`, `c${o.customer}`, { time_of_purchase: before(o.hoursBefore) })));
      // A link through an order may name one that does not exist (o6, o7 mostly).
      const identities = [...new Map(links.map((l) => [l.visitor, l])).values()].map((l) =>
        l.customer === null ? { visitor_id: `v${l.visitor}`, order_id: `o${l.order}` } : { visitor_id: `v${l.visitor}`, customer_id: `c${l.customer}` },
      );
      if (identities.length > 0) await send(client, '/v1/identities', identities);
      const sent = touchpoints
        .map((t, n) => ({
          touchpoint_id: `t${n}`,
          occurred_at: before(t.hoursBefore),
          ...(t.visitor === null ? {} : { visitor_id: `v${t.visitor}` }),
          ...(t.customer === null ? {} : { customer_id: `c${t.customer}` }),
          ...(t.view ? { type: 'view' } : {}),
        }))
        .filter((t) => 'visitor_id' in t || 'customer_id' in t);
      if (sent.length > 0) await send(client, '/v1/touchpoints', sent);
      for (let n = 0; n < orders.length; n++) await candidatesOf(client, `o${n}`, windows);
    }),
    { numRuns: 25 },
  );
});

describe('paths', () => {
  test("first_order: the customer's first order ever, ties by time_of_purchase then order_id", async () => {
    const client = await service.createClient();
    await sendOrders(client, [
      order('b', 'c1', { time_of_purchase: before(10) }),
      order('a', 'c1', { time_of_purchase: before(10) }),
      order('z', 'c1'),
      order('y', 'c2'),
    ]);
    const rows = await service.db.query<{ order_id: string; first_order: boolean }>(
      `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders: { purchasedFrom: '$3::timestamptz', purchasedBefore: "'infinity'::timestamptz" }, windows: [7, 30] })}
       SELECT order_id, window_days, first_order FROM paths ORDER BY order_id, window_days`,
      [client.client_id, 'production', before(10)],
    );
    assert.deepEqual(
      rows.map((row) => ({ ...row })),
      [
        { order_id: 'a', window_days: 7, first_order: true },
        { order_id: 'a', window_days: 30, first_order: true },
        { order_id: 'b', window_days: 7, first_order: false },
        { order_id: 'b', window_days: 30, first_order: false },
        { order_id: 'y', window_days: 7, first_order: true },
        { order_id: 'y', window_days: 30, first_order: true },
        { order_id: 'z', window_days: 7, first_order: false },
        { order_id: 'z', window_days: 30, first_order: false },
      ],
    );
  });

  test('credited by creditsSql: hand-computed credits of two orders, two windows, two models in one statement', async () => {
    const client = await service.createClient();
    await sendOrders(client, [order('o1', 'c1', { purchase_total: 90 }), order('o2', 'c2', { purchase_total: 10 })]);
    await send(client, '/v1/identities', [{ visitor_id: 'v1', order_id: 'o1' }]);
    await send(client, '/v1/touchpoints', [
      visit('a', 10 * 24, { visitor_id: 'v1', utm_source: 'google', utm_medium: 'cpc', utm_campaign: 'spring' }),
      visit('b', 2 * 24, { customer_id: 'c1' }),
      visit('c', 1, { visitor_id: 'v1', utm_source: 'newsletter', utm_medium: 'email' }),
      visit('d', 10 * 24, { customer_id: 'c2' }),
    ]);
    const models: ModelId[] = ['linear', 'last_touch_non_direct'];
    const rows = await service.db.query<{ model: string; path_id: string; touchpoint_id: string | null; campaign_id: string | null; credit: string | null }>(
      `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders: EVERY_ORDER, windows: [7, 30] })}
       SELECT model, path_id, CASE WHEN NOT unattributed THEN touchpoint_id END AS touchpoint_id,
              CASE WHEN NOT unattributed THEN campaign_id END AS campaign_id,
              CASE WHEN unattributed THEN 'unattributed' ELSE (credit_parts * purchase_total * 0.000000001)::text END AS credit
         FROM (${creditsSql('candidates', models)}) AS credited
        ORDER BY model, path_id, path_position`,
      [client.client_id, 'production'],
    );
    const revenue = (model: string) =>
      rows.filter((row) => row.model === model).map((row) => [row.path_id, row.touchpoint_id, row.campaign_id, row.credit === 'unattributed' ? row.credit : Number(row.credit)]);
    // o1 over 30 days: a (paid), b (direct), c (email); over 7 days: b, c. o2: d over 30 days, nothing over 7.
    // Linear thirds of 90: 0.333333333, 0.333333333 and 0.333333334 of it.
    assert.deepEqual(revenue('linear'), [
      ['o1/30', 'a', 'spring', 29.99999997], ['o1/30', 'b', '', 29.99999997], ['o1/30', 'c', '', 30.00000006],
      ['o1/7', 'b', '', 45], ['o1/7', 'c', '', 45],
      ['o2/30', 'd', '', 10],
      ['o2/7', null, null, 'unattributed'],
    ]);
    assert.deepEqual(revenue('last_touch_non_direct'), [
      ['o1/30', 'a', 'spring', 0], ['o1/30', 'b', '', 0], ['o1/30', 'c', '', 90],
      ['o1/7', 'b', '', 0], ['o1/7', 'c', '', 90],
      ['o2/30', 'd', '', 10],
      ['o2/7', null, null, 'unattributed'],
    ]);
  });
});
