import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import {
  ADMIN_TOKEN,
  UUID,
  assertErrorEnvelope,
  listOrders,
  startService,
  type TestApp,
  type TestService,
} from './helpers.js';

const UNKNOWN_UUID = '3f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
const RANGE = { start_date: '2024-01-01', end_date: '2024-12-31' };

interface AdminRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  payload?: object;
}

/** One request of each admin route, all about a client that does not exist. */
const EVERY_ROUTE: AdminRequest[] = [
  { method: 'POST', url: '/admin/v1/clients', payload: { name: 'Acme' } },
  { method: 'POST', url: `/admin/v1/clients/${UNKNOWN_UUID}/api-keys` },
  { method: 'DELETE', url: `/admin/v1/clients/${UNKNOWN_UUID}/api-keys/${UNKNOWN_UUID}` },
  { method: 'GET', url: `/admin/v1/clients/${UNKNOWN_UUID}` },
  { method: 'PATCH', url: `/admin/v1/clients/${UNKNOWN_UUID}`, payload: { time_zone: 'UTC' } },
];

/** An admin request with `authorization` (the admin token by default; null: no header). */
function adminRequest(app: TestApp, request: AdminRequest, authorization: string | null = `Bearer ${ADMIN_TOKEN}`) {
  return app.inject({ ...request, headers: authorization === null ? {} : { authorization } });
}

async function countClients(service: TestService): Promise<number> {
  const [row] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM clients');
  return row!.n;
}

