import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  listOrders,
  makeOrder,
  minimalOrder,
  postAliases,
  postOrders,
  startService,
  type TestClient,
} from './helpers.js';

const service = await startService();
after(() => service.close());

const RANGE = { start_date: '2024-01-01', end_date: '2024-12-31' };
const UNKNOWN_UUID = '9b2f7c1e-4d3a-4e5b-8c6d-7e8f9a0b1c2d';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

type Headers = Record<string, string>;

/** The two API requests every credential check is made on: an upsert and a listing. */
function apiRequests(headers: Headers, orderId = 'auth-probe') {
  return Promise.all([
    postOrders(service.production, { headers }, [minimalOrder(orderId)]),
    listOrders(service.production, { headers }, RANGE),
  ]);
}

/** The orders a client has stored, by order_id. */
async function storedOrders(client: TestClient): Promise<Map<string, Record<string, unknown>>> {
  const response = await listOrders(service.production, client, RANGE);
  assert.equal(response.statusCode, 200, response.body);
  const page = response.json() as { data: Record<string, unknown>[]; total_count: number };
  assert.equal(page.data.length, page.total_count);
  return new Map(page.data.map((order) => [order.order_id as string, order]));
}

function issueKey(client: TestClient) {
  return service.production.inject({ method: 'POST', url: `/admin/v1/clients/${client.client_id}/api-keys`, headers: admin });
}

function revokeKey(clientId: string, keyId: string) {
  return service.production.inject({ method: 'DELETE', url: `/admin/v1/clients/${clientId}/api-keys/${keyId}`, headers: admin });
}

/** What a rejected request tells the caller, less its request id. */
function rejection(response: Awaited<ReturnType<typeof postOrders>>) {
  const { message, errors } = assertErrorEnvelope(response, 401);
  return { message, errors };
}

describe('missing credentials', () => {
  for (const [name, loc] of [
    ['authorization', 'header/authorization'],
    ['data-client-id', 'header/data-client-id'],
  ] as const) {
    test(`a request without ${name} is 401 naming ${loc}`, async () => {
      const client = await service.createClient();
      for (const headers of [
        Object.fromEntries(Object.entries(client.headers).filter(([header]) => header !== name)),
        { ...client.headers, [name]: '' },
        { ...client.headers, [name]: '   ' },
      ]) {
        for (const response of await apiRequests(headers)) {
          const body = assertErrorEnvelope(response, 401);
          assert.equal(body.errors?.length, 1, response.body);
          assert.equal(body.errors[0]!.loc, loc);
        }
      }
    });
  }
});

test('a request without either credential header is 401 naming both', async () => {
  for (const response of await apiRequests({})) {
    const body = assertErrorEnvelope(response, 401);
    assert.equal(body.message, 'Missing Authorization and Data-Client-ID headers');
    assert.deepEqual(body.errors?.map((error) => error.loc), ['header/authorization', 'header/data-client-id']);
  }
});

describe('accepted credentials', () => {
  test('the key is accepted raw, after Basic or Bearer in any case, and the client id in any case', async () => {
    const client = await service.createClient();
    const variants = [
      client.api_key,
      `Basic ${client.api_key}`,
      `Bearer ${client.api_key}`,
      `bearer ${client.api_key}`,
      `BASIC ${client.api_key}`,
      `BeArEr  ${client.api_key}`,
    ];
    for (const [index, authorization] of variants.entries()) {
      for (const clientId of [client.client_id, client.client_id.toUpperCase()]) {
        const [post, list] = await apiRequests({ authorization, 'data-client-id': clientId }, `accepted-${index}`);
        assert.equal(post.statusCode, 200, `${authorization}: ${post.body}`);
        assert.equal(list.statusCode, 200, `${authorization}: ${list.body}`);
      }
    }
    assert.equal((await storedOrders(client)).size, variants.length);
  });
});

