import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { LATE_TOUCHPOINTS_KEYED, takeChangedKeys } from '../src/attribution/changes.js';
import { resolveChangedKeys } from '../src/attribution/daily-totals.js';
import { ADMIN_TOKEN, assertErrorEnvelope, minimalOrder, postOrders, startService, UUID, type TestApp, type TestClient } from './helpers.js';

const service = await startService();
after(() => service.close());

const UAT_TEST_CREDENTIALS = { headers: { authorization: 'None', 'data-client-id': 'test' } };

type Headers = Pick<TestClient, 'headers'>;
const postTouchpoints = (client: Headers, data: unknown, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: '/v1/touchpoints', headers: client.headers, payload: { data } as object });
const postIdentities = (client: Headers, data: unknown, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: '/v1/identities', headers: client.headers, payload: { data } as object });
const listTouchpoints = (client: Headers, query: Record<string, string | number>, app: TestApp = service.production) =>
  app.inject({ method: 'GET', url: '/v1/touchpoints', headers: client.headers, query: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) });
const setSourcePlatforms = (client: TestClient, source_platforms: object) =>
  service.production.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { source_platforms },
  });

const visit = (touchpoint_id: string, fields: Record<string, unknown> = {}) => ({
  touchpoint_id,
  occurred_at: '2024-03-08T09:00:00Z',
  visitor_id: 'visitor-1',
  ...fields,
});

function expectCreated(response: LightMyRequestResponse) {
  assert.equal(response.statusCode, 201, response.body);
  const body = response.json();
  assert.match(body.request_id, UUID);
  assert.equal(body.request_id, response.headers['x-request-id']);
  return body;
}

/** A page's touchpoints, by id, with the fields asked. */
async function listed(client: Headers, query: Record<string, string | number>, fields: string[] = ['touchpoint_id']) {
  const response = await listTouchpoints(client, query);
  assert.equal(response.statusCode, 200, response.body);
  return (response.json().data as Record<string, unknown>[]).map((item) => (fields.length === 1 ? item[fields[0]!] : fields.map((field) => item[field])));
}

/** The attribution change the client's writes noted since the last call (src/attribution/changes.ts), cleared. */
/**
 * What the writes since the last call noted (src/attribution/changes.ts), cleared: the instant
 * from which every kept day may have changed, and from their keys, as a report resolves them (in
 * UTC), the instant from which credits may have changed and the days whose visits may have.
 */
async function notedChange(client: { client_id: string }): Promise<{ from?: string; credits?: string; visits: string[] }> {
  const [row] = await service.db.query<{ earliest: string | null }>('SELECT min(earliest)::text AS earliest FROM attribution_changes WHERE client_id = $1', [client.client_id]);
  await service.db.query('DELETE FROM attribution_changes WHERE client_id = $1', [client.client_id]);
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  const keys = await service.db.transaction(async (tx) => resolveChangedKeys(tx, tenant, 'UTC', await takeChangedKeys(tx, tenant)));
  const instant = (text: string | null) => (text === null ? undefined : text === '-infinity' ? text : new Date(text).toISOString());
  return { from: instant(row!.earliest), credits: instant(keys.creditsFrom), visits: keys.visitDays.sort() };
}

