import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { ERASED_PREFIX } from '../src/customers/erasure.js';
import { keepMissingPaths } from '../src/attribution/daily-totals.js';
import { identifierFinder, redactedUrl, withoutPersonalQuery } from '../src/customers/redaction.js';
import { holdOnDistinctSlots } from './held-transactions.js';
import {
  assertErrorEnvelope,
  finishedExport,
  listOrders,
  makeOrder,
  startExportingService,
  startLoggedApp,
  ADMIN_TOKEN,
  citusUrl,
  type TestApp,
  type TestClient,
} from './helpers.js';

/*
 * POST /v1/customers/erase: what an erased customer's orders, touchpoints and links keep and
 * lose, that no endpoint reads anything personal of them back afterwards, and that exports and
 * explanations give the same figures before and after.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function call(client: TestClient, method: 'GET' | 'POST', url: string, payload?: object, on: TestApp = app) {
  const response = await on.inject({ method, url, headers: client.headers, ...(payload && { payload }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
  return response;
}

const erase = (client: TestClient, body: object, on: TestApp = app) => on.inject({ method: 'POST', url: '/v1/customers/erase', headers: client.headers, payload: body });

/** The CSV files of an export, run to SUCCESS, as one text. */
async function exportText(client: TestClient, body: object): Promise<string> {
  const created = await call(client, 'POST', '/v1/exports/data-export', body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  const files = await Promise.all(result.result.map((link) => app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search })));
  return files.map((file) => file.body).join('');
}

const EXPORT = {
  period_type: 'FIXED',
  period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-08T00:00:00Z' },
  level: 'campaign',
  attribution_options: { attribution_models: ['linear', 'first_touch', 'last_touch'], attribution_windows: ['7'], accounting_modes: ['cash'] },
  metrics: ['rev', 'txns', 'revFt', 'revRtn', 'visits', 'newVisits'].map((id) => ({ id, label: id })),
};

test('withoutPersonalQuery keeps the page, UTMs and click ids as written, and drops every other parameter and the fragment', () => {
  assert.equal(
    withoutPersonalQuery('https://shop.example/p/1?email=a%40b.c&UTM_Source=fb&gclid=x%2By&name=Jane&utm_campaign=spring+sale#token=1'),
    'https://shop.example/p/1?UTM_Source=fb&gclid=x%2By&utm_campaign=spring+sale',
  );
  assert.equal(withoutPersonalQuery('https://mail.example/read?u=jane'), 'https://mail.example/read');
  assert.equal(withoutPersonalQuery('/relative/page?utm_medium=email&&session=1'), '/relative/page?utm_medium=email');
  assert.equal(withoutPersonalQuery('https://shop.example/'), 'https://shop.example/');
});