describe('rejected credentials', () => {
  test('wrong key, another client key, malformed or unknown client id all get one identical 401', async () => {
    const [client, other] = [await service.createClient(), await service.createClient()];
    const attempts: Record<string, Headers> = {
      'wrong key': { ...client.headers, authorization: `${client.api_key}x` },
      'key of another client': { ...client.headers, authorization: other.api_key },
      'key of another client with Bearer': { ...client.headers, authorization: `Bearer ${other.api_key}` },
      'malformed client id': { ...client.headers, 'data-client-id': 'abc' },
      'unknown client id': { ...client.headers, 'data-client-id': UNKNOWN_UUID },
      'client id with spaces inside': { ...client.headers, 'data-client-id': `${client.client_id} x` },
      'scheme without a key': { ...client.headers, authorization: 'Bearer' },
      'UAT test credentials on production': { authorization: 'None', 'data-client-id': 'test' },
      'SQL in the client id': { ...client.headers, 'data-client-id': "' OR 1=1 --" },
    };
    const answers: [string, ReturnType<typeof rejection>][] = [];
    for (const [attempt, headers] of Object.entries(attempts)) {
      const [post, list] = await apiRequests(headers, `rejected-${answers.length}`);
      answers.push([`${attempt} (upsert)`, rejection(post)], [`${attempt} (list)`, rejection(list)]);
    }
    const [[, first], ...rest] = answers as [[string, ReturnType<typeof rejection>], ...typeof answers];
    assert.equal(first.errors?.length, 1);
    for (const [attempt, answer] of rest) assert.deepEqual(answer, first, attempt);
  });

  test('a request that fails authentication stores nothing', async () => {
    const [client, other] = [await service.createClient(), await service.createClient()];
    for (const headers of [
      { ...client.headers, authorization: other.api_key },
      { ...client.headers, authorization: 'nope' },
      { authorization: client.api_key },
    ]) {
      const response = await postOrders(service.production, { headers }, [makeOrder('never-stored')]);
      assertErrorEnvelope(response, 401);
      const aliases = await postAliases(service.production, { headers }, [{ order_id: 'x', type: 'a', id: '1' }]);
      assertErrorEnvelope(aliases, 401);
    }
    assert.equal((await storedOrders(client)).size, 0);
    assert.equal((await storedOrders(other)).size, 0);
  });
});

describe('API keys', () => {
  test('a revoked key stops working at once; another key of the client keeps working', async () => {
    const client = await service.createClient();
    const issued = await issueKey(client);
    assert.equal(issued.statusCode, 201, issued.body);
    const second = issued.json() as { api_key: string; key_id: string };
    assert.notEqual(second.api_key, client.api_key);
    assert.notEqual(second.key_id, client.key_id);
    const secondHeaders = { ...client.headers, authorization: second.api_key };
    const working = (await apiRequests(client.headers, 'before-revocation')).map((response) => response.statusCode);
    assert.deepEqual(working, [200, 200]);

    const revoked = await revokeKey(client.client_id, client.key_id);
    assert.equal(revoked.statusCode, 204, revoked.body);
    assert.equal(revoked.body, '');

    const refused = await apiRequests(client.headers, 'after-revocation');
    const reference = await apiRequests({ ...client.headers, authorization: 'wrong' });
    refused.forEach((response, index) => assert.deepEqual(rejection(response), rejection(reference[index]!)));
    const [post, list] = await apiRequests(secondHeaders, 'with-second-key');
    assert.equal(post.statusCode, 200, post.body);
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual([...(await storedOrders({ ...client, headers: secondHeaders })).keys()].sort(), [
      'before-revocation',
      'with-second-key',
    ]);

    const revokedAt = async () =>
      (await service.db.query<{ revoked_at: Date }>('SELECT revoked_at FROM api_keys WHERE client_id = $1 AND key_id = $2', [client.client_id, client.key_id]))[0]!.revoked_at;
    const first = await revokedAt();
    assert.ok(first instanceof Date);
    const again = await revokeKey(client.client_id, client.key_id);
    assert.equal(again.statusCode, 204, again.body);
    assert.equal((await revokedAt()).getTime(), first.getTime(), 'revoking again keeps the time of the first revocation');
    assertErrorEnvelope((await apiRequests(client.headers))[1], 401);
  });

  test('revoking an unknown key, or a key through another client, is a 404 and revokes nothing', async () => {
    const [client, other] = [await service.createClient(), await service.createClient()];
    assertErrorEnvelope(await revokeKey(client.client_id, UNKNOWN_UUID), 404);
    assertErrorEnvelope(await revokeKey(other.client_id, client.key_id), 404);
    assertErrorEnvelope(await revokeKey(UNKNOWN_UUID, client.key_id), 404);
    const [post, list] = await apiRequests(client.headers);
    assert.equal(post.statusCode, 200, post.body);
    assert.equal(list.statusCode, 200, list.body);
  });

  test('keys are stored only as hashes and are random', async () => {
    const client = await service.createClient();
    const more = await Promise.all([issueKey(client), issueKey(client)]);
    const keys = [client.api_key, ...more.map((response) => (response.json() as { api_key: string }).api_key)];
    assert.equal(new Set(keys).size, keys.length);
    for (const key of keys.slice(1)) assert.ok(randomBits(keys[0]!, key) >= 128, `${keys[0]} / ${key}`);

    const rows = await service.db.query<Record<string, unknown>>('SELECT * FROM api_keys');
    assert.ok(rows.length >= keys.length);
    for (const row of rows) {
      for (const value of Object.values(row)) {
        const stored = value instanceof Uint8Array ? Buffer.from(value) : Buffer.from(String(value));
        for (const key of keys) {
          assert.ok(!stored.includes(key), 'a key is stored in plain text');
          assert.ok(!stored.toString('hex').includes(Buffer.from(key).toString('hex')));
          assert.ok(!stored.toString('base64url').includes(key.slice(-20)), 'a key is stored base64-encoded');
        }
      }
    }
  });
});