describe('admin API', () => {
  let service: TestService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  const createClient = (payload: object, authorization?: string) =>
    adminRequest(service.production, { method: 'POST', url: '/admin/v1/clients', payload }, authorization);

  test('POST /admin/v1/clients creates a client whose key works on the API', async () => {
    const response = await createClient({ name: 'Acme Ltd' });
    assert.equal(response.statusCode, 201, response.body);
    const client = response.json() as Record<string, string>;
    assert.deepEqual(Object.keys(client).sort(), ['api_key', 'client_id', 'key_id', 'name', 'scope']);
    assert.equal(client.scope, 'write', 'the first key writes');
    assert.match(client.client_id!, UUID);
    assert.match(client.key_id!, UUID);
    assert.equal(client.name, 'Acme Ltd');
    assert.equal(typeof client.api_key, 'string');

    const headers = { authorization: client.api_key!, 'data-client-id': client.client_id! };
    const list = await listOrders(service.production, { headers }, RANGE);
    assert.equal(list.statusCode, 200, list.body);

    const another = (await createClient({ name: 'Acme Ltd' })).json() as Record<string, string>;
    assert.notEqual(another.client_id, client.client_id, 'names need not be unique; ids are');
    assert.notEqual(another.api_key, client.api_key);
  });

  test('POST /admin/v1/clients/{id}/api-keys issues a working key; an unknown client is 404', async () => {
    const client = await service.createClient();
    const response = await adminRequest(service.production, {
      method: 'POST',
      url: `/admin/v1/clients/${client.client_id}/api-keys`,
    });
    assert.equal(response.statusCode, 201, response.body);
    const key = response.json() as Record<string, string>;
    assert.deepEqual(Object.keys(key).sort(), ['api_key', 'key_id', 'scope']);
    assert.match(key.key_id!, UUID);
    const list = await listOrders(service.production, { headers: { ...client.headers, authorization: key.api_key! } }, RANGE);
    assert.equal(list.statusCode, 200, list.body);

    assertErrorEnvelope(await adminRequest(service.production, EVERY_ROUTE[1]!), 404);
  });

  test('GET /admin/v1/clients/{id} shows a client, with time zone UTC until set', async () => {
    const client = await service.createClient('Shown');
    const response = await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${client.client_id}` });
    assert.equal(response.statusCode, 200, response.body);
    const shown = response.json();
    assert.deepEqual(
      { ...shown, created_at: undefined },
      {
        client_id: client.client_id,
        name: 'Shown',
        time_zone: 'UTC',
        created_at: undefined,
        source_platforms: {},
        collect_origins: [],
        channel_grouping: 'platform',
        training_days: 90,
        markov_order: 1,
      },
    );
    assert.match(shown.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assertErrorEnvelope(await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${UNKNOWN_UUID}` }), 404);
  });

  test('PATCH /admin/v1/clients/{id} sets the time zone (an IANA name) and the name', async () => {
    const client = await service.createClient('Before');
    const patch = (payload: object, clientId = client.client_id) =>
      adminRequest(service.production, { method: 'PATCH', url: `/admin/v1/clients/${clientId}`, payload });
    const zoned = await patch({ time_zone: 'America/New_York' });
    assert.equal(zoned.statusCode, 200, zoned.body);
    assert.equal(zoned.json().time_zone, 'America/New_York');
    assert.equal(zoned.json().name, 'Before');
    const renamed = await patch({ name: 'After' });
    assert.deepEqual([renamed.json().name, renamed.json().time_zone], ['After', 'America/New_York']);
    const shown = await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${client.client_id}` });
    assert.deepEqual([shown.json().name, shown.json().time_zone], ['After', 'America/New_York']);

    for (const [payload, loc, type] of [
      [{ time_zone: 'Mars/Olympus_Mons' }, 'body/time_zone', 'enum'],
      [{ time_zone: 'america/new_york' }, 'body/time_zone', 'enum'],
      [{ time_zone: 'Factory' }, 'body/time_zone', 'enum'], // known to PostgreSQL, not to Node.js
      [{ time_zone: '' }, 'body/time_zone', 'min_length'],
      [{}, 'body', 'min_properties'],
      [{ time_zone: 'UTC', plan: 'gold' }, 'body/plan', 'additional_property'],
    ] as const) {
      const body = assertErrorEnvelope(await patch(payload), 400);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), [[loc, type]], JSON.stringify(payload));
    }
    assert.equal((await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${client.client_id}` })).json().time_zone, 'America/New_York');
    assertErrorEnvelope(await patch({ time_zone: 'UTC' }, UNKNOWN_UUID), 404);
  });

  test('PATCH /admin/v1/clients/{id} sets the source mapping, replaced whole, bounded', async () => {
    const client = await service.createClient('Mapped');
    const patch = (payload: object) => adminRequest(service.production, { method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, payload });
    const show = async () => (await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${client.client_id}` })).json();
    const mapped = await patch({ source_platforms: { fb: 'meta', ig: 'meta', adwords: 'google' } });
    assert.equal(mapped.statusCode, 200, mapped.body);
    assert.deepEqual(mapped.json().source_platforms, { fb: 'meta', ig: 'meta', adwords: 'google' });
    assert.deepEqual((await patch({ name: 'Renamed' })).json().source_platforms, { fb: 'meta', ig: 'meta', adwords: 'google' }, 'kept when not given');
    assert.deepEqual((await patch({ source_platforms: { tt: 'tiktok' } })).json().source_platforms, { tt: 'tiktok' }, 'replaced whole');

    const longest = 'x'.repeat(64);
    const atTheLimits = Object.fromEntries(Array.from({ length: 100 }, (_, n) => [`${n}`.padEnd(64, 'k'), longest]));
    assert.equal((await patch({ source_platforms: atTheLimits })).statusCode, 200);
    for (const [source_platforms, loc, type] of [
      [{ ['k'.repeat(65)]: 'meta' }, 'body/source_platforms', 'max_length'],
      [{ '': 'meta' }, 'body/source_platforms', 'min_length'],
      [{ fb: 'x'.repeat(65) }, 'body/source_platforms/fb', 'max_length'],
      [{ fb: '' }, 'body/source_platforms/fb', 'min_length'],
      [{ fb: 1 }, 'body/source_platforms/fb', 'type'],
      [{ ...atTheLimits, one: 'more' }, 'body/source_platforms', 'max_properties'],
      [['fb', 'meta'], 'body/source_platforms', 'type'],
    ] as const) {
      const body = assertErrorEnvelope(await patch({ source_platforms }), 400);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), [[loc, type]], JSON.stringify(source_platforms).slice(0, 100));
    }
    assert.deepEqual((await show()).source_platforms, atTheLimits, 'nothing changed by a refused request');
    assert.deepEqual((await patch({ source_platforms: {} })).json().source_platforms, {}, 'cleared');
  });

  test('PATCH /admin/v1/clients/{id} sets the settings of the data-driven models, each within its bounds', async () => {
    const client = await service.createClient('Learning');
    const patch = (payload: object) => adminRequest(service.production, { method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, payload });
    const settings = (answer: { json: () => Record<string, unknown> }) => {
      const { channel_grouping, training_days, markov_order } = answer.json();
      return { channel_grouping, training_days, markov_order };
    };
    const set = await patch({ channel_grouping: 'platform_campaign', training_days: 730, markov_order: 4 });
    assert.equal(set.statusCode, 200, set.body);
    assert.deepEqual(settings(set), { channel_grouping: 'platform_campaign', training_days: 730, markov_order: 4 });
    assert.deepEqual(settings(await patch({ training_days: 1 })), { channel_grouping: 'platform_campaign', training_days: 1, markov_order: 4 }, 'the others kept');
    for (const [payload, loc, msg] of [
      [{ channel_grouping: 'campaign' }, 'body/channel_grouping', 'Must be one of platform, platform_campaign'],
      [{ training_days: 0 }, 'body/training_days', 'Must be at least 1'],
      [{ training_days: 731 }, 'body/training_days', 'Must be at most 730'],
      [{ training_days: 7.5 }, 'body/training_days', null],
      [{ markov_order: 5 }, 'body/markov_order', 'Must be one of 1, 2, 3, 4'],
      [{ markov_order: '2' }, 'body/markov_order', null],
    ] as const) {
      const body = assertErrorEnvelope(await patch(payload), 400);
      assert.deepEqual(body.errors?.map((item) => item.loc), [loc], JSON.stringify(payload));
      if (msg) assert.equal(body.errors?.[0]?.msg, msg);
    }
    const shown = await adminRequest(service.production, { method: 'GET', url: `/admin/v1/clients/${client.client_id}` });
    assert.deepEqual(settings(shown), { channel_grouping: 'platform_campaign', training_days: 1, markov_order: 4 }, 'nothing changed by a refused request');
  });

  test('routes without a body take a Content-Type: application/json and no body', async () => {
    const client = await service.createClient();
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const issued = await service.production.inject({ method: 'POST', url: `/admin/v1/clients/${client.client_id}/api-keys`, headers });
    assert.equal(issued.statusCode, 201, issued.body);
    const revoked = await service.production.inject({
      method: 'DELETE',
      url: `/admin/v1/clients/${client.client_id}/api-keys/${issued.json().key_id}`,
      headers,
    });
    assert.equal(revoked.statusCode, 204, revoked.body);
  });

  test('a missing, wrong or malformed admin token is 401 on every admin route, and changes nothing', async () => {
    const client = await service.createClient();
    const clients = await countClients(service);
    const refused = [
      null,
      '',
      ADMIN_TOKEN,
      `Basic ${ADMIN_TOKEN}`,
      `Bearer ${ADMIN_TOKEN}x`,
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      'Bearer',
      `Bearer ${client.api_key}`,
    ];
    const ownKey = { method: 'DELETE', url: `/admin/v1/clients/${client.client_id}/api-keys/${client.key_id}` } as const;
    for (const authorization of refused) {
      for (const request of [...EVERY_ROUTE, ownKey]) {
        const response = await adminRequest(service.production, request, authorization);
        const body = assertErrorEnvelope(response, 401);
        assert.deepEqual(
          body.errors?.map((item) => item.loc),
          ['header/authorization'],
          `${String(authorization)} on ${request.method} ${request.url}`,
        );
      }
    }
    assert.equal(await countClients(service), clients);
    const list = await listOrders(service.production, client, RANGE);
    assert.equal(list.statusCode, 200, 'the key was not revoked');
  });

  test('the token is compared whole: text after it is not ignored', async () => {
    const clients = await countClients(service);
    for (const authorization of [`Bearer ${ADMIN_TOKEN} trailing`, `Bearer ${ADMIN_TOKEN} ${ADMIN_TOKEN}`]) {
      assertErrorEnvelope(await createClient({ name: 'Acme' }, authorization), 401);
    }
    assert.equal(await countClients(service), clients);
  });

  test('the Bearer scheme is case-insensitive', async () => {
    for (const scheme of ['bearer', 'BEARER']) {
      const response = await createClient({ name: scheme }, `${scheme} ${ADMIN_TOKEN}`);
      assert.equal(response.statusCode, 201, response.body);
    }
  });

  test('an invalid body is 400 naming every problem, and creates nothing', async () => {
    const clients = await countClients(service);
    const cases: [object, [string, string][]][] = [
      [{}, [['body/name', 'required']]],
      [{ name: '' }, [['body/name', 'min_length']]],
      [{ name: '  \t ' }, [['body/name', 'pattern']]],
      [{ name: 'x'.repeat(201) }, [['body/name', 'max_length']]],
      [{ name: 42 }, [['body/name', 'type']]],
      [{ name: null }, [['body/name', 'type']]],
      [{ name: 'Acme', plan: 'gold' }, [['body/plan', 'additional_property']]],
      [{ nom: 'Acme' }, [['body/name', 'required'], ['body/nom', 'additional_property']]],
      [['Acme'], [['body', 'type']]],
    ];
    for (const [payload, expected] of cases) {
      const response = await createClient(payload);
      const body = assertErrorEnvelope(response, 400);
      assert.deepEqual(
        body.errors?.map((item) => [item.loc, item.type]),
        expected,
        JSON.stringify(payload),
      );
    }
    assertErrorEnvelope(
      await service.production.inject({
        method: 'POST',
        url: '/admin/v1/clients',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload: '{"name": ',
      }),
      400,
    );
    assert.equal(await countClients(service), clients);
  });

  test('a malformed client_id or key_id in the path is 400 naming it', async () => {
    const client = await service.createClient();
    const cases: [AdminRequest, string][] = [
      [{ method: 'POST', url: '/admin/v1/clients/abc/api-keys' }, 'path/client_id'],
      [{ method: 'DELETE', url: `/admin/v1/clients/abc/api-keys/${client.key_id}` }, 'path/client_id'],
      [{ method: 'DELETE', url: `/admin/v1/clients/${client.client_id}/api-keys/abc` }, 'path/key_id'],
    ];
    for (const [request, loc] of cases) {
      const body = assertErrorEnvelope(await adminRequest(service.production, request), 400);
      assert.deepEqual(body.errors?.map((item) => [item.loc, item.type]), [[loc, 'format']], request.url);
    }
  });

  test('admin routes are never served by the UAT app', async () => {
    for (const request of EVERY_ROUTE) assertErrorEnvelope(await adminRequest(service.uat, request), 404);
  });
});

describe('admin API without ADMIN_TOKEN', () => {
  let service: TestService;
  before(async () => {
    service = await startService({ ADMIN_TOKEN: '' });
  });
  after(() => service.close());

  test('an empty ADMIN_TOKEN counts as unset', () => {
    assert.equal(loadConfig({ ADMIN_TOKEN: '' }).adminToken, undefined);
    assert.equal(service.config.adminToken, undefined);
  });

  test('every admin route answers 404, whatever the token', async () => {
    for (const authorization of [null, 'Bearer ', `Bearer ${ADMIN_TOKEN}`]) {
      for (const request of EVERY_ROUTE) {
        assertErrorEnvelope(await adminRequest(service.production, request, authorization), 404);
      }
    }
    assert.equal(await countClients(service), 0);
  });
});
