import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { assertErrorEnvelope, minimalOrder, postOrders, startService, type TestApp, type TestClient } from './helpers.js';

/*
 * GET /v2/orders/{order_id}/attribution and GET /v1/exports/attribution-models over HTTP: an
 * order's path and credits, computed by hand, from orders, touchpoints and identity links sent
 * in the order a shop may send them.
 */

const service = await startService();
after(() => service.close());

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const PURCHASE = '2024-03-20T12:00:00.000Z';
const at = (msBefore: number) => new Date(Date.parse(PURCHASE) - msBefore).toISOString();

type Headers = Pick<TestClient, 'headers'>;
async function send(client: Headers, url: string, data: unknown[], app: TestApp = service.production) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: { data } });
  assert.equal(response.statusCode, 201, response.body);
}
async function sendOrders(client: Headers, orders: unknown[], app: TestApp = service.production) {
  const response = await postOrders(app, client, orders);
  assert.equal(response.statusCode, 200, response.body);
}
const order = (orderId: string, customerId: string, fields: Record<string, unknown> = {}) =>
  minimalOrder(orderId, { customer_id: customerId, time_of_purchase: PURCHASE, currency: 'USD', purchase_total: 99.99, products: [{ id: 'p', name: 'P', quantity: 1, price: 99.99 }], ...fields });

const explain = (client: Headers, orderId: string, query: Record<string, string | number> = {}, app: TestApp = service.production) =>
  app.inject({
    method: 'GET',
    url: `/v2/orders/${encodeURIComponent(orderId)}/attribution`,
    headers: client.headers,
    query: Object.fromEntries(Object.entries(query).map(([key, value]) => [key, String(value)])),
  });

interface Explained {
  unattributed: boolean;
  touchpoints: { touchpoint_id: string; credit: number; revenue: number }[];
}
/** The path as [touchpoint_id, credit, revenue], after checking the answer is a 200. */
async function path(client: Headers, orderId: string, model: string, window: number | string) {
  const response = await explain(client, orderId, { model, window });
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json() as Explained;
  assert.equal(body.unattributed, body.touchpoints.length === 0);
  return body.touchpoints.map(({ touchpoint_id, credit, revenue }) => [touchpoint_id, credit, revenue]);
}

/**
 * A client's orders and touchpoints, sent in the order a shop may: an order link before its
 * order, the order to explain (o1, of customer c1), its touchpoints, and last the links of their
 * visitors with the customer's earlier order (o0). `beforeLinks` runs before those last two.
 */
async function seed(client: Headers, beforeLinks = async () => {}) {
  await send(client, '/v1/identities', [{ visitor_id: 'v1', order_id: 'o0' }]);
  await sendOrders(client, [order('o1', 'c1')]);
  await send(client, '/v1/touchpoints', [
    { touchpoint_id: 'a', occurred_at: at(14 * DAY_MS), visitor_id: 'v1', platform_name: 'google', campaign_id: 'spring', utm_medium: 'cpc' },
    { touchpoint_id: 'b', occurred_at: at(7 * DAY_MS), customer_id: 'c1' },
    { touchpoint_id: 'c', occurred_at: at(0), visitor_id: 'v2' },
    { touchpoint_id: 'early', occurred_at: at(14 * DAY_MS + 1), customer_id: 'c1', utm_source: 'newsletter', utm_medium: 'email' },
    { touchpoint_id: 'late', occurred_at: at(-1), customer_id: 'c1' },
    { touchpoint_id: 'view', occurred_at: at(2 * HOUR_MS), visitor_id: 'v1', type: 'view', platform_name: 'meta', campaign_id: 'spring-views' },
    { touchpoint_id: 'old view', occurred_at: at(25 * HOUR_MS), visitor_id: 'v1', type: 'view', platform_name: 'meta' },
  ]);
  await beforeLinks();
  await send(client, '/v1/identities', [{ visitor_id: 'v2', customer_id: 'c1' }]);
  await sendOrders(client, [order('o0', 'c1', { time_of_purchase: '2024-01-05T10:00:00Z' })]);
}