/**
 * A lower bound for the random bits of `key`: what follows the prefix it shares with another
 * key, at the bits per character of its alphabet (hexadecimal or base64url).
 */
function randomBits(key: string, other: string): number {
  let shared = 0;
  while (shared < key.length && key[shared] === other[shared]) shared++;
  const rest = key.slice(shared);
  const bitsPerCharacter = /^[0-9a-f]*$/i.test(rest) ? 4 : /^[A-Za-z0-9_-]*$/.test(rest) ? 6 : 0;
  return rest.length * bitsPerCharacter;
}

describe('tenant isolation', () => {
  test("a client never sees, changes or learns of another client's orders and aliases", async () => {
    const [a, b] = [await service.createClient(), await service.createClient()];
    const original = makeOrder('shared-id', { alternate_order_ids: [{ type: 'shopify', id: 'S-1' }] });
    const response = await postOrders(service.production, a, [original, makeOrder('a-only')]);
    assert.equal(response.statusCode, 200, response.body);

    const empty = await listOrders(service.production, b, RANGE);
    assert.equal(empty.statusCode, 200, empty.body);
    assert.deepEqual(empty.json(), { data: [], page: 1, page_size: 0, total_pages: 0, total_count: 0 });

    // Same order_id and same alias from B: B's own new order, no conflict with A's alias.
    const mine = minimalOrder('shared-id', { customer_id: 'b-customer', alternate_order_ids: [{ type: 'shopify', id: 'S-1' }] });
    const upsert = await postOrders(service.production, b, [mine]);
    assert.equal(upsert.statusCode, 200, upsert.body);
    assert.equal(upsert.json().inserted, 1);
    assert.equal(upsert.json().updated, 0);

    // B cannot attach aliases to A's orders: for B they do not exist.
    const alias = await postAliases(service.production, b, [{ order_id: 'a-only', type: 'custom:x', id: '1' }]);
    assert.deepEqual(
      assertErrorEnvelope(alias, 404).errors?.map((item) => item.order_id),
      ['a-only'],
    );

    const ofA = await storedOrders(a);
    assert.deepEqual([...ofA.keys()].sort(), ['a-only', 'shared-id']);
    const { created_at: _c, updated_at: _u, ...storedA } = ofA.get('shared-id')!;
    assert.deepEqual(storedA, original);

    const ofB = await storedOrders(b);
    assert.deepEqual([...ofB.keys()], ['shared-id']);
    assert.equal(ofB.get('shared-id')!.customer_id, 'b-customer');
    assert.deepEqual(ofB.get('shared-id')!.alternate_order_ids, [{ type: 'shopify', id: 'S-1' }]);
  });
});

test('GET /v1/client names the client of the credentials and the environment of the port; nobody else', async () => {
  const client = await service.createClient('Whose shop');
  const patched = await service.production.inject({ method: 'PATCH', url: `/admin/v1/clients/${client.client_id}`, headers: admin, payload: { time_zone: 'Asia/Tokyo' } });
  assert.equal(patched.statusCode, 200, patched.body);
  const mine = { client_id: client.client_id, name: 'Whose shop', time_zone: 'Asia/Tokyo' };
  for (const [port, environment] of [[service.production, 'production'], [service.uat, 'uat']] as const) {
    const answer = await port.inject({ method: 'GET', url: '/v1/client', headers: client.headers });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.deepEqual(answer.json(), { ...mine, environment });
  }
  const testCredentials = await service.uat.inject({ method: 'GET', url: '/v1/client', headers: { authorization: 'None', 'data-client-id': 'test' } });
  assert.deepEqual(testCredentials.json(), { client_id: 'test', name: 'UAT test credentials', time_zone: 'UTC', environment: 'uat' });
  const other = await service.createClient();
  assertErrorEnvelope(await service.production.inject({ method: 'GET', url: '/v1/client', headers: { ...client.headers, 'data-client-id': other.client_id } }), 401);
  assertErrorEnvelope(await service.production.inject({ method: 'GET', url: '/v1/client', headers: { 'data-client-id': client.client_id } }), 401);
});