test('an erased customer keeps ids, times, amounts and lines, loses the rest; links go; figures stay; again changes nothing', async () => {
  const client = await service.createClient();
  const jane = makeOrder('jane-1', { customer_id: 'jane', time_of_purchase: '2024-03-05T12:00:00Z' });
  const janeHashed = makeOrder('jane-2', {
    customer_id: 'jane',
    time_of_purchase: '2024-03-06T12:00:00Z',
    customer_email: undefined,
    hashed_customer_email: sha256('jane@example.com'),
  });
  const other = makeOrder('bob-1', { customer_id: 'bob', customer_email: 'bob@example.com', customer_name: 'Bob Roe', time_of_purchase: '2024-03-05T13:00:00Z' });
  await call(client, 'POST', '/v2/orders', [jane, janeHashed, other]);
  await call(client, 'POST', '/v1/touchpoints', {
    data: [
      { touchpoint_id: 't1', occurred_at: '2024-03-04T10:00:00Z', visitor_id: 'cookie-jane', landing_url: 'https://shop.example/?utm_source=meta&utm_campaign=spring&fbclid=F1&email=jane%40example.com', referrer: 'https://mail.example/open?u=jane' },
      { touchpoint_id: 't2', occurred_at: '2024-03-05T10:00:00Z', visitor_id: 'cookie-jane-phone', landing_url: 'https://shop.example/?utm_source=google&utm_campaign=search&gclid=G1#jane' },
      { touchpoint_id: 't3', occurred_at: '2024-03-05T11:00:00Z', customer_id: 'jane', visitor_id: 'cookie-jane', landing_url: 'https://shop.example/cart?utm_source=meta&utm_campaign=spring' },
      { touchpoint_id: 't4', occurred_at: '2024-03-05T11:30:00Z', visitor_id: 'cookie-bob', landing_url: 'https://shop.example/?utm_source=meta&utm_campaign=spring&email=bob' },
    ],
  });
  // One visitor linked directly, one through jane's order, bob's through his.
  await call(client, 'POST', '/v1/identities', {
    data: [
      { visitor_id: 'cookie-jane', customer_id: 'jane' },
      { visitor_id: 'cookie-jane-phone', order_id: 'jane-2' },
      { visitor_id: 'cookie-bob', order_id: 'bob-1' },
    ],
  });
  // The same customer in UAT is another environment's data: untouched.
  await call(client, 'POST', '/v2/orders', [jane], service.uat);

  const explain = async (orderId: string) => (await call(client, 'GET', `/v2/orders/${orderId}/attribution?model=linear&window=7`)).json();
  const before = { csv: await exportText(client, EXPORT), jane: await explain('jane-1'), bob: await explain('bob-1') };
  assert.equal(before.jane.touchpoints.length, 3);

  const response = await erase(client, { customer_emails: [' Jane@Example.com '] });
  assert.equal(response.statusCode, 200, response.body);
  const { request_id: _id, ...counts } = response.json();
  assert.deepEqual(counts, { message: 'Erased the personal data of 1 customer', customers: 1, orders: 2, touchpoints: 3, identities: 2 });

  const orders = (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).json().data as Record<string, unknown>[];
  const janeNow = orders.find((order) => order.order_id === 'jane-1')!;
  // jane has a new id of no meaning, the same on all that was hers.
  const pseudonym = janeNow.customer_id as string;
  assert.match(pseudonym, new RegExp(`^${ERASED_PREFIX}[0-9a-f-]{36}$`));
  const personalFields = ['customer_email', 'customer_phone_number', 'customer_name', 'customer_ip_address', 'customer_shipping_address'];
  const stored = ['created_at', 'updated_at', 'alternate_order_ids'];
  assert.deepEqual(
    Object.fromEntries(Object.entries(janeNow).filter(([key]) => !stored.includes(key))),
    { ...Object.fromEntries(Object.entries(jane).filter(([key]) => !personalFields.includes(key))), customer_id: pseudonym },
  );
  const janeHashedNow = orders.find((order) => order.order_id === 'jane-2')!;
  assert.equal(janeHashedNow.hashed_customer_email, undefined);
  assert.equal(janeHashedNow.customer_id, pseudonym);
  assert.equal(orders.find((order) => order.order_id === 'bob-1')!.customer_email, 'bob@example.com');

  const touchpoints = (await call(client, 'GET', '/v1/touchpoints?start=2024-03-01T00:00:00Z&end=2024-03-31T00:00:00Z')).json().data as Record<string, string>[];
  const byId = Object.fromEntries(touchpoints.map((touchpoint) => [touchpoint.touchpoint_id, touchpoint]));
  assert.equal(byId.t1!.landing_url, 'https://shop.example/?utm_source=meta&utm_campaign=spring&fbclid=F1');
  assert.equal(byId.t1!.referrer, 'https://mail.example/open');
  assert.equal(byId.t2!.landing_url, 'https://shop.example/?utm_source=google&utm_campaign=search&gclid=G1');
  assert.equal(byId.t4!.landing_url, 'https://shop.example/?utm_source=meta&utm_campaign=spring&email=bob');
  for (const id of ['t1', 't2', 't3']) {
    assert.equal(byId[id]!.customer_id, pseudonym);
    assert.ok(byId[id]!.visitor_id!.startsWith(ERASED_PREFIX), byId[id]!.visitor_id);
  }
  // t1 and t3 were one visitor's: still one (visits group as they did), t2 another's.
  assert.equal(byId.t1!.visitor_id, byId.t3!.visitor_id);
  assert.notEqual(byId.t1!.visitor_id, byId.t2!.visitor_id);
  assert.equal(byId.t4!.visitor_id, 'cookie-bob');
  assert.equal((await call(client, 'GET', '/v1/touchpoints?visitor_id=cookie-jane')).json().data.length, 0);
  const links = await service.db.query<{ visitor_id: string }>('SELECT visitor_id FROM identities WHERE client_id = $1 ORDER BY visitor_id', [client.client_id]);
  assert.deepEqual(links.map((link) => link.visitor_id), ['cookie-bob']);

  assert.equal(await exportText(client, EXPORT), before.csv, 'the export gives the same figures');
  const asBefore = (explanation: object) => JSON.parse(JSON.stringify(explanation).replaceAll(pseudonym, 'jane'));
  assert.deepEqual(asBefore(await explain('jane-1')), before.jane);
  assert.deepEqual(await explain('bob-1'), before.bob);

  const uatOrders = (await listOrders(service.uat, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).json().data;
  assert.equal(uatOrders[0].customer_email, 'jane@example.com');

  const again = await erase(client, { customer_ids: ['jane'], customer_emails: ['jane@example.com'] });
  assert.equal(again.statusCode, 200, again.body);
  const { request_id: _again, ...againCounts } = again.json() as Record<string, unknown>;
  assert.deepEqual(againCounts, { message: 'Erased the personal data of 1 customer', customers: 1, orders: 0, touchpoints: 0, identities: 0 });
  assert.equal(await exportText(client, EXPORT), before.csv);
});

test('identifiers are found as written, percent-encoded or with + for spaces, in any case, never inside a longer word', () => {
  const holds = identifierFinder({ customerIds: ['c-1042', '42'], emails: ['jane.doe+shop@example.com'], phones: ['+1 (555) 010-4242'], names: ['Jane  Doe'], hashes: [] });
  for (const text of ['JANE.DOE+shop@example.com', 'jane.doe%2Bshop%40example.com', 'to:jane.doe+shop@example.com;', 'Jane+Doe', 'jane_doe', 'JaneDoe', 'WELCOME-JANEDOE', 'c-1042', '+15550104242', 'x 15550104242 y', 'tel:15550104242', 'jane doe']) {
    assert.ok(holds(text), text);
  }
  // A short customer id is not looked for; a longer word or number holding an identifier is another.
  for (const text of ['42', 'order-42', 'c-10420', 'janedoes', 'jane', 'doe', '5550104242', 'tel15550104242', '']) assert.ok(!holds(text), text);
  assert.equal(
    redactedUrl('https://shop.example/account/Jane+Doe/orders?utm_source=meta&utm_content=c-1042&gclid=G1&email=x#frag', holds),
    'https://shop.example/account/%5Berased%5D/orders?utm_source=meta&utm_content=%5Berased%5D&gclid=G1',
  );
  assert.equal(redactedUrl('https://janedoe.example/', holds), '[erased]');

  // A stray % leaves the other escapes decoded; names are found without their accents, in any case.
  assert.ok(holds('50%off-jane.doe%2Bshop%40example.com'));
  const accented = identifierFinder({ customerIds: [], emails: [], phones: [], names: ['İlkay Gündoğan'], hashes: [] });
  for (const text of ['İlkay Gündoğan', 'ilkay-gündoğan', 'ILKAY_GUNDOGAN', 'ref=%C4%B0lkay+G%C3%BCndo%C4%9Fan']) assert.ok(accented(text), text);
  assert.ok(!accented('ilkay gundogane'));

  // An order may hold an e-mail or phone number hashed alone: found where a text holds it plain.
  const hashedOnly = identifierFinder({ customerIds: [], emails: [], phones: [], names: [], hashes: [sha256('jane@example.com'), sha256('+15550104242').toUpperCase()] });
  for (const text of ['WELCOME-Jane@Example.com', 'u=jane%40example.com', 'call +1 (555) 010-4242']) assert.ok(hashedOnly(text), text);
  for (const text of ['janet@example.com', '+1 (555) 010-4243']) assert.ok(!hashedOnly(text), text);
  assert.equal(redactedUrl('/p/1?utm_source=meta', holds), '/p/1?utm_source=meta');
});

/** Every stored row of a client that may hold a customer's data, as text. */
async function storedText(clientId: string): Promise<string> {
  const tables = ['orders', 'order_aliases', 'touchpoints', 'identities', 'attribution_paths', 'attribution_change_keys'];
  const rows = await Promise.all(tables.map((table) => service.db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${table} t WHERE client_id = $1`, [clientId])));
  return rows.flat().map(({ row }) => row).join('\n');
}

test('an erased customer is in no text of its orders, aliases, touchpoints and kept paths, though shops write its e-mail everywhere', async () => {
  const client = await service.createClient();
  const email = 'jane.doe@example.com';
  const janeOrder = makeOrder('jd-1', {
    customer_id: email,
    customer_email: email,
    customer_phone_number: '+1 (555) 010-4242',
    customer_name: 'Jane Doe',
    time_of_purchase: '2024-03-05T12:00:00Z',
    order_tags: ['vip', `customer:${email}`],
    discount_codes: ['WELCOME-JANEDOE', 'SPRING10'],
    alternate_order_ids: [{ type: 'checkout', id: `chk-${email}` }, { type: 'shopify_id', id: '5550001' }],
  });
  const bobOrder = makeOrder('bob-1', { customer_id: 'bob@example.com', customer_email: 'bob@example.com', customer_name: 'Bob Roe', order_tags: ['vip'], time_of_purchase: '2024-03-05T13:00:00Z' });
  await call(client, 'POST', '/v2/orders', [janeOrder, bobOrder]);
  await call(client, 'POST', '/v1/touchpoints', {
    data: [
      {
        touchpoint_id: 'mail-click',
        occurred_at: '2024-03-04T10:00:00Z',
        visitor_id: 'cookie-jd',
        landing_url: `https://shop.example/account/${encodeURIComponent(email)}/orders?utm_source=newsletter&utm_medium=email&utm_campaign=spring&utm_content=${email}&fbclid=${encodeURIComponent(email)}`,
        referrer: 'https://mail.example/u/Jane+Doe/inbox',
      },
      { touchpoint_id: 'sms-click', occurred_at: '2024-03-04T11:00:00Z', customer_id: email, visitor_id: 'cookie-sms', utm_source: 'sms', utm_medium: 'sms', utm_campaign: 'spring', utm_term: '15550104242' },
      // The same cookie, unlinked, without the customer: still the customer's cookie, renamed and cleaned.
      { touchpoint_id: 'sms-again', occurred_at: '2024-03-04T12:00:00Z', visitor_id: 'cookie-sms', landing_url: `https://shop.example/?utm_source=sms&utm_content=${email}&ref=50%off` },
      // A pixel visit linked through the order alone: erasure gives it a customer, never the e-mail.
      { touchpoint_id: 'pixel', occurred_at: '2024-03-05T09:00:00Z', visitor_id: 'cookie-pixel', landing_url: 'https://shop.example/?utm_source=meta&utm_campaign=spring' },
      { touchpoint_id: 'bob-visit', occurred_at: '2024-03-05T09:30:00Z', visitor_id: 'cookie-bob', landing_url: 'https://shop.example/?utm_source=meta&utm_campaign=spring' },
    ],
  });
  await call(client, 'POST', '/v1/identities', {
    data: [
      { visitor_id: 'cookie-jd', customer_id: email },
      { visitor_id: 'cookie-pixel', order_id: 'jd-1' },
      { visitor_id: 'cookie-bob', order_id: 'bob-1' },
    ],
  });
  const exportBefore = await exportText(client, EXPORT);
  const personal = /jane|doe|010-?4242|5550104242/i;
  // The keeper's kept paths of March hold the touchpoints' derived ids (utm_content's ad_id).
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  await service.db.transaction((tx) => keepMissingPaths(tx, { tenant, timeZone: 'UTC', period: { kind: 'days', from: '2024-03-01', to: '2024-04-01' } }));
  const keptPaths = await service.db.query<{ ad_id: string }>('SELECT ad_id FROM attribution_paths WHERE client_id = $1', [client.client_id]);
  assert.ok(keptPaths.some((path) => path.ad_id === email), JSON.stringify(keptPaths));
  // What a data-driven model learnt names states by campaign: learnt again from the redacted data.
  assert.equal((await call(client, 'GET', '/v1/attribution/models/markov?period_from=2024-03-06')).statusCode, 200);
  const learnt = () => service.db.query('SELECT model FROM attribution_learnt_models WHERE client_id = $1', [client.client_id]);
  assert.equal((await learnt()).length, 1);

  const response = await erase(client, { customer_emails: [email] });
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual([response.json().customers, response.json().orders, response.json().touchpoints, response.json().identities], [1, 1, 4, 2]);
  assert.equal((await learnt()).length, 0);

  const stored = await storedText(client.client_id);
  assert.doesNotMatch(stored, personal);
  const reads = [
    (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).body,
    (await call(client, 'GET', '/v1/touchpoints?start=2024-03-01T00:00:00Z&end=2024-03-31T00:00:00Z')).body,
    (await call(client, 'GET', '/v2/orders/jd-1/attribution?window=infinity')).body,
  ];
  for (const read of reads) assert.doesNotMatch(read, personal);

  const [jane] = (await listOrders(app, client, { start_date: '2024-03-05', end_date: '2024-03-05' })).json().data as Record<string, unknown>[];
  assert.ok(String(jane!.customer_id).startsWith(ERASED_PREFIX));
  assert.deepEqual(jane!.order_tags, ['vip', '[erased]']);
  assert.deepEqual(jane!.discount_codes, ['[erased]', 'SPRING10']);
  assert.deepEqual(jane!.alternate_order_ids, [{ type: 'shopify_id', id: '5550001' }]);
  const touchpoints = (await call(client, 'GET', '/v1/touchpoints?start=2024-03-01T00:00:00Z&end=2024-03-31T00:00:00Z')).json().data as Record<string, unknown>[];
  const byId = Object.fromEntries(touchpoints.map((touchpoint) => [touchpoint.touchpoint_id, touchpoint]));
  assert.equal(byId['mail-click']!.landing_url, 'https://shop.example/account/%5Berased%5D/orders?utm_source=newsletter&utm_medium=email&utm_campaign=spring&utm_content=%5Berased%5D&fbclid=%5Berased%5D');
  assert.equal(byId['mail-click']!.referrer, 'https://mail.example/u/%5Berased%5D/inbox');
  assert.equal(byId['mail-click']!.utm_content, '[erased]');
  assert.equal(byId['sms-click']!.utm_term, '[erased]');
  for (const id of ['mail-click', 'sms-click', 'pixel']) assert.equal(byId[id]!.customer_id, jane!.customer_id, id);
  assert.equal(byId['bob-visit']!.visitor_id, 'cookie-bob');
  assert.deepEqual([byId['sms-again']!.customer_id, byId['sms-again']!.visitor_id, byId['sms-again']!.utm_content], [null, byId['sms-click']!.visitor_id, '[erased]']);

  const [bob] = (await listOrders(app, client, { start_date: '2024-03-05', end_date: '2024-03-05' })).json().data.slice(1) as Record<string, unknown>[];
  assert.deepEqual([bob!.customer_id, bob!.customer_email, bob!.order_tags], ['bob@example.com', 'bob@example.com', ['vip']]);
  assert.equal(await exportText(client, EXPORT), exportBefore, 'the campaign-level export gives the same figures');
});

