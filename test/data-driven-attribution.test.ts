import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { learntModel, type LearningSettings } from '../src/attribution/learning/training.js';
import { ADMIN_TOKEN, assertErrorEnvelope, exportedCsv, minimalOrder, postOrders, startExportingService, type TestClient } from './helpers.js';

/*
 * The data-driven models (markov, shapley) over HTTP, on a shop whose paths are worked out by
 * hand: what they learn (GET /v1/attribution/models/{id}), and the credits they give in the
 * explanation, exports and reports, which all share one order's credit by the same weights.
 *
 * Training period (February 2024, before the period asked from March 1st; 90 days by default):
 *   c1, c2, c3: meta → google → order          3 converting paths
 *   c4:         google → order                 1 converting path
 *   a1, a2:     meta (anonymous, no order)     2 paths that did not convert
 *   a3:         google (anonymous)             1 path that did not convert
 *
 * markov (first order): start → meta 5/7, start → google 2/7; meta → google 3/5, meta → null 2/5;
 * google → conversion 4/5, google → null 1/5. P(conversion) = 5/7·3/5·4/5 + 2/7·4/5 = 4/7.
 * Without meta: 2/7·4/5 = 8/35, a removal effect of 1 − (8/35)/(4/7) = 0.6. Without google: 0,
 * an effect of 1. Weights: google 1, meta 0.6.
 *
 * shapley: v({meta}) = 0/2, v({google}) = 1/2, v({meta, google}) = 3/3. With two channels each
 * order of arrival weighs 1/2: φ(meta) = ½·(0 − 0) + ½·(1 − ½) = 0.25, φ(google) = ½·(½ − 0) +
 * ½·(1 − 0) = 0.75. Weights: google 1, meta 1/3.
 *
 * The order explained (x, March 5th, 100 USD) has the path meta, google, google:
 *   markov:  meta 0.6/1.6 = 0.375; google 1/1.6 = 0.625, 0.3125 to each of its two touchpoints
 *   shapley: meta (1/3)/(4/3) = 0.25; google 0.75, 0.375 each (meta's 249999999.8 parts round up)
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function send(client: TestClient, url: string, data: unknown[]) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: { data } });
  assert.equal(response.statusCode, 201, response.body);
}
const order = (orderId: string, customerId: string, at: string, total = 100) =>
  minimalOrder(orderId, { customer_id: customerId, time_of_purchase: at, currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
const visit = (touchpointId: string, at: string, platform: string, who: { customer_id: string } | { visitor_id: string }) => ({
  touchpoint_id: touchpointId,
  occurred_at: at,
  platform_name: platform,
  campaign_id: `${platform}-spring`,
  ...who,
});

/** A client with the shop above. */
async function shop(): Promise<TestClient> {
  const client = await service.createClient();
  const converting = ['c1', 'c2', 'c3'].flatMap((customer, n) => [
    visit(`${customer}-meta`, `2024-02-1${n}T08:00:00Z`, 'meta', { customer_id: customer }),
    visit(`${customer}-google`, `2024-02-1${n}T09:00:00Z`, 'google', { customer_id: customer }),
  ]);
  await send(client, '/v1/touchpoints', [
    ...converting,
    visit('c4-google', '2024-02-13T09:00:00Z', 'google', { customer_id: 'c4' }),
    visit('a1-meta', '2024-02-15T09:00:00Z', 'meta', { visitor_id: 'a1' }),
    visit('a2-meta', '2024-02-15T10:00:00Z', 'meta', { visitor_id: 'a2' }),
    visit('a3-google', '2024-02-16T09:00:00Z', 'google', { visitor_id: 'a3' }),
    visit('x-meta', '2024-03-03T09:00:00Z', 'meta', { customer_id: 'cx' }),
    visit('x-google-1', '2024-03-04T09:00:00Z', 'google', { customer_id: 'cx' }),
    visit('x-google-2', '2024-03-05T10:00:00Z', 'google', { customer_id: 'cx' }),
  ]);
  const orders = [
    ...['c1', 'c2', 'c3'].map((customer, n) => order(`${customer}-order`, customer, `2024-02-1${n}T12:00:00Z`)),
    order('c4-order', 'c4', '2024-02-14T12:00:00Z'),
    order('x', 'cx', '2024-03-05T12:00:00Z'),
  ];
  const response = await postOrders(app, client, orders);
  assert.equal(response.statusCode, 200, response.body);
  return client;
}

