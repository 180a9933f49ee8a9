import assert from 'node:assert/strict';
import net from 'node:net';
import { Readable, Writable } from 'node:stream';
import { setTimeout } from 'node:timers/promises';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { ADMIN_TOKEN, assertErrorEnvelope, hourlySpend, minimalOrder, postOrders, startService, type TestApp, type TestClient } from './helpers.js';

const BUDGET = 6000;
const SPEND_BUDGET = 4000;
const TOUCHPOINT_BUDGET = 3000;
const service = await startService({
  ORDER_WRITE_BYTES_PER_MINUTE: String(BUDGET),
  SPEND_WRITE_BYTES_PER_MINUTE: String(SPEND_BUDGET),
  TOUCHPOINT_WRITE_BYTES_PER_MINUTE: String(TOUCHPOINT_BUDGET),
  EXPORT_CREATES_PER_MINUTE: '3',
  EXPORT_READS_PER_SECOND: '5',
  AUTH_FAILURES_PER_MINUTE: '4',
});
after(() => service.close());

const EXPORT = { metrics: [{ id: 'spend' }] };
const createExport = (client: Pick<TestClient, 'headers'>, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: EXPORT });
const readMetrics = (client: Pick<TestClient, 'headers'>) =>
  service.production.inject({ method: 'GET', url: '/v1/exports/metrics', headers: client.headers });

/** The RateLimit header's remaining units. */
const remaining = (response: LightMyRequestResponse) => Number(/;r=(\d+);/.exec(String(response.headers.ratelimit))?.[1]);

/**
 * Waits, when less than 10 s of the current fixed minute is left, for the next one: the byte
 * counts below are exact only while the sliding window does not weigh a previous minute.
 */
async function startOfMinuteWindow() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await setTimeout(left);
}

function assertTooMany(response: LightMyRequestResponse) {
  const body = assertErrorEnvelope(response, 429, ['retry_after_seconds']) as { retry_after_seconds?: number };
  const retryAfter = Number(response.headers['retry-after']);
  // The sliding window estimates; it may ask for up to two windows.
  assert.ok(retryAfter >= 1 && retryAfter <= 120, `Retry-After ${retryAfter}`);
  assert.equal(body.retry_after_seconds, retryAfter, 'the hosted API\'s field, equal to Retry-After');
}

