import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { COLLECT_BODY_LIMIT_BYTES, MAX_COLLECT_EVENTS } from '../src/collect/schema.js';
import { deriveVisits } from '../src/collect/ingest.js';
import { createCollectWriter } from '../src/collect/writer.js';
import { createClientRepository } from '../src/clients/repository.js';
import type { Database } from '../src/db/index.js';
import { ADMIN_TOKEN, assertErrorEnvelope, minimalOrder, postOrders, startLoggedApp, startService, type TestApp, type TestClient, type TestService } from './helpers.js';

const service = await startService();
after(() => service.close());

const SHOP = 'https://shop.example';
const LANDING = `${SHOP}/?utm_source=fb&utm_medium=cpc&utm_campaign=spring&fbclid=abc`;

type Event = Record<string, unknown>;
const page = (event_id: string, visitor_id: string, fields: Event = {}): Event => ({
  event_id,
  type: 'page',
  occurred_at: new Date().toISOString(),
  visitor_id,
  url: LANDING,
  referrer: 'https://www.facebook.com/',
  ...fields,
});
const identify = (visitor_id: string, customer_id: string): Event => ({ event_id: randomUUID(), type: 'identify', occurred_at: new Date().toISOString(), visitor_id, customer_id });
const purchase = (visitor_id: string, order_id: string): Event => ({ event_id: randomUUID(), type: 'purchase', occurred_at: new Date().toISOString(), visitor_id, order_id });

/** A beacon as navigator.sendBeacon sends a string: text/plain, with the page's Origin. */
function beacon(body: unknown, { app = service.production, type = 'text/plain;charset=UTF-8', origin = SHOP }: { app?: TestApp; type?: string; origin?: string | null } = {}) {
  const options: InjectOptions = {
    method: 'POST',
    url: '/v1/collect',
    headers: { 'content-type': type, ...(origin !== null && { origin }) },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  };
  return app.inject(options);
}
const collect = (client: Pick<TestClient, 'client_id'>, events: Event[], options?: Parameters<typeof beacon>[1]) =>
  beacon({ client_id: client.client_id, events }, options);

function expectAccepted(response: LightMyRequestResponse) {
  assert.equal(response.statusCode, 204, response.body);
  assert.equal(response.body, '');
  assert.equal(response.headers['access-control-allow-origin'], '*');
}

const patchClient = (client: TestClient, payload: object) =>
  service.production.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload });

async function touchpointsOf(client: TestClient, query: Record<string, string>, app: TestApp = service.production) {
  const response = await app.inject({ method: 'GET', url: '/v1/touchpoints', headers: client.headers, query });
  assert.equal(response.statusCode, 200, response.body);
  return response.json().data as Record<string, unknown>[];
}

