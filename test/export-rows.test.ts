import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Tenant } from '../src/auth/tenant.js';
import { createClientRepository } from '../src/clients/repository.js';
import type { Period } from '../src/attribution/rows.js';
import { exportRowsSql, inRowsTransaction, type ExportRowsQuery } from '../src/attribution/rows.js';
import { createTestDatabase } from './helpers.js';

const store = await createTestDatabase();
after(() => store.drop());
const client = await createClientRepository(store.db).create('rows');
const tenant: Tenant = { clientId: client.client_id, environment: 'production', dryRun: false };
const NEW_YORK = 'America/New_York';

interface Spend {
  at: string; // hour_start (UTC instant) or date
  platform?: string;
  account?: string;
  campaign?: string;
  campaignName?: string;
  ad?: string;
  spend: number;
  impressions?: number;
  clicks?: number;
  currency?: string;
}

async function insert(table: 'spend_hourly' | 'spend_daily', records: Spend[], clientId = client.client_id) {
  for (const r of records) {
    await store.db.query(
      `INSERT INTO ${table} (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id,
                             campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks, created_at, updated_at)
       VALUES ($1, 'production', $11, $2, $3, $4, '', $5, $6, '', $5, $7, $8, $9, $10, now(), now())`,
      [clientId, r.at, r.platform ?? 'meta', r.campaign ?? 'c1', r.ad ?? 'a1', r.campaignName ?? 'Campaign 1', r.spend, r.currency ?? 'USD', r.impressions ?? 100, r.clicks ?? 1, r.account ?? 'act'],
    );
  }
}

// The night of 3 November 2024 in New York: clocks go back from 02:00 EDT to 01:00 EST.
await insert('spend_hourly', [
  { at: '2024-11-03T04:00:00Z', spend: 4, impressions: 200, clicks: 2 }, // 00:00 EDT
  { at: '2024-11-03T05:00:00Z', spend: 1 }, // 01:00 EDT
  { at: '2024-11-03T06:00:00Z', spend: 2, clicks: 0 }, // 01:00 EST, the second one
  { at: '2024-11-04T03:00:00Z', spend: 5, campaignName: 'Campaign 1 (renamed)' }, // 22:00 on the 3rd, local; renamed from here
  { at: '2024-11-04T15:00:00Z', spend: 3 }, // the 4th has a daily record: not added
  { at: '2024-11-03T05:00:00Z', spend: 7.5, currency: 'EUR', ad: 'a2' },
  { at: '2024-11-03T05:00:00Z', spend: 0, impressions: 0, clicks: 0, campaign: 'c2', campaignName: 'Idle' },
]);
await insert('spend_daily', [{ at: '2024-11-04', spend: 10, impressions: 1000, clicks: 20, campaignName: 'Campaign 1 (renamed)' }]);

// Every record is inserted before the first test is registered: a top-level await between
// tests lets the runner finish (and drop the store) before the later tests run.

// Orders of the same client, in New York time. A's first order is before the period; B orders on
// both sides of the night clocks go back; C pays in EUR and is refunded in full.
async function insertOrder(id: string, customer: string, at: string, currency: string, total: string, refunds: [string, string][] = [], clientId = client.client_id, environment = 'production') {
  const refundsJson = refunds.map(([amount, madeAt]) => `{"product_id":"p","quantity":1,"refund_amount":${amount},"refund_cost":0,"refund_made_at":"${madeAt}"}`);
  const body = `{"order_id":"${id}","customer_id":"${customer}","time_of_purchase":"${at}","currency":"${currency}","purchase_total":${total},"tax":0,
    "shipping_cost":0,"products":[{"id":"p","name":"P","quantity":1,"price":${total}}]${refunds.length > 0 ? `,"refunds":[${refundsJson.join(',')}]` : ''}}`;
  await store.db.query(
    `INSERT INTO orders (client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, now(), now())`,
    [clientId, environment, id, at, body],
  );
}
await insertOrder('o1', 'A', '2024-11-02T12:00:00-04:00', 'USD', '100.50', [['0.50', '2024-11-03T12:00:00-05:00']]);
await insertOrder('o2', 'A', '2024-11-03T01:30:00-04:00', 'USD', '20.25', [['5.25', '2024-11-04T10:00:00-05:00']]); // the first 01:00
await insertOrder('o3', 'B', '2024-11-03T01:30:00-05:00', 'USD', '30'); // the second 01:00: B's first order
await insertOrder('o4', 'B', '2024-11-03T23:00:00-05:00', 'USD', '10');
await insertOrder('o5', 'C', '2024-11-04T09:00:00-05:00', 'EUR', '40', [['40', '2024-11-04T10:00:00-05:00']]);
await insertOrder('o6', 'D', '2024-11-05T00:30:00-05:00', 'USD', '99'); // after the period
await insertOrder('o7', 'E', '2024-11-03T12:00:00-05:00', 'USD', '1000', [], client.client_id, 'uat'); // UAT: never counted

