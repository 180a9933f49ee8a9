import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { MODEL_ALIASES, MODELS } from '../src/attribution/models.js';
import { assertErrorEnvelope, makeOrder, minimalOrder, postAliases, postOrders, startExportingService, UUID, type TestApp, type TestClient } from './helpers.js';

// Client A stores orders, aliases, hourly and daily spend, touchpoints, an identity link and an
// export on both ports. Client B,
// with its own valid key, then tries every route of the client API on A's ids. Its answers must be
// those it gets on look-alike ids nobody ever used (while B has written nothing), and those a
// control client, as new as B and doing all B does, gets on those ids: apart from request ids,
// timestamps and the ids themselves, they are the same, so B learns nothing of A's data. A's data
// must read back as it was, and a client-API route without a probe fails the last test.

const service = await startExportingService();
after(() => service.close());

const ENVIRONMENTS = ['production', 'uat'] as const;
type Environment = (typeof ENVIRONMENTS)[number];

/** What a request names a client's data by: A's ids, or look-alikes nobody ever used. */
interface Ids {
  order_id: string;
  shopify_alias: string;
  erp_alias: string;
  account: string;
  campaign: string;
  touchpoint_id: string;
  visitor_id: string;
  export_id: string;
}

/** One client's view of one port, with the ids it aims at. */
interface World {
  app: TestApp;
  client: TestClient;
  ids: Ids;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** A random id of the same length, so that answers naming it are as long as those naming the original. */
const lookalike = (id: string) => Array.from(randomBytes(id.length), (byte) => ALPHABET[byte % ALPHABET.length]).join('');
function neverUsed(ids: Ids): Ids {
  const lookalikes = Object.fromEntries(Object.entries(ids).map(([name, id]) => [name, lookalike(id)])) as Record<keyof Ids, string>;
  return { ...lookalikes, export_id: randomUUID() };
}

const DAY = '2024-03-08';
const MARCH = { start_date: '2024-03-01', end_date: '2024-03-31' };
const EXPORT_FILE = 'isolation';

/** The two spend collections: how a record is keyed, and how a list asks for the day of DAY. */
const SPEND = [
  { path: '/v1/spend_hourly', key: { hour_start_iso: `${DAY}T09:00:00Z` }, range: { hour_start_iso_begin: `${DAY}T00:00:00Z`, hour_start_iso_end: `${DAY}T23:00:00Z` } },
  { path: '/v1/spend', key: { date: DAY }, range: { date_start: DAY, date_end: DAY } },
] as const;
type Collection = (typeof SPEND)[number];

const spendRecord = (collection: Collection, ids: Ids, platform_name: string, spend: number) => ({
  ...collection.key,
  platform_name,
  platform_account_id: ids.account,
  campaign_id: ids.campaign,
  campaign_name: 'Spring sale',
  spend,
  spend_currency: 'USD',
  impressions: 100,
  clicks: 7,
});
const spendKey = (collection: Collection, ids: Ids) => ({ data: { ...collection.key, platform_account_id: ids.account, campaign_id: ids.campaign } });
const spendList = (collection: Collection, ids: Ids) => ({ platform_account_id: ids.account, ...collection.range });

/** A's records of a key: two platforms (a delete of the key matches both). B's: one, its own amount. */
const A_SPEND: [string, number][] = [
  ['google', 333.33],
  ['meta', 777.77],
];
const B_SPEND: [string, number][] = [['meta', 1.5]];

const aOrder = (ids: Ids) => makeOrder(ids.order_id, { purchase_total: 4321.09, alternate_order_ids: [{ type: 'shopify', id: ids.shopify_alias }] });
/** B's orders: one of A's order id, with A's first alias; one of its own id, later that day. */
const B_OWN_ORDER = 'b-own-order';
const bOrder = (orderId: string, hour: number, total: number, alternate_order_ids: object[] = []) =>
  minimalOrder(orderId, {
    customer_id: 'b-customer',
    time_of_purchase: `${DAY}T${hour}:00:00Z`,
    currency: 'USD',
    purchase_total: total,
    products: [{ id: 'p', name: 'Product', quantity: 1, price: total }],
    alternate_order_ids,
  });
const bOrders = (ids: Ids) => [bOrder(ids.order_id, 10, 12.5, [{ type: 'shopify', id: ids.shopify_alias }]), bOrder(B_OWN_ORDER, 11, 12.25)] as const;
/** A's second alias, on an order: A's to A, B's own (another order id than A's) to B. */
const erpAlias = (ids: Ids, order_id = ids.order_id) => ({ aliases: [{ order_id, type: 'custom:erp', id: ids.erp_alias }] });

const exportRequest = (ids: Ids) => ({
  level: 'platform',
  time_granularity: 'DAILY',
  period_type: 'FIXED',
  period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-04-01T00:00:00Z' },
  options: { aggregate_data: true },
  breakdowns: [{ key: 'account', values: [ids.account] }],
  metrics: [{ id: 'spend' }, { id: 'revenue' }, { id: 'transactions' }],
  export_file_name: EXPORT_FILE,
});

function call(world: World, options: InjectOptions) {
  return world.app.inject({ ...options, headers: { ...world.client.headers, ...options.headers } });
}

function expectStatus(response: LightMyRequestResponse, status: number) {
  assert.equal(response.statusCode, status, response.body);
  return response.json();
}

/** An export's outcome once it is no longer PENDING, with its files downloaded (as anyone can, by link). */
async function exportOutcome(world: World, id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer: { result: string[]; data_export_id: string; status: string } = expectStatus(
      await call(world, { method: 'GET', url: `/v1/exports/data-export/result/${id}` }),
      200,
    );
    const { result, data_export_id: _id, ...outcome } = answer;
    if (outcome.status !== 'PENDING') {
      const files = await Promise.all(
        result.map(async (link) => {
          const url = new URL(link);
          const file = await world.app.inject({ method: 'GET', url: url.pathname + url.search });
          assert.equal(file.statusCode, 200, file.body);
          return { name: path.basename(url.pathname), lines: file.body.split('\r\n') };
        }),
      );
      return { ...outcome, files };
    }
    if (Date.now() > deadline) throw new Error('the export stayed PENDING');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const A_IDS = {
  order_id: 'A-1001',
  shopify_alias: 'gid-A-1001',
  erp_alias: 'ERP-A-1001',
  account: 'act_A',
  campaign: 'spring-A',
  touchpoint_id: 'tp-A-7',
  visitor_id: 'visitor-A',
};

/** A touchpoint of the world's visitor and campaign; its visitor linked through the world's order id. */
const touchpoints = (ids: Ids, occurred_at = `${DAY}T08:00:00Z`) => ({
  data: [{ touchpoint_id: ids.touchpoint_id, occurred_at, visitor_id: ids.visitor_id, utm_source: 'meta', utm_medium: 'cpc', utm_campaign: ids.campaign }],
});
/** The same touchpoint as Segment forwards it, with an event that is not read. */
const segmentBatch = (ids: Ids) => ({
  batch: [
    {
      type: 'page',
      messageId: ids.touchpoint_id,
      anonymousId: ids.visitor_id,
      timestamp: `${DAY}T09:30:00Z`,
      context: { campaign: { source: 'meta', medium: 'cpc', name: ids.campaign } },
    },
    { type: 'track', event: 'Product Viewed', anonymousId: ids.visitor_id, timestamp: `${DAY}T09:31:00Z` },
  ],
});
const identities = (ids: Ids) => ({ data: [{ visitor_id: ids.visitor_id, order_id: ids.order_id }] });
/** A rate of the world's day: A's, or the one B sends. */
const A_RATE = 1.0834;
const B_RATE = 2.5;
const rates = (rate: number) => ({ data: [{ date: DAY, base: 'EUR', quote: 'USD', rate }] });
const ratesOfTheDay = () => ({ base: 'EUR', quote: 'USD', start_date: DAY, end_date: DAY });
const rateListProbe = (what: string, expected: () => object[]): Probe => ({
  what,
  method: 'GET',
  route: '/v1/exchange-rates',
  query: ratesOfTheDay,
  check: (response) => assert.deepEqual((expectStatus(response, 200) as { data: object[] }).data, expected()),
});
const ofVisitor = (ids: Ids) => ({ visitor_id: ids.visitor_id });
/** The customer of the world's order (makeOrder's and minimalOrder's default). */
const ofCustomer = (ids: Ids) => ({ customer_id: `customer-of-${ids.order_id}` });

/** Client A on one port, once it has stored its orders, aliases, spend and a finished export there. */
async function withClientData(app: TestApp, client: TestClient): Promise<World> {
  const world = { app, client, ids: { ...A_IDS, export_id: '' } };
  const { ids } = world;
  expectStatus(await postOrders(world.app, world.client, [aOrder(ids)]), 200);
  expectStatus(await postAliases(world.app, world.client, erpAlias(ids).aliases), 200);
  for (const collection of SPEND) {
    const data = A_SPEND.map(([platform, spend]) => spendRecord(collection, ids, platform, spend));
    expectStatus(await call(world, { method: 'POST', url: collection.path, payload: { data } }), 201);
  }
  expectStatus(await call(world, { method: 'POST', url: '/v1/touchpoints', payload: touchpoints(ids) }), 201);
  expectStatus(await call(world, { method: 'POST', url: '/v1/identities', payload: identities(ids) }), 201);
  expectStatus(await call(world, { method: 'POST', url: '/v1/exchange-rates', payload: rates(A_RATE) }), 201);
  ids.export_id = expectStatus(await call(world, { method: 'POST', url: '/v1/exports/data-export', payload: exportRequest(ids) }), 201).id;
  assert.equal((await exportOutcome(world, ids.export_id)).status, 'SUCCESS');
  return world;
}

/** All of a client's data on one port, as it reads it back. */
async function readBack(world: World) {
  const get = async (url: string, query: Record<string, string> = {}) => {
    const { request_id: _ignored, ...body } = expectStatus(await call(world, { method: 'GET', url, query }), 200);
    return body;
  };
  return {
    orders: await get('/v2/orders', MARCH),
    spend: await Promise.all(SPEND.map((collection) => get(collection.path, spendList(collection, world.ids)))),
    breakdowns: await get('/v1/exports/breakdowns'),
    touchpoints: await get('/v1/touchpoints', ofCustomer(world.ids)),
    rates: await get('/v1/exchange-rates', ratesOfTheDay()),
    export: await exportOutcome(world, world.ids.export_id),
  };
}

// --- What B tries, in order, and what it must get ---------------------------------------------

interface Probe {
  what: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The route as the app registers it; `:name` is filled in with the id of that name, or the value `params` gives it. */
  route: string;
  params?: Record<string, string>;
  query?: (ids: Ids) => Record<string, string>;
  payload?: (ids: Ids) => object;
  /** Asserts the answer; returns anything more the client learned through it. */
  check(response: LightMyRequestResponse, world: World): unknown;
  /** Keys of the answer that name the client asking, which differ between clients by design: `check` asserts them. */
  ownKeys?: string[];
}

function request(probe: Probe, ids: Ids, method: string = probe.method): InjectOptions {
  return {
    method: method as InjectOptions['method'],
    url: probe.route.replace(/:(\w+)/g, (_, name: string) => ids[name as keyof Ids] ?? probe.params?.[name]),
    ...(probe.query && { query: probe.query(ids) }),
    ...(probe.payload && { payload: probe.payload(ids) }),
  };
}

function expectPage(response: LightMyRequestResponse) {
  const page = expectStatus(response, 200) as { data: Record<string, unknown>[]; total_count: number };
  assert.equal(page.total_count, page.data.length);
  return page.data;
}

/** The spend records of an answer, by key and amount. */
const spendOf = (records: Record<string, unknown>[]) => records.map((r) => [r.platform_name, r.platform_account_id, r.campaign_id, r.spend]);
const ownSpend = (ids: Ids, records: [string, number][]) => records.map(([platform, spend]) => [platform, ids.account, ids.campaign, spend]);

const breakdowns = (platform: string[], account: string[]) => ({
  breakdowns: [
    { key: 'platform', values: platform },
    { key: 'account', values: account },
    { key: 'Platform (Northbeam)', values: platform },
  ],
});

const listOrdersProbe = (what: string, expected: (ids: Ids) => object[]): Probe => ({
  what,
  method: 'GET',
  route: '/v2/orders',
  query: () => MARCH,
  check(response, { ids }) {
    const orders = expectPage(response).map(({ created_at: _c, updated_at: _u, ...order }) => order);
    assert.deepEqual(orders, expected(ids));
  },
});
const spendProbes = (verb: 'list' | 'delete', what: string, expected: [string, number][]): Probe[] =>
  SPEND.map((collection) => ({
    what: `${what} (${collection.path})`,
    method: verb === 'list' ? 'GET' : 'DELETE',
    route: collection.path,
    ...(verb === 'list' ? { query: (ids: Ids) => spendList(collection, ids) } : { payload: (ids: Ids) => spendKey(collection, ids) }),
    check: (response, { ids }) =>
      assert.deepEqual(spendOf(verb === 'list' ? expectPage(response) : expectStatus(response, 200).data), ownSpend(ids, expected)),
  }));
const breakdownProbe = (what: string, expected: (ids: Ids) => object): Probe => ({
  what,
  method: 'GET',
  route: '/v1/exports/breakdowns',
  check: (response, { ids }) => assert.deepEqual(expectStatus(response, 200), expected(ids)),
});

const listTouchpointsProbe = (what: string, query: (ids: Ids) => Record<string, string>, expected: (ids: Ids) => object[]): Probe => ({
  what,
  method: 'GET',
  route: '/v1/touchpoints',
  query,
  check(response, { ids }) {
    const listed = expectPage(response).map(({ touchpoint_id, visitor_id, campaign_id, linked_customer_id }) => ({ touchpoint_id, visitor_id, campaign_id, linked_customer_id }));
    assert.deepEqual(listed, expected(ids));
  },
});
/** B's touchpoint: A's ids, another time; its visitor linked through B's own order of A's order id. */
const bTouchpoint = (ids: Ids) => [{ touchpoint_id: ids.touchpoint_id, visitor_id: ids.visitor_id, campaign_id: ids.campaign, linked_customer_id: 'b-customer' }];

const explainProbe = (what: string, check: Probe['check']): Probe => ({
  what,
  method: 'GET',
  route: '/v2/orders/:order_id/attribution',
  query: () => ({ model: 'last_touch', window: '30' }),
  check,
});

/** What markov learnt from the 90 days before `periodFrom`, after A's day: the paths counted. */
const learntProbe = (what: string, periodFrom: string, paths: object): Probe => ({
  what,
  method: 'GET',
  route: '/v1/attribution/models/:model_id',
  params: { model_id: 'markov' },
  query: () => ({ window: '30', period_from: periodFrom }),
  check: (response) => assert.deepEqual((expectStatus(response, 200) as { learnt: { paths: object } }).learnt.paths, paths),
});

const fetchExportOfA: Probe = {
  what: "fetches A's export result: 404",
  method: 'GET',
  route: '/v1/exports/data-export/result/:export_id',
  check: (response) => void assertErrorEnvelope(response, 404),
};

/** Before B writes anything: A's data must not show through, and nothing B does changes B's data. */
const BEFORE_WRITES: Probe[] = [
  listOrdersProbe("lists orders over A's days: none", () => []),
  ...spendProbes('list', "lists spend of A's account and day: none", []),
  fetchExportOfA,
  listTouchpointsProbe("lists touchpoints of A's visitor: none", ofVisitor, () => []),
  listTouchpointsProbe("lists touchpoints of A's customer: none", ofCustomer, () => []),
  listTouchpointsProbe("lists touchpoints of A's day: none", () => ({ start: `${DAY}T00:00:00Z`, end: `${DAY}T23:59:59Z` }), () => []),
  { what: 'reads the metric catalog', method: 'GET', route: '/v1/exports/metrics', check: (response) => void expectStatus(response, 200) },
  {
    what: "reports on A's month: nothing",
    method: 'GET',
    route: '/v1/reports/performance',
    query: () => ({ start_date: '2024-03-01', end_date: '2024-03-31', level: 'campaign', metrics: 'spend,rev,visits' }),
    check: (response) => assert.deepEqual(expectStatus(response, 200), { rows: [], totals: { spend: 0, rev: 0, visits: 0 }, currency: null }),
  },
  {
    what: 'reads the health of its feeds: nothing received',
    method: 'GET',
    route: '/v1/health/feeds',
    check(response) {
      const health = expectStatus(response, 200) as { days: Record<string, number | string>[]; last_received_at: object };
      assert.ok(health.days.every((day) => day.orders === 0 && day.spend === 0 && day.touchpoints === 0));
      assert.deepEqual(health.last_received_at, { orders: null, spend: null, touchpoints: null });
    },
  },
  breakdownProbe('reads breakdown values: none', () => breakdowns([], [])),
  {
    what: 'reads which client it is: itself',
    method: 'GET',
    route: '/v1/client',
    ownKeys: ['client_id', 'name'],
    check(response, { app, client }) {
      const me = expectStatus(response, 200) as Record<string, string>;
      assert.equal(me.client_id, client.client_id);
      assert.notEqual(me.name, 'A');
      assert.equal(me.environment, app === service.uat ? 'uat' : 'production');
    },
  },
  rateListProbe("lists the rates of A's pair and day: none", () => []),
  {
    what: 'reads attribution models: the catalog',
    method: 'GET',
    route: '/v1/exports/attribution-models',
    check: (response) => {
      const { attribution_models: listed } = expectStatus(response, 200) as { attribution_models: { id: string; name: string }[] };
      assert.deepEqual(listed.slice(0, MODELS.length), MODELS.map(({ id, name }) => ({ id, name })));
      assert.deepEqual(listed.slice(MODELS.length).map(({ id }) => id), Object.keys(MODEL_ALIASES));
    },
  },
  explainProbe("explains A's order: 404, unknown order", (response) => void assertErrorEnvelope(response, 404)),
  {
    what: 'lists the attribution models',
    method: 'GET',
    route: '/v1/attribution/models',
    check: (response) => assert.deepEqual((expectStatus(response, 200) as { models: { id: string }[] }).models.map(({ id }) => id), MODELS.map(({ id }) => id)),
  },
  learntProbe("reads what markov learnt from A's days: nothing", '2024-03-09', { converting: 0, not_converting: 0 }),
  {
    what: "patches A's order id: 404, unknown order",
    method: 'PATCH',
    route: '/v2/orders',
    payload: (ids) => [{ order_id: ids.order_id, purchase_total: 1 }],
    check(response, { ids }) {
      const { errors } = assertErrorEnvelope(response, 404);
      assert.deepEqual(errors?.map(({ type, order_id }) => [type, order_id]), [['not_found', ids.order_id]]);
    },
  },
  {
    what: "claims an alias on A's order id: 404, unknown order",
    method: 'POST',
    route: '/v2/orders/aliases',
    payload: erpAlias,
    check(response, { ids }) {
      const { errors } = assertErrorEnvelope(response, 404);
      assert.deepEqual(errors?.map(({ type, order_id }) => [type, order_id]), [['not_found', ids.order_id]]);
    },
  },
  ...spendProbes('delete', "deletes A's spend keys: nothing", []),
  {
    what: "erases A's customer, by id and by the e-mail of A's order: nothing of A's is found, nothing changed",
    method: 'POST',
    route: '/v1/customers/erase',
    payload: (ids) => ({ customer_ids: [ofCustomer(ids).customer_id], customer_emails: [String(aOrder(ids).customer_email)] }),
    check(response) {
      const { customers, orders, touchpoints, identities } = expectStatus(response, 200);
      assert.deepEqual({ customers, orders, touchpoints, identities }, { customers: 1, orders: 0, touchpoints: 0, identities: 0 });
    },
  },
];

/** B writes to A's ids: it gets data of its own, with no conflict with A's, and reads back its own only. */
const WRITES: Probe[] = [
  {
    what: "upserts an order of A's order id, with A's alias (and one more): new orders of its own",
    method: 'POST',
    route: '/v2/orders',
    payload: bOrders,
    check(response) {
      const { inserted, updated, warnings } = expectStatus(response, 200);
      assert.deepEqual({ inserted, updated, warnings }, { inserted: 2, updated: 0, warnings: [] });
    },
  },
  {
    what: 'upserts the same orders on the old path: replaces its own',
    method: 'POST',
    route: '/v1/orders',
    payload: bOrders,
    check(response) {
      const { inserted, updated, warnings } = expectStatus(response, 200);
      assert.deepEqual({ inserted, updated, warnings }, { inserted: 0, updated: 2, warnings: [] });
    },
  },
  {
    what: "attaches A's other alias to another order of its own: added, no conflict",
    method: 'POST',
    route: '/v2/orders/aliases',
    payload: (ids) => erpAlias(ids, B_OWN_ORDER),
    check(response) {
      const { added, ignored } = expectStatus(response, 200);
      assert.deepEqual({ added, ignored }, { added: 1, ignored: 0 });
    },
  },
  {
    what: "patches its own order of A's order id (to the total it has): its own is updated",
    method: 'PATCH',
    route: '/v2/orders',
    payload: (ids) => [{ order_id: ids.order_id, purchase_total: 12.5 }],
    check: (response) => assert.equal(expectStatus(response, 200).updated, 1),
  },
  ...SPEND.map(
    (collection): Probe => ({
      what: `upserts spend of A's key: a new record of its own (${collection.path})`,
      method: 'POST',
      route: collection.path,
      payload: (ids) => ({ data: B_SPEND.map(([platform, spend]) => spendRecord(collection, ids, platform, spend)) }),
      check(response, { ids }) {
        const { data } = expectStatus(response, 201);
        assert.deepEqual(spendOf(data), ownSpend(ids, B_SPEND));
        assert.equal(data[0].created_at, data[0].updated_at, 'inserted, not updated');
      },
    }),
  ),
  listOrdersProbe('lists orders: its own only', (ids) => {
    const [ofAsId, own] = bOrders(ids);
    return [ofAsId, { ...own, alternate_order_ids: [{ type: 'custom:erp', id: ids.erp_alias }] }];
  }),
  ...spendProbes('list', 'lists spend: its own only', B_SPEND),
  breakdownProbe('reads breakdown values: its own only', (ids) => breakdowns(['meta'], [ids.account])),
  {
    what: "exports A's account: its own spend and orders only",
    method: 'POST',
    route: '/v1/exports/data-export',
    payload: exportRequest,
    async check(response, world) {
      const outcome = await exportOutcome(world, expectStatus(response, 201).id);
      assert.equal(outcome.status, 'SUCCESS', JSON.stringify(outcome));
      assert.deepEqual(
        outcome.files.flatMap((file) => file.lines),
        ['date,platform,account,currency,spend,revenue,transactions', '2024-03-08,,,USD,1.5,24.75,2', `2024-03-08,meta,${world.ids.account},USD,1.5,,`, ''],
      );
      return outcome;
    },
  },
  { ...fetchExportOfA, what: "fetches A's export result, having exports of its own: 404" },
  {
    what: "upserts a touchpoint of A's touchpoint id and visitor: a new one of its own",
    method: 'POST',
    route: '/v1/touchpoints',
    payload: (ids) => touchpoints(ids, `${DAY}T09:30:00Z`),
    check(response) {
      const { inserted, updated } = expectStatus(response, 201);
      assert.deepEqual({ inserted, updated }, { inserted: 1, updated: 0 });
    },
  },
  {
    what: "forwards a Segment page of A's touchpoint id and visitor (and another event): its own touchpoint again",
    method: 'POST',
    route: '/v1/events/segment',
    payload: segmentBatch,
    check(response) {
      const { touchpoints, links, ignored } = expectStatus(response, 200);
      assert.deepEqual({ touchpoints, links, ignored }, { touchpoints: 1, links: 0, ignored: 1 });
    },
  },
  {
    what: "links A's visitor to A's order id: a link of its own, to its own order of that id",
    method: 'POST',
    route: '/v1/identities',
    payload: identities,
    check: (response) => assert.equal(expectStatus(response, 201).linked, 1),
  },
  listTouchpointsProbe("lists touchpoints of A's visitor: its own only, linked to its own customer", ofVisitor, bTouchpoint),
  {
    what: "sends a rate of A's pair and day: a rate of its own",
    method: 'POST',
    route: '/v1/exchange-rates',
    payload: () => rates(B_RATE),
    check(response) {
      const { inserted, updated } = expectStatus(response, 201);
      assert.deepEqual({ inserted, updated }, { inserted: 1, updated: 0 });
    },
  },
  rateListProbe("lists the rates of A's pair and day: its own only", () => [{ date: DAY, base: 'EUR', quote: 'USD', rate: B_RATE, source: 'stored' }]),
  explainProbe("explains its order of A's order id: its own order, credited to its own touchpoint", (response, { ids }) => {
    const { order_id, customer_id, purchase_total, touchpoints } = expectStatus(response, 200);
    assert.deepEqual(
      { order_id, customer_id, purchase_total, touchpoints: touchpoints.map((t: Record<string, unknown>) => [t.touchpoint_id, t.campaign_id, t.credit, t.revenue]) },
      { order_id: ids.order_id, customer_id: 'b-customer', purchase_total: 12.5, touchpoints: [[ids.touchpoint_id, ids.campaign, 1, 12.5]] },
    );
  }),
  // Another training period: what was learnt before B wrote is reused for 15 minutes.
  learntProbe("reads what markov learnt from A's days: its own two orders' paths only", '2024-03-10', { converting: 2, not_converting: 0 }),
  listTouchpointsProbe("lists touchpoints of A's customer: none", ofCustomer, () => []),
  listTouchpointsProbe('lists touchpoints of the day: its own only', () => ({ start: `${DAY}T00:00:00Z` }), bTouchpoint),
  ...spendProbes('delete', 'deletes spend of that key: its own record only', B_SPEND),
];

const PROBES = [...BEFORE_WRITES, ...WRITES];

/** A route as the route table names it: `METHOD /path`. GET routes answer HEAD too. */
const methodsOf = (probe: Probe) => (probe.method === 'GET' ? ['GET', 'HEAD'] : [probe.method]);
const routesProbed = () => [...new Set(PROBES.flatMap((probe) => methodsOf(probe).map((method) => `${method} ${probe.route}`)))].sort();

/**
 * What an answer tells its client, comparable across worlds: request ids and timestamps are
 * masked (whether updated_at is created_at is kept), and so is the id of an export just created;
 * the world's ids are named rather than spelled.
 */
function told(response: LightMyRequestResponse, ids: Ids, learned?: unknown, ownKeys: string[] = []) {
  const json = String(response.headers['content-type']).startsWith('application/json') && response.body !== '';
  const { 'content-type': type, 'content-length': length } = response.headers;
  // The client's own keys differ in length between clients too.
  const answer = { status: response.statusCode, type, length: ownKeys.length > 0 ? '<masked>' : length, body: json ? response.json() : response.body, learned };
  const text = JSON.stringify(answer, function (this: Record<string, unknown>, key, value) {
    if (key === 'request_id' || key === 'created_at' || key === 'finished_at' || key === 'computed_at' || ownKeys.includes(key)) return '<masked>';
    if (key === 'updated_at') return value === this.created_at ? '<created_at>' : '<later>';
    if (key === 'id' && UUID.test(String(value))) return '<new export id>';
    return value;
  });
  const named = Object.entries(ids)
    .sort(([, a], [, b]) => b.length - a.length)
    .reduce((masked, [name, id]) => masked.replaceAll(id, `<${name}>`), text);
  return JSON.parse(named);
}

function assertAllTheSame(answers: unknown[], message: string) {
  for (const answer of answers.slice(1)) assert.deepEqual(answer, answers[0], message);
}

// --- The tests ---------------------------------------------------------------------------------

const [a, b, control] = [await service.createClient('A'), await service.createClient('B'), await service.createClient('control')];

const ports = Object.fromEntries(
  await Promise.all(
    ENVIRONMENTS.map(async (environment) => {
      const owner = await withClientData(service[environment], a);
      const intruder: World = { ...owner, client: b };
      const unaware: World = { ...owner, client: control, ids: neverUsed(owner.ids) };
      return [environment, { owner, intruder, unaware, stored: await readBack(owner) }];
    }),
  ),
) as Record<Environment, { owner: World; intruder: World; unaware: World; stored: Awaited<ReturnType<typeof readBack>> }>;

for (const environment of ENVIRONMENTS) {
  const { owner, intruder, unaware, stored } = ports[environment];

  describe(`${environment} port`, () => {
    test("A's data is there to find", () => {
      assert.deepEqual(
        stored.orders.data.map((order: { order_id: string; alternate_order_ids: object[] }) => [order.order_id, order.alternate_order_ids]),
        [[owner.ids.order_id, [{ type: 'shopify', id: owner.ids.shopify_alias }, { type: 'custom:erp', id: owner.ids.erp_alias }]]],
      );
      assert.deepEqual(stored.spend.map((page) => spendOf(page.data)), SPEND.map(() => ownSpend(owner.ids, A_SPEND)));
      assert.deepEqual(stored.breakdowns, breakdowns(['google', 'meta'], [owner.ids.account]));
      assert.deepEqual(
        stored.touchpoints.data.map((t: Record<string, string>) => [t.touchpoint_id, t.occurred_at, t.campaign_id, t.linked_customer_id]),
        [[owner.ids.touchpoint_id, `${DAY}T08:00:00.000Z`, owner.ids.campaign, `customer-of-${owner.ids.order_id}`]],
      );
      assert.deepEqual(stored.rates, { data: [{ date: DAY, base: 'EUR', quote: 'USD', rate: A_RATE, source: 'stored' }] });
      assert.equal(stored.export.status, 'SUCCESS');
    });

    test("B's answers on A's ids are those on ids nobody used, on every route", async (t) => {
      for (const probe of PROBES) {
        // B itself on ids nobody used, while that changes nothing B reads later; a control client,
        // as new as B and doing what B does, on those ids throughout.
        const worlds = [intruder, unaware, ...(BEFORE_WRITES.includes(probe) ? [{ ...intruder, ids: unaware.ids }] : [])];
        await t.test(probe.what, async () => {
          for (const method of methodsOf(probe)) {
            const answers = await Promise.all(
              worlds.map(async (world) => {
                const response = await call(world, request(probe, world.ids, method));
                return told(response, world.ids, method === probe.method ? await probe.check(response, world) : undefined, probe.ownKeys);
              }),
            );
            assertAllTheSame(answers, `${method} ${probe.route}`);
          }
        });
      }
    });

    test("B's key with A's Data-Client-ID is a 401 exactly like an unknown client id's, on every route", async () => {
      for (const probe of PROBES) {
        for (const method of methodsOf(probe)) {
          const answers = await Promise.all(
            [a.client_id, a.client_id.toUpperCase(), randomUUID()].map(async (clientId) => {
              const response = await owner.app.inject({
                ...request(probe, owner.ids, method),
                headers: { authorization: b.api_key, 'data-client-id': clientId },
              });
              assert.equal(response.statusCode, 401, `${method} ${probe.route}: ${response.body}`);
              return told(response, owner.ids);
            }),
          );
          assertAllTheSame(answers, `${method} ${probe.route}`);
        }
      }
    });

    test("A's export files cannot be had without their signed links, as if they did not exist", async () => {
      const answers = await Promise.all(
        [owner.ids.export_id, randomUUID()].map(async (id) => {
          const response = await call(intruder, {
            method: 'GET',
            url: `/v1/exports/files/${id}/${EXPORT_FILE}.csv`,
            query: { expires: String(Math.floor(Date.now() / 1000) + 3600), signature: lookalike('x'.repeat(43)) },
          });
          assertErrorEnvelope(response, 403);
          return told(response, owner.ids);
        }),
      );
      assertAllTheSame(answers, 'download');
    });

    test("after all of B's attempts, A's orders, aliases, spend, breakdowns, touchpoints, links and export read back as before", async () => {
      assert.deepEqual(await readBack(owner), stored);
    });
  });
}

/** Every route of an app as `METHOD /path`, read from Fastify's route tree. */
function routesOf(app: TestApp): string[] {
  const prefixes: string[] = [];
  return app
    .printRoutes({ commonPrefix: false })
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => {
      const match = /^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([^)]*)\))?$/.exec(line);
      assert.ok(match, `unexpected route tree line: ${line}`);
      const depth = match[1]!.length / 4;
      prefixes.length = depth;
      const route = (prefixes[depth - 1] ?? '') + match[2];
      prefixes.push(route);
      return (match[3] ?? '-')
        .split(', ')
        .filter((method) => method !== '-')
        .map((method) => `${method} ${route}`);
    });
}

/**
 * Routes that are not the client API: probes, the API document, the pixel script, the admin API,
 * downloads by signed link, the pages (the dashboard and /docs: files, no data), and the public collector (no credentials, nothing read back:
 * test/collect.test.ts).
 */
const NOT_CLIENT_API = /^[A-Z]+ (\/$|\/docs$|\/pages\/|\/healthz|\/readyz|\/openapi\.json|\/pixel\.js|\/admin\/|\/v1\/exports\/files\/|\/v1\/collect$)/;

test('every route of the client API, on both ports, is probed above', () => {
  for (const environment of ENVIRONMENTS) {
    const routes = routesOf(service[environment]);
    assert.ok(routes.includes('GET /healthz') && routes.includes('POST /v2/orders/aliases'), routes.join('\n'));
    const clientApi = routes.filter((route) => !NOT_CLIENT_API.test(route)).sort();
    assert.deepEqual(clientApi, routesProbed(), `${environment}: a client-API route is not probed, or a probed one is gone`);
  }
});