const stored = async (db: TestService['db'], table: 'touchpoints' | 'identities', clientId: string) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE client_id = $1`, [clientId]))[0]!.n;

describe('POST /v1/collect', () => {
  test('a page view is a visit touchpoint derived as POST /v1/touchpoints derives it, with the source mapping', async () => {
    const client = await service.createClient();
    assert.equal((await patchClient(client, { source_platforms: { fb: 'meta' } })).statusCode, 200);
    const occurred_at = new Date(Date.now() - 3600_000).toISOString();
    expectAccepted(
      await collect(client, [
        page('e-1', 'v-1', { occurred_at }),
        page('e-2', 'v-2', { url: `${SHOP}/?utm_source=fb` }),
        page('e-3', 'v-3', { url: `${SHOP}/?utm_source=newsletter` }),
      ]),
    );
    // The mapping names fb, not newsletter: the one is a paid platform's visit, the other not.
    const sources = async (visitor_id: string) => (await touchpointsOf(client, { visitor_id })).map((t) => [t.platform_name, t.channel]);
    assert.deepEqual(await sources('v-2'), [['meta', 'paid']]);
    assert.deepEqual(await sources('v-3'), [['newsletter', 'other']]);

    const [touchpoint] = await touchpointsOf(client, { visitor_id: 'v-1' });
    assert.deepEqual(
      { ...touchpoint, created_at: undefined, updated_at: undefined },
      {
        touchpoint_id: 'e-1',
        occurred_at,
        type: 'visit',
        visitor_id: 'v-1',
        customer_id: null,
        linked_customer_id: null,
        landing_url: LANDING,
        referrer: 'https://www.facebook.com/',
        utm_source: 'fb',
        utm_medium: 'cpc',
        utm_campaign: 'spring',
        utm_term: null,
        utm_content: null,
        click_ids: { fbclid: 'abc' },
        platform_name: 'meta',
        platform_account_id: '',
        campaign_id: 'spring',
        adset_id: '',
        ad_id: '',
        channel: 'paid',
        created_at: undefined,
        updated_at: undefined,
      },
    );
  });

  test('identify links the visitor to the customer, purchase to the order (whose customer it becomes)', async () => {
    const client = await service.createClient();
    expectAccepted(await collect(client, [page('e-1', 'v-1'), identify('v-1', 'c-1'), page('e-2', 'v-2'), purchase('v-2', 'order-2')]));
    assert.deepEqual((await touchpointsOf(client, { customer_id: 'c-1' })).map((t) => [t.touchpoint_id, t.linked_customer_id]), [['e-1', 'c-1']]);
    assert.deepEqual(await touchpointsOf(client, { customer_id: 'c-2' }), [], 'the order has not arrived yet');
    assert.equal((await postOrders(service.production, client, [minimalOrder('order-2', { customer_id: 'c-2' })])).statusCode, 200);
    assert.deepEqual((await touchpointsOf(client, { customer_id: 'c-2' })).map((t) => [t.touchpoint_id, t.linked_customer_id]), [['e-2', 'c-2']]);
  });

  test('a retried beacon (the same event ids) is stored once; the same event twice in one beacon too', async () => {
    const client = await service.createClient();
    const events = [page('e-1', 'v-1'), page('e-1', 'v-1'), identify('v-1', 'c-1'), identify('v-1', 'c-1')];
    expectAccepted(await collect(client, events));
    expectAccepted(await collect(client, events));
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 1);
    assert.equal(await stored(service.db, 'identities', client.client_id), 1);
  });

  test('an event replaces only what the collector wrote: never a touchpoint of the API, whatever its event_id', async () => {
    const client = await service.createClient();
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString();
    const apiTouchpoint = {
      touchpoint_id: 'api-1',
      occurred_at: day(2),
      type: 'visit',
      customer_id: 'c-1',
      landing_url: `${SHOP}/?utm_source=google&utm_medium=cpc&utm_campaign=brand&gclid=g1`,
    };
    const posted = await service.production.inject({ method: 'POST', url: '/v1/touchpoints', headers: client.headers, payload: { data: [apiTouchpoint] } });
    assert.equal(posted.statusCode, 201, posted.body);
    assert.equal((await postOrders(service.production, client, [minimalOrder('order-1', { customer_id: 'c-1', time_of_purchase: day(1) })])).statusCode, 200);
    const explained = async () => {
      const response = await service.production.inject({ method: 'GET', url: '/v2/orders/order-1/attribution?model=last_touch&window=7', headers: client.headers });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json().touchpoints as { touchpoint_id: string; campaign_id: string; credit: number }[]).map(({ touchpoint_id, campaign_id, credit }) => [touchpoint_id, campaign_id, credit]);
    };
    assert.deepEqual(await explained(), [['api-1', 'brand', 1]]);
    const [before] = await touchpointsOf(client, { customer_id: 'c-1' });

    // A stranger's beacon with that id: another visitor, no customer, no campaign, another time.
    expectAccepted(await collect(client, [page('api-1', 'v-stranger', { occurred_at: day(0), url: `${SHOP}/` })]));
    assert.deepEqual(await touchpointsOf(client, { customer_id: 'c-1' }), [before]);
    assert.deepEqual(await touchpointsOf(client, { visitor_id: 'v-stranger' }), []);
    assert.deepEqual(await explained(), [['api-1', 'brand', 1]]);

    // The collector's own events: a retry may change them, and the API may take them over, after
    // which the collector cannot change them again.
    expectAccepted(await collect(client, [page('e-1', 'v-1', { url: `${SHOP}/first` })]));
    expectAccepted(await collect(client, [page('e-1', 'v-1', { url: `${SHOP}/again` })]));
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => t.landing_url), [`${SHOP}/again`]);
    const takenOver = await service.production.inject({
      method: 'POST',
      url: '/v1/touchpoints',
      headers: client.headers,
      payload: { data: [{ touchpoint_id: 'e-1', occurred_at: day(0), type: 'visit', visitor_id: 'v-1', landing_url: `${SHOP}/api` }] },
    });
    assert.equal(takenOver.statusCode, 201, takenOver.body);
    assert.equal(takenOver.json().updated, 1);
    expectAccepted(await collect(client, [page('e-1', 'v-1', { url: `${SHOP}/stranger` })]));
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => t.landing_url), [`${SHOP}/api`]);
  });

  test('takes JSON as text/plain (sendBeacon), with or without a charset, and as application/json', async () => {
    const client = await service.createClient();
    expectAccepted(await collect(client, [page('e-1', 'v-1')], { type: 'text/plain' }));
    expectAccepted(await collect(client, [page('e-2', 'v-1')], { type: 'text/plain;charset=UTF-8' }));
    expectAccepted(await collect(client, [page('e-3', 'v-1')], { type: 'application/json' }));
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => t.touchpoint_id).sort(), ['e-1', 'e-2', 'e-3']);
    const form = await collect(client, [page('e-4', 'v-1')], { type: 'application/x-www-form-urlencoded' });
    assert.equal(assertErrorEnvelope(form, 415).message, 'Content-Type must be application/json or text/plain');
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 3);
  });

  test('CORS: any origin, no credentials, preflight answered', async () => {
    const preflight = await service.production.inject({
      method: 'OPTIONS',
      url: '/v1/collect',
      headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal(preflight.statusCode, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], '*');
    assert.equal(preflight.headers['access-control-allow-methods'], 'POST');
    assert.match(String(preflight.headers['access-control-allow-headers']), /content-type/i);
    assert.equal(preflight.headers['access-control-allow-credentials'], undefined);
    assert.ok(Number(preflight.headers['access-control-max-age']) > 0);

    const client = await service.createClient();
    const answer = await collect(client, [page('e-1', 'v-1')], { origin: 'https://anywhere.example' });
    expectAccepted(answer);
    assert.equal(answer.headers['access-control-allow-credentials'], undefined);
    const refused = await beacon('{', { origin: 'https://anywhere.example' });
    assert.equal(refused.headers['access-control-allow-origin'], '*', 'errors are readable cross-origin too');
    // The rest of the API stays closed to browsers.
    const orders = await service.production.inject({ method: 'OPTIONS', url: '/v2/orders', headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' } });
    assert.equal(orders.headers['access-control-allow-origin'], undefined);
  });

  test('a body 1000 times the 16 KB limit is refused at once with 413, unread', async () => {
    const client = await service.createClient();
    const huge = JSON.stringify({ client_id: client.client_id, events: [page('e-1', 'v-1', { url: `${SHOP}/?q=${'x'.repeat(1000 * COLLECT_BODY_LIMIT_BYTES)}` })] });
    const started = performance.now();
    const response = await beacon(huge);
    const elapsed = performance.now() - started;
    const { message } = assertErrorEnvelope(response, 413);
    assert.match(message, /16384 bytes/);
    assert.ok(elapsed < 1000, `answered in ${elapsed} ms`);
    assert.equal(response.headers['access-control-allow-origin'], '*');
    const justOver = await beacon({ client_id: client.client_id, events: [page('e-2', 'v-1', { url: `${SHOP}/?q=${'x'.repeat(COLLECT_BODY_LIMIT_BYTES)}` })] });
    assertErrorEnvelope(justOver, 413);
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 0);
  });

  test('bad input is a 422 with the envelope, and stores nothing', async () => {
    const client = await service.createClient();
    const bodies: [string, unknown, string | null][] = [
      ['malformed JSON', '{"client_id": "', null],
      ['not an object', '[]', 'body'],
      ['no events', { client_id: client.client_id, events: [] }, 'body/events'],
      ['too many events', { client_id: client.client_id, events: Array.from({ length: MAX_COLLECT_EVENTS + 1 }, (_, n) => page(`e-${n}`, 'v-1', { url: undefined, referrer: undefined })) }, 'body/events'],
      ['a client id that is not a UUID', { client_id: 'test', events: [page('e-1', 'v-1')] }, 'body/client_id'],
      ['an extra property', { client_id: client.client_id, events: [page('e-1', 'v-1', { ip: '203.0.113.7' })] }, 'body/events/0/ip'],
      ['an unknown type', { client_id: client.client_id, events: [page('e-1', 'v-1', { type: 'click' })] }, 'body/events/0/type'],
      ['no visitor', { client_id: client.client_id, events: [page('e-1', 'v-1', { visitor_id: undefined })] }, 'body/events/0/visitor_id'],
      ['a time without a zone', { client_id: client.client_id, events: [page('e-1', 'v-1', { occurred_at: '2024-03-08T09:00:00' })] }, 'body/events/0/occurred_at'],
      ['an id over 255 characters', { client_id: client.client_id, events: [page('x'.repeat(256), 'v-1')] }, 'body/events/0/event_id'],
      ['identify without a customer', { client_id: client.client_id, events: [page('e-1', 'v-1'), { ...identify('v-1', 'c'), customer_id: undefined }] }, 'body/events/1/customer_id'],
      ['purchase without an order', { client_id: client.client_id, events: [{ ...purchase('v-1', 'o'), order_id: undefined }] }, 'body/events/0/order_id'],
      ['a click id over its bound in the URL', { client_id: client.client_id, events: [page('e-1', 'v-1', { url: `${SHOP}/?gclid=${'g'.repeat(1025)}` })] }, 'body/events/0/url'],
      ['a NUL character', { client_id: client.client_id, events: [page('e-1', 'v-\u0000')] }, 'body/events/0/visitor_id'],
    ];
    for (const [what, body, loc] of bodies) {
      const { errors } = assertErrorEnvelope(await beacon(body), 422);
      if (loc === null) assert.equal(errors, null, what);
      else assert.ok(errors?.some((error) => error.loc === loc), `${what}: ${JSON.stringify(errors)}`);
    }
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 0);
    assert.equal(await stored(service.db, 'identities', client.client_id), 0);
  });

  test('an unknown client id is answered exactly as a known one; its events are dropped and counted in the log', async () => {
    const logged = await startLoggedApp();
    after(() => logged.close());
    const unknown = randomUUID();
    const events = [page('e-1', 'v-1'), identify('v-1', 'c-secret')];
    const answer = await collect({ client_id: unknown }, events, { app: logged.app });
    const known = await collect(await service.createClient(), events);
    expectAccepted(answer);
    const headers = (response: LightMyRequestResponse) => {
      const { 'x-request-id': _id, date: _date, ...rest } = response.headers;
      return rest;
    };
    assert.deepEqual(headers(answer), headers(known));
    assert.equal(await stored(service.db, 'touchpoints', unknown), 0);
    expectAccepted(await collect({ client_id: unknown }, [page('e-2', 'v-1')], { app: logged.app }));

    const drops = logged.lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'collected events dropped');
    assert.deepEqual(
      drops.map(({ reason, events, dropped_total }) => ({ reason, events, dropped_total })),
      [
        { reason: 'unknown_client', events: 2, dropped_total: 2 },
        { reason: 'unknown_client', events: 1, dropped_total: 3 },
      ],
    );
    const text = logged.lines.join('\n');
    for (const personal of ['c-secret', 'v-1', '127.0.0.1', unknown]) assert.ok(!text.includes(personal), `the log holds ${personal}`);
  });

  test('a client that lists its origins gets events from those only; others are dropped as an unknown client\'s', async () => {
    const client = await service.createClient();
    const patched = await patchClient(client, { collect_origins: [SHOP, 'http://localhost:3000'] });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().collect_origins, [SHOP, 'http://localhost:3000']);

    expectAccepted(await collect(client, [page('from-shop', 'v-1')]));
    expectAccepted(await collect(client, [page('from-dev', 'v-1')], { origin: 'http://localhost:3000' }));
    for (const origin of ['https://evil.example', 'https://shop.example.evil.example', 'http://shop.example', 'null', null]) {
      expectAccepted(await collect(client, [page(`from-${origin}`, 'v-1'), identify('v-1', 'c-1')], { origin }));
    }
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => t.touchpoint_id).sort(), ['from-dev', 'from-shop']);
    assert.equal(await stored(service.db, 'identities', client.client_id), 0);

    assert.deepEqual((await patchClient(client, { collect_origins: [] })).json().collect_origins, [], '[] takes any origin again');
    expectAccepted(await collect(client, [page('from-anywhere', 'v-1')], { origin: 'https://evil.example' }));
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 3);
  });

  test('collect_origins must be origins as browsers send them', async () => {
    const client = await service.createClient();
    for (const origin of ['https://shop.example/', 'https://Shop.example', 'https://shop.example:443', 'shop.example', 'https://shop.example/path', '*']) {
      const { errors } = assertErrorEnvelope(await patchClient(client, { collect_origins: [SHOP, origin] }), 400);
      assert.deepEqual(errors?.map((error) => [error.loc, error.type]), [['body/collect_origins/1', 'format']], origin);
    }
    assertErrorEnvelope(await patchClient(client, { collect_origins: [SHOP, SHOP] }), 400);
    assertErrorEnvelope(await patchClient(client, { collect_origins: Array.from({ length: 101 }, (_, n) => `https://s${n}.example`) }), 400);
  });

  test('a browser clock more than 24 hours off is replaced by the server\'s time; within 24 hours it is kept', async () => {
    const client = await service.createClient();
    const hours = (n: number) => new Date(Date.now() + n * 3600_000).toISOString();
    const [past, future, closePast] = [hours(-25), hours(30), hours(-23)];
    const before = Date.now();
    expectAccepted(
      await collect(client, [
        page('past', 'v-1', { occurred_at: past }),
        page('future', 'v-1', { occurred_at: future }),
        page('close', 'v-1', { occurred_at: closePast }),
        page('ancient', 'v-1', { occurred_at: '1999-01-01T00:00:00Z' }),
      ]),
    );
    const times = Object.fromEntries((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => [t.touchpoint_id, Date.parse(String(t.occurred_at))]));
    assert.equal(times.close, Date.parse(closePast));
    for (const replaced of ['past', 'future', 'ancient']) assert.ok(times[replaced]! >= before - 1000 && times[replaced]! <= Date.now(), replaced);
  });

  test('the UAT port stores in UAT: each environment sees its own events only', async () => {
    const client = await service.createClient();
    expectAccepted(await collect(client, [page('on-prod', 'v-1')]));
    expectAccepted(await collect(client, [page('on-uat', 'v-1'), identify('v-1', 'c-uat')], { app: service.uat }));
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' })).map((t) => [t.touchpoint_id, t.linked_customer_id]), [['on-prod', null]]);
    assert.deepEqual((await touchpointsOf(client, { visitor_id: 'v-1' }, service.uat)).map((t) => [t.touchpoint_id, t.linked_customer_id]), [['on-uat', 'c-uat']]);
  });

  test('events go to the client named, never to another; the answer holds no data', async () => {
    const [a, b] = [await service.createClient(), await service.createClient()];
    expectAccepted(await collect(a, [page('shared-id', 'v-shared'), identify('v-shared', 'c-a')]));
    expectAccepted(await collect(b, [page('shared-id', 'v-shared', { url: `${SHOP}/b` })]));
    assert.deepEqual((await touchpointsOf(a, { visitor_id: 'v-shared' })).map((t) => [t.landing_url, t.linked_customer_id]), [[LANDING, 'c-a']]);
    assert.deepEqual((await touchpointsOf(b, { visitor_id: 'v-shared' })).map((t) => [t.landing_url, t.linked_customer_id]), [[`${SHOP}/b`, null]]);
    // Nothing but POST and OPTIONS: the collector reads nothing back.
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
      assertErrorEnvelope(await service.production.inject({ method, url: '/v1/collect', query: { client_id: a.client_id } }), 404);
    }
  });
});