// Another client, on two platforms and three accounts, in UTC.
const mixed = await createClientRepository(store.db).create('breakdowns');
const mixedTenant: Tenant = { clientId: mixed.client_id, environment: 'production', dryRun: false };
await insert(
  'spend_hourly',
  [
    { at: '2024-03-01T10:00:00Z', platform: 'meta', account: 'act1', campaign: 'c1', campaignName: 'Meta one', spend: 10, impressions: 1000, clicks: 10 },
    { at: '2024-03-01T11:00:00Z', platform: 'meta', account: 'act2', campaign: 'c2', campaignName: 'Meta two', spend: 5, impressions: 500, clicks: 5 },
    { at: '2024-03-01T12:00:00Z', platform: 'google', account: 'g1', campaign: 'c9', campaignName: 'Search', spend: 8, impressions: 400, clicks: 8 },
  ],
  mixed.client_id,
);
await insertOrder('x1', 'X', '2024-03-01T15:00:00Z', 'USD', '46', [], mixed.client_id);
async function rows(
  overrides: Partial<ExportRowsQuery>,
  period: Period = { kind: 'days', from: '2024-11-03', to: '2024-11-05' },
  forTenant: Tenant = tenant,
) {
  const { sql, params, columns } = exportRowsSql({
    tenant: forTenant,
    timeZone: NEW_YORK,
    period,
    granularity: 'DAILY',
    level: 'platform',
    breakdowns: [],
    includeIds: false,
    includeKind: false,
    removeZeroSpend: false,
    withOrders: false,
    ...overrides,
  });
  const found = await store.db.query<Record<string, unknown>>(sql, params);
  return { columns, rows: found.map((row) => columns.map((column) => (row[column] === null ? '' : String(row[column])))) };
}

test('HOURLY: one row per hour instant, labelled in local time with its offset, both 01:00s kept apart', async () => {
  const { columns, rows: found } = await rows({ granularity: 'HOURLY' }, { kind: 'days', from: '2024-11-03', to: '2024-11-04' });
  assert.deepEqual(columns, ['date', 'platform', 'currency', 'spend', 'impressions', 'clicks', 'ctr', 'cpc', 'cpm']);
  assert.deepEqual(found, [
    ['2024-11-03T00:00:00-04:00', 'meta', 'USD', '4', '200', '2', '0.010000', '2.000000', '20.000000'],
    ['2024-11-03T01:00:00-04:00', 'meta', 'EUR', '7.5', '100', '1', '0.010000', '7.500000', '75.000000'],
    ['2024-11-03T01:00:00-04:00', 'meta', 'USD', '1', '100', '1', '0.010000', '1.000000', '10.000000'], // with the idle campaign's 0s
    ['2024-11-03T01:00:00-05:00', 'meta', 'USD', '2', '100', '0', '0.000000', '', '20.000000'],
    ['2024-11-03T22:00:00-05:00', 'meta', 'USD', '5', '100', '1', '0.010000', '5.000000', '50.000000'],
  ]);
});

test('DAILY: local days; a day with a daily record takes it and not the hourly ones; currencies apart', async () => {
  const { rows: found } = await rows({});
  assert.deepEqual(found, [
    ['2024-11-03', 'meta', 'EUR', '7.5', '100', '1', '0.010000', '7.500000', '75.000000'],
    ['2024-11-03', 'meta', 'USD', '12', '500', '4', '0.008000', '3.000000', '24.000000'],
    ['2024-11-04', 'meta', 'USD', '10', '1000', '20', '0.020000', '0.500000', '10.000000'],
  ]);
});

