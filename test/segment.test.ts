import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { MAX_SEGMENT_EVENTS } from '../src/collect/schema.js';
import { ADMIN_TOKEN, assertErrorEnvelope, minimalOrder, postOrders, startService, UUID, type TestApp, type TestClient, type TestService } from './helpers.js';

const service = await startService();
after(() => service.close());

type Headers = Pick<TestClient, 'headers'>;
const forward = (client: Headers, payload: unknown, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: '/v1/events/segment', headers: client.headers, payload: payload as object });

async function touchpointsOf(client: TestClient, query: Record<string, string>, app: TestApp = service.production) {
  const response = await app.inject({ method: 'GET', url: '/v1/touchpoints', headers: client.headers, query });
  assert.equal(response.statusCode, 200, response.body);
  return response.json().data as Record<string, unknown>[];
}

const stored = async (db: TestService['db'], table: 'touchpoints' | 'identities', clientId: string) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE client_id = $1`, [clientId]))[0]!.n;

function expectCounts(response: Awaited<ReturnType<typeof forward>>, counts: { touchpoints: number; links: number; ignored: number }) {
  assert.equal(response.statusCode, 200, response.body);
  const { request_id, message, ...rest } = response.json();
  assert.match(request_id, UUID);
  assert.equal(typeof message, 'string');
  assert.deepEqual(rest, counts);
}

// Payloads shaped after the examples of Segment's published spec: the common fields
// (https://segment.com/docs/connections/spec/common/), Page (…/spec/page/), Identify
// (…/spec/identify/), Track (…/spec/track/) and the e-commerce spec's Order Completed
// (…/spec/ecommerce/v2/). Ids and values are our own.
const ANONYMOUS_ID = '507f191e810c19729de860ea';
const CONTEXT = {
  active: true,
  campaign: { name: 'TPS Innovation Newsletter', source: 'Newsletter', medium: 'email', term: 'tps reports', content: 'image link' },
  ip: '8.8.8.8',
  library: { name: 'analytics.js', version: '2.11.1' },
  locale: 'en-US',
  page: {
    path: '/academy/',
    referrer: 'https://www.google.com/',
    search: '',
    title: 'Analytics Academy',
    url: 'https://segment.com/academy/',
  },
  userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_10_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/40.0.2214.115 Safari/537.36',
};
const pageEvent = (messageId: string, fields: Record<string, unknown> = {}) => ({
  anonymousId: ANONYMOUS_ID,
  channel: 'browser',
  context: CONTEXT,
  integrations: { All: true, Mixpanel: false },
  messageId,
  name: 'Home',
  properties: { title: 'Welcome | Initech', url: 'http://www.example.com' },
  receivedAt: '2015-12-10T04:08:31.909Z',
  sentAt: '2015-12-10T04:08:31.581Z',
  timestamp: '2015-12-10T04:08:31.905Z',
  type: 'page',
  userId: '97980cfea0067',
  version: 2,
  ...fields,
});
const identifyEvent = (messageId: string, fields: Record<string, unknown> = {}) => ({
  anonymousId: ANONYMOUS_ID,
  channel: 'browser',
  context: CONTEXT,
  messageId,
  receivedAt: '2015-02-23T22:28:55.387Z',
  sentAt: '2015-02-23T22:28:55.111Z',
  timestamp: '2015-02-23T22:28:55.111Z',
  traits: { name: 'Peter Gibbons', email: 'peter@example.com', plan: 'premium', logins: 5 },
  type: 'identify',
  userId: '97980cfea0067',
  version: '1.1',
  ...fields,
});
const trackEvent = (messageId: string, event: string, properties: Record<string, unknown>, fields: Record<string, unknown> = {}) => ({
  anonymousId: ANONYMOUS_ID,
  context: CONTEXT,
  event,
  messageId,
  properties,
  receivedAt: '2015-12-12T19:11:01.266Z',
  sentAt: '2015-12-12T19:11:01.169Z',
  timestamp: '2015-12-12T19:11:01.249Z',
  type: 'track',
  userId: 'AiUGstSDIg',
  ...fields,
});
const ORDER_COMPLETED_PROPERTIES = {
  checkout_id: 'fksdjfsdjfisjf9sdfjsd9f',
  order_id: '50314b8e9bcf000000000000',
  affiliation: 'Google Store',
  total: 27.5,
  subtotal: 22.5,
  revenue: 25.0,
  shipping: 3,
  tax: 2,
  discount: 2.5,
  coupon: 'hasbros',
  currency: 'USD',
  products: [{ product_id: '507f1f77bcf86cd799439011', sku: '45790-32', name: 'Monopoly: 3rd Edition', price: 19, quantity: 1 }],
};

describe('POST /v1/events/segment', () => {
  test('a page is a visit touchpoint: messageId, timestamp, anonymousId, userId, context.page and context.campaign', async () => {
    const client = await service.createClient();
    expectCounts(await forward(client, pageEvent('ajs-page-1')), { touchpoints: 1, links: 0, ignored: 0 });
    const [touchpoint] = await touchpointsOf(client, { visitor_id: ANONYMOUS_ID });
    assert.deepEqual(
      { ...touchpoint, created_at: undefined, updated_at: undefined },
      {
        touchpoint_id: 'ajs-page-1',
        occurred_at: '2015-12-10T04:08:31.905Z',
        type: 'visit',
        visitor_id: ANONYMOUS_ID,
        customer_id: '97980cfea0067',
        linked_customer_id: '97980cfea0067',
        landing_url: 'https://segment.com/academy/',
        referrer: 'https://www.google.com/',
        utm_source: 'Newsletter',
        utm_medium: 'email',
        utm_campaign: 'TPS Innovation Newsletter',
        utm_term: 'tps reports',
        utm_content: 'image link',
        click_ids: {},
        platform_name: 'Newsletter',
        platform_account_id: '',
        campaign_id: 'TPS Innovation Newsletter',
        adset_id: 'tps reports',
        ad_id: 'image link',
        channel: 'email',
        created_at: undefined,
        updated_at: undefined,
      },
    );
  });

  test('without context.page or campaign: properties.url and referrer, UTMs and click ids from the URL, the source mapping applied', async () => {
    const client = await service.createClient();
    const patched = await service.production.inject({
      method: 'PATCH',
      url: `/admin/v1/clients/${client.client_id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { source_platforms: { fb: 'meta' } },
    });
    assert.equal(patched.statusCode, 200);
    const url = 'https://shop.example/?utm_source=fb&utm_medium=cpc&utm_campaign=spring&fbclid=abc';
    const event = pageEvent('rs-page-1', { context: { library: { name: 'RudderLabs JavaScript SDK' } }, properties: { url, referrer: 'https://l.facebook.com/' }, userId: undefined });
    expectCounts(await forward(client, event), { touchpoints: 1, links: 0, ignored: 0 });
    const [touchpoint] = await touchpointsOf(client, { visitor_id: ANONYMOUS_ID });
    assert.deepEqual(
      [touchpoint!.landing_url, touchpoint!.referrer, touchpoint!.customer_id, touchpoint!.platform_name, touchpoint!.campaign_id, touchpoint!.click_ids, touchpoint!.channel],
      [url, 'https://l.facebook.com/', null, 'meta', 'spring', { fbclid: 'abc' }, 'paid'],
    );
  });

  test('a batch: identify links anonymousId to userId, Order Completed to its order_id; other events are ignored and counted', async () => {
    const client = await service.createClient();
    const batch = [
      pageEvent('page-1', { userId: undefined }),
      pageEvent('page-2', { anonymousId: 'visitor-2', userId: undefined }),
      identifyEvent('identify-1'),
      trackEvent('track-1', 'Order Completed', { ...ORDER_COMPLETED_PROPERTIES, order_id: 'order-2' }, { anonymousId: 'visitor-2', userId: undefined }),
      trackEvent('track-2', 'Product Viewed', { product_id: '507f1f77bcf86cd799439011' }),
      { type: 'screen', name: 'Home', anonymousId: ANONYMOUS_ID, messageId: 'screen-1', timestamp: '2015-12-10T04:08:31.905Z' },
      { type: 'group', groupId: '0e8c78ea9d97a7b8185e8632', anonymousId: ANONYMOUS_ID, messageId: 'group-1' },
      { type: 'alias', previousId: ANONYMOUS_ID, userId: '97980cfea0067', messageId: 'alias-1' },
      identifyEvent('identify-2', { anonymousId: undefined }),
      trackEvent('track-3', 'Order Completed', ORDER_COMPLETED_PROPERTIES, { anonymousId: undefined }),
      pageEvent('page-3', { anonymousId: undefined, userId: undefined }),
    ];
    expectCounts(await forward(client, { batch }), { touchpoints: 2, links: 2, ignored: 7 });

    assert.deepEqual((await touchpointsOf(client, { customer_id: '97980cfea0067' })).map((t) => t.touchpoint_id), ['page-1']);
    assert.equal((await postOrders(service.production, client, [minimalOrder('order-2', { customer_id: 'buyer-2' })])).statusCode, 200);
    assert.deepEqual((await touchpointsOf(client, { customer_id: 'buyer-2' })).map((t) => t.touchpoint_id), ['page-2']);
  });

  test('a redelivered event (the same messageId) is stored once; a numeric order_id is taken as text', async () => {
    const client = await service.createClient();
    const batch = [pageEvent('page-1'), trackEvent('track-1', 'Order Completed', { ...ORDER_COMPLETED_PROPERTIES, order_id: 1001 })];
    expectCounts(await forward(client, { batch }), { touchpoints: 1, links: 1, ignored: 0 });
    expectCounts(await forward(client, { batch: [...batch, pageEvent('page-1')] }), { touchpoints: 1, links: 1, ignored: 0 });
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 1);
    const [link] = await service.db.query<{ order_id: string }>('SELECT order_id FROM identities WHERE client_id = $1', [client.client_id]);
    assert.equal(link!.order_id, '1001');
    // The largest whole number a double holds exactly is read digit for digit; past it, a 422 says why.
    const largest = trackEvent('track-2', 'Order Completed', { order_id: Number.MAX_SAFE_INTEGER }, { anonymousId: 'visitor-2' });
    expectCounts(await forward(client, largest), { touchpoints: 0, links: 1, ignored: 0 });
    const [largestLink] = await service.db.query<{ order_id: string }>("SELECT order_id FROM identities WHERE client_id = $1 AND visitor_id = 'visitor-2'", [client.client_id]);
    assert.equal(largestLink!.order_id, '9007199254740991');
    const tooLarge = assertErrorEnvelope(await forward(client, { ...largest, properties: { order_id: 1e21 } }), 422);
    assert.ok(
      tooLarge.errors!.some((error) => error.msg === 'Must be at most 9007199254740991 when sent as a number (a larger one loses digits): send the order id as a string'),
      JSON.stringify(tooLarge.errors),
    );
  });

  test('needs the API credentials', async () => {
    assertErrorEnvelope(await forward({ headers: {} }, pageEvent('page-1')), 401);
  });

  test('what is read must be well-formed: a 422 with the envelope, nothing stored', async () => {
    const client = await service.createClient();
    const cases: [string, unknown, string][] = [
      ['neither an event nor a batch', { sentAt: '2015-12-10T04:08:31.581Z' }, 'body/type'],
      ['an empty batch', { batch: [] }, 'body/batch'],
      ['a batch too long', { batch: Array.from({ length: MAX_SEGMENT_EVENTS + 1 }, () => ({ type: 'track' })) }, 'body/batch'],
      ['a timestamp without a zone', pageEvent('page-1', { timestamp: '2015-12-10 04:08:31' }), 'body/timestamp'],
      ['a messageId over 255 characters', { batch: [pageEvent('x'.repeat(256))] }, 'body/batch/0/messageId'],
      ['a numeric anonymousId', pageEvent('page-1', { anonymousId: 42 }), 'body/anonymousId'],
      ['an event without a type in a batch', { batch: [pageEvent('page-1'), { messageId: 'm' }] }, 'body/batch/1/type'],
      ['a negative order_id', trackEvent('t', 'Order Completed', { order_id: -1 }), 'body/properties/order_id'],
      ['an order_id past 2^53, whose digits a double loses', trackEvent('t', 'Order Completed', { order_id: 1e21 }), 'body/properties/order_id'],
      ['an order_id that is not whole', trackEvent('t', 'Order Completed', { order_id: 1.2345678901234568e29 / 1e29 }), 'body/properties/order_id'],
      ['a click id over its bound in the page URL', { batch: [pageEvent('page-1', { context: { page: { url: `https://shop.example/?gclid=${'g'.repeat(1025)}` } } })] }, 'body/batch/0/context/page/url'],
    ];
    for (const [what, payload, loc] of cases) {
      const { errors } = assertErrorEnvelope(await forward(client, payload), 422);
      assert.ok(errors?.some((error) => error.loc === loc), `${what}: ${JSON.stringify(errors)}`);
    }
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 0);
  });

  test('UAT: stored apart from production; the public test credentials store nothing', async () => {
    const client = await service.createClient();
    expectCounts(await forward(client, { batch: [pageEvent('uat-page'), identifyEvent('uat-identify')] }, service.uat), { touchpoints: 1, links: 1, ignored: 0 });
    assert.deepEqual(await touchpointsOf(client, { visitor_id: ANONYMOUS_ID }), []);
    assert.deepEqual((await touchpointsOf(client, { visitor_id: ANONYMOUS_ID }, service.uat)).map((t) => t.touchpoint_id), ['uat-page']);

    const before = (await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM touchpoints'))[0]!.n;
    const test = { headers: { authorization: 'None', 'data-client-id': 'test' } };
    expectCounts(await forward(test, { batch: [pageEvent('p'), identifyEvent('i'), trackEvent('t', 'Cart Viewed', {})] }, service.uat), { touchpoints: 1, links: 1, ignored: 1 });
    assert.equal((await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM touchpoints'))[0]!.n, before);
  });

  test('shares the touchpoint write budget of the API key (TOUCHPOINT_WRITE_BYTES_PER_MINUTE)', async () => {
    const payload = { batch: [pageEvent('page-1')] };
    const limited = await startService({ TOUCHPOINT_WRITE_BYTES_PER_MINUTE: String(Math.floor(2.5 * JSON.stringify(payload).length)) });
    after(() => limited.close());
    const client = await limited.createClient();
    assert.equal((await forward(client, payload, limited.production)).statusCode, 200);
    assert.equal((await forward(client, payload, limited.production)).statusCode, 200);
    const refused = await forward(client, payload, limited.production);
    assertErrorEnvelope(refused, 429, ['retry_after_seconds']);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
  });
});
