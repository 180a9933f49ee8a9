// Hostile input on the write endpoints and the socket, the security headers, and CORS.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { UUID, assertErrorEnvelope, listOrders, minimalOrder, startService, type TestApp } from './helpers.js';

const REQUEST_TIMEOUT_MS = 500;
const SHOP = 'https://shop.example';
const [service, corsService] = await Promise.all([
  startService({ REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) }),
  startService({ CORS_ORIGINS: SHOP }),
]);
const client = await service.createClient();
after(() => Promise.all([service.close(), corsService.close()]));

let serial = 0;
const fresh = (prefix: string) => `${prefix}-${++serial}`;

/** A field of an endpoint's body, by JSON Pointer. */
interface Field {
  pointer: string;
}

interface Endpoint {
  url: string;
  /** Status of an invalid body: 400 on orders, 422 on spend and exports (docs/api.md, Errors). */
  invalid: 400 | 422;
  /** A valid body, new ids each time. */
  valid(): unknown;
  /** Pointers to fields that take a number (exports take none: a date-time stands in). */
  numbers: string[];
  /** Free-text fields, for huge strings and bad bytes. */
  texts: Field[];
  /** A field sent twice: `invalid` then `valid` is accepted, the other way round refused. */
  duplicate: { pointer: string; valid: string; invalid: string };
  /** SQL: the `duplicate` field as the client's last write stored it, as text, as `value`. */
  lastStored: string;
}


const ENDPOINTS: Record<string, Endpoint> = {
  'POST /v2/orders': {
    url: '/v2/orders',
    invalid: 400,
    valid: () => [minimalOrder(fresh('order'), { customer_name: 'Jane' })],
    numbers: ['/0/purchase_total', '/0/tax', '/0/products/0/price'],
    texts: [{ pointer: '/0/customer_name' }, { pointer: '/0/products/0/name' }],
    duplicate: { pointer: '/0/purchase_total', valid: '11', invalid: '"11"' },
    lastStored: `SELECT body->>'purchase_total' AS value FROM orders WHERE client_id = $1 ORDER BY updated_at DESC LIMIT 1`,
  },
  'POST /v1/spend_hourly': {
    url: '/v1/spend_hourly',
    invalid: 422,
    valid: () => ({
      data: [
        {
          hour_start_iso: '2024-03-08T09:00:00Z',
          platform_name: 'meta',
          campaign_id: fresh('campaign'),
          campaign_name: 'Spring',
          spend: 1,
          spend_currency: 'USD',
        },
      ],
    }),
    numbers: ['/data/0/spend', '/data/0/impressions'],
    texts: [{ pointer: '/data/0/campaign_name' }, { pointer: '/data/0/platform_account_id' }],
    duplicate: { pointer: '/data/0/spend', valid: '2', invalid: '-1' },
    lastStored: `SELECT spend::text AS value FROM spend_hourly WHERE client_id = $1 ORDER BY updated_at DESC LIMIT 1`,
  },
  'POST /v1/exports/data-export': {
    url: '/v1/exports/data-export',
    invalid: 422,
    valid: () => ({
      level: 'campaign',
      period_type: 'FIXED',
      period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-04-01T00:00:00Z' },
      breakdowns: [{ key: 'platform', values: ['meta'] }],
      metrics: [{ id: 'spend', label: 'Spend' }],
      export_file_name: fresh('export'),
    }),
    numbers: ['/period_options/period_starting_at'],
    texts: [
      { pointer: '/breakdowns/0/values/0' },
      { pointer: '/export_file_name' },
      { pointer: '/metrics/0/label' },
    ],
    duplicate: { pointer: '/level', valid: '"ad"', invalid: '"bogus"' },
    lastStored: `SELECT request->>'level' AS value FROM exports WHERE client_id = $1 ORDER BY created_at DESC LIMIT 1`,
  },
};

/** `document` with `value` put at `pointer` (a copy). */
function put(document: unknown, pointer: string, value: unknown): unknown {
  const copy = structuredClone(document) as Record<string, unknown>;
  const keys = pointer.split('/').slice(1);
  const parent = keys.slice(0, -1).reduce<Record<string, unknown>>((node, key) => node[key] as Record<string, unknown>, copy);
  parent[keys.at(-1)!] = value;
  return copy;
}

