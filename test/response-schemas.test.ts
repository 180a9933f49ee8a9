/**
 * The answers whose JSON the database writes (the `{"data": [...]}` of orders, spend and
 * touchpoints, through `dataJson`, of exchange rates, and the explanation of an order) bypass Fastify's serializer,
 * and so their response schemas: here each is checked against the schema the OpenAPI document
 * publishes for it, objects closed (a field served but not documented fails as much as one
 * documented but missing), on data with every optional field set.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ajv, type AnySchemaObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { InjectOptions } from 'fastify';
import { closedSchema, hourlySpend, makeOrder, postAliases, postOrders, startService, type TestApp, type TestClient, type TestService } from './helpers.js';

// ajv-formats is CommonJS; its type declarations describe the ESM default export one level down.
const addFormats = addFormatsPlugin as unknown as typeof addFormatsPlugin.default;

const UAT_TEST_CREDENTIALS = { authorization: 'None', 'data-client-id': 'test' };
const DAY = '2024-03-08';
const dailySpend = (campaignId: string) => {
  const { hour_start_iso: _hour, ...record } = hourlySpend(campaignId);
  return { ...record, date: DAY };
};
const TOUCHPOINT = {
  touchpoint_id: 'full',
  occurred_at: '2024-03-08T08:15:30.123456Z',
  type: 'visit',
  visitor_id: 'visitor-1',
  customer_id: 'customer-of-order-1',
  landing_url: 'https://shop.example/?utm_source=fb&utm_campaign=spring&utm_term=adset-1&fbclid=F1',
  referrer: 'https://l.facebook.com/',
  utm_medium: 'paid_social',
  utm_content: 'ad-9',
  platform_account_id: 'act_1',
};

interface Probe {
  /** The operation, as the OpenAPI document names it: `GET /v2/orders`. */
  operation: string;
  status: number;
  request: Omit<InjectOptions, 'method' | 'headers'>;
}

const PROBES: Probe[] = [
  { operation: 'GET /v2/orders', status: 200, request: { url: '/v2/orders', query: { start_date: '2024-01-01', end_date: '2024-12-31' } } },
  { operation: 'GET /v2/orders', status: 200, request: { url: '/v2/orders', query: { start_date: '2024-01-01', end_date: '2024-12-31', page: '1', page_size: '10' } } },
  { operation: 'GET /v2/orders/{order_id}/attribution', status: 200, request: { url: '/v2/orders/order-1/attribution' } },
  { operation: 'GET /v1/spend_hourly', status: 200, request: { url: '/v1/spend_hourly', query: { platform_account_id: 'act_1', date: DAY } } },
  { operation: 'POST /v1/spend_hourly', status: 201, request: { url: '/v1/spend_hourly', payload: { data: [hourlySpend('spring')] } } },
  { operation: 'DELETE /v1/spend_hourly', status: 200, request: { url: '/v1/spend_hourly', payload: { data: deleteKey(hourlySpend('gone')) } } },
  { operation: 'GET /v1/spend', status: 200, request: { url: '/v1/spend', query: { platform_account_id: 'act_1', date: DAY } } },
  { operation: 'POST /v1/spend', status: 201, request: { url: '/v1/spend', payload: { data: [dailySpend('spring')] } } },
  { operation: 'DELETE /v1/spend', status: 200, request: { url: '/v1/spend', payload: { data: deleteKey(dailySpend('gone')) } } },
  { operation: 'GET /v1/touchpoints', status: 200, request: { url: '/v1/touchpoints', query: { visitor_id: 'visitor-1' } } },
  // A cross rate: every field of a listed rate, via included.
  { operation: 'GET /v1/exchange-rates', status: 200, request: { url: '/v1/exchange-rates', query: { base: 'GBP', quote: 'USD', start_date: DAY, end_date: DAY } } },
];

/** The key of a spend record, as DELETE takes it. */
function deleteKey(record: Record<string, unknown>) {
  const { hour_start_iso, date, platform_account_id, campaign_id, adset_id = '', ad_id = '' } = record;
  return { ...(hour_start_iso ? { hour_start_iso } : { date }), platform_account_id, campaign_id, adset_id, ad_id };
}