test('an erasure does not wait for a report taking the keys writes noted', { skip: service.db.kind !== 'postgres' || citusUrl !== undefined }, async () => {
  const client = await service.createClient();
  await call(client, 'POST', '/v2/orders', [makeOrder('w-1', { customer_id: 'waiting-customer', time_of_purchase: '2024-03-05T12:00:00Z' })]);
  await call(client, 'POST', '/v1/identities', { data: [{ visitor_id: 'cookie-w', customer_id: 'waiting-customer' }] });
  // A touchpoint sent days late notes its visitor's key.
  await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'late', occurred_at: '2024-03-04T10:00:00Z', visitor_id: 'cookie-w', utm_source: 'meta', utm_campaign: 'spring' }] });
  const [report] = await holdOnDistinctSlots(service.db, 1);
  try {
    const held = await report!.db.query('SELECT visitor_id FROM attribution_change_keys WHERE client_id = $1 FOR UPDATE', [client.client_id]);
    assert.equal(held.length, 1, 'the late touchpoint noted its key');
    const response = await Promise.race([erase(client, { customer_ids: ['waiting-customer'] }), new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000))]);
    assert.notEqual(response, 'waited', 'the erasure waited for the lock on the keys');
    assert.equal((response as Awaited<ReturnType<typeof erase>>).statusCode, 200);
  } finally {
    await report!.commit();
  }
  const [touchpoint] = (await call(client, 'GET', '/v1/touchpoints?start=2024-03-01T00:00:00Z&end=2024-03-31T00:00:00Z')).json().data;
  assert.ok(touchpoint.customer_id.startsWith(ERASED_PREFIX) && touchpoint.visitor_id.startsWith(ERASED_PREFIX), JSON.stringify(touchpoint));
});

