import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { LINGER_MAX_BYTES } from '../src/http/lingering-close.js';
import {
  UUID,
  assertErrorEnvelope,
  createTestDatabase,
  listOrders,
  minimalOrder,
  startService,
  type TestClient,
  type TestService,
} from './helpers.js';

const RANGE = { start_date: '2024-01-01', end_date: '2024-12-31' };

/** Posts `payload` as it is, with the client's credentials and `contentType` (none when null). */
function postRaw(service: TestService, client: TestClient, payload: string, contentType: string | null = 'application/json') {
  const headers = contentType === null ? client.headers : { ...client.headers, 'content-type': contentType };
  return service.production.inject({ method: 'POST', url: '/v2/orders', headers, payload });
}

async function orderCount(service: TestService): Promise<number> {
  const [row] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders');
  return row!.n;
}

describe('HTTP behaviour', () => {
  let service: TestService;
  let client: TestClient;
  before(async () => {
    service = await startService();
    client = await service.createClient();
  });
  after(() => service.close());

  /** Asserts that `send` is refused with `status` and the envelope, and stores no order. */
  async function refusedAndNothingStored(status: number, send: () => ReturnType<typeof postRaw>) {
    const count = await orderCount(service);
    const body = assertErrorEnvelope(await send(), status);
    assert.equal(await orderCount(service), count);
    return body;
  }

  describe('probes', () => {
    test('/healthz and /readyz answer 200 without credentials on both apps', async () => {
      for (const app of [service.production, service.uat]) {
        for (const url of ['/healthz', '/readyz']) {
          const response = await app.inject({ method: 'GET', url });
          assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
          assert.match(String(response.headers['x-request-id']), UUID);
        }
      }
    });

    test('/readyz answers 503 with the envelope and Retry-After when the database is gone', async () => {
      const store = await createTestDatabase();
      const app = await buildApp({ config: service.config, db: store.db, environment: 'production' });
      try {
        assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
        await store.drop();
        const response = await app.inject({ method: 'GET', url: '/readyz' });
        assertErrorEnvelope(response, 503);
        assert.match(String(response.headers['retry-after']), /^\d+$/);
        assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process is still alive');
      } finally {
        await app.close();
      }
    });
  });

  describe('request ids', () => {
    test('every response carries a fresh X-Request-Id', async () => {
      const responses = await Promise.all([
        service.production.inject({ method: 'GET', url: '/healthz' }),
        service.production.inject({ method: 'GET', url: '/openapi.json' }),
        service.production.inject({ method: 'GET', url: '/nowhere' }),
        listOrders(service.production, client, RANGE),
        listOrders(service.production, { headers: {} }, RANGE),
        postRaw(service, client, JSON.stringify([minimalOrder('request-id')])),
        postRaw(service, client, '[', 'text/plain'),
        service.uat.inject({ method: 'GET', url: '/healthz' }),
      ]);
      const ids = responses.map((response) => String(response.headers['x-request-id']));
      for (const id of ids) assert.match(id, UUID);
      assert.equal(new Set(ids).size, ids.length);
    });

    test('a well-formed incoming X-Request-Id is echoed and used in error bodies', async () => {
      const id = randomUUID();
      const ok = await service.production.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': id } });
      assert.equal(ok.headers['x-request-id'], id);
      const refused = await listOrders(service.production, { headers: { 'x-request-id': id } }, RANGE);
      assert.equal(assertErrorEnvelope(refused, 401).request_id, id);
      const upsert = await service.production.inject({
        method: 'POST',
        url: '/v2/orders',
        headers: { ...client.headers, 'x-request-id': id },
        payload: [minimalOrder('echo')],
      });
      assert.equal(upsert.json().request_id, id);
      const upper = randomUUID().toUpperCase();
      const echoed = await service.production.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': upper } });
      assert.equal(echoed.headers['x-request-id'], upper, 'echoed exactly as sent');
    });

    test('a malformed incoming X-Request-Id is replaced by a new UUID', async () => {
      for (const incoming of ['not-a-uuid', '', `${randomUUID()}x`, "'; DROP TABLE orders; --"]) {
        const response = await service.production.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': incoming } });
        const body = assertErrorEnvelope(response, 404);
        assert.notEqual(body.request_id, incoming);
      }
    });
  });

  describe('OpenAPI', () => {
    test('GET /openapi.json serves an OpenAPI 3.1 document of the API, without credentials', async () => {
      const response = await service.production.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(response.statusCode, 200, response.body);
      const document = response.json() as { openapi: string; paths: Record<string, Record<string, unknown>> };
      assert.equal(document.openapi, '3.1.0');
      assert.deepEqual(Object.keys(document.paths['/v2/orders'] ?? {}).sort(), ['get', 'patch', 'post'], Object.keys(document.paths).join());
      assert.deepEqual(Object.keys(document.paths['/v2/orders/aliases'] ?? {}), ['post']);
      assert.equal(document.paths['/healthz'], undefined);
      const list = document.paths['/v2/orders']!.get as { parameters: { name: string; required: boolean }[]; security: unknown };
      assert.deepEqual(
        list.parameters.map(({ name, required }) => [name, required]),
        [['start_date', true], ['end_date', true], ['page', false], ['page_size', false]],
      );
      assert.deepEqual(list.security, [{ api_key: [], client_id: [] }]);
    });

    test('the UAT document does not list the admin API', async () => {
      const response = await service.uat.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(response.statusCode, 200, response.body);
      const paths = Object.keys((response.json() as { paths: object }).paths);
      assert.ok(paths.length > 0);
      assert.deepEqual(paths.filter((path) => path.startsWith('/admin')), []);
    });
  });

  describe('bad input never answers 500', () => {
    test('an unknown route is 404 with the envelope', async () => {
      for (const [method, url] of [['GET', '/nowhere'], ['POST', '/v2/nothing'], ['DELETE', '/v2/orders']] as const) {
        assertErrorEnvelope(await service.production.inject({ method, url, headers: client.headers }), 404);
      }
    });

    test('a malformed URL is 400 with the envelope', async () => {
      for (const url of ['/v2/orders/%zz', '/admin/v1/clients/%E0%A4%A/api-keys']) {
        assertErrorEnvelope(await service.production.inject({ method: 'GET', url, headers: client.headers }), 400);
      }
    });

    test('a UTF-8 byte-order mark before the JSON is accepted and not stored', async () => {
      const response = await postRaw(service, client, `\uFEFF${JSON.stringify([minimalOrder('with-bom')])}`);
      assert.equal(response.statusCode, 200, response.body);
      const page = (await listOrders(service.production, client, RANGE)).json() as { data: { order_id: string }[] };
      assert.ok(page.data.some((order) => order.order_id === 'with-bom'));
    });

    test('JSON in a charset other than UTF-8 is 415, and UTF-8 spelt either way is fine', async () => {
      const body = JSON.stringify([minimalOrder('charset')]);
      for (const charset of ['latin1', 'utf-16', 'ISO-8859-1']) {
        await refusedAndNothingStored(415, () => postRaw(service, client, body, `application/json; charset=${charset}`));
      }
      for (const charset of ['utf-8', 'UTF8', '"utf-8"']) {
        assert.equal((await postRaw(service, client, body, `application/json; charset=${charset}`)).statusCode, 200);
      }
    });

    test('malformed JSON is 400 with the envelope', async () => {
      for (const payload of ['[', '{"order_id": }', "[{'order_id': 'x'}]", '[] []', 'nul', '\u00ff']) {
        await refusedAndNothingStored(400, () => postRaw(service, client, payload));
      }
    });

    test('valid JSON of the wrong shape is 400 naming the body', async () => {
      for (const payload of ['"orders"', '{}', 'null', '42']) {
        const body = await refusedAndNothingStored(400, () => postRaw(service, client, payload));
        assert.deepEqual(body.errors?.map((item) => item.loc), ['body'], payload);
      }
    });

    test('a content type other than JSON is 415; a charset parameter is fine', async () => {
      const batch = JSON.stringify([minimalOrder('content-type')]);
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', null]) {
        await refusedAndNothingStored(415, () => postRaw(service, client, batch, contentType));
      }
      const response = await postRaw(service, client, batch, 'application/json; charset=utf-8');
      assert.equal(response.statusCode, 200, response.body);
    });

    test('an empty body with application/json is 400', async () => {
      await refusedAndNothingStored(400, () => postRaw(service, client, ''));
    });

    const PROTOTYPE_KEYS = [
      '[{"__proto__": {"polluted": true}}]',
      JSON.stringify([minimalOrder('proto')]).replace('{', '{"__proto__":{"tax":1},'),
      '[{"constructor": {"prototype": {"polluted": true}}}]',
    ];

    test('a __proto__ or constructor.prototype key is 400', async () => {
      for (const payload of PROTOTYPE_KEYS) await refusedAndNothingStored(400, () => postRaw(service, client, payload));
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    test('the 400 for a __proto__ key says what is wrong, not that the JSON is invalid', async () => {
      for (const payload of PROTOTYPE_KEYS) {
        const { message } = assertErrorEnvelope(await postRaw(service, client, payload), 400);
        assert.match(message, /__proto__|prototype/, payload);
        assert.doesNotMatch(message, /not valid JSON/, `${payload}: the JSON is valid`);
      }
    });

    test('a string holding U+0000 or a lone surrogate is 400 pointing at it; nothing is stored', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ customer_name: 'Jane\u0000Doe' }, 'body/1/customer_name'],
        [{ customer_id: '\u0000' }, 'body/1/customer_id'],
        [{ products: [{ id: 'p', name: 'Pro\ud800duct', quantity: 1, price: 10 }] }, 'body/1/products/0/name'],
        [{ order_tags: ['ok', '\udc00'] }, 'body/1/order_tags/1'],
      ];
      for (const [overrides, loc] of cases) {
        // JSON.stringify writes both as \u escapes, as a client would.
        const payload = JSON.stringify([minimalOrder('fine'), minimalOrder('unstorable', overrides)]);
        const body = await refusedAndNothingStored(400, () => postRaw(service, client, payload));
        assert.deepEqual(body.errors?.map((item) => item.loc), [loc], payload);
      }
    });

    test('a surrogate pair and other escapes are stored exactly', async () => {
      const name = 'Ren\u00e9e \ud83d\ude00 \u2028 "quoted" \\ back';
      const payload = JSON.stringify([minimalOrder('escapes', { customer_name: name })]);
      assert.ok(payload.includes('\\\\'));
      const response = await postRaw(service, client, payload.replace('\u00e9', '\\u00e9'));
      assert.equal(response.statusCode, 200, response.body);
      const listed = await listOrders(service.production, client, RANGE);
      const order = (listed.json() as { data: Record<string, unknown>[] }).data.find((row) => row.order_id === 'escapes');
      assert.equal(order?.customer_name, name);
    });

    test('deeply nested JSON is 400, even with \\u escapes in it', async () => {
      const depth = 100_000;
      for (const payload of [
        `${'['.repeat(depth)}${']'.repeat(depth)}`,
        `${'['.repeat(depth)}"\\u0041"${']'.repeat(depth)}`,
        `[${'{"a":'.repeat(depth)}"\\u0041"${'}'.repeat(depth)}]`,
      ]) {
        await refusedAndNothingStored(400, () => postRaw(service, client, payload));
      }
    });

    test('a page number too large to reach is 400 naming query/page', async () => {
      const response = await listOrders(service.production, client, { ...RANGE, page: '99999999999999999999' });
      const body = assertErrorEnvelope(response, 400);
      assert.deepEqual(body.errors?.map((item) => item.loc), ['query/page']);
    });
  });
});

