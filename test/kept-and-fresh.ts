import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Tenant } from '../src/auth/tenant.js';
import { ADMIN_TOKEN, minimalOrder, type TestApp, type TestClient, type TestService } from './helpers.js';

/*
 * Kept totals against afresh: two clients sent the same writes, `kept` keeping its totals (and
 * paths) from report to report, `fresh` having every kept table wiped before each report; their
 * reports must be equal. Shared by the tests of keys noted by late writes (change-keys) and of the
 * kept paths they have found again (kept-paths-patch).
 */

export type Env = 'production' | 'uat';
export interface Pair {
  kept: TestClient;
  fresh: TestClient;
  zone: string;
  env: Env;
}
export type Query = Record<string, string>;
export type Answer = { rows: Record<string, unknown>[]; totals: Record<string, number | null> };

export interface Who {
  visitor?: string;
  customer?: string;
}
/** A touchpoint of a campaign of meta (a view when `type` says so). */
export const tp = (touchpoint_id: string, occurred_at: string, who: Who, campaign = 'base', type: 'visit' | 'view' = 'visit') => ({
  touchpoint_id,
  occurred_at,
  type,
  ...(who.visitor ? { visitor_id: who.visitor } : {}),
  ...(who.customer ? { customer_id: who.customer } : {}),
  platform_name: 'meta',
  campaign_id: campaign,
  ad_id: `${campaign}-ad`,
});
export const order = (order_id: string, customer_id: string, time_of_purchase: string, total: number) =>
  minimalOrder(order_id, { customer_id, time_of_purchase, currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });

const METRICS = 'rev,txns,revFt,txnsFt,visits,newVisits';
/** A report's query: its period, combination, granularity and level, and the metrics of credits and visits. */
export const query = (start_date: string, end_date: string, model: string, window: number, mode: 'cash' | 'accrual', granularity = 'DAILY', level = 'campaign'): Query => ({
  start_date,
  end_date,
  granularity,
  level,
  metrics: METRICS,
  model,
  window: String(window),
  mode,
});

export const tenantOf = (client: TestClient, env: Env = 'production'): Tenant => ({ clientId: client.client_id, environment: env, dryRun: false });

const KEPT_TABLES = ['attribution_credit_days', 'attribution_visit_days', 'attribution_paths', 'attribution_days', 'attribution_totals_kept', 'attribution_changes', 'attribution_change_keys'];