const stored = async (table: 'touchpoints' | 'identities', clientId: string) =>
  (await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE client_id = $1`, [clientId]))[0]!.n;

describe('POST /v1/touchpoints', () => {
  test('inserts, then replaces by touchpoint_id: counts, stored values, created_at kept', async () => {
    const client = await service.createClient();
    const first = expectCreated(await postTouchpoints(client, [visit('a', { utm_source: 'google', utm_medium: 'cpc' }), visit('b')]));
    assert.deepEqual({ ...first, request_id: undefined }, { message: 'Upserted 2 touchpoints', inserted: 2, updated: 0, request_id: undefined });
    const [before] = await listTouchpoints(client, { visitor_id: 'visitor-1' }).then((response) => response.json().data);

    const again = expectCreated(await postTouchpoints(client, [visit('a', { occurred_at: '2024-03-08T01:00:00-08:00', utm_medium: 'email' }), visit('c')]));
    assert.deepEqual([again.message, again.inserted, again.updated], ['Upserted 2 touchpoints', 1, 1]);
    assert.equal(await stored('touchpoints', client.client_id), 3);

    const page = (await listTouchpoints(client, { visitor_id: 'visitor-1' })).json();
    const a = page.data.find((item: { touchpoint_id: string }) => item.touchpoint_id === 'a');
    assert.deepEqual(
      { ...a, created_at: undefined, updated_at: undefined },
      {
        touchpoint_id: 'a',
        occurred_at: '2024-03-08T09:00:00.000Z',
        type: 'visit',
        visitor_id: 'visitor-1',
        customer_id: null,
        linked_customer_id: null,
        landing_url: null,
        referrer: null,
        utm_source: null,
        utm_medium: 'email',
        utm_campaign: null,
        utm_term: null,
        utm_content: null,
        click_ids: {},
        platform_name: '',
        platform_account_id: '',
        campaign_id: '',
        adset_id: '',
        ad_id: '',
        channel: 'email',
        created_at: undefined,
        updated_at: undefined,
      },
      'replaced wholesale: utm_source is gone',
    );
    assert.equal(a.created_at, before.created_at);
    assert.ok(a.updated_at >= before.updated_at);
  });

  test('every field, read back with what is derived from it', async () => {
    const client = await service.createClient();
    const touchpoint = {
      touchpoint_id: 'full',
      occurred_at: '2024-03-08T10:15:30.123456+05:30',
      type: 'view',
      visitor_id: 'v',
      customer_id: 'c',
      landing_url: 'https://shop.example/?utm_source=fb&utm_campaign=spring&utm_term=adset-1&fbclid=F1',
      referrer: 'https://l.facebook.com/',
      utm_medium: 'paid_social',
      utm_content: 'ad-9',
      platform_account_id: 'act_1',
    };
    expectCreated(await postTouchpoints(client, [touchpoint]));
    const [item] = (await listTouchpoints(client, { customer_id: 'c' })).json().data;
    assert.deepEqual(
      { ...item, created_at: undefined, updated_at: undefined },
      {
        ...touchpoint,
        occurred_at: '2024-03-08T04:45:30.123Z',
        linked_customer_id: 'c',
        utm_source: 'fb',
        utm_campaign: 'spring',
        utm_term: 'adset-1',
        click_ids: { fbclid: 'F1' },
        platform_name: 'fb',
        campaign_id: 'spring',
        adset_id: 'adset-1',
        ad_id: 'ad-9',
        channel: 'paid',
        created_at: undefined,
        updated_at: undefined,
      },
    );
  });

  test('invalid input: 422, every problem with its loc, nothing stored', async () => {
    const client = await service.createClient();
    const cases: [unknown[], [string, string][]][] = [
      [[{ occurred_at: '2024-03-08T09:00:00Z', visitor_id: 'v' }], [['body/data/0/touchpoint_id', 'required']]],
      [[visit('a', { occurred_at: '2024-03-08 09:00' })], [['body/data/0/occurred_at', 'format']]],
      [[visit('a', { occurred_at: '2024-03-08T09:00:00' })], [['body/data/0/occurred_at', 'format']]],
      [[visit('a', { type: 'click' })], [['body/data/0/type', 'enum']]],
      [[visit('a', { visitor_id: undefined })], [['body/data/0/visitor_id', 'required']]],
      [[visit('a', { visitor_id: '' })], [['body/data/0/visitor_id', 'min_length']]],
      [[visit('a', { gclid2: 'x' })], [['body/data/0/gclid2', 'additional_property']]],
      [[visit('x'.repeat(256))], [['body/data/0/touchpoint_id', 'max_length']]],
      [[visit('a', { utm_campaign: 'x'.repeat(256) })], [['body/data/0/utm_campaign', 'max_length']]],
      [[visit('a', { landing_url: 'x'.repeat(4097) })], [['body/data/0/landing_url', 'max_length']]],
      [[visit('a', { platform_name: 'x'.repeat(65) })], [['body/data/0/platform_name', 'max_length']]],
      [[visit('a'), visit('b'), visit('a')], [['body/data/2/touchpoint_id', 'unique']]],
      [[visit('ok'), visit('a', { landing_url: `https://shop.example/?utm_content=${'x'.repeat(256)}` })], [['body/data/1/landing_url', 'query_parameter']]],
      [[], [['body/data', 'min_items']]],
    ];
    for (const [data, expected] of cases) {
      const body = assertErrorEnvelope(await postTouchpoints(client, data), 422);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), expected, JSON.stringify(data).slice(0, 200));
    }
    const neither = assertErrorEnvelope(await postTouchpoints(client, [visit('a', { visitor_id: undefined })]), 422);
    assert.equal(neither.errors?.[0]?.msg, 'Give visitor_id or customer_id, or both');
    const duplicate = assertErrorEnvelope(await postTouchpoints(client, [visit('a'), visit('a')]), 422);
    assert.match(duplicate.errors?.[0]?.msg ?? '', /Duplicate touchpoint_id/);
    assertErrorEnvelope(await service.production.inject({ method: 'POST', url: '/v1/touchpoints', headers: client.headers, payload: [visit('a')] }), 422);
    assert.equal(await stored('touchpoints', client.client_id), 0);
  });

  test('a write notes the earliest of its touchpoints and of the times they replaced, a batch sent again its own; new late ones their keys, a backfill its earliest', async () => {
    const client = await service.createClient();
    const write = async (touchpoints: object[]) => {
      expectCreated(await postTouchpoints(client, touchpoints));
      return notedChange(client);
    };
    const [a, b] = [visit('a'), visit('b', { occurred_at: '2024-03-10T09:00:00Z' })];
    const nothing = { from: undefined, credits: undefined, visits: [] };
    assert.deepEqual(await write([a, b]), { ...nothing, visits: ['2024-03-08', '2024-03-10'] }, 'new and late, of a visitor linked to nobody: their visits only');
    assert.deepEqual(await write([b, a]), { ...nothing, from: '2024-03-08T09:00:00.000Z' }, 'sent again: its own days, not every instant');
    assert.deepEqual(await write([{ ...b, occurred_at: '2024-03-05T09:00:00Z' }]), { ...nothing, from: '2024-03-05T09:00:00.000Z' }, 'moved earlier: its new time');
    assert.deepEqual(await write([{ ...a, occurred_at: '2024-03-20T09:00:00Z' }]), { ...nothing, from: '2024-03-08T09:00:00.000Z' }, 'moved later: the time it leaves');
    assert.deepEqual(
      await write([visit('c', { occurred_at: '2024-03-15T09:00:00Z' }), { ...b, occurred_at: '2024-03-12T09:00:00Z' }]),
      { from: '2024-03-05T09:00:00.000Z', credits: undefined, visits: ['2024-03-15', '2024-03-20'] },
      "a new touchpoint, and a moved one: the days of its visitor's visits from the new one on",
    );
    assert.deepEqual(
      await write([visit('d', { occurred_at: '2024-03-01T09:00:00Z' })]),
      { ...nothing, visits: ['2024-03-01', '2024-03-12', '2024-03-15', '2024-03-20'] },
      "its visitor's first visit: with the days after it, that of the one first before it",
    );
    const backfill = Array.from({ length: LATE_TOUCHPOINTS_KEYED + 1 }, (_, n) => visit(`e${n}`, { occurred_at: `2024-02-${String(n % 28 + 1).padStart(2, '0')}T09:00:00Z` }));
    assert.deepEqual(await write(backfill), { ...nothing, from: '2024-02-01T09:00:00.000Z' }, 'more late ones than are noted by key: their earliest time');
    const customer = await write([visit('f', { customer_id: 'carol', visitor_id: undefined, occurred_at: '2024-03-02T09:00:00Z' })]);
    assert.deepEqual(customer, { ...nothing, visits: ['2024-03-02'] }, 'of a customer with no order');
    await postOrders(service.production, client, [minimalOrder('carol-1', { customer_id: 'carol', time_of_purchase: '2024-03-04T12:00:00Z' })]);
    await notedChange(client);
    assert.deepEqual(
      await write([visit('g', { customer_id: 'carol', visitor_id: undefined, occurred_at: '2024-03-03T09:00:00Z' })]),
      { ...nothing, credits: '2024-03-04T12:00:00.000Z', visits: ['2024-03-03'] },
      "of a customer: the credits from the customer's next order",
    );
  });

  test('a customer_id alone is enough; type view is kept', async () => {
    const client = await service.createClient();
    expectCreated(await postTouchpoints(client, [visit('a', { visitor_id: undefined, customer_id: 'c1', type: 'view', platform_name: 'meta', campaign_id: 'c' })]));
    assert.deepEqual(await listed(client, { customer_id: 'c1' }, ['type', 'channel', 'platform_name', 'linked_customer_id']), [['view', 'paid', 'meta', 'c1']]);
  });

  test("the client's source mapping names the platform of touchpoints written after it is set", async () => {
    const client = await service.createClient();
    const tagged = (id: string) => visit(id, { landing_url: 'https://shop.example/?utm_source=fb&utm_campaign=c1' });
    expectCreated(await postTouchpoints(client, [tagged('before')]));
    const patched = await setSourcePlatforms(client, { fb: 'meta', adwords: 'google' });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().source_platforms, { fb: 'meta', adwords: 'google' });
    expectCreated(await postTouchpoints(client, [tagged('after')]));
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['touchpoint_id', 'platform_name', 'channel']), [
      ['after', 'meta', 'paid'],
      ['before', 'fb', 'other'],
    ]);
    // Sent again, a touchpoint is derived again, with the mapping of now.
    expectCreated(await postTouchpoints(client, [tagged('before')]));
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['platform_name']), ['meta', 'meta']);
    // Another client's mapping is its own.
    const other = await service.createClient();
    expectCreated(await postTouchpoints(other, [tagged('x')]));
    assert.deepEqual(await listed(other, { visitor_id: 'visitor-1' }, ['platform_name']), ['fb']);
  });
});