test('touchpoints and links sent after the order count; an order link counts once its order arrives', async () => {
  const client = await service.createClient();
  await seed(client, async () => assert.deepEqual(await path(client, 'o1', 'linear', 14), [['b', 1, 99.99]], 'only the touchpoint sent with the customer'));
  assert.deepEqual(await path(client, 'o1', 'last_touch', 14), [['a', 0, 0], ['b', 0, 0], ['c', 1, 99.99]]);
});

test("a customer id as long as orders take (4,096 characters) is linked by touchpoints and identities alike", async () => {
  const client = await service.createClient();
  const customer = 'c'.repeat(4096);
  await sendOrders(client, [order('o1', customer)]);
  await send(client, '/v1/identities', [{ visitor_id: 'v1', customer_id: customer }]);
  await send(client, '/v1/touchpoints', [
    { touchpoint_id: 'own', occurred_at: at(DAY_MS), customer_id: customer },
    { touchpoint_id: 'linked', occurred_at: at(HOUR_MS), visitor_id: 'v1' },
  ]);
  assert.deepEqual(await path(client, 'o1', 'linear', 30), [['own', 0.5, 49.995], ['linked', 0.5, 49.995]]);
});

describe('one order explained, every model', async () => {
  const client = await service.createClient();
  await seed(client);

  test('the whole answer: a through an order link, b by its customer, c by a direct link; the window ends included', async () => {
    const response = await explain(client, 'o1', { model: 'linear', window: 14 });
    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    const touchpoint = (touchpoint_id: string, occurred_at: string, channel: string, fields: object, credit: number, revenue: number) => ({
      touchpoint_id, occurred_at, type: 'visit', channel, platform_name: '', campaign_id: '', adset_id: '', ad_id: '', ...fields, credit, revenue,
    });
    assert.deepEqual(response.json(), {
      order_id: 'o1',
      customer_id: 'c1',
      time_of_purchase: PURCHASE,
      purchase_total: 99.99,
      currency: 'USD',
      first_time: false,
      model: 'linear',
      window: 14,
      unattributed: false,
      touchpoints: [
        touchpoint('a', '2024-03-06T12:00:00.000Z', 'paid', { platform_name: 'google', campaign_id: 'spring' }, 0.333333333, 33.33),
        touchpoint('b', '2024-03-13T12:00:00.000Z', 'direct', {}, 0.333333333, 33.33),
        touchpoint('c', PURCHASE, 'direct', {}, 0.333333334, 33.33),
      ],
    });
    // Exact decimals as written: credits of 9 places, revenue rounded to 6 (0.333333333 × 99.99 = 33.32999996667).
    assert.match(response.body, /"credit" ?: ?0\.333333333, ?"revenue" ?: ?33\.330000\b.*"credit" ?: ?0\.333333334, ?"revenue" ?: ?33\.330000\b/);
  });

  test('first_touch, last_touch, last_touch_non_direct: all to one touchpoint', async () => {
    assert.deepEqual(await path(client, 'o1', 'first_touch', 14), [['a', 1, 99.99], ['b', 0, 0], ['c', 0, 0]]);
    assert.deepEqual(await path(client, 'o1', 'last_touch', 14), [['a', 0, 0], ['b', 0, 0], ['c', 1, 99.99]]);
    // b and c are direct: the last non-direct one is a.
    assert.deepEqual(await path(client, 'o1', 'last_touch_non_direct', 14), [['a', 1, 99.99], ['b', 0, 0], ['c', 0, 0]]);
    const body = (await explain(client, 'o1', { model: 'first_touch', window: 14 })).body;
    assert.match(body, /"credit" ?: ?1\.000000000, ?"revenue" ?: ?99\.990000\b/);
  });

  test('position_based: 40/20/40; time_decay: ages of 14, 7 and 0 days weigh 1/4, 1/2 and 1', async () => {
    assert.deepEqual(await path(client, 'o1', 'position_based', 14), [['a', 0.4, 39.996], ['b', 0.2, 19.998], ['c', 0.4, 39.996]]);
    // 1/7, 2/7 and 4/7 of 99.99: 14.28428572857, 28.56857145714, 57.13714281429.
    assert.deepEqual(await path(client, 'o1', 'time_decay', 14), [['a', 0.142857143, 14.284286], ['b', 0.285714286, 28.568571], ['c', 0.571428571, 57.137143]]);
  });

  test('clicks_only: the paid visit only; clicks_and_views: and the view of the last 24 hours', async () => {
    assert.deepEqual(await path(client, 'o1', 'clicks_only', 14), [['a', 1, 99.99], ['b', 0, 0], ['c', 0, 0]]);
    assert.deepEqual(await path(client, 'o1', 'clicks_and_views', 14), [['a', 0.5, 49.995], ['b', 0, 0], ['view', 0.5, 49.995], ['c', 0, 0]]);
  });

  test('windows: 7 days starts at b; 30 days takes in the touchpoint one millisecond before 14 days', async () => {
    assert.deepEqual(await path(client, 'o1', 'linear', 7), [['b', 0.5, 49.995], ['c', 0.5, 49.995]]);
    assert.deepEqual(await path(client, 'o1', 'linear', 30), [['early', 0.25, 24.9975], ['a', 0.25, 24.9975], ['b', 0.25, 24.9975], ['c', 0.25, 24.9975]]);
    assert.deepEqual(await path(client, 'o1', 'linear', 1), [['c', 1, 99.99]]);
  });

  test('without model or window: linear over 30 days', async () => {
    const response = await explain(client, 'o1');
    assert.equal(response.statusCode, 200, response.body);
    const { model, window, touchpoints } = response.json();
    assert.deepEqual([model, window, touchpoints.length], ['linear', 30, 4]);
  });

  test("first_time: the customer's first order, sent after the later one", async () => {
    const response = await explain(client, 'o0', { model: 'last_touch', window: 90 });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), {
      order_id: 'o0',
      customer_id: 'c1',
      time_of_purchase: '2024-01-05T10:00:00.000Z',
      purchase_total: 99.99,
      currency: 'USD',
      first_time: true,
      model: 'last_touch',
      window: 90,
      unattributed: true,
      touchpoints: [],
    });
  });
});