describe('POST /v1/collect under concurrency', () => {
  test('requests of a client that arrive together are written together, after one lookup of the client', async () => {
    const client = await service.createClient();
    const statements = { lookups: 0, upserts: 0 };
    const counting: Database = Object.assign(Object.create(service.db) as Database, {
      query: <R>(text: string, params?: readonly unknown[]) => {
        // The upsert locks its client row (src/touchpoints/repository.ts): a lookup is any other statement reading clients.
        if (text.includes('INSERT INTO touchpoints')) statements.upserts++;
        else if (text.includes('FROM clients')) statements.lookups++;
        return service.db.query<R>(text, params);
      },
    });
    const writer = createCollectWriter(counting, createClientRepository(counting));
    const visit = (n: number) => ({ input: { touchpoint_id: `t-${n}`, occurred_at: new Date().toISOString(), visitor_id: `v-${n}` }, urlLoc: '' });
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, n) => writer.write(client.client_id, 'production', { visits: [visit(n)], derived: deriveVisits([visit(n)], {}), links: [], origin: undefined })));
    assert.deepEqual(new Set(outcomes), new Set(['stored']));
    assert.deepEqual(statements, { lookups: 1, upserts: 1 });
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 12);
  });

  test('a group refused, whose client is deleted before its requests are written one by one: each dropped as an unknown client\'s', async () => {
    const client = await service.createClient();
    let refused = false;
    const refusingOnce: Database = Object.assign(Object.create(service.db) as Database, {
      query: async <R>(text: string, params?: readonly unknown[]) => {
        if (!refused && text.includes('INSERT INTO touchpoints')) {
          refused = true;
          await service.db.query('DELETE FROM clients WHERE client_id = $1', [client.client_id]);
          throw Object.assign(new Error('refused'), { code: '22000' });
        }
        return service.db.query<R>(text, params);
      },
    });
    const writer = createCollectWriter(refusingOnce, createClientRepository(refusingOnce));
    const visit = (n: number) => ({ input: { touchpoint_id: `t-${n}`, occurred_at: new Date().toISOString(), visitor_id: `v-${n}` }, urlLoc: '' });
    const outcomes = await Promise.all(Array.from({ length: 3 }, (_, n) => writer.write(client.client_id, 'production', { visits: [visit(n)], derived: deriveVisits([visit(n)], {}), links: [], origin: undefined })));
    assert.ok(refused);
    assert.deepEqual(outcomes, ['unknown_client', 'unknown_client', 'unknown_client']);
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 0);
  });

  test('concurrent beacons of a client are written together, each stored; one the database refuses fails alone', async () => {
    const client = await service.createClient();
    // Random characters do not compress: an index entry cannot hold this customer id.
    const unindexable = Array.from({ length: 4000 }, () => String.fromCharCode(33 + Math.floor(Math.random() * 90))).join('');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) => collect(client, n === 5 ? [page('poisoned', 'v-5'), identify('v-5', unindexable)] : [page(`e-${n}`, `v-${n}`), identify(`v-${n}`, `c-${n}`)])),
    );
    answers.forEach((answer, n) => (n === 5 ? assertErrorEnvelope(answer, 422) : expectAccepted(answer)));
    assert.equal(await stored(service.db, 'touchpoints', client.client_id), 11);
    assert.equal(await stored(service.db, 'identities', client.client_id), 11);
    const [linked] = await touchpointsOf(client, { customer_id: 'c-11' });
    assert.equal(linked!.touchpoint_id, 'e-11');
  });
});