describe('GET /v1/touchpoints', () => {
  test('filters by visitor, by customer and by an inclusive time range; pages', async () => {
    const client = await service.createClient();
    const at = (hour: number) => `2024-03-08T${String(hour).padStart(2, '0')}:00:00Z`;
    expectCreated(
      await postTouchpoints(client, [
        visit('v1-3', { occurred_at: at(3) }),
        visit('v1-1', { occurred_at: at(1) }),
        visit('v1-2b', { occurred_at: at(2) }),
        visit('v1-2a', { occurred_at: at(2) }),
        visit('v2-1', { occurred_at: at(1), visitor_id: 'visitor-2' }),
        visit('c-5', { occurred_at: at(5), visitor_id: undefined, customer_id: 'cust' }),
      ]),
    );
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }), ['v1-1', 'v1-2a', 'v1-2b', 'v1-3'], 'by occurred_at, then touchpoint_id');
    assert.deepEqual(await listed(client, { start: at(2), end: at(3) }), ['v1-2a', 'v1-2b', 'v1-3'], 'both ends inclusive');
    assert.deepEqual(await listed(client, { start: at(3) }), ['v1-3', 'c-5']);
    assert.deepEqual(await listed(client, { end: '2024-03-08T02:00:00+01:00' }), ['v1-1', 'v2-1']);
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1', start: at(2), end: at(2) }), ['v1-2a', 'v1-2b']);
    assert.deepEqual(await listed(client, { customer_id: 'cust' }), ['c-5']);
    assert.deepEqual(await listed(client, { visitor_id: 'nobody' }), []);

    const page = (await listTouchpoints(client, { visitor_id: 'visitor-1', page: 2, page_size: 3 })).json();
    assert.deepEqual({ ...page, data: page.data.map((item: { touchpoint_id: string }) => item.touchpoint_id) }, {
      data: ['v1-3'],
      page: 2,
      page_size: 3,
      total_pages: 2,
      total_count: 4,
    });
    const beyond = (await listTouchpoints(client, { visitor_id: 'visitor-1', page: 3, page_size: 3 })).json();
    assert.deepEqual([beyond.data, beyond.total_count], [[], 4]);
  });

  test('asks for a filter; 422 for what cannot be answered', async () => {
    const client = await service.createClient();
    const cases: [Record<string, string | number>, string, string][] = [
      [{}, 'query', 'range'],
      [{ page: 1 }, 'query', 'range'],
      [{ visitor_id: 'v', customer_id: 'c' }, 'query/customer_id', 'range'],
      [{ start: '2024-03-09T00:00:00Z', end: '2024-03-08T00:00:00Z' }, 'query/end', 'range'],
      [{ start: '2024-03-08' }, 'query/start', 'format'],
      [{ visitor_id: 'v', page_size: 1001 }, 'query/page_size', 'maximum'],
      [{ visitor_id: 'v', page: 0 }, 'query/page', 'minimum'],
      [{ visitor_id: 'v', other: 'x' }, 'query/other', 'additional_property'],
    ];
    for (const [query, loc, type] of cases) {
      const body = assertErrorEnvelope(await listTouchpoints(client, query), 422);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), [[loc, type]], JSON.stringify(query));
    }
  });
});

