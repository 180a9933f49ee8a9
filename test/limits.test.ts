import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../bench/server.js';
import { AMOUNT_BOUNDS, ORDER_LIST_LIMITS } from '../src/orders/schema.js';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  createChildStore,
  hourlySpend,
  listOrders,
  minimalOrder,
  postAliases,
  postOrders,
  startCli,
  startService,
  type ChildStore,
  type TestClient,
  type TestService,
} from './helpers.js';

const UAT_TEST_CREDENTIALS = { authorization: 'None', 'data-client-id': 'test' };

/** A JSON array of `count` copies of `item`, written without building the array. */
const arrayOf = (count: number, item: string) => `[${`${item},`.repeat(count - 1)}${item}]`;
const MILLION = 1_000_000;
/** Items that are not mostly braces, so that a body of them is parsed and its lengths checked. */
const SPARSE_ITEM = '{"unknown_field":1234567}';

describe('request limits', () => {
  let service: TestService;
  let client: TestClient;

  before(async () => {
    // Unlimited: a write budget would refuse the later bodies unread; these tests read them.
    service = await startService({ ORDER_WRITE_BYTES_PER_MINUTE: '0', SPEND_WRITE_BYTES_PER_MINUTE: '0' });
    client = await service.createClient();
  });
  after(() => service.close());

  const post = (url: string, payload: string, headers: Record<string, string> = client.headers) =>
    service.production.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload });

  test('a batch over its maximum is refused for its length alone, items unread', async () => {
    const cases = [
      { url: '/v2/orders', body: arrayOf(MILLION, SPARSE_ITEM), status: 400, loc: 'body', msg: 'At most 1000 orders per request: split the batch' },
      { url: '/v2/orders/aliases', body: `{"aliases":${arrayOf(2501, SPARSE_ITEM)}}`, status: 400, loc: 'body/aliases', msg: 'Must have at most 2500 items' },
      { url: '/v1/spend_hourly', body: `{"data":${arrayOf(1001, SPARSE_ITEM)}}`, status: 422, loc: 'body/data', msg: 'Must have at most 1000 items' },
      { url: '/v1/spend', body: `{"data":${arrayOf(1001, SPARSE_ITEM)}}`, status: 422, loc: 'body/data', msg: 'Must have at most 1000 items' },
      { url: '/v1/touchpoints', body: `{"data":${arrayOf(1001, SPARSE_ITEM)}}`, status: 422, loc: 'body/data', msg: 'Must have at most 1000 items' },
      { url: '/v1/identities', body: `{"data":${arrayOf(1001, SPARSE_ITEM)}}`, status: 422, loc: 'body/data', msg: 'Must have at most 1000 items' },
    ];
    for (const { url, body, status, loc, msg } of cases) {
      const envelope = assertErrorEnvelope(await post(url, body), status);
      assert.equal(envelope.message, 'Invalid request: 1 problem found', url);
      assert.deepEqual(envelope.errors, [{ loc, msg, type: 'max_items' }], url);
    }
  });

  test('the lists of an order are bounded, each refused for its length before its items are read', async () => {
    const order = (overrides: Record<string, unknown>) => JSON.stringify([minimalOrder('long-lists', overrides)]);
    const sparse = (count: number) => JSON.parse(arrayOf(count, SPARSE_ITEM)) as unknown[];
    const cases = [
      ['products', ORDER_LIST_LIMITS.products],
      ['refunds', ORDER_LIST_LIMITS.refunds],
      ['alternate_order_ids', ORDER_LIST_LIMITS.aliases],
    ] as const;
    for (const [field, limit] of cases) {
      const { errors } = assertErrorEnvelope(await post('/v2/orders', order({ [field]: sparse(limit + 1) })), 400);
      assert.deepEqual(errors, [{ loc: `body/0/${field}`, msg: `Must have at most ${limit} items`, type: 'max_items', order_id: 'long-lists' }]);
    }
    for (const field of ['discount_codes', 'order_tags']) {
      const codes = Array.from({ length: ORDER_LIST_LIMITS.codesOrTags + 1 }, (_, n) => `code-${n}`);
      const { errors } = assertErrorEnvelope(await post('/v2/orders', order({ [field]: codes })), 400);
      assert.deepEqual(errors, [{ loc: `body/0/${field}`, msg: `Must have at most ${ORDER_LIST_LIMITS.codesOrTags} items`, type: 'max_items', order_id: 'long-lists' }]);
    }
    const atTheLimits = minimalOrder('lists-at-their-limits', {
      products: Array.from({ length: ORDER_LIST_LIMITS.products }, (_, n) => ({ id: `p${n}`, name: 'P', quantity: 1, price: 1 })),
      order_tags: Array.from({ length: ORDER_LIST_LIMITS.codesOrTags }, (_, n) => `tag-${n}`),
    });
    assert.equal((await postOrders(service.production, client, [atTheLimits])).statusCode, 200);
  });

  test('an error answer lists the first 100 problems and says how many there were', async () => {
    // Each order lacks its 7 other required fields.
    const orders = Array.from({ length: 1000 }, (_, n) => ({ order_id: `o${n}` }));
    const response = await postOrders(service.production, client, orders);
    const envelope = assertErrorEnvelope(response, 400);
    assert.equal(envelope.message, 'Invalid request: 7000 problems found; the first 100 are listed');
    assert.equal(envelope.errors!.length, 100);
    assert.deepEqual(envelope.errors![0], { loc: 'body/0/customer_id', msg: 'Field required', type: 'required', order_id: 'o0' });
    assert.equal(envelope.errors![99]!.order_id, 'o14');
    assert.ok(response.body.length < 20_000, `answer of ${response.body.length} bytes`);

    // Problems a handler finds (duplicate spend keys) are listed the same way.
    const spend = await post('/v1/spend_hourly', JSON.stringify({ data: Array.from({ length: 1000 }, () => hourlySpend('same key')) }));
    const spendEnvelope = assertErrorEnvelope(spend, 422);
    assert.equal(spendEnvelope.message, 'Invalid request: 999 problems found; the first 100 are listed');
    assert.equal(spendEnvelope.errors!.length, 100);
  });

  test('past 10,000 problems validation stops counting, and says so', async () => {
    const products = Array.from({ length: 1000 }, () => ({ unknown: 1 }));
    const orders = Array.from({ length: 10 }, (_, n) => minimalOrder(`many-${n}`, { products }));
    const envelope = assertErrorEnvelope(await postOrders(service.production, client, orders), 400);
    // Each product has 5 problems: 4 fields missing, 1 not allowed; 2,000 products are enough.
    assert.equal(envelope.message, 'Invalid request: 10000 or more problems found; the first 100 are listed');
    assert.equal(envelope.errors!.length, 100);
  });

  test('a large body that is mostly objects and arrays is refused unread, on every route', async () => {
    const empties = arrayOf(MILLION, '{}');
    for (const [url, status] of [['/v2/orders', 400], ['/v2/orders/aliases', 400], ['/v1/spend_hourly', 422], ['/v1/exports/data-export', 422]] as const) {
      const envelope = assertErrorEnvelope(await post(url, empties), status);
      assert.equal(envelope.message, 'Request body is mostly objects and arrays (more than one in 10 bytes), unlike any request of this API; it was not read');
      assert.equal(envelope.errors, null);
    }
    const nested = `[{"products":${arrayOf(30_000, '[]')}}]`;
    assertErrorEnvelope(await post('/v2/orders', nested), 400);
    // A large body of real orders is not.
    const orders = Array.from({ length: 1000 }, (_, n) => minimalOrder(`dense-${n}`));
    assert.ok(JSON.stringify(orders).length > 64 * 1024);
    assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
  });

  test('a body costly to parse (a wide object, deep nesting, a run of short values) is refused unread, from the test credentials too', async () => {
    const wide = (keys: number) => `{${Array.from({ length: keys }, (_, n) => `"k${n}":1`).join(',')}}`;
    const refusals: [string, string, string][] = [
      ['a million keys', `[${wide(MILLION)}]`, 'Request body has an object of more than 1000 keys, unlike any request of this API; it was not read'],
      ['1,001 keys in a small body', `[${wide(1001)}]`, 'Request body has an object of more than 1000 keys, unlike any request of this API; it was not read'],
      ['64,000 arrays deep', `${'['.repeat(64_000)}${']'.repeat(64_000)}`, 'Request body nests objects and arrays more than 64 deep, unlike any request of this API; it was not read'],
      ['15 million numbers', arrayOf(15 * MILLION, '1'), 'Request body is mostly short values (more than one in 8 bytes), unlike any request of this API; it was not read'],
    ];
    const testCredentialsLimit = 4 * 1024 * 1024;
    for (const [what, body, message] of refusals) {
      for (const [app, headers] of [[service.production, client.headers], [service.uat, UAT_TEST_CREDENTIALS]] as const) {
        const started = performance.now();
        const answer = await app.inject({ method: 'POST', url: '/v2/orders', headers: { ...headers, 'content-type': 'application/json' }, payload: body });
        // The test credentials' bodies past their own size limit are refused for it first.
        const [status, expected] =
          app === service.uat && body.length > testCredentialsLimit
            ? [413, `Request body is larger than the limit of ${testCredentialsLimit} bytes for the UAT test credentials`]
            : [400, message];
        const envelope = assertErrorEnvelope(answer, status);
        assert.equal(envelope.message, expected, what);
        assert.equal(envelope.errors, null, what);
        // Far under what parsing them took (seconds for the million keys); a generous bound for a loaded machine.
        assert.ok(performance.now() - started < 2_000, `${what}: ${performance.now() - started} ms`);
      }
    }
    // Up to the limits, a body is read, and refused for what it holds.
    const widest = assertErrorEnvelope(await post('/v2/orders', `[${wide(1000)}]`), 400);
    assert.match(widest.message, /^Invalid request: \d+ problems found/);
    const deepest = `${'['.repeat(64)}${']'.repeat(64)}`;
    assert.match(assertErrorEnvelope(await post('/v2/orders', deepest), 400).message, /^Invalid request/);
  });

  test('order amounts lie within plus or minus the maximum, as exact decimals, and are stored to 12 decimal places', async () => {
    const cases: [string, string, string][] = [
      ['-100000000000000.0000001', 'minimum', `Must be at least ${AMOUNT_BOUNDS.minimum}`],
      ['-1e15', 'minimum', `Must be at least ${AMOUNT_BOUNDS.minimum}`],
      ['100000000000000.001', 'maximum', `Must be at most ${AMOUNT_BOUNDS.maximum}`],
      // Above the maximum as sent, though rounded to 12 places it would be the maximum.
      ['100000000000000.0000000000001', 'maximum', `Must be at most ${AMOUNT_BOUNDS.maximum}`],
    ];
    for (const [amount, type, msg] of cases) {
      const order = JSON.stringify(minimalOrder('amounts')).replace('"price":10', `"price":${amount}`);
      const { errors } = assertErrorEnvelope(await post('/v2/orders', `[${order}]`), 400);
      assert.deepEqual(errors, [{ loc: 'body/0/products/0/price', msg, type, order_id: 'amounts' }], amount);
    }
    const stored = await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' });
    assert.equal(stored.json().data.filter((order: { order_id: string }) => order.order_id === 'amounts').length, 0, 'nothing stored');

    const inBounds = JSON.stringify(minimalOrder('amounts', { discount_amount: -12.5 }))
      .replace('"price":10', '"price":0.123456789012')
      .replace('"tax":0', '"tax":1e-12')
      .replace('"purchase_total":10', '"purchase_total":-100000000000000.000000000000');
    const answer = await post('/v2/orders', `[${inBounds}]`);
    assert.equal(answer.statusCode, 200);
    assert.deepEqual(answer.json().warnings, [], 'nothing past 12 decimal places: nothing rounded');
    const [order] = (await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' })).json().data.filter(
      (row: { order_id: string }) => row.order_id === 'amounts',
    );
    assert.equal(order.products[0].price, 0.123456789012);
    assert.equal(order.tax, 1e-12);
    assert.equal(order.purchase_total, -100000000000000);
    assert.equal(order.discount_amount, -12.5);

    // Past 12 places, an amount within the bounds is taken, rounded (half away from zero), and said so.
    const rounded: [string, string][] = [
      ['1e-16383', '0'],
      ['0.1234567890123', '0.123456789012'],
      ['1.0000000000000000000001', '1'],
      ['99999999999999.9999999999999', '100000000000000'],
      ['-0.0000000000005', '-0.000000000001'],
    ];
    for (const [amount, text] of rounded) {
      const sent = JSON.stringify(minimalOrder('amounts')).replace('"price":10', `"price":${amount}`);
      const response = await post('/v2/orders', `[${sent}]`);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(
        response.json().warnings,
        [{ order_id: 'amounts', loc: 'body/0/products/0/price', msg: `Rounded to 12 decimal places: stored as ${text}` }],
        amount,
      );
      const [row] = await service.db.query<{ price: string }>(
        "SELECT body->'products'->0->>'price' AS price FROM orders WHERE client_id = $1 AND order_id = 'amounts'",
        [client.client_id],
      );
      assert.equal(row!.price, text, amount);
    }
  });

  test('a stored order reads back in at most a small multiple of the bytes it was sent in', async () => {
    // 1e-16383 is 8 bytes sent; stored as it was written it would read back as 16,385 characters.
    const tiny = { quantity: '1e-16383', price: '1e-16383' };
    const products = Array.from({ length: ORDER_LIST_LIMITS.products }, (_, n) => `{"id":"${n}","name":"n","quantity":${tiny.quantity},"price":${tiny.price}}`);
    const order = JSON.stringify(minimalOrder('read-back', { time_of_purchase: '2024-04-01T00:00:00Z' })).replace(
      /"products":\[[^\]]*\]/,
      `"products":[${products.join(',')}]`,
    );
    const sent = `[${order}]`;
    const answer = await post('/v2/orders', sent);
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.json().warnings.length, 2 * ORDER_LIST_LIMITS.products, 'each amount rounded is said so');
    const [row] = await service.db.query<{ bytes: number }>(
      "SELECT octet_length(body::text) AS bytes FROM orders WHERE client_id = $1 AND order_id = 'read-back'",
      [client.client_id],
    );
    assert.ok(row!.bytes < sent.length, `${sent.length} bytes sent, ${row!.bytes} stored`);
    const read = await listOrders(service.production, client, { start_date: '2024-04-01', end_date: '2024-04-01' });
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().data[0].products.length, ORDER_LIST_LIMITS.products);
    assert.ok(read.json().data[0].products.every((product: { quantity: number; price: number }) => product.quantity === 0 && product.price === 0));
    assert.ok(read.body.length < 3 * sent.length, `${sent.length} bytes sent, ${read.body.length} read`);
  });

  test('every array a request may hold is bounded (maxItems), on every route', async () => {
    const document = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json();
    const unbounded: string[] = [];
    const visit = (schema: Record<string, unknown> | undefined, where: string) => {
      if (!schema || typeof schema !== 'object') return;
      if (schema.type === 'array' && schema.maxItems === undefined) unbounded.push(where);
      for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>)) visit(property, `${where}.${name}`);
      visit(schema.items as Record<string, unknown> | undefined, `${where}[]`);
    };
    let bodies = 0;
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const schema = operation.requestBody?.content['application/json']?.schema;
        if (schema) bodies++;
        visit(schema, `${method.toUpperCase()} ${path}`);
      }
    }
    assert.ok(bodies >= 5, `${bodies} request bodies found`);
    assert.deepEqual(unbounded, []);
  });

  test('the UAT test credentials send at most 4 MiB a body: past it a 413 at once, announced or chunked', async () => {
    const limit = 4 * 1024 * 1024;
    const message = `Request body is larger than the limit of ${limit} bytes for the UAT test credentials`;
    const headers = { ...UAT_TEST_CREDENTIALS, 'content-type': 'application/json' };
    const announced = await service.uat.inject({ method: 'POST', url: '/v2/orders', headers, payload: arrayOf(Math.ceil((limit + 1) / (SPARSE_ITEM.length + 1)), SPARSE_ITEM) });
    assert.equal(assertErrorEnvelope(announced, 413).message, message);
    // A thousand times the limit, sent without a length, made as it is read: refused once past the limit.
    let pulled = 0;
    const chunk = Buffer.from(`${SPARSE_ITEM},`.repeat(Math.floor(65_536 / (SPARSE_ITEM.length + 1))));
    const chunks = (1000 * limit) / chunk.length;
    const stream = Readable.from(
      (function* () {
        yield Buffer.from('[');
        for (; pulled < chunks; pulled++) yield chunk;
      })(),
    );
    const chunked = await service.uat.inject({ method: 'POST', url: '/v2/orders', headers, payload: stream });
    assert.equal(assertErrorEnvelope(chunked, 413).message, message);
    assert.ok(pulled * chunk.length < 2 * limit, `${pulled} chunks of ${chunk.length} bytes read`);
    // Production's credentials keep the 32 MiB limit.
    const production = await post('/v2/orders', arrayOf(Math.ceil((limit + 1) / (SPARSE_ITEM.length + 1)), SPARSE_ITEM));
    assert.equal(assertErrorEnvelope(production, 400).message, 'Invalid request: 1 problem found');
  });

  test('the anonymous UAT test credentials are refused alike', async () => {
    const uat = await service.uat.inject({
      method: 'POST',
      url: '/v2/orders',
      headers: { ...UAT_TEST_CREDENTIALS, 'content-type': 'application/json' },
      payload: arrayOf(100_000, SPARSE_ITEM),
    });
    assert.deepEqual(assertErrorEnvelope(uat, 400).errors, [{ loc: 'body', msg: 'At most 1000 orders per request: split the batch', type: 'max_items' }]);
    assert.equal((await postAliases(service.uat, { headers: UAT_TEST_CREDENTIALS }, JSON.parse(arrayOf(2501, SPARSE_ITEM)))).statusCode, 400);
  });
});