test('campaign level with ids: an object renamed in the period keeps one row, under its last name; zero spend removable', async () => {
  const { columns, rows: found } = await rows({ level: 'campaign', includeIds: true, removeZeroSpend: true, granularity: 'WEEKLY' });
  assert.deepEqual(columns.slice(0, 5), ['date', 'platform', 'campaign', 'campaign_id', 'currency']);
  // Sunday the 3rd is in the week of Monday 28 October; Monday the 4th starts a new week.
  assert.deepEqual(
    found.map((row) => row.slice(0, 6)),
    [
      ['2024-10-28', 'meta', 'Campaign 1 (renamed)', 'c1', 'EUR', '7.5'],
      ['2024-10-28', 'meta', 'Campaign 1 (renamed)', 'c1', 'USD', '12'],
      ['2024-11-04', 'meta', 'Campaign 1 (renamed)', 'c1', 'USD', '10'],
    ],
  );
  const withZero = await rows({ level: 'campaign', granularity: 'WEEKLY' });
  assert.deepEqual(
    withZero.rows.filter((row) => row[2] === 'Idle').map((row) => row.slice(3)),
    [['USD', '0', '0', '0', '', '', '']],
    'a ratio over zero is an empty cell',
  );
});

test('export_aggregation DATE sums over the ad objects: bucket and currency only; MONTHLY buckets', async () => {
  const { columns, rows: found } = await rows({ level: null, granularity: 'MONTHLY' });
  assert.deepEqual(columns.slice(0, 3), ['date', 'currency', 'spend']);
  assert.deepEqual(
    found.map((row) => row.slice(0, 3)),
    [
      ['2024-11-01', 'EUR', '7.5'],
      ['2024-11-01', 'USD', '22'],
    ],
  );
});

test('a FIXED period of instants takes the hours inside it and the local days it touches', async () => {
  const { rows: found } = await rows(
    { granularity: 'HOURLY' },
    { kind: 'instants', from: '2024-11-03T01:00:00-04:00', to: '2024-11-03T01:00:00-05:00' },
  );
  assert.deepEqual(found.map((row) => [row[0], row[2], row[3]]), [
    ['2024-11-03T01:00:00-04:00', 'EUR', '7.5'],
    ['2024-11-03T01:00:00-04:00', 'USD', '1'],
  ]);
});

test('on the night clocks go back, the later of the two 01:00s gives the name', async () => {
  const other = await createClientRepository(store.db).create('dst names');
  await insert(
    'spend_hourly',
    [
      { at: '2024-11-03T05:00:00Z', spend: 1, campaignName: 'Old' }, // 01:00 EDT
      { at: '2024-11-03T06:00:00Z', spend: 1, campaignName: 'New' }, // 01:00 EST, later
    ],
    other.client_id,
  );
  const { rows: found } = await rows({ level: 'campaign' }, undefined, { clientId: other.client_id, environment: 'production', dryRun: false });
  assert.deepEqual(found.map((row) => row.slice(0, 3)), [['2024-11-03', 'meta', 'New']]);
});


const ORDER_COLUMNS = ['revenue', 'transactions', 'aov', 'refunds', 'net_revenue', 'new_customers', 'returning_customers', 'mer', 'blended_cac'];

test('order metrics per local day and currency, beside the spend: revenue, refunds by refund date, new and returning customers, blended ratios', async () => {
  const { columns, rows: found } = await rows({ level: null, withOrders: true });
  assert.deepEqual(columns, ['date', 'currency', 'spend', 'impressions', 'clicks', 'ctr', 'cpc', 'cpm', ...ORDER_COLUMNS]);
  assert.deepEqual(found, [
    // EUR spend, no EUR orders: revenue 0, MER 0 ÷ 7.5, no new customer to divide by.
    ['2024-11-03', 'EUR', '7.5', '100', '1', '0.010000', '7.500000', '75.000000', '0', '0', '', '0', '0', '0', '0', '0.000000', ''],
    // 20.25 + 30 + 10 = 60.25 from 3 orders; o1's refund of 0.50 made today; B new (first order
    // today, twice), A returning; MER 60.25 ÷ 12 = 5.0208333; CAC 12 ÷ 1.
    ['2024-11-03', 'USD', '12', '500', '4', '0.008000', '3.000000', '24.000000', '60.25', '3', '20.083333', '0.50', '59.75', '1', '1', '5.020833', '12.000000'],
    // C's order and full refund, no EUR spend: MER has no denominator; CAC 0 ÷ 1.
    ['2024-11-04', 'EUR', '0', '0', '0', '', '', '', '40', '1', '40.000000', '40', '0', '1', '0', '', '0.000000'],
    // Only o2's refund, made a day after its purchase.
    ['2024-11-04', 'USD', '10', '1000', '20', '0.020000', '0.500000', '10.000000', '0', '0', '', '5.25', '-5.25', '0', '0', '0.000000', ''],
  ]);
});