describe('POST /v1/identities', () => {
  test("links a visitor to a customer: all the visitor's touchpoints, earlier and later, are the customer's", async () => {
    const client = await service.createClient();
    expectCreated(await postTouchpoints(client, [visit('early'), visit('own', { visitor_id: undefined, customer_id: 'alice' })]));
    const linked = expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', customer_id: 'alice' }]));
    assert.deepEqual({ ...linked, request_id: undefined }, { message: 'Linked 1 visitor', linked: 1, request_id: undefined });
    expectCreated(await postTouchpoints(client, [visit('late', { occurred_at: '2024-03-09T00:00:00Z' })]));
    assert.deepEqual(await listed(client, { customer_id: 'alice' }, ['touchpoint_id', 'customer_id', 'linked_customer_id']), [
      ['early', null, 'alice'],
      ['own', 'alice', 'alice'],
      ['late', null, 'alice'],
    ]);
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['linked_customer_id']), ['alice', 'alice']);
  });

  test('a later link replaces an earlier one; a touchpoint sent with a customer_id keeps it', async () => {
    const client = await service.createClient();
    expectCreated(await postTouchpoints(client, [visit('anonymous'), visit('signed-in', { customer_id: 'alice' })]));
    expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', customer_id: 'alice' }]));
    expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', customer_id: 'bob' }]));
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['touchpoint_id', 'linked_customer_id']), [
      ['anonymous', 'bob'],
      ['signed-in', 'alice'],
    ]);
    assert.deepEqual(await listed(client, { customer_id: 'alice' }), ['signed-in']);
    assert.deepEqual(await listed(client, { customer_id: 'bob' }), ['anonymous']);
    assert.equal(await stored('identities', client.client_id), 1);
  });

  test("a link changes the credits from the first order of its customer from the visitor's first touchpoint; a changed one from that touchpoint; one sent again nothing", async () => {
    const client = await service.createClient();
    expectCreated(
      await postTouchpoints(client, [
        visit('first'),
        visit('next', { occurred_at: '2024-03-10T09:00:00Z' }),
        visit('earlier', { visitor_id: 'visitor-2', occurred_at: '2024-03-07T09:00:00Z' }),
        visit('early', { visitor_id: 'visitor-3', occurred_at: '2024-03-01T09:00:00Z' }),
      ]),
    );
    const noted = async () => (await notedChange(client)).credits;
    assert.equal(await noted(), undefined, 'the touchpoints: visitors linked to nobody');
    const link = async (links: object[]) => expectCreated(await postIdentities(client, links));

    assert.equal((await link([{ visitor_id: 'visitor-1', customer_id: 'alice' }, { visitor_id: 'nobody-yet', customer_id: 'alice' }])).linked, 2);
    assert.equal(await noted(), undefined, 'alice has no order: no path changes');
    await postOrders(service.production, client, [minimalOrder('before', { customer_id: 'alice', time_of_purchase: '2024-03-02T12:00:00Z' })]);
    await postOrders(service.production, client, [minimalOrder('after', { customer_id: 'alice', time_of_purchase: '2024-03-09T12:00:00Z' })]);
    await noted();

    assert.equal((await link([{ visitor_id: 'visitor-1', customer_id: 'alice' }, { visitor_id: 'nobody-yet', customer_id: 'alice' }])).linked, 2, 'counted as sent');
    assert.equal(await noted(), undefined, 'links sent again as they are');
    await link([{ visitor_id: 'visitor-2', customer_id: 'alice' }]);
    assert.equal(await noted(), '2024-03-09T12:00:00.000Z', "alice's first order from the visitor's first touchpoint on");
    await link([{ visitor_id: 'visitor-3', order_id: 'after' }]);
    assert.equal(await noted(), '2024-03-01T09:00:00.000Z', "through an order: the visitor's first touchpoint (the order's customer may be changing concurrently)");
    await link([{ visitor_id: 'anonymous', order_id: 'not-yet-sent' }]);
    assert.equal(await noted(), undefined, 'an order link before its order');
    await link([{ visitor_id: 'visitor-1', customer_id: 'bob' }]);
    assert.equal(await noted(), '2024-03-08T09:00:00.000Z', "a changed link: the visitor's first touchpoint");
    assert.deepEqual(await listed(client, { customer_id: 'bob' }), ['first', 'next']);
  });

  test('an order link sent before its order takes effect when the order arrives, and follows its customer', async () => {
    const client = await service.createClient();
    expectCreated(await postTouchpoints(client, [visit('t1')]));
    const linked = expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', order_id: 'order-1' }, { visitor_id: 'visitor-2', customer_id: 'dave' }]));
    assert.equal(linked.linked, 2);
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['linked_customer_id']), [null], 'no order yet');
    assert.deepEqual(await listed(client, { customer_id: 'carol' }), []);

    assert.equal((await postOrders(service.production, client, [minimalOrder('order-1', { customer_id: 'carol' })])).statusCode, 200);
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['linked_customer_id']), ['carol']);
    assert.deepEqual(await listed(client, { customer_id: 'carol' }), ['t1']);

    assert.equal((await postOrders(service.production, client, [minimalOrder('order-1', { customer_id: 'erin' })])).statusCode, 200);
    assert.deepEqual(await listed(client, { customer_id: 'erin' }), ['t1']);
    assert.deepEqual(await listed(client, { customer_id: 'carol' }), []);

    // A direct link replaces the order link.
    expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', customer_id: 'frank' }]));
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }, ['linked_customer_id']), ['frank']);
  });

  test('invalid input: 422 with its loc, nothing stored', async () => {
    const client = await service.createClient();
    const cases: [unknown[], [string, string][]][] = [
      [[{ visitor_id: 'v' }], [['body/data/0/customer_id', 'required']]],
      [[{ visitor_id: 'v', customer_id: 'c', order_id: 'o' }], [['body/data/0/order_id', 'exclusive']]],
      [[{ customer_id: 'c' }], [['body/data/0/visitor_id', 'required']]],
      [[{ visitor_id: 'v', customer_id: '' }], [['body/data/0/customer_id', 'min_length']]],
      [[{ visitor_id: 'v', customer_id: 'c', email: 'x@example.com' }], [['body/data/0/email', 'additional_property']]],
      [[{ visitor_id: 'ok', customer_id: 'c' }, { visitor_id: 'v', customer_id: 'c' }, { visitor_id: 'v', order_id: 'o' }], [['body/data/2/visitor_id', 'unique']]],
      [[], [['body/data', 'min_items']]],
    ];
    for (const [data, expected] of cases) {
      const body = assertErrorEnvelope(await postIdentities(client, data), 422);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), expected, JSON.stringify(data));
    }
    assert.equal(assertErrorEnvelope(await postIdentities(client, [{ visitor_id: 'v' }]), 422).errors?.[0]?.msg, 'Give customer_id or order_id');
    assert.equal(await stored('identities', client.client_id), 0);
  });
});