describe('body size limit', () => {
  let service: TestService;
  let client: TestClient;
  let port: number;
  before(async () => {
    service = await startService({ BODY_LIMIT_BYTES: '1000', ORDER_WRITE_BYTES_PER_MINUTE: '0' });
    client = await service.createClient();
    port = Number(new URL(await service.production.listen({ port: 0, host: '127.0.0.1' })).port);
  });
  after(() => service.close());

  const drainedOrClosed = (socket: net.Socket) =>
    new Promise<void>((resolve) => {
      const done = () => {
        socket.off('drain', done).off('close', done);
        resolve();
      };
      socket.on('drain', done).on('close', done);
    });

  /**
   * Sends a POST of `bytes` bytes over a new connection the way a blocking client does, the
   * whole body before reading a byte of the answer, and returns the answer. Rejects if the
   * connection breaks (EPIPE, ECONNRESET) on the way.
   */
  async function sendWholeBodyThenRead(bytes: number, framing: 'content-length' | 'chunked'): Promise<LightMyRequestResponse> {
    const socket = net.connect(port, '127.0.0.1');
    let broken: Error | undefined;
    socket.on('error', (error) => (broken = error));
    await once(socket, 'connect');
    const headers = { ...client.headers, 'content-type': 'application/json', ...(framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(bytes) }) };
    socket.write(`POST /v2/orders HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`);
    const chunk = Buffer.alloc(64 * 1024, ' ');
    const framed = framing === 'chunked' ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
    for (let sent = 0; sent < bytes && !broken; sent += chunk.length) {
      if (!socket.write(framed)) await drainedOrClosed(socket);
    }
    if (framing === 'chunked' && !broken) socket.write('0\r\n\r\n');
    let answer = '';
    socket.setEncoding('utf8').on('data', (text: string) => (answer += text));
    if (!socket.closed) await once(socket, 'close');
    if (broken) throw broken;
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    const [statusLine, ...fields] = head.split('\r\n');
    return {
      statusCode: Number(statusLine!.split(' ')[1]),
      headers: Object.fromEntries(fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()])),
      body,
      json: () => JSON.parse(body),
    } as LightMyRequestResponse;
  }

  test('a client sending a body far over the limit before reading gets the 413, never a broken connection', async () => {
    // Megabytes more than the kernel's buffers take in: the client is still sending when the
    // answer is written. Refused as announced (Content-Length) or once past the limit (chunked).
    for (const framing of ['content-length', 'chunked'] as const) {
      for (let run = 0; run < 25; run++) {
        const body = assertErrorEnvelope(await sendWholeBodyThenRead(8 * 1024 * 1024, framing), 413);
        assert.match(body.message, /1000 bytes/);
      }
    }
    assert.equal(await orderCount(service), 0);
  });

  test(`what is thrown away of a refused body is bounded: the connection closes past ${LINGER_MAX_BYTES} more bytes`, async () => {
    await assert.rejects(sendWholeBodyThenRead(LINGER_MAX_BYTES + 32 * 1024 * 1024, 'content-length'), { code: /^(EPIPE|ECONNRESET)$/ });
  });

  test('a body over BODY_LIMIT_BYTES is 413 with the envelope, and nothing is stored', async () => {
    const small = JSON.stringify([minimalOrder('small')]);
    const large = JSON.stringify([minimalOrder('large', { customer_name: 'x'.repeat(1000) })]);
    assert.ok(small.length < 1000 && large.length > 1000);
    const body = assertErrorEnvelope(await postRaw(service, client, large), 413);
    assert.match(body.message, /1000/);
    assert.equal(await orderCount(service), 0);
    assert.equal((await postRaw(service, client, small)).statusCode, 200);
  });
});

describe('shutting down', () => {
  test('a request arriving while the app closes is 503 with the envelope and Retry-After', async () => {
    const service = await startService();
    const closing = service.production.close();
    const response = await service.production.inject({ method: 'GET', url: '/healthz' });
    await closing;
    const body = assertErrorEnvelope(response, 503);
    assert.match(body.message, /shutting down/);
    assert.equal(response.headers['retry-after'], '1');
    await service.close();
  });
});