describe('POST /v1/collect rate limits', () => {
  test('per source address: past COLLECT_REQUESTS_PER_MINUTE, 429 with Retry-After, before the body is read', async () => {
    const limited = await startService({ COLLECT_REQUESTS_PER_MINUTE: '2' });
    after(() => limited.close());
    const client = await limited.createClient();
    expectAccepted(await collect(client, [page('e-1', 'v-1')], { app: limited.production }));
    expectAccepted(await collect(client, [page('e-2', 'v-1')], { app: limited.production }));
    const refused = await collect(client, [page('e-3', 'v-1')], { app: limited.production });
    const body = assertErrorEnvelope(refused, 429, ['retry_after_seconds']) as unknown as { retry_after_seconds: number };
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(body.retry_after_seconds, Number(refused.headers['retry-after']));
    assert.equal(refused.headers['ratelimit'], undefined, 'no budget figures: they would tell how busy a client id is');
    assertErrorEnvelope(await beacon('not even JSON', { app: limited.production }), 429, ['retry_after_seconds']);
    // Another address has its own budget; the other port counts apart.
    const elsewhere = await limited.production.inject({
      method: 'POST',
      url: '/v1/collect',
      remoteAddress: '198.51.100.7',
      headers: { 'content-type': 'text/plain' },
      payload: JSON.stringify({ client_id: client.client_id, events: [page('e-4', 'v-1')] }),
    });
    expectAccepted(elsewhere);
    expectAccepted(await collect(client, [page('e-5', 'v-1')], { app: limited.uat }));
    assert.equal(await stored(limited.db, 'touchpoints', client.client_id), 4);
  });

  test('per client id, known or not: past COLLECT_EVENTS_PER_MINUTE events, 429 alike', async () => {
    const limited = await startService({ COLLECT_EVENTS_PER_MINUTE: '3' });
    after(() => limited.close());
    const client = await limited.createClient();
    for (const target of [client, { client_id: randomUUID() }]) {
      expectAccepted(await collect(target, [page('e-1', 'v-1'), page('e-2', 'v-1')], { app: limited.production }));
      const refused = await collect(target, [page('e-3', 'v-1'), page('e-4', 'v-1')], { app: limited.production });
      assertErrorEnvelope(refused, 429, ['retry_after_seconds']);
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      expectAccepted(await collect(target, [page('e-5', 'v-1')], { app: limited.production }));
    }
    assert.equal(await stored(limited.db, 'touchpoints', client.client_id), 3);
  });
});