describe('UAT', () => {
  test('the test credentials are validated and answered as if stored; nothing is stored or read', async () => {
    const before = await service.db.query<{ n: number }>('SELECT (SELECT count(*) FROM touchpoints) + (SELECT count(*) FROM identities) AS n');
    const upserted = expectCreated(await postTouchpoints(UAT_TEST_CREDENTIALS, [visit('a'), visit('b')], service.uat));
    assert.deepEqual([upserted.inserted, upserted.updated], [2, 0]);
    expectCreated(await postTouchpoints(UAT_TEST_CREDENTIALS, [visit('a')], service.uat));
    assertErrorEnvelope(await postTouchpoints(UAT_TEST_CREDENTIALS, [visit('a', { type: 'click' })], service.uat), 422);
    assert.equal(expectCreated(await postIdentities(UAT_TEST_CREDENTIALS, [{ visitor_id: 'visitor-1', customer_id: 'c' }], service.uat)).linked, 1);
    assertErrorEnvelope(await postIdentities(UAT_TEST_CREDENTIALS, [{ visitor_id: 'v' }], service.uat), 422);
    const page = await listTouchpoints(UAT_TEST_CREDENTIALS, { visitor_id: 'visitor-1' }, service.uat);
    assert.equal(page.statusCode, 200, page.body);
    assert.deepEqual(page.json(), { data: [], page: 1, page_size: 1000, total_pages: 0, total_count: 0 });
    const now = await service.db.query<{ n: number }>('SELECT (SELECT count(*) FROM touchpoints) + (SELECT count(*) FROM identities) AS n');
    assert.deepEqual(now, before);
    assertErrorEnvelope(await postTouchpoints(UAT_TEST_CREDENTIALS, [visit('a')]), 401);
  });

  test("a client's UAT data is kept apart from its production data", async () => {
    const client = await service.createClient();
    expectCreated(await postTouchpoints(client, [visit('uat-only')], service.uat));
    expectCreated(await postIdentities(client, [{ visitor_id: 'visitor-1', customer_id: 'uat-customer' }], service.uat));
    assert.deepEqual(await listed(client, { visitor_id: 'visitor-1' }), []);
    const uat = (await listTouchpoints(client, { visitor_id: 'visitor-1' }, service.uat)).json();
    assert.deepEqual(uat.data.map((item: { linked_customer_id: string }) => item.linked_customer_id), ['uat-customer']);
  });
});