describe('paths', () => {
  test('touchpoints at the same instant are in touchpoint_id order, byte by byte', async () => {
    const client = await service.createClient();
    await sendOrders(client, [order('o', 'c')]);
    await send(client, '/v1/touchpoints', ['é', 'a', 'Z'].map((touchpoint_id) => ({ touchpoint_id, occurred_at: at(HOUR_MS), customer_id: 'c' })));
    assert.deepEqual(await path(client, 'o', 'first_touch', 1), [['Z', 1, 99.99], ['a', 0, 0], ['é', 0, 0]]);
    assert.deepEqual(await path(client, 'o', 'last_touch', 1), [['Z', 0, 0], ['a', 0, 0], ['é', 1, 99.99]]);
  });

  test('an order with views only is unattributed, but for clicks_and_views', async () => {
    const client = await service.createClient();
    await sendOrders(client, [order('o', 'c', { purchase_total: 10, products: [{ id: 'p', name: 'P', quantity: 1, price: 10 }] })]);
    await send(client, '/v1/touchpoints', [{ touchpoint_id: 'v', occurred_at: at(HOUR_MS), customer_id: 'c', type: 'view', utm_medium: 'display' }]);
    for (const model of ['first_touch', 'last_touch', 'last_touch_non_direct', 'linear', 'position_based', 'time_decay', 'clicks_only']) {
      assert.deepEqual(await path(client, 'o', model, 30), [], model);
    }
    assert.deepEqual(await path(client, 'o', 'clicks_and_views', 30), [['v', 1, 10]]);
  });
});