test('HOURLY order metrics: each 01:00 of the night clocks go back has its own orders; a customer is returning an hour after their first order', async () => {
  const { rows: found } = await rows({ level: null, withOrders: true, granularity: 'HOURLY' }, { kind: 'days', from: '2024-11-03', to: '2024-11-04' });
  const zero = ['0', '0', '', '0', '0', '0', '0'];
  assert.deepEqual(found, [
    ['2024-11-03T00:00:00-04:00', 'USD', '4', '200', '2', '0.010000', '2.000000', '20.000000', ...zero, '0.000000', ''],
    ['2024-11-03T01:00:00-04:00', 'EUR', '7.5', '100', '1', '0.010000', '7.500000', '75.000000', ...zero, '0.000000', ''],
    ['2024-11-03T01:00:00-04:00', 'USD', '1', '100', '1', '0.010000', '1.000000', '10.000000', '20.25', '1', '20.250000', '0', '20.25', '0', '1', '20.250000', ''],
    ['2024-11-03T01:00:00-05:00', 'USD', '2', '100', '0', '0.000000', '', '20.000000', '30', '1', '30.000000', '0', '30', '1', '0', '15.000000', '2.000000'],
    ['2024-11-03T12:00:00-05:00', 'USD', '0', '0', '0', '', '', '', '0', '0', '', '0.50', '-0.50', '0', '0', '', ''],
    ['2024-11-03T22:00:00-05:00', 'USD', '5', '100', '1', '0.010000', '5.000000', '50.000000', ...zero, '0.000000', ''],
    ['2024-11-03T23:00:00-05:00', 'USD', '0', '0', '0', '', '', '', '10', '1', '10.000000', '0', '10', '0', '1', '', ''],
  ]);
  const spending = await rows({ level: null, withOrders: true, granularity: 'HOURLY', removeZeroSpend: true }, { kind: 'days', from: '2024-11-03', to: '2024-11-04' });
  assert.deepEqual(spending.rows.map((row) => row[0]), found.filter((row) => row[2] !== '0').map((row) => row[0]), 'remove_zero_spend drops store rows without spend');
});

test('MONTHLY: a customer is new in the month of their first order, and not also returning in it', async () => {
  const { rows: found } = await rows({ level: null, withOrders: true, granularity: 'MONTHLY' }, { kind: 'days', from: '2024-11-01', to: '2024-12-01' });
  // November holds A's first order (o1, 2 November) as well: A, B and D new, nobody returning.
  // USD revenue 100.50 + 20.25 + 30 + 10 + 99 (o6 on the 5th) = 259.75 from 5 orders.
  assert.deepEqual(
    found.map((row) => [row[0], row[1], ...row.slice(8)]),
    [
      ['2024-11-01', 'EUR', '40', '1', '40.000000', '40', '0', '1', '0', '5.333333', '7.500000'],
      ['2024-11-01', 'USD', '259.75', '5', '51.950000', '5.75', '254.00', '3', '0', '11.806818', '7.333333'],
    ],
  );
});

const mixedRows = (overrides: Partial<ExportRowsQuery>) =>
  rows({ timeZone: 'UTC', ...overrides }, { kind: 'days', from: '2024-03-01', to: '2024-03-02' }, mixedTenant);

test('a breakdown splits summed rows by its values, and keeps only the values asked for', async () => {
  const byPlatform = await mixedRows({ level: null, breakdowns: [{ key: 'platform', values: [] }] });
  assert.deepEqual(byPlatform.columns.slice(0, 4), ['date', 'platform', 'currency', 'spend']);
  assert.deepEqual(byPlatform.rows.map((row) => row.slice(0, 4)), [
    ['2024-03-01', 'google', 'USD', '8'],
    ['2024-03-01', 'meta', 'USD', '15'],
  ]);
  // An account is an account of a platform: its rows name the platform too.
  const someAccounts = await mixedRows({ level: null, breakdowns: [{ key: 'account', values: ['g1', 'act1'] }] });
  assert.deepEqual(someAccounts.columns.slice(0, 5), ['date', 'platform', 'account', 'currency', 'spend']);
  assert.deepEqual(someAccounts.rows.map((row) => row.slice(0, 5)), [
    ['2024-03-01', 'google', 'g1', 'USD', '8'],
    ['2024-03-01', 'meta', 'act1', 'USD', '10'],
  ]);
});