test('order writes spend a budget of body bytes per API key; over it, a 429 that stores nothing', async () => {
  const client = await service.createClient();
  await startOfMinuteWindow();
  const batch = (n: number) => [minimalOrder(`budget-${n}`)];
  const first = await postOrders(service.production, client, batch(0));
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(first.headers['ratelimit-policy'], `"order-writes";q=${BUDGET};w=60;qu="content-bytes"`);
  const size = Buffer.byteLength(JSON.stringify(batch(0)));
  assert.equal(remaining(first), BUDGET - size, 'the body\'s bytes are counted');

  let sent = 1;
  let response = first;
  while (response.statusCode === 200 && sent < 100) response = await postOrders(service.production, client, batch(sent++));
  assertTooMany(response);
  const accepted = sent - 1;
  assert.equal(accepted, Math.floor(BUDGET / size), 'as many batches as the budget holds');
  const stored = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders WHERE client_id = $1', [client.client_id]);
  assert.equal(stored[0]!.n, accepted, 'the refused batch was not stored');

  // Aliases are order writes too; another key of the same client has a budget of its own.
  // (Counted before validation: invalid requests cost their bytes too.)
  const aliases = await service.production.inject({ method: 'POST', url: '/v2/orders/aliases', headers: client.headers, payload: { padding: 'x'.repeat(size) } });
  assertTooMany(aliases);
  const key = await service.production.inject({
    method: 'POST',
    url: `/admin/v1/clients/${client.client_id}/api-keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const otherKey = { headers: { ...client.headers, authorization: key.json().api_key } };
  assert.equal((await postOrders(service.production, otherKey, batch(sent))).statusCode, 200);
});

test('a body larger than the whole order-write budget is a 413, not a 429 it could never get past', async () => {
  const client = await service.createClient();
  const huge = Array.from({ length: 40 }, (_, i) => minimalOrder(`huge-${i}`));
  assertErrorEnvelope(await postOrders(service.production, client, huge), 413);
});

/** A body sent in `chunks` chunks of `chunkBytes` without a length, made as it is read; `pulled` counts the chunks read. */
function chunkedBody(chunks: number, chunkBytes: number, first = '') {
  const counter = { pulled: 0 };
  const stream = Readable.from(
    (function* () {
      for (; counter.pulled < chunks; counter.pulled++) yield Buffer.from(counter.pulled === 0 ? first.padEnd(chunkBytes) : ' '.repeat(chunkBytes));
    })(),
    { objectMode: false },
  );
  return { stream, counter };
}

test('a chunked body is charged as it arrives: past the whole budget, a 413 long before its end is read', async () => {
  const client = await service.createClient();
  await startOfMinuteWindow();
  // 1,000 times the budget, in 1 KB chunks.
  const { stream, counter } = chunkedBody(1000 * (BUDGET / 1000), 1000, '[');
  const answer = await service.production.inject({ method: 'POST', url: '/v2/orders', headers: { ...client.headers, 'content-type': 'application/json' }, payload: stream });
  const { message } = assertErrorEnvelope(answer, 413);
  assert.equal(message, `The request body is larger than the whole order-writes budget of ${BUDGET} bytes in 60 s`);
  assert.ok(counter.pulled < 100, `${counter.pulled} of 6,000 chunks read`);

  // Under the budget, a chunked body is charged its bytes, as an announced one is.
  const other = await service.createClient();
  const batch = JSON.stringify([minimalOrder('chunked')]);
  const sent = await service.production.inject({
    method: 'POST',
    url: '/v2/orders',
    headers: { ...other.headers, 'content-type': 'application/json' },
    payload: Readable.from([Buffer.from(batch.slice(0, 100)), Buffer.from(batch.slice(100))]),
  });
  assert.equal(sent.statusCode, 200, sent.body);
  assert.equal(remaining(sent), BUDGET - Buffer.byteLength(batch));
});

test('export creations are limited per client and minute', async () => {
  const [client, other] = [await service.createClient(), await service.createClient()];
  for (let i = 0; i < 3; i++) {
    const created = await createExport(client);
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.headers['ratelimit-policy'], '"export-creates";q=3;w=60');
    assert.equal(remaining(created), 2 - i);
  }
  assertTooMany(await createExport(client));
  assert.equal((await createExport(other)).statusCode, 201, 'another client has its own budget');
});

test('export results and catalogs are limited per client and second', async () => {
  const client = await service.createClient();
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await readMetrics(client));
  assert.deepEqual(answers.slice(0, 5).map((response) => response.statusCode), [200, 200, 200, 200, 200]);
  assert.equal(answers[0]!.headers['ratelimit-policy'], '"export-reads";q=5;w=1');
  assertTooMany(answers[5]!);
});

test('the UAT test credentials are limited per source address, as everyone shares them', async () => {
  const testCredentials = { headers: { authorization: 'None', 'data-client-id': 'test' } };
  for (let i = 0; i < 3; i++) assert.equal((await createExport(testCredentials, service.uat)).statusCode, 201);
  const refused = await createExport(testCredentials, service.uat);
  assertTooMany(refused);
  const elsewhere = await service.uat.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: testCredentials.headers,
    payload: EXPORT,
    remoteAddress: '198.51.100.7',
  });
  assert.equal(elsewhere.statusCode, 201, 'another address has its own budget');
});

test('an IPv6 source is counted by its /64, an IPv4-mapped one as its IPv4 address', async () => {
  const testCredentials = { authorization: 'None', 'data-client-id': 'test' };
  const createFrom = (remoteAddress: string) =>
    service.uat.inject({ method: 'POST', url: '/v1/exports/data-export', headers: testCredentials, payload: EXPORT, remoteAddress });
  for (const address of ['2001:db8:7:7::1', '2001:db8:7:7::2', '2001:db8:7:7:ffff:ffff:ffff:ffff']) {
    assert.equal((await createFrom(address)).statusCode, 201, address);
  }
  assertTooMany(await createFrom('2001:db8:7:7:1234::9'));
  assert.equal((await createFrom('2001:db8:7:8::1')).statusCode, 201, 'the next /64 has its own budget');

  for (let i = 0; i < 3; i++) assert.equal((await createFrom('198.51.100.99')).statusCode, 201);
  assertTooMany(await createFrom('::ffff:198.51.100.99'));
  assertTooMany(await createFrom('::ffff:c633:6463'));
});

/** A request to an API route with `headers`, from `remoteAddress`. */
const attributionModels = (headers: Record<string, string>, remoteAddress: string) =>
  service.production.inject({ method: 'GET', url: '/v1/exports/attribution-models', headers, remoteAddress });

test('an address past its failed-authentication budget gets 429s for failures, while valid credentials are still served', async () => {
  const client = await service.createClient();
  const address = '203.0.113.9';
  const wrong = { ...client.headers, authorization: 'trb_wrong' };
  for (let i = 0; i < 4; i++) assertErrorEnvelope(await attributionModels(wrong, address), 401);
  assertTooMany(await attributionModels(wrong, address));
  assertTooMany(await attributionModels({}, address));
  const valid = await attributionModels(client.headers, address);
  assert.equal(valid.statusCode, 200, valid.body);
  assert.equal(valid.headers['retry-after'], undefined);
  assertTooMany(await attributionModels(wrong, address));
  assertErrorEnvelope(await attributionModels(wrong, '203.0.113.10'), 401);
});

test('failed authentications from one IPv6 /64 share a budget; another /64 has its own', async () => {
  const client = await service.createClient();
  const wrong = { ...client.headers, authorization: 'trb_wrong' };
  for (let i = 0; i < 4; i++) assertErrorEnvelope(await attributionModels(wrong, `2001:db8:a:b::${i + 1}`), 401);
  assertTooMany(await attributionModels(wrong, '2001:db8:a:b:c:d:e:f'));
  assert.equal((await attributionModels(client.headers, '2001:db8:a:b::99')).statusCode, 200, 'valid credentials are served');
  assertErrorEnvelope(await attributionModels(wrong, '2001:db8:a:c::1'), 401);
});

test('failed admin authentications count against the address\'s budget, get 429s past it, and are logged without token or address', async () => {
  const lines: string[] = [];
  const app = await processApp({ AUTH_FAILURES_PER_MINUTE: '4' }, lines);
  try {
    const createFrom = (remoteAddress: string, authorization?: string) =>
      app.inject({
        method: 'POST',
        url: '/admin/v1/clients',
        headers: authorization === undefined ? {} : { authorization },
        payload: { name: 'Acme' },
        remoteAddress,
      });
    const address = '192.0.2.77';
    const wrongToken = `Bearer ${'0'.repeat(64)}`;
    assertErrorEnvelope(await createFrom(address, wrongToken), 401);
    assertErrorEnvelope(await createFrom(address), 401);
    // API-key failures and admin-token failures are one budget: failed authentications.
    const apiKeyGuess = { authorization: 'trb_wrong', 'data-client-id': '00000000-0000-4000-8000-000000000000' };
    for (let i = 0; i < 2; i++) {
      assertErrorEnvelope(await app.inject({ method: 'GET', url: '/v1/exports/metrics', headers: apiKeyGuess, remoteAddress: address }), 401);
    }
    assertTooMany(await createFrom(address, wrongToken));
    assertTooMany(await createFrom(address, `Bearer ${ADMIN_TOKEN.slice(0, -1)}`));
    const right = await createFrom(address, `Bearer ${ADMIN_TOKEN}`);
    assert.equal(right.statusCode, 201, 'the right token is served from an address past the budget');
    assertErrorEnvelope(await createFrom('192.0.2.78', wrongToken), 401);
    const [clients] = await service.db.query<{ n: number }>("SELECT count(*)::int AS n FROM clients WHERE client_id = $1 AND name = 'Acme'", [
      right.json().client_id,
    ]);
    assert.equal(clients!.n, 1);

    const logged = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'failed admin authentication');
    assert.deepEqual(logged.map((entry) => [entry.level, entry.refused]), [[40, false], [40, false], [40, true], [40, true], [40, false]]);
    const sources = logged.map((entry) => entry.source);
    assert.equal(new Set(sources.slice(0, 4)).size, 1, 'one address, one pseudonym');
    assert.notEqual(sources[4], sources[0], 'another address, another pseudonym');
    const log = lines.join('\n');
    for (const secret of ['0'.repeat(64), ADMIN_TOKEN, ADMIN_TOKEN.slice(0, -1), '192.0.2.77', '192.0.2.78']) {
      assert.ok(!log.includes(secret), `the log holds ${secret}`);
    }
  } finally {
    await app.close();
  }
});

const spendHour = (campaignId: string) => ({ data: [hourlySpend(campaignId)] });
const postSpend = (headers: Record<string, string>, payload: object, url = '/v1/spend_hourly', app: TestApp = service.production, remoteAddress?: string) =>
  app.inject({ method: 'POST', url, headers, payload, remoteAddress });

test('spend writes spend a budget of body bytes per API key, of their own; over it, a 429 that stores nothing', async () => {
  const [client, other] = [await service.createClient(), await service.createClient()];
  const campaign = (n: number) => `campaign-${String(n).padStart(3, '0')}`;
  const policy = `"spend-writes";q=${SPEND_BUDGET};w=60;qu="content-bytes"`;
  await startOfMinuteWindow();
  const first = await postSpend(client.headers, spendHour(campaign(0)));
  assert.equal(first.statusCode, 201, first.body);
  assert.equal(first.headers['ratelimit-policy'], policy);
  const size = Buffer.byteLength(JSON.stringify(spendHour(campaign(0))));
  assert.equal(remaining(first), SPEND_BUDGET - size, 'the body\'s bytes are counted');

  // A delete is a spend write too.
  const match = { data: { hour_start_iso: '2024-03-08T09:00:00Z', platform_account_id: 'act_1', campaign_id: 'none', adset_id: '', ad_id: '' } };
  const deleted = await service.production.inject({ method: 'DELETE', url: '/v1/spend_hourly', headers: client.headers, payload: match });
  assert.equal(deleted.statusCode, 200, deleted.body);
  assert.equal(deleted.headers['ratelimit-policy'], policy);
  const deleteSize = Buffer.byteLength(JSON.stringify(match));
  assert.equal(remaining(deleted), SPEND_BUDGET - size - deleteSize);

  let sent = 1;
  let response = first;
  // Bounded, so that a missing limit fails the test instead of hanging it.
  while (response.statusCode === 201 && sent < 100) response = await postSpend(client.headers, spendHour(campaign(sent++)));
  assertTooMany(response);
  assert.equal(response.headers['ratelimit-policy'], policy);
  const accepted = sent - 1;
  assert.equal(accepted, Math.floor((SPEND_BUDGET - deleteSize) / size), 'as many requests as the budget holds');
  const storedRecords = async () =>
    (await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM spend_hourly WHERE client_id = $1', [client.client_id]))[0]!.n;
  assert.equal(await storedRecords(), accepted, 'the refused request was not stored');

  // The daily collection spends the same budget; order writes have their own.
  const day = { ...spendHour(campaign(0)).data[0], hour_start_iso: undefined, date: '2024-03-08', campaign_name: 'x'.repeat(100) };
  assertTooMany(await postSpend(client.headers, { data: [day] }, '/v1/spend'));
  assert.equal((await postOrders(service.production, client, [minimalOrder('not-spend')])).statusCode, 200);

  const key = await service.production.inject({
    method: 'POST',
    url: `/admin/v1/clients/${client.client_id}/api-keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const otherKey = { ...client.headers, authorization: key.json().api_key };
  assert.equal((await postSpend(otherKey, spendHour(campaign(sent)))).statusCode, 201, 'another key of the client has its own budget');
  assert.equal((await postSpend(other.headers, spendHour(campaign(0)))).statusCode, 201, 'another client has its own budget');
  assert.equal(await storedRecords(), accepted + 1);

  const tooLarge = { data: Array.from({ length: 20 }, (_, i) => spendHour(campaign(i)).data[0]) };
  assertErrorEnvelope(await postSpend(other.headers, tooLarge), 413);
});

test('touchpoint and identity writes spend one budget of body bytes per API key, of their own; over it, a 429 that stores nothing', async () => {
  const client = await service.createClient();
  const policy = `"touchpoint-writes";q=${TOUCHPOINT_BUDGET};w=60;qu="content-bytes"`;
  const touchpoint = (n: number) => ({ data: [{ touchpoint_id: `tp-${String(n).padStart(3, '0')}`, occurred_at: '2024-03-08T09:00:00Z', visitor_id: 'v' }] });
  const post = (url: string, payload: object, headers = client.headers) => service.production.inject({ method: 'POST', url, headers, payload });
  await startOfMinuteWindow();
  const first = await post('/v1/touchpoints', touchpoint(0));
  assert.equal(first.statusCode, 201, first.body);
  assert.equal(first.headers['ratelimit-policy'], policy);
  const size = Buffer.byteLength(JSON.stringify(touchpoint(0)));
  assert.equal(remaining(first), TOUCHPOINT_BUDGET - size);

  const link = { data: [{ visitor_id: 'v', customer_id: 'c' }] };
  const linked = await post('/v1/identities', link);
  assert.equal(linked.statusCode, 201, linked.body);
  assert.equal(linked.headers['ratelimit-policy'], policy, 'identities share the touchpoints\' budget');
  const linkSize = Buffer.byteLength(JSON.stringify(link));
  assert.equal(remaining(linked), TOUCHPOINT_BUDGET - size - linkSize);

  let sent = 1;
  let response = first;
  while (response.statusCode === 201 && sent < 100) response = await post('/v1/touchpoints', touchpoint(sent++));
  assertTooMany(response);
  const accepted = sent - 1;
  assert.equal(accepted, Math.floor((TOUCHPOINT_BUDGET - linkSize) / size), 'as many requests as the budget holds');
  const [row] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM touchpoints WHERE client_id = $1', [client.client_id]);
  assert.equal(row!.n, accepted, 'the refused request was not stored');
  assertTooMany(await post('/v1/identities', { data: [{ visitor_id: 'w', customer_id: 'c' }] }));
  const [links] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM identities WHERE client_id = $1', [client.client_id]);
  assert.equal(links!.n, 1);

  // Order and spend writes have budgets of their own.
  assert.equal((await postOrders(service.production, client, [minimalOrder('not-a-touchpoint')])).statusCode, 200);
  assert.equal((await postSpend(client.headers, spendHour('not-a-touchpoint'))).statusCode, 201);
  assert.equal((await post('/v1/touchpoints', touchpoint(0), (await service.createClient()).headers)).statusCode, 201, 'another client has its own budget');
});

test('the UAT test credentials\' spend writes are limited per source address', async () => {
  const testCredentials = { authorization: 'None', 'data-client-id': 'test' };
  const from = (remoteAddress: string) => postSpend(testCredentials, spendHour('uat'), '/v1/spend_hourly', service.uat, remoteAddress);
  let response = await from('198.51.100.50');
  assert.equal(response.statusCode, 201, response.body);
  for (let i = 0; i < 100 && response.statusCode === 201; i++) response = await from('198.51.100.50');
  assertTooMany(response);
  assert.equal((await from('198.51.100.51')).statusCode, 201, 'another address has its own budget');
});

test('limits can be turned off one by one', async () => {
  const open = await startService({ EXPORT_CREATES_PER_MINUTE: '0' });
  try {
    const client = await open.createClient();
    for (let i = 0; i < 70; i++) {
      const created = await createExport(client, open.production);
      assert.equal(created.statusCode, 201);
      assert.equal(created.headers['ratelimit-policy'], undefined);
    }
  } finally {
    await open.close();
  }
});

/** An app of its own (another process, as far as counters go) over the service's store. */
async function processApp(env: NodeJS.ProcessEnv, logLines?: string[]) {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines?.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  // A busy test machine is not an overloaded server: no load shedding, as in startService.
  const config = loadConfig({ ADMIN_TOKEN, EXPORT_CREATES_PER_MINUTE: '3', OVERLOAD_EVENT_LOOP_DELAY_MS: '0', ...env });
  return buildApp({ config, db: service.db, environment: 'production', logger: createLogger('info', sink) });
}

// CI runs Redis here; a machine without it skips the test that needs it.
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const redisReachable = await new Promise<boolean>((resolve) => {
  const { hostname, port } = new URL(REDIS_URL);
  const socket = net.connect(Number(port || 6379), hostname, () => {
    resolve(true);
    socket.end();
  });
  socket.once('error', () => resolve(false));
});

test('with REDIS_URL, processes share one budget', { skip: !redisReachable && `no Redis at ${REDIS_URL}` }, async () => {
  const apps = [await processApp({ REDIS_URL }), await processApp({ REDIS_URL })];
  try {
    const client = await service.createClient();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await createExport(client, apps[i % 2])).statusCode);
    assert.deepEqual(statuses, [201, 201, 201, 429]);
  } finally {
    await Promise.all(apps.map((app) => app.close()));
  }
});