async function learnt(client: TestClient, model: string, query: Record<string, string> = {}) {
  const response = await app.inject({ method: 'GET', url: `/v1/attribution/models/${model}`, headers: client.headers, query: { period_from: '2024-03-01', ...query } });
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}

const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual}, expected ${expected}`);
interface LearntChannel {
  channel: string;
  removal_effect?: number;
  shapley_value?: number;
  weight: number;
}
/** Each channel learnt, by name. */
const byChannel = (channels: LearntChannel[]): Record<string, LearntChannel> => Object.fromEntries(channels.map((channel) => [channel.channel, channel]));
/** What a model learnt of one channel. */
const of = (channels: LearntChannel[], name: string) => {
  const channel = byChannel(channels)[name];
  assert.ok(channel, `${name} learnt`);
  return channel;
};

describe('what the models learn', async () => {
  const client = await shop();

  test('markov: the chain of the paths, each channel\'s removal effect and weight, the training period and a warning', async () => {
    const model = await learnt(client, 'markov');
    assert.equal(model.data_driven, true);
    const { learnt: markov } = model;
    assert.deepEqual(markov.training, { from: '2023-12-02T00:00:00.000Z', before: '2024-03-01T00:00:00.000Z' });
    assert.deepEqual(markov.paths, { converting: 4, not_converting: 3 });
    assert.equal(markov.markov_order, 1);
    assert.equal(markov.channel_grouping, 'platform');
    near(markov.conversion_probability, 4 / 7, 'P(conversion)');
    const [meta, google] = [of(markov.channels, 'meta'), of(markov.channels, 'google')];
    near(meta.removal_effect!, 0.6, 'meta');
    near(google.removal_effect!, 1, 'google');
    assert.deepEqual([meta.weight, google.weight], [0.6, 1]);
    const transitions = Object.fromEntries(markov.transitions.map((t: { from: string; to: string; count: number }) => [`${t.from} → ${t.to}`, t.count]));
    assert.deepEqual(transitions, {
      '(start) → meta': 5,
      '(start) → google': 2,
      'meta → google': 3,
      'meta → (null)': 2,
      'google → (conversion)': 4,
      'google → (null)': 1,
    });
    assert.match(markov.warning, /learnt from 4 converting paths \(fewer than 300\)/);
  });

  test('shapley: the value of each set of channels, each channel\'s Shapley value and weight', async () => {
    const { learnt: shapley } = await learnt(client, 'shapley');
    assert.deepEqual(shapley.coalitions, [
      { channels: ['google'], converting: 1, paths: 2, value: 0.5 },
      { channels: ['meta'], converting: 0, paths: 2, value: 0 },
      { channels: ['google', 'meta'], converting: 3, paths: 3, value: 1 },
    ]);
    const [meta, google] = [of(shapley.channels, 'meta'), of(shapley.channels, 'google')];
    near(meta.shapley_value!, 0.25, 'meta');
    near(google.shapley_value!, 0.75, 'google');
    assert.deepEqual([meta.weight, google.weight], [0.333333333, 1]);
    assert.equal(shapley.markov_order, undefined);
  });

  test('what was learnt is kept and reused, and learnt again once 15 minutes old', async () => {
    const first = await learnt(client, 'markov', { window: '7' });
    const again = await learnt(client, 'markov', { window: '7' });
    assert.equal(again.learnt.computed_at, first.learnt.computed_at);
    const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
    const settings: LearningSettings = { channel_grouping: 'platform', training_days: 90, markov_order: 1 };
    const asked = { model: 'markov' as const, window: 7 as const, settings, training: first.learnt.training };
    const computedAt = Date.parse(first.learnt.computed_at);
    const kept = await service.db.transaction((tx) => learntModel(tx, tenant, asked, new Date(computedAt + 14 * 60_000)));
    assert.equal(kept.summary.computed_at, first.learnt.computed_at);
    const later = new Date(computedAt + 16 * 60_000);
    const relearnt = await service.db.transaction((tx) => learntModel(tx, tenant, asked, later));
    assert.equal(relearnt.summary.computed_at, later.toISOString());
    assert.deepEqual(relearnt.weights, kept.weights);
  });

  test('the rule models are described, with nothing learnt; every model is listed', async () => {
    const linear = await learnt(client, 'linear');
    assert.deepEqual(Object.keys(linear).sort(), ['data_driven', 'definition', 'id', 'name']);
    assert.equal(linear.data_driven, false);
    const list = await app.inject({ method: 'GET', url: '/v1/attribution/models', headers: client.headers });
    assert.equal(list.statusCode, 200);
    const ids = list.json().models.map((model: { id: string; data_driven: boolean }) => `${model.id}${model.data_driven ? '*' : ''}`);
    assert.ok(ids.includes('markov*') && ids.includes('shapley*') && ids.includes('linear'), ids.join());
  });

  test('a wrong model, window or day is a 422 naming it', async () => {
    for (const [url, loc] of [
      ['/v1/attribution/models/markow', 'path/model_id'],
      ['/v1/attribution/models/markov?window=31', 'query/window'],
      ['/v1/attribution/models/markov?period_from=2024-02-30', 'query/period_from'],
      ['/v1/attribution/models/markov?order=2', 'query/order'],
      [`/v2/orders/x/attribution?model=shapley&period_from=${'9'.repeat(10_000)}`, 'query/period_from'],
    ] as const) {
      const body = assertErrorEnvelope(await app.inject({ method: 'GET', url, headers: client.headers }), 422);
      assert.deepEqual(body.errors?.map((item) => item.loc), [loc], url);
    }
  });
});

describe('the credits they give', async () => {
  const client = await shop();
  const expected = {
    markov: { meta: 0.375, google: 0.625, path: [['x-meta', 0.375, 0.6], ['x-google-1', 0.3125, 1], ['x-google-2', 0.3125, 1]] },
    shapley: { meta: 0.25, google: 0.75, path: [['x-meta', 0.25, 0.333333333], ['x-google-1', 0.375, 1], ['x-google-2', 0.375, 1]] },
  };

  test('the explanation shows each touchpoint\'s credit, state and the weight its channel learnt', async () => {
    for (const [model, { path }] of Object.entries(expected)) {
      const response = await app.inject({ method: 'GET', url: `/v2/orders/x/attribution?model=${model}&period_from=2024-03-01`, headers: client.headers });
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json();
      assert.deepEqual(
        body.touchpoints.map((t: { touchpoint_id: string; credit: number; channel_weight: number }) => [t.touchpoint_id, t.credit, t.channel_weight]),
        path,
        model,
      );
      assert.deepEqual(body.touchpoints.map((t: { state: string }) => t.state), ['meta', 'google', 'google']);
      assert.equal(body.touchpoints.reduce((sum: number, t: { revenue: number }) => sum + t.revenue, 0), 100);
      assert.deepEqual(body.learnt.training, { from: '2023-12-02T00:00:00.000Z', before: '2024-03-01T00:00:00.000Z' });
      assert.match(body.learnt.warning, /fewer than 300/);
      // By default, trained before the day of the purchase: the same paths, so the same credits.
      const byDefault = (await app.inject({ method: 'GET', url: `/v2/orders/x/attribution?model=${model}`, headers: client.headers })).json();
      assert.equal(byDefault.learnt.training.before, '2024-03-05T00:00:00.000Z');
      assert.deepEqual(byDefault.touchpoints, body.touchpoints);
    }
    const linear = (await app.inject({ method: 'GET', url: '/v2/orders/x/attribution?model=linear', headers: client.headers })).json();
    assert.equal(linear.learnt, undefined);
    assert.equal(linear.touchpoints[0].channel_weight, undefined);
  });

  test('exports credit by the same weights, and warn that they were learnt from few conversions', async () => {
    const { warn, rows: [header, ...rows] } = await exportedCsv(app, client, {
      period_type: 'FIXED',
      period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' },
      level: 'platform',
      time_granularity: 'DAILY',
      attribution_options: { attribution_models: ['markov', 'shapley', 'linear'], attribution_windows: ['30'], accounting_modes: ['cash', 'accrual'] },
      metrics: [{ id: 'rev' }, { id: 'txns' }],
    });
    assert.match((warn as Record<string, string>).attribution_models!, /markov learnt from 4 converting paths.*; shapley learnt from 4/);
    const credited = rows
      .map((cells) => Object.fromEntries(header!.map((name, i) => [name, cells[i]!])))
      .filter((row) => Number(row.txns) > 0 && row.accounting_mode === 'cash')
      .map((row) => `${row.attribution_model} ${row.date} ${row.platform} ${Number(row.rev)} ${Number(row.txns)}`)
      .sort();
    assert.deepEqual(credited, [
      'linear 2024-03-05 google 66.666667 0.666667',
      'linear 2024-03-05 meta 33.333333 0.333333',
      'markov 2024-03-05 google 62.5 0.625',
      'markov 2024-03-05 meta 37.5 0.375',
      'shapley 2024-03-05 google 75 0.75',
      'shapley 2024-03-05 meta 25 0.25',
    ]);
  });

  test('reports credit by the same weights, and warn', async () => {
    for (const [model, shares] of Object.entries(expected)) {
      const query = new URLSearchParams({ start_date: '2024-03-01', end_date: '2024-03-31', level: 'platform', granularity: 'PERIOD', metrics: 'rev,txns', model, window: '30' });
      const response = await app.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers });
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json();
      const revenue = Object.fromEntries(body.rows.filter((row: { txns: number }) => row.txns > 0).map((row: { platform: string; rev: number }) => [row.platform, row.rev]));
      assert.deepEqual(revenue, { meta: shares.meta * 100, google: shares.google * 100 }, model);
      assert.match(body.warn.attribution_model, new RegExp(`^${model} learnt from 4 converting paths`));
    }
    const linear = await app.inject({ method: 'GET', url: '/v1/reports/performance?start_date=2024-03-01&end_date=2024-03-31&metrics=rev&model=linear', headers: client.headers });
    assert.equal(linear.json().warn, undefined);
  });
});

describe('the settings of the models', async () => {
  const client = await shop();
  const patch = async (payload: object) => {
    const response = await app.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: admin, payload });
    assert.equal(response.statusCode, 200, response.body);
  };

  test('platform_campaign makes states of platforms and campaigns', async () => {
    await patch({ channel_grouping: 'platform_campaign' });
    const { learnt: markov } = await learnt(client, 'markov');
    assert.equal(markov.channel_grouping, 'platform_campaign');
    assert.deepEqual(markov.channels.map((channel: { channel: string }) => channel.channel).sort(), ['google:google-spring', 'meta:meta-spring']);
    const explained = (await app.inject({ method: 'GET', url: '/v2/orders/x/attribution?model=markov&period_from=2024-03-01', headers: client.headers })).json();
    assert.deepEqual(explained.touchpoints.map((t: { state: string; credit: number }) => [t.state, t.credit]), [['meta:meta-spring', 0.375], ['google:google-spring', 0.3125], ['google:google-spring', 0.3125]]);
    await patch({ channel_grouping: 'platform' });
  });

  test('markov_order makes states of the last channels; training_days bounds the training period', async () => {
    await patch({ markov_order: 2 });
    const { learnt: second } = await learnt(client, 'markov');
    assert.equal(second.markov_order, 2);
    assert.ok(second.transitions.some((t: { from: string; to: string }) => t.from === 'meta' && t.to === 'meta > google'), JSON.stringify(second.transitions));
    // Paths meta → google always convert at order 2 (the state meta > google is theirs alone): without meta, only c4's google does.
    near(of(second.channels, 'meta').removal_effect!, 1 - (2 / 7) * (1 / 2) / (4 / 7), 'meta at order 2');
    await patch({ markov_order: 1, training_days: 14 });
    const { learnt: fortnight } = await learnt(client, 'markov');
    assert.deepEqual(fortnight.training, { from: '2024-02-16T00:00:00.000Z', before: '2024-03-01T00:00:00.000Z' });
    // Only a3's google visit is left: nothing converts, nothing weighs.
    assert.deepEqual(fortnight.paths, { converting: 0, not_converting: 1 });
    assert.deepEqual(fortnight.channels.map((channel: { weight: number }) => channel.weight), [0]);
    const explained = (await app.inject({ method: 'GET', url: '/v2/orders/x/attribution?model=markov&period_from=2024-03-01', headers: client.headers })).json();
    assert.deepEqual(explained.touchpoints.map((t: { credit: number }) => t.credit), [0.333333333, 0.333333333, 0.333333334], 'equal shares, as linear');
  });
});