test('bad requests are refused with the error envelope and erase nothing; the test credentials store and read nothing', async () => {
  const client = await service.createClient();
  await call(client, 'POST', '/v2/orders', [makeOrder('o-1', { customer_id: 'c' })]);
  for (const body of [{}, { customer_ids: [] }, { customer_ids: [''] }, { customer_ids: ['c', 'c'] }, { customer_ids: 'c' }, { customer_ids: ['c'], extra: 1 }, { customer_emails: Array(1001).fill('x') }]) {
    assertErrorEnvelope(await erase(client, body), 400);
  }
  assertErrorEnvelope(await app.inject({ method: 'POST', url: '/v1/customers/erase', payload: { customer_ids: ['c'] } }), 401);
  const [order] = (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).json().data;
  assert.equal(order.customer_email, 'jane@example.com');

  const testCredentials = { client_id: 'test', api_key: 'None', key_id: '', headers: { authorization: 'None', 'data-client-id': 'test' } };
  const dryRun = await erase(testCredentials, { customer_ids: ['c'] }, service.uat);
  assert.equal(dryRun.statusCode, 200, dryRun.body);
  assert.deepEqual([dryRun.json().customers, dryRun.json().orders], [0, 0]);
  assertErrorEnvelope(await erase(testCredentials, { customer_ids: [] }, service.uat), 400);
});