test('when Redis cannot be reached, requests are served without limits, and the log says so', async () => {
  const lines: string[] = [];
  const app = await processApp({ REDIS_URL: 'redis://127.0.0.1:9' }, lines);
  try {
    const client = await service.createClient();
    for (let i = 0; i < 5; i++) assert.equal((await createExport(client, app)).statusCode, 201);
    assert.ok(
      lines.some((line) => line.includes('rate limits are not applied')),
      lines.join('\n'),
    );
  } finally {
    await app.close();
  }
});

test('when Redis stalls on a live connection, requests are served without limits, and the log says so', { skip: !redisReachable && `no Redis at ${REDIS_URL}` }, async () => {
  const lines: string[] = [];
  const app = await processApp({ REDIS_URL }, lines);
  const admin = new Redis(REDIS_URL);
  try {
    const client = await service.createClient();
    const limited = await createExport(client, app);
    assert.equal(limited.statusCode, 201);
    assert.ok(limited.headers['ratelimit-policy'], 'counted in Redis while it answers');
    // Writes wait until the pause ends, longer than the client waits for an answer.
    await admin.call('CLIENT', 'PAUSE', '2000', 'WRITE');
    const unlimited = await createExport(client, app);
    assert.equal(unlimited.statusCode, 201);
    assert.equal(unlimited.headers['ratelimit-policy'], undefined);
    assert.ok(lines.some((line) => line.includes('rate-limit counters could not be updated')), lines.join('\n'));
  } finally {
    await admin.call('CLIENT', 'UNPAUSE');
    admin.disconnect();
    await app.close();
  }
});

test('behind a proxy named in TRUST_PROXY, the address is the one the proxy appended, whatever the caller wrote before it', async () => {
  const app = await processApp({ TRUST_PROXY: '10.0.0.0/8', AUTH_FAILURES_PER_MINUTE: '2' });
  try {
    const attempt = (forwardedFor: string) =>
      app.inject({
        method: 'GET',
        url: '/v1/exports/attribution-models',
        headers: { authorization: 'trb_wrong', 'data-client-id': '00000000-0000-4000-8000-000000000000', 'x-forwarded-for': forwardedFor },
        remoteAddress: '10.0.0.2',
      });
    for (let i = 0; i < 2; i++) assertErrorEnvelope(await attempt(`192.0.2.${i}, 198.51.100.20`), 401);
    assertTooMany(await attempt('192.0.2.99, 198.51.100.20'));
    assertErrorEnvelope(await attempt('192.0.2.99, 198.51.100.21'), 401);
  } finally {
    await app.close();
  }
});