test('an account breakdown splits the ad objects of each account, beside the platform and the level', async () => {
  const { columns, rows: found } = await mixedRows({ level: 'campaign', breakdowns: [{ key: 'account', values: [] }] });
  assert.deepEqual(columns.slice(0, 6), ['date', 'platform', 'account', 'campaign', 'currency', 'spend']);
  assert.deepEqual(found.map((row) => row.slice(0, 6)), [
    ['2024-03-01', 'google', 'g1', 'Search', 'USD', '8'],
    ['2024-03-01', 'meta', 'act1', 'Meta one', 'USD', '10'],
    ['2024-03-01', 'meta', 'act2', 'Meta two', 'USD', '5'],
  ]);
});

test('with ad-object rows, order metrics come on a store row per bucket: empty dimensions, the spend of every ad object', async () => {
  const { columns, rows: found } = await mixedRows({
    level: 'platform',
    includeKind: true,
    withOrders: true,
    breakdowns: [{ key: 'platform', values: ['meta'] }],
  });
  assert.deepEqual(columns.slice(0, 5), ['date', 'platform', 'kind', 'currency', 'spend']);
  assert.deepEqual(found, [
    // 10 + 5 + 8 = 23 spent by all platforms, whatever the breakdown keeps; MER 46 ÷ 23.
    ['2024-03-01', '', 'store', 'USD', '23', '1900', '23', '0.012105', '1.000000', '12.105263', '46', '1', '46.000000', '0', '46', '1', '0', '2.000000', '23.000000'],
    ['2024-03-01', 'meta', 'platform', 'USD', '15', '1500', '15', '0.010000', '1.000000', '10.000000', '', '', '', '', '', '', '', '', ''],
  ]);
});

test('HOURLY orders are taken by the hour they fall in, as spend is: no hour is cut short by the period', async () => {
  const india = await createClientRepository(store.db).create('half-hour zone');
  const indiaTenant: Tenant = { clientId: india.client_id, environment: 'production', dryRun: false };
  await insert('spend_hourly', [{ at: '2024-03-01T19:00:00Z', spend: 10, clicks: 5 }], india.client_id);
  await insertOrder('i1', 'K', '2024-03-01T18:45:00Z', 'USD', '100', [], india.client_id); // 00:15 on 2 March in Kolkata
  await insertOrder('i2', 'L', '2024-03-01T19:10:00Z', 'USD', '50', [], india.client_id);
  const hourly = (period: Period, timeZone: string) => rows({ level: null, withOrders: true, granularity: 'HOURLY', timeZone }, period, indiaTenant);
  const metricsOf = (found: string[][]) => found.map((row) => [row[0], row[2], row[8]]);
  // 2 March in Kolkata starts at 18:30 UTC: its first whole hour is 19:00 UTC (00:30 there). The
  // order at 18:45 is in the hour of 18:00, which starts on 1 March: not in the period.
  assert.deepEqual(metricsOf((await hourly({ kind: 'days', from: '2024-03-02', to: '2024-03-03' }, 'Asia/Kolkata')).rows), [
    ['2024-03-02T00:30:00+05:30', '10', '50'],
  ]);
  // A FIXED period starting at 19:05 begins with the hour of 20:00, for spend and orders alike.
  assert.deepEqual(metricsOf((await hourly({ kind: 'instants', from: '2024-03-01T19:05:00Z', to: '2024-03-01T21:00:00Z' }, 'UTC')).rows), []);
  assert.deepEqual(metricsOf((await hourly({ kind: 'instants', from: '2024-03-01T18:05:00Z', to: '2024-03-01T19:05:00Z' }, 'UTC')).rows), [
    ['2024-03-01T19:00:00+00:00', '10', '50'],
  ]);
});

test('the settings of a plan\'s transaction apply where its statement runs: on Citus, on the worker holding the client\'s shard', async () => {
  // Read from the client's rows, so that on Citus the settings are those of the shard's worker.
  const settings = await inRowsTransaction(store.db, (tx) =>
    tx.query<{ work_mem: string; jit: string }>(
      `SELECT current_setting('work_mem') AS work_mem, current_setting('jit') AS jit FROM spend_hourly WHERE client_id = $1 LIMIT 1`,
      [client.client_id],
    ),
  );
  assert.deepEqual(settings, [{ work_mem: '64MB', jit: 'off' }]);
});