test('an erasure is logged with its counts, never with the ids or e-mails asked about', async () => {
  const logged = await startLoggedApp();
  try {
    const created = await logged.app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'logged' } });
    const { client_id, api_key } = created.json();
    const client = { client_id, api_key, key_id: '', headers: { authorization: api_key, 'data-client-id': client_id } };
    await call(client, 'POST', '/v2/orders', [makeOrder('o-1', { customer_id: 'secret-customer', customer_email: 'secret@example.com' })], logged.app);
    const response = await erase(client, { customer_ids: ['secret-customer'], customer_emails: ['secret@example.com'] }, logged.app);
    assert.equal(response.statusCode, 200, response.body);
    const line = logged.lines.map((text) => JSON.parse(text)).find((entry) => entry.msg === 'customers erased');
    assert.deepEqual(line.erased, { customers: 1, orders: 1, touchpoints: 0, identities: 0 });
    assert.ok(!logged.lines.some((text) => text.includes('secret')), 'a log line names what was erased');
  } finally {
    await logged.close();
  }
});

/** One customer of a generated client: how its personal data is sent, and how it is named for erasure. */
const customerArbitrary = fc.record({
  orders: fc.array(fc.record({ hashedEmail: fc.boolean(), hashedPhone: fc.boolean(), day: fc.integer({ min: 2, max: 6 }) }), { minLength: 1, maxLength: 3 }),
  visitors: fc.array(
    fc.record({ link: fc.constantFrom('direct', 'order', 'own_customer_id', 'none'), visits: fc.array(fc.integer({ min: 0, max: 140 }), { minLength: 1, maxLength: 3 }) }),
    { maxLength: 3 },
  ),
  erasedBy: fc.constantFrom('id', 'email', 'both', 'kept'),
});

