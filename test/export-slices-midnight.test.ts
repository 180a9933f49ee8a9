import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Tenant } from '../src/auth/tenant.js';
import type { Row } from '../src/db/database.js';
import { planExport, type ExportPlan } from '../src/exports/plan.js';
import type { ExportRequest } from '../src/exports/schema.js';
import { readSlicedRows, readSlices, slicesOf, type Slice } from '../src/exports/slices.js';
import { ADMIN_TOKEN, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * Review of 8caa7c7: a slice starts at `fromDay::timestamp AT TIME ZONE zone`. When that local
 * midnight is ambiguous (clocks go back from 01:00 to 00:00: Atlantic/Azores on the last Sunday
 * of October, America/Havana on the first Sunday of November), PostgreSQL takes the later
 * instant (the offset after the transition), so the instants of the first 00:00-01:00 are
 * before the slice's start but their local day is the slice's first bucket. Orders, refunds and
 * touchpoints of that hour are counted by the previous slice, in a bucket of the next one.
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const AZORES = 'Atlantic/Azores';
const NOW = new Date('2024-12-01T00:00:00Z');

const planOf = (request: object): ExportPlan => {
  const planned = planExport(request as ExportRequest, AZORES, NOW);
  if ('problems' in planned) throw new Error(JSON.stringify(planned.problems));
  return planned.plan;
};

const client: TestClient = await service.createClient('azores');
const tenant: Tenant = { clientId: client.client_id, environment: 'production', dryRun: false };
{
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: AZORES },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  const send = async (url: string, data: unknown[]) => {
    const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? data : { data } });
    assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
  };
  const spend = [];
  for (let day = 20; day <= 31; day++) {
    spend.push({ hour_start_iso: `2024-10-${day}T12:00:00Z`, platform_name: 'meta', platform_account_id: 'm1', campaign_id: 'spring', campaign_name: 'Spring', spend: 10, spend_currency: 'USD', impressions: 100, clicks: 5 });
  }
  await send('/v1/spend_hourly', spend);
  // 2024-10-27 00:30Z is 00:30 of 27 October in the Azores (UTC+0, summer time), before the
  // second 00:00 (01:00Z) that PostgreSQL takes as that day's start.
  await send('/v1/touchpoints', [
    { touchpoint_id: 't1', occurred_at: '2024-10-27T00:30:00Z', type: 'visit', visitor_id: 'v1', customer_id: 'c1', platform_name: 'meta', campaign_id: 'spring' },
    { touchpoint_id: 't2', occurred_at: '2024-10-27T12:00:00Z', type: 'visit', visitor_id: 'v1', customer_id: 'c1', platform_name: 'meta', campaign_id: 'spring' },
  ]);
  await send('/v2/orders', [
    minimalOrder('o1', { customer_id: 'c1', time_of_purchase: '2024-10-27T00:40:00Z', currency: 'USD', purchase_total: 10, products: [{ id: 'p', name: 'P', quantity: 1, price: 10 }] }),
    minimalOrder('o2', { customer_id: 'c1', time_of_purchase: '2024-10-27T13:00:00Z', currency: 'USD', purchase_total: 20, products: [{ id: 'p', name: 'P', quantity: 1, price: 20 }] }),
  ]);
}

const SELECT = ['row_to_json(r)::text AS row'];
async function rowsOfSlices(plan: ExportPlan, slices: Slice[]): Promise<string[]> {
  const rows: string[] = [];
  await service.db.transaction((tx) => readSlices([tx], tenant, plan, slices, { batchSize: 1000, select: SELECT }, async (batch: Row[]) => void rows.push(...batch.map((row) => row.row as string))));
  return rows;
}
const dated = (rows: string[], date: string) => rows.map((row) => JSON.parse(row) as Record<string, unknown>).filter((row) => row.date === date);

const period = { period_type: 'FIXED', period_options: { period_starting_at: '2024-10-20', period_ending_at: '2024-11-02' } };

test('the cut falls on 27 October, whose midnight is ambiguous in the Azores', () => {
  const plan = planOf({ ...period, metrics: [{ id: 'spend' }] });
  assert.deepEqual(slicesOf(plan, 2), [{ toDay: '2024-10-27' }, { fromDay: '2024-10-27' }]);
});

test('store rows with order metrics: the slices\' rows are the whole period\'s', async () => {
  const plan = planOf({
    ...period,
    metrics: ['spend', 'revenue', 'transactions', 'new_customers', 'returning_customers'].map((id) => ({ id })),
    options: { export_aggregation: 'DATE' },
  });
  const whole = await rowsOfSlices(plan, [{}]);
  const sliced = await rowsOfSlices(plan, slicesOf(plan, 2));
  console.log('whole 2024-10-27:', dated(whole, '2024-10-27'));
  console.log('sliced 2024-10-27:', dated(sliced, '2024-10-27'));
  assert.deepEqual(sliced, whole);
});

test('attributed campaign rows with remove_zero_spend: no credit or visit is lost', async () => {
  const plan = planOf({
    ...period,
    level: 'campaign',
    metrics: ['spend', 'rev', 'txns', 'visits', 'newVisits'].map((id) => ({ id })),
    options: { remove_zero_spend: true },
    attribution_options: { attribution_models: ['linear'], attribution_windows: ['7'], accounting_modes: ['cash'] },
  });
  const whole = await rowsOfSlices(plan, [{}]);
  const sliced = await rowsOfSlices(plan, slicesOf(plan, 2));
  console.log('whole 2024-10-27:', dated(whole, '2024-10-27'));
  console.log('sliced 2024-10-27:', dated(sliced, '2024-10-27'));
  assert.deepEqual(sliced, whole);
});

test('the production path (readSlicedRows, two connections on PostgreSQL) reads the whole period\'s rows', async () => {
  const plan = planOf({
    ...period,
    metrics: ['spend', 'revenue', 'transactions', 'new_customers', 'returning_customers'].map((id) => ({ id })),
    options: { export_aggregation: 'DATE' },
  });
  const whole = await rowsOfSlices(plan, [{}]);
  const read: string[] = [];
  await readSlicedRows(service.db, tenant, plan, { connections: 2, batchSize: 1000, select: SELECT }, async (batch) => void read.push(...batch.map((row) => row.row as string)));
  assert.deepEqual(read, whole);
});
