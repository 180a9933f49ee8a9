/**
 * The UAT test credentials (`None` / `test`): every client-API route validates and answers their
 * requests as for a client whose store keeps nothing, and nothing is stored. Each route the app
 * registers behind authentication is called here (the last test fails when one is not), with the
 * answers these credentials have always had.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { UUID, hourlySpend, makeOrder, minimalOrder, startService, type TestApp, type TestClient } from './helpers.js';
import { MODELS } from '../src/attribution/models.js';

const service = await startService();
after(() => service.close());

const TEST_CREDENTIALS = { authorization: 'None', 'data-client-id': 'test' };
const DAY = '2024-03-08';
const dailySpend = (campaignId: string) => {
  const { hour_start_iso: _hour, ...record } = hourlySpend(campaignId);
  return { ...record, date: DAY };
};
const spendKey = { platform_account_id: 'act_1', campaign_id: 'spring', adset_id: '', ad_id: '' };
const touchpoint = (id: string) => ({
  touchpoint_id: id,
  occurred_at: '2024-03-08T08:15:30Z',
  type: 'visit',
  visitor_id: 'visitor-1',
  landing_url: 'https://shop.example/?utm_source=fb&utm_campaign=spring&fbclid=F1',
});
const page = (messageId: string) => ({
  type: 'page',
  messageId,
  anonymousId: 'visitor-1',
  timestamp: '2024-03-08T08:15:30Z',
  context: { page: { url: 'https://shop.example/?utm_source=fb' } },
});
/** A spend record as an upsert answers it, written at the time of the request. */
const writtenSpend = (record: Record<string, unknown>) => ({
  ...record,
  platform_account_id: 'act_1',
  platform_name: 'meta',
  campaign_id: 'spring',
  campaign_name: 'Spring sale',
  adset_id: '',
  adset_name: '',
  ad_id: '',
  ad_name: '',
  spend: 12.5,
  spend_currency: 'USD',
  impressions: 1200,
  clicks: 31,
  created_at: '<now>',
  updated_at: '<now>',
});
const emptyPage = (page: number, page_size: number) => ({ data: [], page, page_size, total_pages: 0, total_count: 0 });
const REQUEST_ID = '<request id>';
const invalid = (errors: object[]) => ({ message: `Invalid request: ${errors.length} problem found`, errors, request_id: REQUEST_ID });

interface Probe {
  /** The route called, as the app registers it: `GET /v2/orders/:order_id/attribution`. */
  route: string;
  request: Omit<InjectOptions, 'method' | 'headers'>;
  status: number;
  /** The body, with the request id and the time of the request put aside (`settled`); `sameAsAnyClient` for answers no store changes. */
  body: unknown;
  headers?: Record<string, string>;
}

const sameAsAnyClient = Symbol('the answer a client gets');