let service: TestService;
let client: TestClient;
let paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: AnySchemaObject }> }> }>>;
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

before(async () => {
  service = await startService();
  client = await service.createClient();
  paths = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json().paths;
  // Every optional field set, for every app, so that each answer holds all it can.
  for (const app of [service.production, service.uat]) {
    const send = async (method: 'POST', url: string, payload: object) => {
      const response = await app.inject({ method, url, headers: client.headers, payload });
      assert.ok(response.statusCode < 300, response.body);
    };
    assert.equal((await postOrders(app, client, [makeOrder('order-1'), makeOrder('order-2')])).statusCode, 200);
    assert.equal((await postAliases(app, client, [{ order_id: 'order-1', type: 'custom:erp', id: 'erp-1' }])).statusCode, 200);
    await send('POST', '/v1/spend_hourly', { data: [hourlySpend('spring'), hourlySpend('gone')] });
    await send('POST', '/v1/spend', { data: [dailySpend('spring'), dailySpend('gone')] });
    await send('POST', '/v1/touchpoints', { data: [TOUCHPOINT, { ...TOUCHPOINT, touchpoint_id: 'bare', type: undefined, customer_id: undefined, landing_url: undefined, referrer: undefined }] });
    await send('POST', '/v1/exchange-rates', { data: [{ date: DAY, base: 'EUR', quote: 'USD', rate: 1.0933 }, { date: DAY, base: 'EUR', quote: 'GBP', rate: 0.85283 }] });
  }
});
after(() => service.close());

function schemaOf({ operation, status }: Probe): AnySchemaObject {
  const [method, path] = operation.split(' ') as [string, string];
  const schema = paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']?.schema;
  assert.ok(schema, `the OpenAPI document has no JSON schema for ${status} of ${operation}`);
  return schema;
}

const callers: [string, (probe: Probe) => { app: TestApp; headers: Record<string, string> }][] = [
  ['production', () => ({ app: service.production, headers: client.headers })],
  ['UAT', () => ({ app: service.uat, headers: client.headers })],
  ['the UAT test credentials', () => ({ app: service.uat, headers: UAT_TEST_CREDENTIALS })],
];

for (const probe of PROBES) {
  const name = `${probe.operation}${probe.request.query ? `?${new URLSearchParams(probe.request.query as Record<string, string>)}` : ''}`;
  for (const [who, caller] of callers) {
    // The test credentials have no order to explain.
    if (who === 'the UAT test credentials' && probe.operation.endsWith('/attribution')) continue;
    test(`${name}, for ${who}: the body served is what the OpenAPI document says`, async () => {
      const { app, headers } = caller(probe);
      const method = probe.operation.split(' ')[0] as 'GET' | 'POST' | 'DELETE';
      const response = await app.inject({ ...probe.request, method, headers });
      assert.equal(response.statusCode, probe.status, response.body);
      const body = response.json();
      const validate = ajv.compile(closedSchema(schemaOf(probe)) as AnySchemaObject);
      assert.ok(validate(body), `${ajv.errorsText(validate.errors)}\n${response.body.slice(0, 2000)}`);
      if (who !== 'the UAT test credentials' && Array.isArray(body.data)) assert.ok(body.data.length > 0, 'something was served to check');
    });
  }
}

test('every operation answering a body the database writes is checked above', () => {
  const probed = new Set(PROBES.map((probe) => `${probe.operation} ${probe.status}`));
  // dataJson's answers are those with a `data` array; the explanation is the one other.
  const writtenBySql = Object.entries(paths).flatMap(([path, operations]) =>
    Object.entries(operations).flatMap(([method, { responses }]) =>
      Object.entries(responses)
        .filter(([status, response]) => status.startsWith('2') && response.content?.['application/json']?.schema.properties?.data?.type === 'array')
        .map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
    ),
  );
  assert.deepEqual([...probed].filter((operation) => !operation.includes('/attribution')).sort(), writtenBySql.sort());
});