/** The requests of pairs of clients to `service` (or another, `on`). */
export function keptAndFresh(service: TestService) {
  const appOf = (env: Env, on: TestService): TestApp => (env === 'production' ? on.production : on.uat);

  async function call(client: TestClient, method: 'POST' | 'PATCH' | 'GET', url: string, payload?: unknown, env: Env = 'production', on: TestService = service) {
    const response = await appOf(env, on).inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
    assert.ok(response.statusCode < 300, `${env} ${method} ${url}: ${response.body}`);
    return response;
  }

  async function pairIn(name: string, zone = 'UTC', env: Env = 'production', on: TestService = service): Promise<Pair> {
    const pair = { kept: await on.createClient(`${name}, kept`), fresh: await on.createClient(`${name}, afresh`), zone, env };
    if (zone !== 'UTC') {
      for (const client of [pair.kept, pair.fresh]) {
        const response = await on.production.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { time_zone: zone } });
        assert.equal(response.statusCode, 200, response.body);
      }
    }
    return pair;
  }

  /** Sends the same write to both clients of the pair. */
  async function send(pair: Pair, method: 'POST' | 'PATCH', url: string, payload: unknown, on: TestService = service) {
    for (const client of [pair.kept, pair.fresh]) await call(client, method, url, payload, pair.env, on);
  }

  const report = async (client: TestClient, q: Query, env: Env = 'production', on: TestService = service) =>
    (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(q)}`, undefined, env, on)).json() as Answer;

  async function wipeKeptTotals(client: TestClient, on: TestService = service) {
    for (const table of KEPT_TABLES) await on.db.query(`DELETE FROM ${table} WHERE client_id = $1`, [client.client_id]);
  }

  /** Each query answers the same from the kept client's kept totals as afresh; the kept client's answers. */
  async function assertKeptEqualsFresh(pair: Pair, queries: readonly Query[], step: string, on: TestService = service): Promise<Answer[]> {
    const answers: Answer[] = [];
    for (const q of queries) {
      const fromKept = await report(pair.kept, q, pair.env, on);
      await wipeKeptTotals(pair.fresh, on);
      const afresh = await report(pair.fresh, q, pair.env, on);
      assert.deepEqual(fromKept, afresh, `${step}: ${JSON.stringify(q)}`);
      answers.push(fromKept);
    }
    return answers;
  }

  const sendLinks = (pair: Pair, data: unknown[], on?: TestService) => send(pair, 'POST', '/v1/identities', { data }, on);
  const sendOrders = (pair: Pair, orders: unknown[], on?: TestService) => send(pair, 'POST', '/v2/orders', orders, on);

  /** Sends a link or orders of randomWrites to both clients; the orders' ids are added to `sent`. */
  async function sendRandomWrite(pair: Pair, write: RandomWrite<'link'> | RandomWrite<'orders'>, sent: Set<string>) {
    if (write.kind === 'link') return sendLinks(pair, [{ visitor_id: write.visitor, ...write.to }]);
    const items = [...new Map(write.items.map((item) => [item.id, item])).values()];
    await sendOrders(pair, items.map((item) => order(item.id, item.customer, item.at, item.total)));
    for (const item of items) sent.add(item.id);
  }

  return {
    call,
    pairIn,
    send,
    sendTouchpoints: (pair: Pair, data: unknown[], on?: TestService) => send(pair, 'POST', '/v1/touchpoints', { data }, on),
    sendLinks,
    sendOrders,
    patchOrders: (pair: Pair, patches: unknown[], on?: TestService) => send(pair, 'PATCH', '/v2/orders', patches, on),
    sendRandomWrite,
    report,
    wipeKeptTotals,
    assertKeptEqualsFresh,
  };
}

/**
 * Random writes for property tests: hours over `days` days from 26 February 2024 (`offsetMs` into
 * each), touchpoints of `visitors` visitors and 3 customers (visits, and views), links of 3
 * visitors to a customer or to one of `orders` orders, and those orders, each a step of `kind`.
 */
export function randomWrites({ days, visitors, orders, offsetMs = 0 }: { days: number; visitors: number; orders: number; offsetMs?: number }) {
  const hour = fc.integer({ min: 0, max: days * 24 - 1 }).map((hours) => new Date(Date.UTC(2024, 1, 26) + hours * 3_600_000 + offsetMs).toISOString());
  const pick = (prefix: string, count: number) => fc.integer({ min: 1, max: count }).map((n) => `${prefix}${n}`);
  const touchpointItem = fc
    .record({
      id: pick('t', 30),
      at: hour,
      who: fc.oneof(
        pick('v', visitors).map((visitor): Who => ({ visitor })),
        pick('c', 3).map((customer): Who => ({ customer })),
        fc.tuple(pick('v', visitors), pick('c', 3)).map(([visitor, customer]): Who => ({ visitor, customer })),
      ),
      campaign: pick('cmp', 3),
      type: fc.constantFrom<'visit' | 'view'>('visit', 'visit', 'view'),
    })
    .map((item) => tp(item.id, item.at, item.who, item.campaign, item.type));
  return {
    hour,
    pick,
    touchpointItem,
    touchpoints: fc.record({ kind: fc.constant('touchpoints' as const), items: fc.array(touchpointItem, { minLength: 1, maxLength: 3 }) }),
    link: fc.record({ kind: fc.constant('link' as const), visitor: pick('v', 3), to: fc.oneof(pick('c', 3).map((customer_id) => ({ customer_id })), pick('o', orders).map((order_id) => ({ order_id }))) }),
    orders: fc.record({
      kind: fc.constant('orders' as const),
      items: fc.array(fc.record({ id: pick('o', orders), customer: pick('c', 3), at: hour, total: fc.integer({ min: 1, max: 300 }) }), { minLength: 1, maxLength: 2 }),
    }),
  };
}

/** A write of randomWrites of one kind. */
type RandomWrite<K extends 'link' | 'orders'> = ReturnType<typeof randomWrites>[K] extends fc.Arbitrary<infer T> ? T : never;
