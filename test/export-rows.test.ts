import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Tenant } from '../src/auth/tenant.js';
import { createClientRepository } from '../src/clients/repository.js';
import type { Period } from '../src/exports/period.js';
import { spendRowsSql, type SpendRowsQuery } from '../src/exports/spend-rows.js';
import { createTestDatabase } from './helpers.js';

const store = await createTestDatabase();
after(() => store.drop());
const client = await createClientRepository(store.db).create('rows');
const tenant: Tenant = { clientId: client.client_id, environment: 'production', dryRun: false };
const NEW_YORK = 'America/New_York';

interface Spend {
  at: string; // hour_start (UTC instant) or date
  platform?: string;
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
       VALUES ($1, 'production', 'act', $2, $3, $4, '', $5, $6, '', $5, $7, $8, $9, $10, now(), now())`,
      [clientId, r.at, r.platform ?? 'meta', r.campaign ?? 'c1', r.ad ?? 'a1', r.campaignName ?? 'Campaign 1', r.spend, r.currency ?? 'USD', r.impressions ?? 100, r.clicks ?? 1],
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

async function rows(
  overrides: Partial<SpendRowsQuery>,
  period: Period = { kind: 'days', from: '2024-11-03', to: '2024-11-05' },
  forTenant: Tenant = tenant,
) {
  const { sql, params, columns } = spendRowsSql({
    tenant: forTenant,
    timeZone: NEW_YORK,
    period,
    granularity: 'DAILY',
    level: 'platform',
    includeIds: false,
    removeZeroSpend: false,
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