/** The peak resident memory of a process so far, in bytes (Linux). */
function peakRss(pid: number): number {
  const kib = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) * 1024;
}

describe('huge anonymous requests against a running server', () => {
  let store: ChildStore;
  let server: ChildProcess;
  let port: number;
  let uatPort: number;

  before(async () => {
    store = await createChildStore();
    [port, uatPort] = [await freePort(), await freePort()];
    server = await startCli('serve', {
      ...store.env,
      PORT: String(port),
      UAT_PORT: String(uatPort),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      // The UAT credentials' budget (30 MB a minute) would refuse the later bodies unread: this reads them.
      ORDER_WRITE_BYTES_PER_MINUTE: '0',
      SPEND_WRITE_BYTES_PER_MINUTE: '0',
    }, 'tributary is ready');
  });
  after(async () => {
    server.kill('SIGTERM');
    if (server.exitCode === null) await once(server, 'exit');
    await store.cleanup();
  });

  test('are refused at once, the process keeps its memory, and production keeps answering meanwhile', async (t) => {
    const created = await fetch(`http://127.0.0.1:${port}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'production shop' }),
    });
    const shop = (await created.json()) as { client_id: string; api_key: string };
    const headers = { authorization: shop.api_key, 'data-client-id': shop.client_id, 'content-type': 'application/json' };
    const productionOrder = (n: number) =>
      fetch(`http://127.0.0.1:${port}/v2/orders`, { method: 'POST', headers, body: JSON.stringify([minimalOrder(`meanwhile-${n}`)]) });
    assert.equal((await productionOrder(0)).status, 200);

    const attacks = [
      { url: '/v2/orders', body: arrayOf(MILLION, '{}'), status: 400 },
      // 26 MB: past the test credentials' 4 MiB, refused for its size before it is read.
      { url: '/v2/orders', body: arrayOf(MILLION, SPARSE_ITEM), status: 413 },
      { url: '/v2/orders/aliases', body: `{"aliases":${arrayOf(MILLION, '{}')}}`, status: 400 },
      { url: '/v1/spend_hourly', body: `{"data":${arrayOf(MILLION, '{}')}}`, status: 422 },
    ];
    // On the embedded store the peak is set at start-up, when PGlite opens its WebAssembly heap,
    // so this bound bites on PostgreSQL; a body that cost a multiple of that heap would show on both.
    const before = peakRss(server.pid!);
    let largest = 0;
    let served = 0;
    let attacking = true;
    const production = (async () => {
      for (let n = 1; attacking; n++) {
        const answer = await productionOrder(n);
        assert.equal(answer.status, 200, await answer.text());
        served++;
      }
    })();
    try {
      for (const { url, body, status } of attacks) {
        const answer = await fetch(`http://127.0.0.1:${uatPort}${url}`, {
          method: 'POST',
          headers: { ...UAT_TEST_CREDENTIALS, 'content-type': 'application/json' },
          body,
        });
        const text = await answer.text();
        assert.equal(answer.status, status, text.slice(0, 300));
        assert.ok(text.length < 1000, `answer of ${text.length} bytes`);
        // The most a body may cost: a small multiple of its size.
        largest = Math.max(largest, body.length);
        const grown = peakRss(server.pid!) - before;
        t.diagnostic(`${url}, ${(body.length / 1e6).toFixed(1)} MB: ${answer.status}; peak memory so far +${(grown / 1e6).toFixed(1)} MB`);
        assert.ok(grown < 8 * largest, `peak memory grew ${(grown / 1e6).toFixed(1)} MB, the largest body being ${(largest / 1e6).toFixed(1)} MB`);
      }
    } finally {
      attacking = false;
      await production;
    }
    assert.ok(served > 0, 'production answered while the attacks were refused');
  });
});

describe('write budgets', () => {
  let service: TestService;
  let client: TestClient;
  let address: string;

  before(async () => {
    service = await startService({ ORDER_WRITE_BYTES_PER_MINUTE: '2000' });
    client = await service.createClient();
    address = await service.production.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => service.close());

  /** Sends the headers of a POST announcing `announced` bytes and `body`, and reads the status line of the answer. */
  async function announce(announced: number, body: string): Promise<string> {
    const { hostname, port } = new URL(address);
    const socket = net.connect(Number(port), hostname);
    await once(socket, 'connect');
    const headers = Object.entries({ ...client.headers, 'content-type': 'application/json', 'content-length': String(announced) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`POST /v2/orders HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n${headers}\r\n${body}`);
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    // The server waits for the announced body before closing (a lingering close): the head is enough.
    while (!answer.includes('\r\n')) await once(socket, 'data');
    socket.destroy();
    return answer.split('\r\n')[0]!;
  }

  test('a body past the budget is refused as it is announced, before it is read', async () => {
    const order = JSON.stringify([minimalOrder('budget-1')]);
    assert.equal(await announce(Buffer.byteLength(order), order), 'HTTP/1.1 200 OK');
    // 1,800 more bytes announced, none sent: the answer cannot have waited for them.
    assert.equal(await announce(1800, ''), 'HTTP/1.1 429 Too Many Requests');
    // Larger than the whole budget: 413, also unread.
    assert.equal(await announce(5000, ''), 'HTTP/1.1 413 Payload Too Large');
  });
});