const PLACEHOLDER = '\u2063raw\u2063';

/** A valid body of `endpoint` as JSON text, with the JSON text `raw` as the value at `pointer`. */
function withRaw(endpoint: Endpoint, pointer: string, raw: string): string {
  return JSON.stringify(put(endpoint.valid(), pointer, PLACEHOLDER)).replace(JSON.stringify(PLACEHOLDER), raw);
}

/** A valid body of `endpoint` with the bytes `bytes` inside the string at `pointer`. */
function withBytes(endpoint: Endpoint, pointer: string, bytes: number[]): Buffer {
  const [start, end] = JSON.stringify(put(endpoint.valid(), pointer, `a${PLACEHOLDER}b`)).split(PLACEHOLDER);
  return Buffer.concat([Buffer.from(start!), Buffer.from(bytes), Buffer.from(end!)]);
}

/** Posts `payload` to `endpoint` on production as JSON with the client's credentials; a null header is left out. */
function post(endpoint: Endpoint, payload: string | Buffer, headers: Record<string, string | null> = {}) {
  const all = { ...client.headers, 'content-type': 'application/json', ...headers };
  const sent = Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null));
  return service.production.inject({ method: 'POST', url: endpoint.url, headers: sent, payload });
}

/** What the client has stored: rows and last writes of every table the write endpoints touch. */
async function snapshot(): Promise<unknown> {
  return service.db.query(
    `SELECT (SELECT count(*)::int FROM orders WHERE client_id = $1) AS orders,
            (SELECT max(updated_at)::text FROM orders WHERE client_id = $1) AS orders_written,
            (SELECT count(*)::int FROM spend_hourly WHERE client_id = $1) AS spend,
            (SELECT max(updated_at)::text FROM spend_hourly WHERE client_id = $1) AS spend_written,
            (SELECT count(*)::int FROM exports WHERE client_id = $1) AS exports`,
    [client.client_id],
  );
}

/** Asserts that `send` is answered `status` with the error envelope, and that nothing was stored. */
async function refused(status: number, send: () => Promise<LightMyRequestResponse>) {
  const stored = await snapshot();
  const body = assertErrorEnvelope(await send(), status);
  assert.deepEqual(await snapshot(), stored, 'nothing is stored');
  return body;
}

const locs = (body: { errors: { loc: string }[] | null }) => body.errors?.map((item) => item.loc);