describe('the infinity window', async () => {
  const client = await service.createClient();
  await sendOrders(client, [order('o', 'c')]);
  await send(client, '/v1/touchpoints', [
    { touchpoint_id: 'long ago', occurred_at: at(400 * DAY_MS), customer_id: 'c', platform_name: 'google', campaign_id: 'spring', utm_medium: 'cpc' },
    { touchpoint_id: 'old view', occurred_at: at(400 * DAY_MS), customer_id: 'c', type: 'view', platform_name: 'meta' },
    { touchpoint_id: 'last week', occurred_at: at(7 * DAY_MS), customer_id: 'c' },
    { touchpoint_id: 'view', occurred_at: at(2 * HOUR_MS), customer_id: 'c', type: 'view', platform_name: 'meta' },
  ]);

  test('takes the visit of 400 days before the purchase, which no numbered window takes', async () => {
    const response = await explain(client, 'o', { model: 'linear', window: 'infinity' });
    assert.equal(response.statusCode, 200, response.body);
    const { window, touchpoints } = response.json();
    assert.equal(window, 'infinity');
    assert.deepEqual(
      touchpoints.map(({ touchpoint_id, occurred_at, credit, revenue }: Record<string, unknown>) => [touchpoint_id, occurred_at, credit, revenue]),
      [['long ago', '2023-02-14T12:00:00.000Z', 0.5, 49.995], ['last week', '2024-03-13T12:00:00.000Z', 0.5, 49.995]],
    );
    assert.deepEqual(await path(client, 'o', 'linear', 90), [['last week', 1, 99.99]]);
  });

  test('clicks_and_views still takes views of the last 24 hours only; time_decay weighs by age, the oldest at least a billionth', async () => {
    assert.deepEqual(await path(client, 'o', 'clicks_and_views', 'infinity'), [['long ago', 0.5, 49.995], ['last week', 0, 0], ['view', 0.5, 49.995]]);
    // Weights 1 (2^-57.1 of a billion rounds to 0) and 500,000,000 (a week): shares 1.999999996 and 999,999,998.000000004 parts,
    // the part left over to the larger loss. 0.999999998 × 99.99 = 99.98999980002, rounded to 6 places.
    assert.deepEqual(await path(client, 'o', 'time_decay', 'infinity'), [['long ago', 0.000000002, 0], ['last week', 0.999999998, 99.99]]);
  });
});

describe('what cannot be explained', async () => {
  const [client, other] = [await service.createClient(), await service.createClient()];
  await sendOrders(client, [order('o1', 'c1')]);

  test('an unknown model or window, or another parameter: 422, each problem with its loc', async () => {
    for (const [query, loc] of [
      [{ model: 'last_click' }, 'query/model'],
      [{ window: 5 }, 'query/window'],
      [{ window: 'thirty' }, 'query/window'],
      [{ window: 30.5 }, 'query/window'],
      [{ window: 'Infinity' }, 'query/window'],
      [{ mode: 'cash' }, 'query/mode'],
    ] as const) {
      const { errors } = assertErrorEnvelope(await explain(client, 'o1', query), 422);
      assert.deepEqual(errors?.map((error) => error.loc), [loc], JSON.stringify(query));
    }
  });

  test("an unknown order, another client's order, one of the other port: 404", async () => {
    const answers = [
      await explain(client, 'o2'),
      await explain(other, 'o1'),
      await explain(client, 'o1', {}, service.uat),
      await explain({ headers: { authorization: 'None', 'data-client-id': 'test' } }, 'o1', {}, service.uat),
    ];
    for (const response of answers) assert.equal(assertErrorEnvelope(response, 404).message, 'No order with this id');
  });
});

test("GET /v1/exports/attribution-models lists each model by id and name, then the hosted API's ids exports take as aliases", async () => {
  const client = await service.createClient();
  const response = await service.production.inject({ method: 'GET', url: '/v1/exports/attribution-models', headers: client.headers });
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual(
    response.json().attribution_models.map(({ id }: { id: string }) => id),
    [
      ...['first_touch', 'last_touch', 'last_touch_non_direct', 'linear', 'position_based', 'time_decay', 'clicks_only', 'clicks_and_views', 'markov', 'shapley'],
      ...['northbeam_custom', 'northbeam_custom__va', 'northbeam_custom__enh'],
    ],
  );
});