const PROBES: Probe[] = [
  {
    route: 'POST /v2/orders',
    request: {
      url: '/v2/orders',
      payload: [makeOrder('order-1', { alternate_order_ids: [{ type: 'shopify', id: 'S-1' }] }), minimalOrder('order-2'), minimalOrder('order-3', { customer_id: 'jane@example.com' })],
    },
    status: 200,
    body: {
      message: 'Upserted 3 orders',
      inserted: 3,
      updated: 0,
      warnings: [{ order_id: 'order-3', loc: 'body/2/customer_id', msg: "Looks like an e-mail address; send the shop's internal customer id instead" }],
      request_id: REQUEST_ID,
    },
  },
  {
    route: 'POST /v1/orders',
    request: { url: '/v1/orders', payload: [{ ...minimalOrder('order-4'), shipping_cost: undefined }] },
    status: 200,
    body: { message: 'Upserted 1 order', inserted: 1, updated: 0, warnings: [], request_id: REQUEST_ID },
    headers: { deprecation: '@1795392000', link: '</v2/orders>; rel="successor-version"' },
  },
  {
    route: 'PATCH /v2/orders',
    request: { url: '/v2/orders', payload: [{ order_id: 'order-1', customer_name: 'J. Doe', alternate_order_ids: [{ type: 'erp', id: 'E-1' }] }, { order_id: 'nowhere' }] },
    status: 200,
    body: { message: 'Updated 2 orders', updated: 2, warnings: [], request_id: REQUEST_ID },
  },
  {
    route: 'POST /v2/orders/aliases',
    request: { url: '/v2/orders/aliases', payload: { aliases: [{ order_id: 'order-1', type: 'shopify', id: 'S-1' }, { order_id: 'nowhere', type: 'erp', id: 'E-2' }] } },
    status: 200,
    body: { message: 'Added 2 aliases', added: 2, ignored: 0, request_id: REQUEST_ID },
  },
  {
    route: 'POST /v2/orders/aliases',
    request: { url: '/v2/orders/aliases', payload: { aliases: [{ order_id: 'order-1', type: 'shopify', id: 'S-9' }, { order_id: 'order-2', type: 'shopify', id: 'S-9' }] } },
    status: 400,
    body: invalid([{ loc: 'body/aliases/1', msg: 'Alias shopify S-9 is given for order order-1 too in this request', type: 'alias_conflict', order_id: 'order-2' }]),
  },
  { route: 'GET /v2/orders', request: { url: '/v2/orders', query: { start_date: '2024-01-01', end_date: '2024-12-31' } }, status: 200, body: emptyPage(1, 0) },
  {
    route: 'GET /v2/orders',
    request: { url: '/v2/orders', query: { start_date: '2024-01-01', end_date: '2024-12-31', page: '2', page_size: '10' } },
    status: 200,
    body: emptyPage(2, 10),
  },
  {
    route: 'GET /v2/orders/:order_id/attribution',
    request: { url: '/v2/orders/order-1/attribution', query: { model: 'linear' } },
    status: 404,
    body: { message: 'No order with this id', errors: null, request_id: REQUEST_ID },
  },
  {
    route: 'POST /v1/spend_hourly',
    request: { url: '/v1/spend_hourly', payload: { data: [hourlySpend('spring'), { ...hourlySpend('summer'), spend: '', clicks: undefined }] } },
    status: 201,
    body: {
      data: [
        writtenSpend({ hour_start_iso: '2024-03-08T09:00:00Z' }),
        { ...writtenSpend({ hour_start_iso: '2024-03-08T09:00:00Z' }), campaign_id: 'summer', spend: 0, clicks: 0 },
      ],
    },
  },
  {
    route: 'POST /v1/spend_hourly',
    request: { url: '/v1/spend_hourly', payload: { data: [hourlySpend('spring'), hourlySpend('spring')] } },
    status: 422,
    body: invalid([
      {
        loc: 'body/data/1',
        msg: 'Same hour_start_iso, platform_name, platform_account_id, campaign_id, adset_id, ad_id as record 0: each key may appear once per request',
        type: 'unique',
      },
    ]),
  },
  { route: 'GET /v1/spend_hourly', request: { url: '/v1/spend_hourly', query: { platform_account_id: 'act_1', date: DAY } }, status: 200, body: emptyPage(1, 1000) },
  {
    route: 'DELETE /v1/spend_hourly',
    request: { url: '/v1/spend_hourly', payload: { data: { ...spendKey, hour_start_iso: '2024-03-08T09:00:00Z' } } },
    status: 200,
    body: { data: [] },
  },
  { route: 'POST /v1/spend', request: { url: '/v1/spend', payload: { data: [dailySpend('spring')] } }, status: 201, body: { data: [writtenSpend({ date: DAY })] } },
  { route: 'GET /v1/spend', request: { url: '/v1/spend', query: { date_start: DAY, date_end: DAY, page_size: '5' } }, status: 200, body: emptyPage(1, 5) },
  { route: 'DELETE /v1/spend', request: { url: '/v1/spend', payload: { data: { ...spendKey, date: DAY } } }, status: 200, body: { data: [] } },
  {
    route: 'POST /v1/touchpoints',
    request: { url: '/v1/touchpoints', payload: { data: [touchpoint('t-1'), touchpoint('t-2')] } },
    status: 201,
    body: { message: 'Upserted 2 touchpoints', inserted: 2, updated: 0, request_id: REQUEST_ID },
  },
  { route: 'GET /v1/touchpoints', request: { url: '/v1/touchpoints', query: { customer_id: 'customer-of-order-1' } }, status: 200, body: emptyPage(1, 1000) },
  {
    route: 'POST /v1/identities',
    request: { url: '/v1/identities', payload: { data: [{ visitor_id: 'visitor-1', customer_id: 'c-1' }, { visitor_id: 'visitor-2', order_id: 'order-1' }] } },
    status: 201,
    body: { message: 'Linked 2 visitors', linked: 2, request_id: REQUEST_ID },
  },
  {
    route: 'POST /v1/events/segment',
    request: {
      url: '/v1/events/segment',
      payload: {
        batch: [
          // Sent twice: counted twice, as these credentials always have (a client's answer counts it once).
          page('m-1'),
          page('m-1'),
          { type: 'identify', anonymousId: 'visitor-1', userId: 'c-1' },
          { type: 'track', event: 'Order Completed', anonymousId: 'visitor-2', properties: { order_id: 'order-1' } },
          { type: 'track', event: 'Product Viewed', anonymousId: 'visitor-2' },
        ],
      },
    },
    status: 200,
    body: { message: 'Stored 2 touchpoints and 2 links; ignored 1 event', touchpoints: 2, links: 2, ignored: 1, request_id: REQUEST_ID },
  },
  {
    route: 'POST /v1/customers/erase',
    request: { url: '/v1/customers/erase', payload: { customer_ids: ['customer-of-order-1'], customer_emails: ['jane@example.com'] } },
    status: 200,
    body: { message: 'Erased the personal data of 0 customers', customers: 0, orders: 0, touchpoints: 0, identities: 0, request_id: REQUEST_ID },
  },
  {
    route: 'POST /v1/exports/data-export',
    request: {
      url: '/v1/exports/data-export',
      payload: { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' }, metrics: [{ id: 'spend' }], options: { remove_zero_spend: true } },
    },
    status: 201,
    body: { id: '<uuid>' },
  },
  {
    route: 'GET /v1/exports/data-export/result/:export_id',
    request: { url: '/v1/exports/data-export/result/3b1f6f7e-2c4d-4e8a-9b0c-7d6e5f4a3b2c' },
    status: 404,
    body: { message: 'No export with this id', errors: null, request_id: REQUEST_ID },
  },
  { route: 'GET /v1/exports/metrics', request: { url: '/v1/exports/metrics' }, status: 200, body: sameAsAnyClient },
  {
    route: 'GET /v1/exports/breakdowns',
    request: { url: '/v1/exports/breakdowns' },
    status: 200,
    body: { breakdowns: [{ key: 'platform', values: [] }, { key: 'account', values: [] }, { key: 'Platform (Northbeam)', values: [] }] },
  },
  { route: 'GET /v1/exports/attribution-models', request: { url: '/v1/exports/attribution-models' }, status: 200, body: sameAsAnyClient },
  { route: 'GET /v1/attribution/models', request: { url: '/v1/attribution/models' }, status: 200, body: sameAsAnyClient },
  { route: 'GET /v1/attribution/models/:model_id', request: { url: '/v1/attribution/models/linear' }, status: 200, body: sameAsAnyClient },
  {
    route: 'GET /v1/attribution/models/:model_id',
    request: { url: '/v1/attribution/models/markov', query: { window: '7' } },
    status: 200,
    body: { id: 'markov', name: 'Data-driven (Markov chain)', definition: MODELS.find((model) => model.id === 'markov')!.definition, data_driven: true, learnt: null },
  },
  {
    route: 'GET /v1/reports/performance',
    request: { url: '/v1/reports/performance', query: { start_date: '2024-03-01', end_date: '2024-03-31', level: 'campaign', metrics: 'spend,rev,roas,visits' } },
    status: 200,
    body: { rows: [], totals: { spend: 0, rev: 0, roas: null, visits: 0 }, currency: null },
  },
  {
    route: 'GET /v1/reports/performance',
    request: { url: '/v1/reports/performance', query: { start_date: '2024-03-01', end_date: '2024-03-07', level: 'total', metrics: 'revenue,mer' } },
    status: 200,
    body: { rows: [], totals: { revenue: 0, mer: null }, currency: null },
  },
  {
    route: 'GET /v1/health/feeds',
    request: { url: '/v1/health/feeds' },
    status: 200,
    body: {
      environment: 'uat',
      time_zone: 'UTC',
      days: Array.from({ length: 30 }, (_, n) => ({ date: new Date(Date.now() - (29 - n) * 86_400_000).toISOString().slice(0, 10), orders: 0, spend: 0, touchpoints: 0 })),
      last_received_at: { orders: null, spend: null, touchpoints: null },
    },
  },
  {
    route: 'GET /v1/client',
    request: { url: '/v1/client' },
    status: 200,
    body: { client_id: 'test', name: 'UAT test credentials', time_zone: 'UTC', environment: 'uat' },
  },
  {
    route: 'POST /v1/exchange-rates',
    request: { url: '/v1/exchange-rates', payload: { data: [{ date: '2024-03-08', base: 'EUR', quote: 'USD', rate: 1.0933 }, { date: '2024-03-08', base: 'EUR', quote: 'GBP', rate: 0.85283 }] } },
    status: 201,
    body: { message: 'Stored 2 rates', inserted: 2, updated: 0, request_id: REQUEST_ID },
  },
  {
    route: 'GET /v1/exchange-rates',
    request: { url: '/v1/exchange-rates?base=GBP&quote=USD&start_date=2024-03-01&end_date=2024-03-31' },
    status: 200,
    body: { data: [] },
  },
];

const methodOf = (probe: Probe) => probe.route.split(' ')[0] as InjectOptions['method'];
const call = (app: TestApp, probe: Probe, headers: Record<string, string>) => app.inject({ ...probe.request, method: methodOf(probe), headers });

/**
 * The body with what differs from call to call checked and put aside: the request id (the
 * header's), a new export's id, and the time of the request that spend records are written at.
 */
function settled(response: LightMyRequestResponse): unknown {
  return JSON.parse(response.body, (key, value: unknown) => {
    if (key === 'request_id') {
      assert.equal(value, response.headers['x-request-id']);
      return REQUEST_ID;
    }
    if (key === 'id' && typeof value === 'string' && UUID.test(value)) return '<uuid>';
    if (key === 'created_at' || key === 'updated_at') {
      assert.ok(Math.abs(Date.now() - Date.parse(String(value))) < 60_000, `${key} ${String(value)} is the time of the request`);
      return '<now>';
    }
    return value;
  });
}

/** Rows in each table of the store. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await service.db.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1");
  const counts: Record<string, number> = {};
  for (const { name } of tables) counts[name] = (await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}"`))[0]!.n;
  return counts;
}

let client: TestClient;
let countsBefore: Record<string, number>;
before(async () => {
  // A client's data on both ports, under the ids the probes name: none of it may show, or change.
  client = await service.createClient();
  for (const app of [service.production, service.uat]) {
    for (const probe of PROBES.filter((candidate) => methodOf(candidate) !== 'DELETE' && candidate.status < 400)) {
      const response = await call(app, probe, client.headers);
      assert.ok(response.statusCode < 500, response.body);
    }
  }
  countsBefore = await rowCounts();
  assert.ok(Object.values(countsBefore).some((count) => count > 0));
});

for (const probe of PROBES) {
  const { url, query } = probe.request;
  test(`${probe.route}: ${url}${query ? `?${new URLSearchParams(query as Record<string, string>)}` : ''} ${probe.status}`, async () => {
    const response = await call(service.uat, probe, TEST_CREDENTIALS);
    assert.equal(response.statusCode, probe.status, response.body);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    for (const [name, value] of Object.entries(probe.headers ?? {})) assert.equal(response.headers[name], value, name);
    const expected = probe.body === sameAsAnyClient ? settled(await call(service.uat, probe, client.headers)) : probe.body;
    assert.deepEqual(settled(response), expected);
  });
}

test('nothing was stored: every table has the rows it had', async () => {
  assert.deepEqual(await rowCounts(), countsBefore);
});

/** Method and path of every route of `app`, read from Fastify's route tree (HEAD answers as GET does). */
function routesOf(app: TestApp): string[] {
  const path: string[] = [];
  return app
    .printRoutes({ commonPrefix: false })
    .split('\n')
    .flatMap((line) => {
      const match = /^([│├└─ ]*)(\S.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
      if (!match) return [];
      const [, indent, segment, methods] = match as unknown as [string, string, string, string | undefined];
      path.length = indent.length / 4 - 1;
      path.push(segment);
      return (methods ?? '').split(', ').filter((method) => method && method !== 'HEAD').map((method) => `${method} ${path.join('')}`);
    });
}

test('every client-API route is probed above', async () => {
  const routes = routesOf(service.uat);
  assert.ok(routes.includes('GET /v2/orders/:order_id/attribution') && routes.includes('GET /healthz'), routes.join('\n'));
  // The client API's routes are those that ask for credentials.
  const clientApi: string[] = [];
  for (const route of routes) {
    const [method, path] = route.split(' ') as [InjectOptions['method'], string];
    const response = await service.uat.inject({ method, url: path.replace(/:[a-z_]+/g, '3b1f6f7e-2c4d-4e8a-9b0c-7d6e5f4a3b2c') });
    if (response.statusCode === 401 && /^Missing Authorization and Data-Client-ID headers$/.test(response.json().message)) clientApi.push(route);
  }
  assert.deepEqual([...new Set(PROBES.map((probe) => probe.route))].sort(), clientApi.sort());
});