let run = 0;

test('property: nothing personal of an erased customer is read back by any endpoint, and exports give the same figures', { timeout: 600_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(customerArbitrary, { minLength: 1, maxLength: 4 }), async (customers) => {
      const client = await service.createClient();
      const r = ++run;
      // Everything personal of customer i holds its token or its id (IP addresses and hashes aside).
      const token = (i: number) => `tok${r}c${i}z`;
      const email = (i: number) => `mail.${token(i)}@example.com`;
      const phone = (i: number) => `phone-${token(i)}`;
      const personal = (i: number) => [token(i), `cust${i}`, sha256(email(i)), sha256(phone(i)), `198.51.100.${10 + i}`];
      const orders = customers.flatMap((customer, i) =>
        customer.orders.map(({ hashedEmail, hashedPhone, day }, k) =>
          makeOrder(`o${i}-${k}`, {
            customer_id: `cust${i}`,
            time_of_purchase: `2024-03-0${day}T12:00:00Z`,
            customer_email: hashedEmail ? undefined : email(i),
            hashed_customer_email: hashedEmail ? sha256(email(i)) : undefined,
            customer_phone_number: hashedPhone ? undefined : phone(i),
            hashed_customer_phone_number: hashedPhone ? sha256(phone(i)) : undefined,
            customer_name: `Name ${token(i)}`,
            customer_ip_address: `198.51.100.${10 + i}`,
            customer_shipping_address: { address1: `1 ${token(i)} St`, zip: `Z${token(i)}`, country_code: 'USA' },
            order_tags: ['vip', `for ${email(i)}`],
            discount_codes: [`WELCOME-${email(i)}`],
          }),
        ),
      );
      // A visitor never linked to its customer is nobody's as far as the service knows: its
      // touchpoints hold a token of their own.
      const visitorToken = (i: number, v: number, link: string) => (link === 'none' ? `anon${r}c${i}v${v}` : token(i));
      const visitorId = (i: number, v: number, link: string) => `cookie-${visitorToken(i, v, link)}-${v}`;
      const touchpoints = customers.flatMap((customer, i) =>
        customer.visitors.flatMap((visitor, v) =>
          visitor.visits.map((hour, k) => ({
            touchpoint_id: `tp${i}-${v}-${k}`,
            occurred_at: new Date(Date.UTC(2024, 2, 1, hour)).toISOString(),
            visitor_id: visitorId(i, v, visitor.link),
            ...(visitor.link === 'own_customer_id' && { customer_id: `cust${i}` }),
            landing_url: `https://shop.example/p/${visitor.link === 'none' ? 'page' : `cust${i}`}?utm_source=meta&utm_campaign=camp${v}&utm_content=${visitor.link === 'none' ? visitorToken(i, v, visitor.link) : encodeURIComponent(email(i))}&gclid=click${v}x${k}&email=${visitorToken(i, v, visitor.link)}#${visitorToken(i, v, visitor.link)}`,
            referrer: `https://mail.example/read?u=${visitorToken(i, v, visitor.link)}`,
          })),
        ),
      );
      const identities = customers.flatMap((customer, i) =>
        customer.visitors.flatMap((visitor, v): Record<string, string>[] => {
          const visitor_id = visitorId(i, v, visitor.link);
          if (visitor.link === 'direct') return [{ visitor_id, customer_id: `cust${i}` }];
          return visitor.link === 'order' ? [{ visitor_id, order_id: `o${i}-0` }] : [];
        }),
      );
      await call(client, 'POST', '/v2/orders', orders);
      if (touchpoints.length > 0) await call(client, 'POST', '/v1/touchpoints', { data: touchpoints });
      if (identities.length > 0) await call(client, 'POST', '/v1/identities', { data: identities });
      const exportBefore = await exportText(client, EXPORT);

      const erased = customers.flatMap((customer, i) => (customer.erasedBy === 'kept' ? [] : [i]));
      const byId = erased.filter((i) => customers[i]!.erasedBy !== 'email').map((i) => `cust${i}`);
      const byEmail = erased.filter((i) => customers[i]!.erasedBy !== 'id').map((i) => email(i).toUpperCase());
      if (erased.length > 0) {
        const response = await erase(client, { customer_ids: byId, customer_emails: byEmail });
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json().customers, erased.length);
      }

      // Every read of the API: orders, touchpoints by time, customer and (former) visitor, explanations, exports.
      const reads = [
        (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).body,
        (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31', page: 1, page_size: 100 })).body,
        (await call(client, 'GET', '/v1/touchpoints?start=2024-02-01T00:00:00Z&end=2024-04-01T00:00:00Z&page_size=1000')).body,
      ];
      for (const [i, customer] of customers.entries()) {
        reads.push((await call(client, 'GET', `/v1/touchpoints?customer_id=cust${i}`)).body);
        for (const [v, { link }] of customer.visitors.entries()) reads.push((await call(client, 'GET', `/v1/touchpoints?visitor_id=${visitorId(i, v, link)}`)).body);
        for (const k of customer.orders.keys()) reads.push((await call(client, 'GET', `/v2/orders/o${i}-${k}/attribution?window=infinity`)).body);
      }
      const exportAfter = await exportText(client, EXPORT);
      reads.push(exportAfter);
      const everything = reads.join('\n');
      for (const i of erased) {
        for (const value of personal(i)) assert.ok(!everything.includes(value), `customer ${i}'s ${value} is read back`);
      }
      for (const i of customers.keys()) {
        if (!erased.includes(i)) assert.ok(everything.includes(token(i)), `customer ${i}, not erased, lost its data`);
      }
      assert.equal(exportAfter, exportBefore);
    }),
    { numRuns: 15 },
  );
});