const OUT_OF_RANGE = ['1e999', '-1e999', `1${'0'.repeat(400)}`];
const NOT_NUMBERS = ['"NaN"', '"Infinity"', '"-Infinity"', '"1e999"', '"0x10"'];
const HUGE = 'x'.repeat(1024 * 1024);
/** A byte that is never UTF-8, a lead byte without its continuation, an encoded surrogate, an overlong '/'. */
const INVALID_UTF8_BYTES = [[0xc3, 0x28], [0xff], [0xed, 0xa0, 0x80], [0xc0, 0xaf]];
const WRONG_CONTENT_TYPES = [null, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'];

for (const [name, endpoint] of Object.entries(ENDPOINTS)) {
  describe(`${name}: hostile bodies`, () => {
    test('a valid body is accepted (the baseline the cases below change one thing of)', async () => {
      const response = await post(endpoint, JSON.stringify(endpoint.valid()));
      assert.ok([200, 201].includes(response.statusCode), response.body);
    });

    for (const pointer of endpoint.numbers) {
      test(`numbers out of double range and number-like strings at ${pointer} are refused naming it`, async () => {
        for (const raw of [...OUT_OF_RANGE, ...NOT_NUMBERS]) {
          const body = await refused(endpoint.invalid, () => post(endpoint, withRaw(endpoint, pointer, raw)));
          assert.deepEqual(locs(body), [`body${pointer}`], raw);
        }
      });
    }

    test('a key given twice: the last one counts, for validation and storage alike', async () => {
      const { pointer, valid, invalid } = endpoint.duplicate;
      const key = JSON.stringify(pointer.split('/').at(-1));
      const body = await refused(endpoint.invalid, () =>
        post(endpoint, withRaw(endpoint, pointer, `${valid},${key}:${invalid}`)),
      );
      assert.deepEqual(locs(body), [`body${pointer}`]);
      const accepted = await post(endpoint, withRaw(endpoint, pointer, `${invalid},${key}:${valid}`));
      assert.ok([200, 201].includes(accepted.statusCode), accepted.body);
      const [stored] = await service.db.query<{ value: string }>(endpoint.lastStored, [client.client_id]);
      assert.equal(stored?.value, String(JSON.parse(valid)));
    });

    for (const { pointer } of endpoint.texts) {
      test(`a 1 MB string at ${pointer} is refused naming it`, async () => {
        const payload = JSON.stringify(put(endpoint.valid(), pointer, HUGE));
        const body = await refused(endpoint.invalid, () => post(endpoint, payload));
        assert.deepEqual(locs(body), [`body${pointer}`]);
      });
    }

    const { pointer: text } = endpoint.texts[0]!;
    test(`invalid UTF-8 in a string (${text}) is refused`, async () => {
      for (const bytes of INVALID_UTF8_BYTES) {
        await refused(endpoint.invalid, () => post(endpoint, withBytes(endpoint, text, bytes)));
      }
    });

    test('invalid UTF-8 between the tokens is refused as not JSON', async () => {
      const valid = Buffer.from(JSON.stringify(endpoint.valid()));
      for (const bytes of INVALID_UTF8_BYTES) {
        const payload = Buffer.concat([valid.subarray(0, 1), Buffer.from(bytes), valid.subarray(1)]);
        const body = await refused(endpoint.invalid, () => post(endpoint, payload));
        assert.equal(body.errors, null);
      }
    });

    test('a missing or non-JSON Content-Type is 415', async () => {
      const payload = JSON.stringify(endpoint.valid());
      for (const contentType of WRONG_CONTENT_TYPES) {
        const body = await refused(415, () => post(endpoint, payload, { 'content-type': contentType }));
        assert.match(body.message, /application\/json/);
      }
    });

    test('a body shorter than its Content-Length is 400', async () => {
      const payload = JSON.stringify(endpoint.valid());
      const length = String(payload.length + 100);
      const body = await refused(400, () => post(endpoint, payload, { 'content-length': length }));
      assert.match(body.message, /Content-Length/);
    });

    test('deeply nested JSON and __proto__ keys are refused', async () => {
      const depth = 100_000;
      for (const payload of [
        `${'['.repeat(depth)}${']'.repeat(depth)}`,
        withRaw(endpoint, endpoint.duplicate.pointer, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
        withRaw(endpoint, endpoint.duplicate.pointer, '{"__proto__":{"polluted":true}}'),
        withRaw(endpoint, endpoint.duplicate.pointer, '{"constructor":{"prototype":{"polluted":true}}}'),
      ]) {
        await refused(endpoint.invalid, () => post(endpoint, payload));
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  });
}

describe('over a socket', () => {
  let port: number;
  before(async () => {
    await service.production.listen({ host: '127.0.0.1', port: 0 });
    port = (service.production.server.address() as AddressInfo).port;
  });

  interface Outcome {
    /** The status the server answered, if it answered before closing. */
    status: number | undefined;
    /** How long the server took to close the connection; undefined: it was still open after `waitMs`. */
    closedAfterMs: number | undefined;
    /** What followed the answer's head, if any. */
    body: string;
  }

  /** Connects, lets `speak` write, and waits at most `waitMs` for the server to close the connection. */
  function converse(speak: (socket: net.Socket) => void, waitMs = 5_000): Promise<Outcome> {
    return new Promise((resolve) => {
      const started = Date.now();
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      const finish = (closedAfterMs: number | undefined) => {
        clearTimeout(timer);
        socket.destroy();
        const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1];
        const headEnd = received.indexOf('\r\n\r\n');
        resolve({ status: status === undefined ? undefined : Number(status), closedAfterMs, body: headEnd === -1 ? '' : received.slice(headEnd + 4) });
      };
      const timer = setTimeout(() => finish(undefined), waitMs);
      socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => {}); // a reset is one way of closing
      socket.on('close', () => finish(Date.now() - started));
      socket.on('connect', () => speak(socket));
    });
  }

  /** The head of a request with the client's credentials and `headers`. */
  function head(method: string, path: string, headers: Record<string, string> | string[] = {}): string {
    const lines = Array.isArray(headers) ? headers : Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
    const credentials = Object.entries(client.headers).map(([name, value]) => `${name}: ${value}`);
    return [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', ...credentials, ...lines, '', ''].join('\r\n');
  }

  const postOrders = (headers: Record<string, string>) =>
    head('POST', '/v2/orders', { 'content-type': 'application/json', ...headers });
  const BODY = JSON.stringify([minimalOrder('over-the-socket')]);

  /** A normal request on a new connection is still answered 200, authenticated ones included. */
  async function assertStillServing() {
    for (const path of ['/healthz', '/v2/orders?start_date=2024-01-01&end_date=2024-12-31']) {
      const { status } = await converse((socket) => socket.write(head('GET', path, { connection: 'close' })));
      assert.equal(status, 200, path);
    }
  }

  const within = `within REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms)`;
  describe(`requests that never finish are cut off ${within}`, { concurrency: true }, () => {
    const SLACK_MS = 1_500;
    const STALLED: [string, (socket: net.Socket) => void][] = [
      ['a chunked body that never ends', (socket) => socket.write(`${postOrders({ 'transfer-encoding': 'chunked' })}5\r\n[{"a"\r\n`)],
      ['a body shorter than its Content-Length, the connection left open', (socket) =>
        socket.write(postOrders({ 'content-length': String(BODY.length) }) + BODY.slice(0, 10))],
      ['headers trickled one every 100 ms (slow loris)', (socket) => {
        socket.write('GET /healthz HTTP/1.1\r\n');
        const trickle = setInterval(() => socket.write(`x-trickle-${Date.now()}: a\r\n`), 100);
        socket.on('close', () => clearInterval(trickle));
      }],
    ];
    for (const [name, speak] of STALLED) {
      test(`${name}: 408 or closed, then the server serves on`, async () => {
        const stored = await snapshot();
        const { status, closedAfterMs } = await converse(speak, REQUEST_TIMEOUT_MS + SLACK_MS);
        assert.ok(closedAfterMs !== undefined, `the connection was still open after ${REQUEST_TIMEOUT_MS + SLACK_MS} ms`);
        assert.ok(status === undefined || status === 408, `answered ${status}`);
        await assertStillServing();
        assert.deepEqual(await snapshot(), stored, 'nothing is stored');
      });
    }
  });

  /** Answers a test accepts; undefined: the connection closed without one. */
  type Answers = (number | undefined)[];

  const HUGE_HEADERS: [string, string, Answers][] = [
    ['a 20 kB header', head('GET', '/healthz', { 'x-big': 'a'.repeat(20_000) }), [431, undefined]],
    ['3,000 headers', head('GET', '/healthz', Array.from({ length: 3_000 }, (_, i) => `x-header-${i}: a`)), [431, undefined]],
    // Under Node's 16 KiB limit: Node keeps the first 2,000 (maxHeadersCount) and the request is served.
    ['2,500 tiny headers', head('GET', '/healthz', [...Array.from({ length: 2_500 }, () => 'a: b'), 'connection: close']), [200]],
  ];
  for (const [name, request, answers] of HUGE_HEADERS) {
    test(`${name}: answered ${answers.map((status) => status ?? 'closed').join(' or ')}, then the server serves on`, async () => {
      const { status, closedAfterMs, body } = await converse((socket) => socket.write(request));
      assert.notEqual(closedAfterMs, undefined, 'the connection is closed');
      assert.ok(answers.includes(status), `answered ${status}`);
      if (status === 431) {
        const envelope = JSON.parse(body) as Record<string, unknown>;
        assert.deepEqual({ ...envelope, request_id: undefined }, { message: 'Request headers are larger than the limit of 16 KiB', errors: null, request_id: undefined });
        assert.match(String(envelope.request_id), UUID);
      }
      await assertStillServing();
    });
  }

  const CUT_SHORT: [string, (socket: net.Socket) => void, Answers][] = [
    ['the client closes the connection', (socket) => socket.destroy(), [undefined]],
    ['the client ends its side of the connection', (socket) => socket.end(), [400, undefined]],
  ];
  for (const [name, hangUp, answers] of CUT_SHORT) {
    test(`a body shorter than its Content-Length, then ${name}: nothing stored, the server serves on`, async () => {
      const stored = await snapshot();
      const { status } = await converse((socket) => {
        socket.write(postOrders({ 'content-length': String(BODY.length + 100) }) + BODY);
        setTimeout(() => hangUp(socket), 50);
      });
      assert.ok(answers.includes(status), `answered ${status}`);
      await assertStillServing();
      assert.deepEqual(await snapshot(), stored, 'nothing is stored');
    });
  }
});

describe('security headers', () => {
  const origin = 'https://evil.example';
  const january = { start_date: '2024-01-01', end_date: '2024-01-31' };
  const get = (app: TestApp, url: string) => app.inject({ method: 'GET', url, headers: { origin } });
  const RESPONSES: [string, () => Promise<LightMyRequestResponse>][] = [
    ['GET /healthz', () => get(service.production, '/healthz')],
    ['an authenticated GET /v2/orders', () => listOrders(service.production, { headers: { ...client.headers, origin } }, january)],
    ['a 401', () => listOrders(service.production, { headers: { origin } }, january)],
    ['a 400 from POST /v2/orders', () => post(ENDPOINTS['POST /v2/orders']!, '[', { origin })],
    ['a 404', () => get(service.production, '/nowhere')],
    ['GET /healthz on UAT', () => get(service.uat, '/healthz')],
    ['a CORS preflight', () =>
      service.production.inject({ method: 'OPTIONS', url: '/v2/orders', headers: { origin, 'access-control-request-method': 'POST' } })],
  ];
  for (const [name, send] of RESPONSES) {
    test(`${name}: nosniff, no framing, HSTS, CSP default-src 'none', no X-Powered-By, no CORS`, async () => {
      const { headers, statusCode, body } = await send();
      assert.ok(statusCode < 500, body);
      assert.equal(headers['x-content-type-options'], 'nosniff');
      const csp = String(headers['content-security-policy']);
      assert.match(csp, /(^|;)\s*default-src 'none'/);
      assert.ok(/(^|;)\s*frame-ancestors 'none'/.test(csp) || /^(DENY|SAMEORIGIN)$/.test(String(headers['x-frame-options'])), csp);
      assert.match(String(headers['strict-transport-security']), /max-age=\d{7,}/);
      assert.equal(headers['x-powered-by'], undefined);
      for (const cors of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-allow-methods']) {
        assert.equal(headers[cors], undefined, cors);
      }
    });
  }
});

describe(`CORS with CORS_ORIGINS=${SHOP}`, () => {
  const REQUESTED_HEADERS = ['authorization', 'data-client-id', 'content-type'];
  const preflight = (origin: string, method: string) =>
    corsService.production.inject({
      method: 'OPTIONS',
      url: method === 'DELETE' ? '/v1/spend_hourly' : '/v2/orders',
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': REQUESTED_HEADERS.join(',') },
    });
  const get = (origin: string) => corsService.production.inject({ method: 'GET', url: '/healthz', headers: { origin } });

  for (const method of ['GET', 'POST', 'DELETE']) {
    test(`a ${method} preflight from ${SHOP} is allowed, with the credential headers`, async () => {
      const response = await preflight(SHOP, method);
      assert.equal(response.statusCode, 204, response.body);
      assert.equal(response.headers['access-control-allow-origin'], SHOP);
      const methods = String(response.headers['access-control-allow-methods']);
      assert.ok(methods.split(/,\s*/).includes(method), methods);
      const allowed = String(response.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/);
      for (const header of REQUESTED_HEADERS) assert.ok(allowed.includes(header), header);
      assert.match(String(response.headers.vary), /Origin/);
    });
  }

  test('a response to that origin allows it; no wildcard', async () => {
    const response = await get(SHOP);
    assert.equal(response.headers['access-control-allow-origin'], SHOP);
    assert.match(String(response.headers.vary), /Origin/);
  });

  const OTHER_ORIGINS = ['https://evil.example', 'http://shop.example', 'https://shop.example.evil', 'https://api.shop.example', 'null'];
  for (const origin of OTHER_ORIGINS) {
    test(`another origin (${origin}) is not allowed, preflight or not`, async () => {
      for (const response of [await preflight(origin, 'POST'), await get(origin)]) {
        assert.ok(response.statusCode < 500, response.body);
        assert.equal(response.headers['access-control-allow-origin'], undefined);
        assert.equal(response.headers['access-control-allow-credentials'], undefined);
      }
    });
  }
});
