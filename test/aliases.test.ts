import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { AliasConflictError, createOrderRepository } from '../src/orders/repository.js';
import {
  listOrders,
  minimalOrder,
  postAliases,
  postOrders,
  startService,
  type TestClient,
} from './helpers.js';

const service = await startService();
after(() => service.close());

/** A client with orders `ids` stored on production. */
async function clientWithOrders(...ids: string[]): Promise<TestClient> {
  const client = await service.createClient();
  const response = await postOrders(service.production, client, ids.map((id) => minimalOrder(id)));
  assert.equal(response.statusCode, 200, response.body);
  return client;
}

async function aliasesOf(client: TestClient): Promise<Record<string, unknown>> {
  const response = await listOrders(service.production, client, { start_date: '2024-01-01', end_date: '2024-12-31' });
  const orders = response.json().data as { order_id: string; alternate_order_ids: unknown }[];
  return Object.fromEntries(orders.map((order) => [order.order_id, order.alternate_order_ids]));
}

describe('adding aliases', () => {
  test('attaches aliases to existing orders and counts them', async () => {
    const client = await clientWithOrders('a', 'b');
    const response = await postAliases(service.production, client, [
      { order_id: 'a', type: 'shopify', id: '1001' },
      { order_id: 'a', type: 'custom:erp', id: 'E-1' },
      { order_id: 'b', type: 'shopify', id: '1002' },
    ]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), {
      message: 'Added 3 aliases',
      added: 3,
      ignored: 0,
      request_id: response.headers['x-request-id'],
    });
    assert.deepEqual(await aliasesOf(client), {
      a: [
        { type: 'custom:erp', id: 'E-1' },
        { type: 'shopify', id: '1001' },
      ],
      b: [{ type: 'shopify', id: '1002' }],
    });
  });

  test('ignores aliases that are attached already, within and across requests', async () => {
    const client = await clientWithOrders('a');
    await postAliases(service.production, client, [{ order_id: 'a', type: 't', id: '1' }]);
    const response = await postAliases(service.production, client, [
      { order_id: 'a', type: 't', id: '1' },
      { order_id: 'a', type: 't', id: '2' },
      { order_id: 'a', type: 't', id: '2' },
    ]);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().added, 1);
    assert.equal(response.json().ignored, 2);
    assert.deepEqual(await aliasesOf(client), { a: [{ type: 't', id: '1' }, { type: 't', id: '2' }] });
  });

  test('a 404 lists every unknown order_id once, and nothing is stored', async () => {
    const client = await clientWithOrders('a');
    const response = await postAliases(service.production, client, [
      { order_id: 'a', type: 't', id: '1' },
      { order_id: 'ghost', type: 't', id: '2' },
      { order_id: 'phantom', type: 't', id: '3' },
      { order_id: 'ghost', type: 't', id: '4' },
    ]);
    assert.equal(response.statusCode, 404, response.body);
    const body = response.json();
    assert.equal(body.message, '2 orders not found; nothing was stored');
    assert.deepEqual(body.errors, [
      { loc: 'body/aliases/1/order_id', msg: 'Order ghost does not exist', type: 'not_found', order_id: 'ghost' },
      { loc: 'body/aliases/2/order_id', msg: 'Order phantom does not exist', type: 'not_found', order_id: 'phantom' },
    ]);
    assert.deepEqual(await aliasesOf(client), { a: [] });
  });

  test('an alias attached to another order is a 400 naming it, and nothing is stored', async () => {
    const client = await clientWithOrders('a', 'b');
    await postAliases(service.production, client, [{ order_id: 'a', type: 't', id: 'taken' }]);
    const response = await postAliases(service.production, client, [
      { order_id: 'b', type: 't', id: 'free' },
      { order_id: 'b', type: 't', id: 'taken' },
    ]);
    assert.equal(response.statusCode, 400, response.body);
    assert.deepEqual(response.json().errors, [
      { loc: 'body/aliases/1', msg: 'Alias t taken is already attached to order a', type: 'alias_conflict', order_id: 'b' },
    ]);
    assert.deepEqual(await aliasesOf(client), { a: [{ type: 't', id: 'taken' }], b: [] });
  });

  test('one alias for two orders in one request is a 400', async () => {
    const client = await clientWithOrders('a', 'b');
    const response = await postAliases(service.production, client, [
      { order_id: 'a', type: 't', id: 'x' },
      { order_id: 'b', type: 't', id: 'x' },
    ]);
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().errors[0].type, 'alias_conflict');
    assert.deepEqual(await aliasesOf(client), { a: [], b: [] });
  });

  test('the same alias value under another type is another alias', async () => {
    const client = await clientWithOrders('a', 'b');
    const response = await postAliases(service.production, client, [
      { order_id: 'a', type: 'shopify', id: '1' },
      { order_id: 'b', type: 'custom:pos', id: '1' },
    ]);
    assert.equal(response.json().added, 2);
  });

  test('orders of another client are unknown', async () => {
    const owner = await clientWithOrders('mine');
    const other = await service.createClient();
    const response = await postAliases(service.production, other, [{ order_id: 'mine', type: 't', id: '1' }]);
    assert.equal(response.statusCode, 404, response.body);
    assert.deepEqual(await aliasesOf(owner), { mine: [] });
  });
});

describe('alias validation', () => {
  const alias = { order_id: 'a', type: 't', id: '1' };
  const cases: [string, unknown, { loc: string; type: string }[]][] = [
    ['no aliases property', {}, [{ loc: 'body/aliases', type: 'required' }]],
    ['an extra top-level property', { aliases: [alias], extra: 1 }, [{ loc: 'body/extra', type: 'additional_property' }]],
    ['an empty list', { aliases: [] }, [{ loc: 'body/aliases', type: 'min_items' }]],
    ['2501 aliases', { aliases: Array.from({ length: 2501 }, (_, i) => ({ ...alias, id: String(i) })) }, [{ loc: 'body/aliases', type: 'max_items' }]],
    ['an extra alias property', { aliases: [{ ...alias, note: 'x' }] }, [{ loc: 'body/aliases/0/note', type: 'additional_property' }]],
    ['an empty order_id', { aliases: [{ ...alias, order_id: '' }] }, [{ loc: 'body/aliases/0/order_id', type: 'min_length' }]],
    ['an empty type', { aliases: [{ ...alias, type: '' }] }, [{ loc: 'body/aliases/0/type', type: 'min_length' }]],
    ['a missing id', { aliases: [{ order_id: 'a', type: 't' }] }, [{ loc: 'body/aliases/0/id', type: 'required' }]],
    ['a numeric id', { aliases: [{ ...alias, id: 1 }] }, [{ loc: 'body/aliases/0/id', type: 'type' }]],
  ];
  for (const [name, body, expected] of cases) {
    test(`${name} is a 400`, async () => {
      const client = await clientWithOrders('a');
      const response = await service.production.inject({
        method: 'POST',
        url: '/v2/orders/aliases',
        headers: client.headers,
        payload: body as object,
      });
      assert.equal(response.statusCode, 400, response.body);
      assert.deepEqual(response.json().errors.map(({ loc, type }: { loc: string; type: string }) => ({ loc, type })), expected);
      assert.deepEqual(await aliasesOf(client), { a: [] });
    });
  }

  test('2500 aliases are accepted in one request', async () => {
    const client = await clientWithOrders('a');
    const response = await postAliases(service.production, client, Array.from({ length: 2500 }, (_, i) => ({ ...alias, id: String(i) })));
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().added, 2500);
  });
});

test('the repository itself refuses one alias for two orders of one request, storing nothing', async () => {
  const client = await clientWithOrders('a', 'b');
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  await assert.rejects(
    createOrderRepository(service.db).addAliases(tenant, [
      { order_id: 'a', type: 'shop', id: 'same' },
      { order_id: 'b', type: 'other', id: 'x' },
      { order_id: 'b', type: 'shop', id: 'same' },
    ]),
    (error: unknown) => error instanceof AliasConflictError && error.conflicts[0]!.index === 2 && error.conflicts[0]!.attached_to === 'a',
  );
  assert.deepEqual(await aliasesOf(client), { a: [], b: [] });
});
