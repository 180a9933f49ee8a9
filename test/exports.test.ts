import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import { MODEL_ALIASES, MODEL_IDS, WINDOW_NAMES } from '../src/attribution/models.js';
import { METRICS, PLATFORM_METRICS } from '../src/attribution/catalog.js';
import { createExportJobs } from '../src/exports/jobs.js';
import { createExportProducer } from '../src/exports/produce.js';
import { startExportWorker } from '../src/exports/worker.js';
import { ADMIN_TOKEN, assertErrorEnvelope, minimalOrder, postOrders, startService, tempDir, type TestApp, type TestClient } from './helpers.js';

const exportsDir = tempDir();
const service = await startService({ EXPORTS_DIR: exportsDir, PUBLIC_URL: 'https://tributary.example.com' });
/** A worker over this file's store, writing files of 3 rows into `dir`. */
function exportWorker(dir: string, overrides: { leaseSeconds?: number; maxAttempts?: number } = {}) {
  return startExportWorker({
    jobs: createExportJobs(service.db, { linkTtlSeconds: service.config.exportLinkTtlSeconds }),
    produce: createExportProducer({ db: service.db, exportsDir: dir, rowsPerFile: 3, connections: 2 }),
    concurrency: 1,
    leaseSeconds: 30,
    maxRunningPerClient: service.config.exportMaxRunningPerClient,
    pollMs: 10,
    maxAttempts: 3,
    ...overrides,
  });
}
const worker = exportWorker(exportsDir);
after(async () => {
  await worker.stop();
  await service.close();
  fs.rmSync(exportsDir, { recursive: true, force: true });
});

const hour = (day: number, h: number) => `2024-03-${String(day).padStart(2, '0')}T${String(h).padStart(2, '0')}:00:00Z`;
const record = (at: string, campaign: string, spend: number) => ({
  hour_start_iso: at,
  platform_name: 'meta',
  campaign_id: campaign,
  campaign_name: `Campaign "${campaign}", spring`,
  spend,
  spend_currency: 'USD',
  impressions: 1000,
  clicks: 10,
});

/** Posts spend records (hourly by default) and checks they were stored. */
async function postSpend(client: TestClient, data: object[], app: TestApp = service.production, url = '/v1/spend_hourly') {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: { data } });
  assert.equal(response.statusCode, 201, response.body);
}

async function clientWithSpend(app: TestApp = service.production): Promise<TestClient> {
  const client = await service.createClient();
  await postSpend(
    client,
    [record(hour(1, 10), 'a', 1.25), record(hour(1, 11), 'a', 2), record(hour(2, 9), 'b', 4), record(hour(3, 9), 'a', 0), record(hour(4, 9), 'b', 1)],
    app,
  );
  return client;
}

const FIXED_MARCH = {
  period_type: 'FIXED',
  period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-04-01T00:00:00Z' },
};

function createExport(client: Pick<TestClient, 'headers'>, body: object, app: TestApp = service.production) {
  return app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: body });
}

async function finished(client: TestClient, id: string, app: TestApp = service.production) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await app.inject({ method: 'GET', url: `/v1/exports/data-export/result/${id}`, headers: client.headers });
    assert.equal(response.statusCode, 200, response.body);
    const result = response.json();
    if (result.status !== 'PENDING') return result;
    if (Date.now() > deadline) throw new Error('the export stayed PENDING');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Downloads a result link with no credentials. */
function download(link: string) {
  const url = new URL(link);
  return service.production.inject({ method: 'GET', url: url.pathname + url.search });
}

/**
 * Runs an export to SUCCESS and downloads every file of it. Returns its warn and its CSV lines:
 * the header (which every file repeats), then the rows of all the files in order.
 */
async function exportCsv(client: TestClient, body: object, app: TestApp = service.production) {
  const created = await createExport(client, body, app);
  assert.equal(created.statusCode, 201, created.body);
  const result = await finished(client, created.json().id, app);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  const files = await Promise.all((result.result as string[]).map(download));
  const lines = files.map((file) => {
    assert.equal(file.statusCode, 200, file.body);
    assert.ok(file.body.endsWith('\r\n'), file.body);
    return file.body.split('\r\n').slice(0, -1);
  });
  const header = lines[0]![0]!;
  for (const file of lines) assert.equal(file[0], header, 'every file starts with the header');
  return { warn: result.warn as Record<string, unknown>, lines: [header, ...lines.flatMap((file) => file.slice(1))] };
}

/** What GET /v1/exports/breakdowns answers with these values; the hosted API's key is an alias of platform. */
const breakdownCatalog = (platform: string[], account: string[]) => ({
  breakdowns: [
    { key: 'platform', values: platform },
    { key: 'account', values: account },
    { key: 'Platform (Northbeam)', values: platform },
  ],
});

function getBreakdowns(client: Pick<TestClient, 'headers'>, app: TestApp = service.production) {
  return app.inject({ method: 'GET', url: '/v1/exports/breakdowns', headers: client.headers });
}

/** An hour of spend of an ad account; its impressions and clicks are those of `record`. */
/** A spend record less its hour, to be given a date. */
const omitHour = ({ hour_start_iso: _hour, ...rest }: ReturnType<typeof record>) => rest;

const adSpend = (at: string, platform_name: string, platform_account_id: string, spend: number) => ({
  ...record(at, `${platform_name}-campaign`, spend),
  platform_name,
  platform_account_id,
});

/** An order of one product, with at most one refund of it: [amount, made at]. */
function purchase(orderId: string, customer: string, at: string, total: number, currency = 'USD', refund?: [number, string]) {
  return minimalOrder(orderId, {
    customer_id: customer,
    time_of_purchase: at,
    currency,
    purchase_total: total,
    products: [{ id: 'p', name: 'Product', quantity: 1, price: total }],
    ...(refund && { refunds: [{ product_id: 'p', quantity: 1, refund_amount: refund[0], refund_cost: 1, refund_made_at: refund[1] }] }),
  });
}

async function sendOrders(client: TestClient, orders: object[], app: TestApp = service.production) {
  const response = await postOrders(app, client, orders);
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual(response.json().warnings, [], response.body);
}

/**
 * The shop the order metrics are computed from, in UTC: its orders and hourly spend, March 1–5
 * 2024 (and an order before and after). Made once, on first use; the tests only read it.
 */
let shopMade: Promise<TestClient> | undefined;
const shop = () =>
  (shopMade ??= (async () => {
    const client = await service.createClient('shop');
    await sendOrders(client, [
      // "ret" first ordered in February: a returning customer in March. The February order's
      // refund, made on March 3, counts on March 3.
      purchase('ret-0', 'ret', '2024-02-20T10:00:00Z', 15, 'USD', [2.5, '2024-03-03T08:00:00Z']),
      purchase('ret-1', 'ret', '2024-03-01T12:00:00Z', 30),
      purchase('ret-2', 'ret', '2024-03-03T15:00:00Z', 10),
      // "twice" orders twice on March 1: one new customer. The first order is partly refunded on March 2 (10:00 UTC).
      purchase('twice-1', 'twice', '2024-03-01T09:00:00Z', 20.5, 'USD', [5.25, '2024-03-02T12:00:00+02:00']),
      purchase('twice-2', 'twice', '2024-03-01T18:00:00Z', 39.75),
      // "late": 23:30 on March 1 at -02:00 is 01:30 UTC on March 2, its first order. It orders
      // again at the first instant of March 4, refunded at the first instant after the period,
      // and once more at that instant: that refund and that order are not in the period.
      purchase('late-1', 'late', '2024-03-01T23:30:00-02:00', 12),
      purchase('late-2', 'late', '2024-03-04T00:00:00Z', 99, 'USD', [50, '2024-03-05T00:00:00Z']),
      purchase('late-3', 'late', '2024-03-05T00:00:00Z', 1000),
      // In euros, on a day of dollar spend only.
      purchase('euro-1', 'euro', '2024-03-02T10:00:00Z', 80, 'EUR'),
    ]);
    await postSpend(client, [
      adSpend(hour(1, 10), 'meta', 'act_1', 20),
      adSpend(hour(1, 11), 'google', 'g-1', 5),
      adSpend(hour(2, 9), 'google', 'g-1', 8),
      adSpend(hour(3, 9), 'meta', 'act_2', 4),
      adSpend(hour(4, 9), 'meta', '', 0),
    ]);
    return client;
  })());

/** March 1 to 5, 2024 (UTC), the 5th excluded. */
const SHOP_PERIOD = {
  period_type: 'FIXED',
  period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-05T00:00:00Z' },
  time_granularity: 'DAILY',
};

test('an export goes PENDING to SUCCESS, and its links download CSV files without credentials', async () => {
  const client = await clientWithSpend();
  const created = await createExport(client, {
    ...FIXED_MARCH,
    level: 'campaign',
    time_granularity: 'DAILY',
    options: { include_ids: true },
    metrics: [{ id: 'spend' }, { id: 'clicks', label: 'Clicks_total' }, { id: 'cpc' }],
    export_file_name: 'march_spend',
  });
  assert.equal(created.statusCode, 201, created.body);
  const { id } = created.json();
  const result = await finished(client, id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  assert.equal(result.data_export_id, id);
  assert.match(result.finished_at, /^\d{4}-\d{2}-\d{2}T/);
  assert.deepEqual(result.warn, {});
  // Four rows, three a file: two files, each with the header.
  assert.equal(result.result.length, 2);
  for (const link of result.result) assert.match(link, /^https:\/\/tributary\.example\.com\/v1\/exports\/files\/.+\/march_spend-\d\.csv\?expires=\d+&signature=/);

  const files = await Promise.all(result.result.map(download));
  for (const file of files) {
    assert.equal(file.statusCode, 200, file.body);
    assert.match(String(file.headers['content-type']), /^text\/csv/);
  }
  const header = 'date,platform,campaign,campaign_id,currency,spend,Clicks_total,cpc';
  assert.equal(
    files[0]!.body,
    [
      header,
      '2024-03-01,meta,"Campaign ""a"", spring",a,USD,3.25,20,0.162500',
      '2024-03-02,meta,"Campaign ""b"", spring",b,USD,4,10,0.400000',
      '2024-03-03,meta,"Campaign ""a"", spring",a,USD,0,10,0.000000',
      '',
    ].join('\r\n'),
  );
  assert.equal(files[1]!.body, [header, '2024-03-04,meta,"Campaign ""b"", spring",b,USD,1,10,0.100000', ''].join('\r\n'));
});

test('remove_zero_spend and export_aggregation DATE shape the rows', async () => {
  const client = await clientWithSpend();
  const { lines } = await exportCsv(client, { ...FIXED_MARCH, options: { remove_zero_spend: true, export_aggregation: 'DATE' }, metrics: [{ id: 'spend' }] });
  assert.deepEqual(lines, ['date,currency,spend', '2024-03-01,USD,3.25', '2024-03-02,USD,4', '2024-03-04,USD,1']);
});

test('results are per client and environment: another client, or UAT, gets 404; a malformed id is 422', async () => {
  const owner = await clientWithSpend();
  const { id } = (await createExport(owner, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const other = await service.createClient();
  const url = `/v1/exports/data-export/result/${id}`;
  assertErrorEnvelope(await service.production.inject({ method: 'GET', url, headers: other.headers }), 404);
  assertErrorEnvelope(await service.uat.inject({ method: 'GET', url, headers: owner.headers }), 404);
  assertErrorEnvelope(
    await service.production.inject({ method: 'GET', url: '/v1/exports/data-export/result/6d0c3d6e-0000-4000-8000-000000000000', headers: owner.headers }),
    404,
  );
  const malformed = assertErrorEnvelope(
    await service.production.inject({ method: 'GET', url: '/v1/exports/data-export/result/not-an-id', headers: owner.headers }),
    422,
  );
  assert.equal(malformed.errors?.[0]?.loc, 'path/export_id');
});

test('a UAT export sees only UAT data', async () => {
  const client = await clientWithSpend(service.uat);
  const uat = await exportCsv(client, { ...FIXED_MARCH, options: { export_aggregation: 'DATE' }, metrics: [{ id: 'spend' }] }, service.uat);
  assert.deepEqual(uat.lines.slice(1).map((row) => row.split(',')[0]), ['2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04'], 'the UAT spend');
  const production = await exportCsv(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] });
  assert.deepEqual(production.lines, ['date,platform,currency,spend'], 'no production spend');
});

test('links stop working when altered or expired', async () => {
  const client = await clientWithSpend();
  const { id } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const [link] = (await finished(client, id)).result as string[];
  const url = new URL(link!);
  const tamper = (change: (url: URL) => void) => {
    const altered = new URL(url);
    change(altered);
    return download(altered.toString());
  };
  assertErrorEnvelope(await tamper((u) => u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 1))), 403);
  assertErrorEnvelope(await tamper((u) => u.searchParams.set('signature', 'x'.repeat(43))), 403);
  assertErrorEnvelope(await tamper((u) => (u.pathname = u.pathname.replace(id, '6d0c3d6e-0000-4000-8000-000000000000'))), 403);
  assertErrorEnvelope(await tamper((u) => u.searchParams.set('expires', '1000')), 403);
  assert.equal((await download(link!)).statusCode, 200);
});

test('invalid export requests are 422 naming each problem', async () => {
  const client = await service.createClient();
  const cases: [object, [string, string][]][] = [
    [{ metrics: [] }, [['body/metrics', 'min_items']]],
    [{ metrics: [{ id: 'profit' }] }, [['body/metrics/0/id', 'enum']]],
    [{ metrics: [{ id: 'spend', label: '1st' }] }, [['body/metrics/0/label', 'pattern']]],
    [{ metrics: [{ id: 'spend' }, { id: 'spend' }] }, [['body/metrics/1/id', 'unique']]],
    [{ metrics: [{ id: 'spend' }, { id: 'revenue' }, { id: 'mer' }] }, [['body/metrics/1/id', 'dependency'], ['body/metrics/2/id', 'dependency']]],
    [{ period_type: 'FIXED', metrics: [{ id: 'spend' }] }, [['body/period_options', 'period']]],
    [
      { period_type: 'FIXED', period_options: { period_starting_at: '2020-01-01T00:00:00Z', period_ending_at: '2024-01-01T00:00:00Z' }, metrics: [{ id: 'spend' }] },
      [['body/period_options', 'period']],
    ],
    [{ period_type: 'LAST_2_DAYS', metrics: [{ id: 'spend' }] }, [['body/period_type', 'enum']]],
    [{ level: 'keyword', metrics: [{ id: 'spend' }] }, [['body/level', 'enum']]],
    [{ attribution_options: { attribution_models: ['last_click'] }, metrics: [{ id: 'spend' }] }, [['body/attribution_options/attribution_models/0', 'enum']]],
    [{ breakdowns: [{ key: 'Platform', values: ['meta'] }], metrics: [{ id: 'spend' }] }, [['body/breakdowns/0/key', 'enum']]],
    [{ breakdowns: [{ key: 'platform (northbeam)', values: [] }], metrics: [{ id: 'spend' }] }, [['body/breakdowns/0/key', 'enum']]],
    [
      { breakdowns: [{ key: 'platform', values: [] }, { key: 'account', values: [] }, { key: 'platform', values: ['meta'] }], metrics: [{ id: 'spend' }] },
      [['body/breakdowns/2/key', 'unique']],
    ],
    [{ export_file_name: 'a b', metrics: [{ id: 'spend' }] }, [['body/export_file_name', 'pattern']]],
    [{ bucket_name: 'mine', metrics: [{ id: 'spend' }] }, [['body/bucket_name', 'not_supported']]],
    [{ aws_role: 'arn:aws:iam::1:role/x', region: 'eu-west-1', metrics: [{ id: 'spend' }] }, [['body/aws_role', 'not_supported'], ['body/region', 'not_supported']]],
    [{ metrics: [{ id: 'spend', label: 'currency' }] }, [['body/metrics/0/label', 'unique']]],
    [{ metrics: [{ id: 'spend', label: 'Money' }, { id: 'cpc', label: 'Money' }] }, [['body/metrics/1/label', 'unique']]],
  ];
  for (const [body, expected] of cases) {
    const envelope = assertErrorEnvelope(await createExport(client, body), 422);
    assert.deepEqual(envelope.errors?.map((item) => [item.loc, item.type]), expected, JSON.stringify(body));
  }
});

test('an export whose days × attribution combinations pass the limit is refused before it runs', async () => {
  const client = await service.createClient();
  const everyCombination = {
    attribution_models: [...MODEL_IDS, ...Object.keys(MODEL_ALIASES)],
    attribution_windows: WINDOW_NAMES,
    accounting_modes: ['cash', 'accrual'],
  };
  const combinations = everyCombination.attribution_models.length * WINDOW_NAMES.length * 2;
  const twoYearsHourly = {
    level: 'campaign',
    time_granularity: 'HOURLY',
    period_type: 'FIXED',
    period_options: { period_starting_at: '2023-01-01', period_ending_at: '2024-12-31' },
    metrics: [{ id: 'rev' }, { id: 'spend' }, { id: 'roas' }],
    attribution_options: everyCombination,
  };
  const { errors } = assertErrorEnvelope(await createExport(client, twoYearsHourly), 422);
  assert.deepEqual(errors, [
    {
      loc: 'body/attribution_options',
      msg:
        'An export may credit at most 11,712 day-combinations (the period\'s days × models × windows × accounting modes: a year of 32 ' +
        `combinations); this one asks for 731 × ${combinations} = ${(731 * combinations).toLocaleString('en-US')}. Split it by period, or by model`,
      type: 'too_large',
    },
  ]);
  // At the limit: a year of 32 combinations is taken.
  const yearOf32 = {
    ...twoYearsHourly,
    time_granularity: 'DAILY',
    period_options: { period_starting_at: '2024-01-01', period_ending_at: '2024-12-31' },
    attribution_options: { attribution_models: MODEL_IDS.slice(0, 4), attribution_windows: ['1', '7', '30', '90'], accounting_modes: ['cash', 'accrual'] },
  };
  assert.equal((await createExport(client, yearOf32)).statusCode, 201);
  const aDayMore = { ...yearOf32, period_options: { period_starting_at: '2024-01-01', period_ending_at: '2025-01-01' } };
  assert.equal(assertErrorEnvelope(await createExport(client, aDayMore), 422).errors![0]!.type, 'too_large');
});

test('breakdowns and order metrics are refused, with a reason, where they cannot apply', async () => {
  const client = await service.createClient();
  const refusal = async (body: object) => assertErrorEnvelope(await createExport(client, body), 422).errors?.map(({ loc, msg, type }) => ({ loc, msg, type }));
  assert.deepEqual(await refusal({ breakdowns: [{ key: 'campaign', values: [] }], metrics: [{ id: 'spend' }] }), [
    { loc: 'body/breakdowns/0/key', msg: 'Unknown breakdown key: GET /v1/exports/breakdowns lists them', type: 'enum' },
  ]);
  assert.deepEqual(
    await refusal({ breakdowns: [{ key: 'account', values: ['a'] }, { key: 'account', values: ['b'] }], metrics: [{ id: 'spend' }] }),
    [{ loc: 'body/breakdowns/1/key', msg: 'Each breakdown key may be given once', type: 'unique' }],
  );
  // The hosted API's key is platform under another name: both would leave unclear which values keep rows.
  assert.deepEqual(
    await refusal({
      breakdowns: [{ key: 'platform', values: ['meta'] }, { key: 'account', values: [] }, { key: 'Platform (Northbeam)', values: ['google'] }],
      metrics: [{ id: 'spend' }],
    }),
    [{ loc: 'body/breakdowns/2/key', msg: 'Platform (Northbeam) is the breakdown platform names already: each breakdown may be given once', type: 'unique' }],
  );
  // Neither a level nor breakdowns make room for the store's metrics: only the two aggregations do.
  const storeMetrics = { metrics: [{ id: 'clicks' }, { id: 'new_customers' }, { id: 'blended_cac' }] };
  const refused = await refusal({ ...storeMetrics, level: 'campaign', breakdowns: [{ key: 'platform', values: [] }] });
  assert.deepEqual(refused?.map(({ loc, type }) => [loc, type]), [
    ['body/metrics/1/id', 'dependency'],
    ['body/metrics/2/id', 'dependency'],
  ]);
  assert.match(refused![0]!.msg, /options\.aggregate_data or options\.export_aggregation DATE/);
  for (const options of [{ aggregate_data: true }, { export_aggregation: 'DATE' }]) {
    const created = await createExport(client, { ...storeMetrics, options });
    assert.equal(created.statusCode, 201, created.body);
  }
});

test('options that cannot apply are accepted and named in warn', async () => {
  const client = await clientWithSpend();
  const { id } = (
    await createExport(client, {
      period_type: 'LAST_7_DAYS',
      period_options: FIXED_MARCH.period_options,
      level: 'ad',
      options: { export_aggregation: 'DATE', include_ids: true, include_kind_and_platform: true },
      attribution_options: { attribution_windows: ['7'], accounting_modes: ['cash'] },
      metrics: [{ id: 'spend' }],
    })
  ).json();
  const result = await finished(client, id);
  assert.equal(result.status, 'SUCCESS');
  assert.deepEqual(
    result.warn.ignored.map((text: string) => text.split(' ')[0]),
    [
      'period_options',
      'options.include_kind_and_platform',
      'options.include_ids',
      'level',
      'attribution_options.attribution_windows',
      'attribution_options.accounting_modes',
    ],
  );
  assert.equal(result.warn.ignored[1], 'options.include_kind_and_platform (export_aggregation DATE sums over the ad objects)');

  const platforms = await exportCsv(client, { ...FIXED_MARCH, level: 'campaign', options: { aggregate_data: true, include_ids: true }, metrics: [{ id: 'spend' }] });
  assert.deepEqual(platforms.warn.ignored, [
    'options.include_ids (aggregate_data keeps the platform level, which has no id)',
    'level (aggregate_data keeps the platform level)',
  ]);
  assert.equal(platforms.lines[0], 'date,platform,currency,spend');
});

test('an export holding several currencies says so in warn', async () => {
  const client = await clientWithSpend();
  await postSpend(client, [{ ...record(hour(1, 10), 'eu', 3), spend_currency: 'EUR' }]);
  const { id } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const result = await finished(client, id);
  assert.match(result.warn.currencies, /EUR, USD .* never added together/);
});

test('the catalogs list what an export can hold', async () => {
  const client = await service.createClient();
  const get = (url: string) => service.production.inject({ method: 'GET', url, headers: client.headers }).then((response) => response.json());
  const { metrics } = (await get('/v1/exports/metrics')) as { metrics: { id: string; label: string; definition: string }[] };
  assert.ok(metrics.every((metric) => metric.definition.length > 0), 'every metric has its definition');
  assert.deepEqual(metrics.find((metric) => metric.id === 'imprs'), { id: 'imprs', label: 'Impressions', definition: "impressions, under the hosted API's id. Sum of impressions." });
  assert.deepEqual(metrics.map(({ id, label }) => ({ id, label })), [
    { id: 'spend', label: 'Spend' },
    { id: 'impressions', label: 'Impressions' },
    { id: 'clicks', label: 'Clicks' },
    { id: 'ctr', label: 'CTR' },
    { id: 'cpc', label: 'CPC' },
    { id: 'cpm', label: 'CPM' },
    { id: 'revenue', label: 'Revenue' },
    { id: 'transactions', label: 'Transactions' },
    { id: 'aov', label: 'Average order value' },
    { id: 'refunds', label: 'Refunds' },
    { id: 'net_revenue', label: 'Net revenue' },
    { id: 'new_customers', label: 'New customers' },
    { id: 'returning_customers', label: 'Returning customers' },
    { id: 'mer', label: 'MER (blended ROAS)' },
    { id: 'blended_cac', label: 'Blended CAC' },
    ...METRICS.filter((metric) => metric.source === 'attribution').map(({ id, label }) => ({ id, label })),
    { id: 'imprs', label: 'Impressions' },
    { id: 'revAttributed', label: 'Attributed revenue' },
    // The hosted API's platform metric ids, last (test/platform-metrics.test.ts).
    ...PLATFORM_METRICS.map(({ id, figure, platform }) => ({ id, label: `${platform.name} ${figure}` })),
  ]);
  assert.deepEqual(
    PLATFORM_METRICS.filter(({ platform }) => ['google', 'meta', 'tiktok'].includes(platform.prefix)).map(({ id }) => id),
    ['googleSpend', 'googleImpressions', 'googleClicks', 'metaSpend', 'metaImpressions', 'metaLinkClicks', 'tiktokSpend', 'tiktokImpressions', 'tiktokClicks'],
  );
  assert.deepEqual(await get('/v1/exports/attribution-models'), {
    attribution_models: [
      { id: 'first_touch', name: 'First touch' },
      { id: 'last_touch', name: 'Last touch' },
      { id: 'last_touch_non_direct', name: 'Last non-direct touch' },
      { id: 'linear', name: 'Linear' },
      { id: 'position_based', name: 'Position-based (40/20/40)' },
      { id: 'time_decay', name: 'Time decay (7-day half-life)' },
      { id: 'clicks_only', name: 'Clicks only' },
      { id: 'clicks_and_views', name: 'Clicks and views' },
      { id: 'markov', name: 'Data-driven (Markov chain)' },
      { id: 'shapley', name: 'Data-driven (Shapley value)' },
      { id: 'northbeam_custom', name: 'Clicks only (alias of clicks_only)' },
      { id: 'northbeam_custom__va', name: 'Clicks and views (alias of clicks_and_views)' },
      { id: 'northbeam_custom__enh', name: 'Clicks and views (alias of clicks_and_views)' },
    ],
  });
  assert.deepEqual(await get('/v1/exports/breakdowns'), breakdownCatalog([], []), 'no spend yet: the keys, with no values');

  // The API's document says what the aliases stand for.
  const request = (await get('/openapi.json')).paths['/v1/exports/data-export'].post.requestBody.content['application/json'].schema;
  assert.match(
    request.properties.attribution_options.properties.attribution_models.description,
    /northbeam_custom of clicks_only, northbeam_custom__va of clicks_and_views, northbeam_custom__enh of clicks_and_views/,
  );
  assert.match(request.properties.breakdowns.items.properties.key.description, /Platform \(Northbeam\).* alias of platform/);
});

test('the UAT test credentials get an id, and nothing is created', async () => {
  const testCredentials = { headers: { authorization: 'None', 'data-client-id': 'test' } };
  const before = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM exports');
  const created = await createExport(testCredentials, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] }, service.uat);
  assert.equal(created.statusCode, 201, created.body);
  assert.match(created.json().id, /^[0-9a-f-]{36}$/);
  assert.deepEqual(await service.db.query('SELECT count(*)::int AS n FROM exports'), before);
  assertErrorEnvelope(await createExport(testCredentials, { metrics: [{ id: 'profit' }] }, service.uat), 422);
});

test('order metrics: a store row per day and currency, beside the spend, under export_aggregation DATE', async () => {
  const client = await shop();
  const { warn, lines } = await exportCsv(client, {
    ...SHOP_PERIOD,
    options: { export_aggregation: 'DATE' },
    metrics: [
      { id: 'spend' },
      { id: 'revenue' },
      { id: 'transactions' },
      { id: 'aov' },
      { id: 'refunds' },
      { id: 'net_revenue' },
      { id: 'new_customers' },
      { id: 'returning_customers' },
      { id: 'mer', label: 'MER' },
      { id: 'blended_cac' },
    ],
  });
  assert.match(String(warn.currencies), /^Amounts in EUR, USD are in rows of their own/);
  assert.equal(warn.ignored, undefined);
  // March 1, USD: spend 20 (meta) + 5 (google) = 25; orders ret-1 30, twice-1 20.5, twice-2 39.75:
  //   revenue 90.25, 3 transactions, aov 90.25 / 3 = 30.0833…; no refund; new: twice (once,
  //   though twice ordered twice); returning: ret (first order in February); MER 90.25 / 25 = 3.61;
  //   CAC 25 / 1.
  // March 2, EUR: no euro spend; euro-1 80, a new customer: MER over no spend is empty, CAC 0 / 1.
  // March 2, USD: spend 8; late-1 12 (23:30 at -02:00 on the 1st), new; twice-1's refund 5.25:
  //   net 12 − 5.25 = 6.75; MER 12 / 8 = 1.5; CAC 8 / 1.
  // March 3, USD: spend 4; ret-2 10, returning; ret-0's refund 2.5 (of a February order):
  //   net 7.5; MER 10 / 4 = 2.5; no new customer: CAC is empty.
  // March 4, USD: spend 0 (a record of 0); late-2 99, returning; its refund and late-3 fall on
  //   the 5th, after the period. MER and CAC are empty.
  assert.deepEqual(lines, [
    'date,currency,spend,revenue,transactions,aov,refunds,net_revenue,new_customers,returning_customers,MER,blended_cac',
    '2024-03-01,USD,25,90.25,3,30.083333,0,90.25,1,1,3.610000,25.000000',
    '2024-03-02,EUR,0,80,1,80.000000,0,80,1,0,,0.000000',
    '2024-03-02,USD,8,12,1,12.000000,5.25,6.75,1,0,1.500000,8.000000',
    '2024-03-03,USD,4,10,1,10.000000,2.5,7.5,0,1,2.500000,',
    '2024-03-04,USD,0,99,1,99.000000,0,99,0,1,,',
  ]);
});

test('aggregate_data with order metrics: platform rows of spend, then store rows of all of it; kind names them', async () => {
  const client = await shop();
  const request = { ...SHOP_PERIOD, options: { aggregate_data: true, include_kind_and_platform: true }, metrics: [{ id: 'spend' }, { id: 'revenue' }, { id: 'mer' }] };
  const { warn, lines } = await exportCsv(client, request);
  assert.equal(warn.ignored, undefined, 'include_kind_and_platform applies');
  // Per day: the store rows first (by currency), then the platforms; the platform rows leave the
  // order metrics empty. The figures are those of the DATE export of the same shop.
  const rows = [
    '2024-03-01,,store,USD,25,90.25,3.610000',
    '2024-03-01,google,platform,USD,5,,',
    '2024-03-01,meta,platform,USD,20,,',
    '2024-03-02,,store,EUR,0,80,',
    '2024-03-02,,store,USD,8,12,1.500000',
    '2024-03-02,google,platform,USD,8,,',
    '2024-03-03,,store,USD,4,10,2.500000',
    '2024-03-03,meta,platform,USD,4,,',
    '2024-03-04,,store,USD,0,99,',
    '2024-03-04,meta,platform,USD,0,,',
  ];
  assert.deepEqual(lines, ['date,platform,kind,currency,spend,revenue,mer', ...rows]);

  // remove_zero_spend leaves out store rows of no spend too, whatever their revenue.
  const nonZero = await exportCsv(client, { ...request, options: { ...request.options, remove_zero_spend: true } });
  const zeroSpend = ['2024-03-02,,store,EUR,0,80,', '2024-03-04,,store,USD,0,99,', '2024-03-04,meta,platform,USD,0,,'];
  assert.deepEqual(nonZero.lines.slice(1), rows.filter((row) => !zeroSpend.includes(row)));

  // Without order metrics, there is no store row.
  const spendOnly = await exportCsv(client, { ...request, metrics: [{ id: 'spend' }, { id: 'clicks' }] });
  assert.deepEqual(spendOnly.lines, [
    'date,platform,kind,currency,spend,clicks',
    '2024-03-01,google,platform,USD,5,10',
    '2024-03-01,meta,platform,USD,20,10',
    '2024-03-02,google,platform,USD,8,10',
    '2024-03-03,meta,platform,USD,4,10',
    '2024-03-04,meta,platform,USD,0,10',
  ]);
});

test('GET /v1/exports/breakdowns lists the platforms and accounts of the client\'s own spend, per environment', async () => {
  const shopClient = await shop();
  const listed = async (client: Pick<TestClient, 'headers'>, app: TestApp = service.production) => {
    const response = await getBreakdowns(client, app);
    assert.equal(response.statusCode, 200, response.body);
    return response.json();
  };
  // Sorted and distinct; the spend sent without an account adds no empty value.
  assert.deepEqual(await listed(shopClient), breakdownCatalog(['google', 'meta'], ['act_1', 'act_2', 'g-1']));

  // Another client, with spend on UAT too (daily spend counts as well as hourly).
  const other = await clientWithSpend();
  const { hour_start_iso: _hour, ...tiktok } = adSpend(hour(1, 0), 'tiktok', 'tt-1', 3);
  await postSpend(other, [{ ...tiktok, date: '2024-03-01' }], service.uat, '/v1/spend');
  assert.deepEqual(await listed(other), breakdownCatalog(['meta'], []), 'production: its own spend only');
  assert.deepEqual(await listed(other, service.uat), breakdownCatalog(['tiktok'], ['tt-1']), 'UAT: the UAT spend only');
  assert.deepEqual(await listed(shopClient, service.uat), breakdownCatalog([], []));
  assert.deepEqual(await listed(shopClient), breakdownCatalog(['google', 'meta'], ['act_1', 'act_2', 'g-1']), 'unchanged');

  // The UAT test credentials store nothing, so they have no values.
  assert.deepEqual(await listed({ headers: { authorization: 'None', 'data-client-id': 'test' } }, service.uat), breakdownCatalog([], []));
  assertErrorEnvelope(await getBreakdowns({ headers: { authorization: 'None', 'data-client-id': 'test' } }), 401);
});

test('breakdowns split the rows of ad objects by platform and account, and values keep some of them', async () => {
  const client = await shop();
  // Under export_aggregation DATE, a breakdown brings its column back; the store rows hold the
  // spend of every platform (google's too), and kind is ignored.
  const metaOnly = await exportCsv(client, {
    ...SHOP_PERIOD,
    breakdowns: [{ key: 'platform', values: ['meta'] }],
    options: { export_aggregation: 'DATE', include_kind_and_platform: true },
    metrics: [{ id: 'spend' }, { id: 'revenue' }],
  });
  assert.deepEqual(metaOnly.warn.ignored, ['options.include_kind_and_platform (export_aggregation DATE sums over the ad objects)']);
  assert.deepEqual(metaOnly.lines, [
    'date,platform,currency,spend,revenue',
    '2024-03-01,,USD,25,90.25',
    '2024-03-01,meta,USD,20,',
    '2024-03-02,,EUR,0,80',
    '2024-03-02,,USD,8,12',
    '2024-03-03,,USD,4,10',
    '2024-03-03,meta,USD,4,',
    '2024-03-04,,USD,0,99',
    '2024-03-04,meta,USD,0,',
  ]);

  // The hosted API's key, as two of its clients send it, is platform: the same rows.
  const aliased = await exportCsv(client, {
    ...SHOP_PERIOD,
    breakdowns: [{ key: 'Platform (Northbeam)', values: ['meta'] }],
    options: { export_aggregation: 'DATE', include_kind_and_platform: true },
    metrics: [{ id: 'spend' }, { id: 'revenue' }],
  });
  assert.deepEqual(aliased, metaOnly);

  // Both keys, all values, spend only: a row per day × platform × account; no store row.
  const both = await exportCsv(client, {
    ...SHOP_PERIOD,
    breakdowns: [
      { key: 'account', values: [] },
      { key: 'platform', values: [] },
    ],
    options: { export_aggregation: 'DATE' },
    metrics: [{ id: 'spend' }],
  });
  assert.deepEqual(both.lines, [
    'date,platform,account,currency,spend',
    '2024-03-01,google,g-1,USD,5',
    '2024-03-01,meta,act_1,USD,20',
    '2024-03-02,google,g-1,USD,8',
    '2024-03-03,meta,act_2,USD,4',
    '2024-03-04,meta,,USD,0',
  ]);

  // At the platform level, an account breakdown adds its column; its values keep two accounts.
  const accounts = await exportCsv(client, {
    ...SHOP_PERIOD,
    breakdowns: [{ key: 'account', values: ['g-1', 'act_2'] }],
    metrics: [{ id: 'spend' }, { id: 'cpc' }],
  });
  assert.deepEqual(accounts.lines, [
    'date,platform,account,currency,spend,cpc',
    '2024-03-01,google,g-1,USD,5,0.500000',
    '2024-03-02,google,g-1,USD,8,0.800000',
    '2024-03-03,meta,act_2,USD,4,0.400000',
  ]);
});

/** A new client whose time zone is `timeZone`. */
async function clientIn(timeZone: string): Promise<TestClient> {
  const client = await service.createClient();
  const patched = await service.production.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: timeZone },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  return client;
}

test('order metrics count days in the client\'s time zone', async () => {
  const client = await clientIn('America/New_York');
  // In New York (UTC−5 in early March), all three fall on the evening of March 1 and the first
  // half hour of March 2, though all are on March 2 in UTC.
  await sendOrders(client, [purchase('night-1', 'night', '2024-03-02T03:00:00Z', 40, 'USD', [7, '2024-03-02T05:30:00Z'])]); // 22:00; refund 00:30
  await postSpend(client, [adSpend('2024-03-02T04:00:00Z', 'meta', 'act_1', 3)]); // 23:00
  const period = { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01T05:00:00Z', period_ending_at: '2024-03-03T05:00:00Z' } };
  const daily = await exportCsv(client, {
    ...period,
    options: { export_aggregation: 'DATE' },
    metrics: ['spend', 'revenue', 'transactions', 'aov', 'refunds', 'net_revenue', 'new_customers'].map((id) => ({ id })),
  });
  // March 2 has the refund alone: no order, so an empty AOV, and a negative net revenue.
  assert.deepEqual(daily.lines, [
    'date,currency,spend,revenue,transactions,aov,refunds,net_revenue,new_customers',
    '2024-03-01,USD,3,40,1,40.000000,0,40,1',
    '2024-03-02,USD,0,0,0,,7,-7,0',
  ]);
  const hourly = await exportCsv(client, {
    ...period,
    time_granularity: 'HOURLY',
    options: { export_aggregation: 'DATE' },
    metrics: [{ id: 'spend' }, { id: 'revenue' }, { id: 'refunds' }],
  });
  assert.deepEqual(hourly.lines, [
    'date,currency,spend,revenue,refunds',
    '2024-03-01T22:00:00-05:00,USD,0,40,0',
    '2024-03-01T23:00:00-05:00,USD,3,0,0',
    '2024-03-02T00:00:00-05:00,USD,0,0,7',
  ]);
});

test('a FIXED period of two dates is those whole local days, the last included', async () => {
  const client = await clientIn('America/New_York'); // UTC−5 in November
  // Hourly spend just outside and just inside local midnight at either end; daily spend the days
  // before, at and after either end.
  await postSpend(client, [
    adSpend('2026-11-16T04:00:00Z', 'meta', 'act_1', 1), // 15 Nov, 23:00
    adSpend('2026-11-16T05:00:00Z', 'meta', 'act_1', 2), // 16 Nov, 00:00
    adSpend('2026-11-23T04:00:00Z', 'meta', 'act_1', 4), // 22 Nov, 23:00
    adSpend('2026-11-23T05:00:00Z', 'meta', 'act_1', 8), // 23 Nov, 00:00
  ]);
  const day = (date: string, spend: number) => ({ ...omitHour(adSpend('', 'google', 'act_2', spend)), date });
  await postSpend(client, [day('2026-11-15', 16), day('2026-11-16', 32), day('2026-11-22', 64), day('2026-11-23', 128)], service.production, '/v1/spend');

  const request = (period_starting_at: string, period_ending_at: string) => ({
    period_type: 'FIXED',
    period_options: { period_starting_at, period_ending_at },
    metrics: [{ id: 'spend', label: 'spend_total' }],
  });
  const expected = [
    'date,platform,currency,spend_total',
    '2026-11-16,google,USD,32',
    '2026-11-16,meta,USD,2',
    '2026-11-22,google,USD,64',
    '2026-11-22,meta,USD,4',
  ];
  assert.deepEqual((await exportCsv(client, request('2026-11-16', '2026-11-22'))).lines, expected);
  // The same as the local midnights that begin the first day and end the last.
  assert.deepEqual((await exportCsv(client, request('2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00'))).lines, expected);
  // One date twice is that day.
  assert.deepEqual((await exportCsv(client, request('2026-11-22', '2026-11-22'))).lines, [expected[0], ...expected.slice(3)]);

  // Weekly buckets: the seven days are one week, from Monday the 16th.
  const weekly = await exportCsv(client, { ...request('2026-11-16', '2026-11-22'), time_granularity: 'WEEKLY', options: { export_aggregation: 'DATE' } });
  assert.deepEqual(weekly.lines, ['date,currency,spend_total', '2026-11-16,USD,102']);
});

test('a FIXED period mixing a date and a date-time, or dates out of order, is a 422 that says so', async () => {
  const client = await service.createClient();
  const problems = async (period_starting_at: string, period_ending_at: string) => {
    const body = { period_type: 'FIXED', period_options: { period_starting_at, period_ending_at }, metrics: [{ id: 'spend' }] };
    return (assertErrorEnvelope(await createExport(client, body), 422).errors ?? []).map(({ loc, msg, type }) => ({ loc, msg, type }));
  };
  const both = 'Give period_starting_at and period_ending_at both as dates (whole days) or both as date-times';
  assert.deepEqual(await problems('2026-11-16', '2026-11-23T00:00:00Z'), [{ loc: 'body/period_options', msg: both, type: 'period' }]);
  assert.deepEqual(await problems('2026-11-16T00:00:00Z', '2026-11-22'), [{ loc: 'body/period_options', msg: both, type: 'period' }]);
  assert.deepEqual(await problems('2026-11-22', '2026-11-16'), [
    { loc: 'body/period_options', msg: 'period_ending_at must not be before period_starting_at', type: 'period' },
  ]);
  assert.deepEqual(await problems('2024-11-16', '2026-11-16'), [
    { loc: 'body/period_options', msg: 'A FIXED period may be at most 2 years long', type: 'period' },
  ]);
  assert.deepEqual((await problems('2026-11-16 00:00', '2026-02-30')).map(({ loc, type }) => ({ loc, type })), [
    { loc: 'body/period_options/period_starting_at', type: 'format' },
    { loc: 'body/period_options/period_ending_at', type: 'format' },
  ]);
  // Exactly two years, the last day included.
  const twoYears = { period_type: 'FIXED', period_options: { period_starting_at: '2024-11-16', period_ending_at: '2026-11-15' }, metrics: [{ id: 'spend' }] };
  assert.equal((await createExport(client, twoYears)).statusCode, 201);
});

test('a failing attempt ends as ERROR with the first error, named by code, and the process goes on', async () => {
  const client = await clientWithSpend();
  // A zone the database does not know fails the rows' statement itself, mid-cursor.
  await service.db.query("UPDATE clients SET time_zone = 'Nowhere/Atlantis' WHERE client_id = $1", [client.client_id]);
  const failing = exportWorker(exportsDir, { leaseSeconds: 0, maxAttempts: 1 });
  await worker.stop(); // only the failing worker runs this job
  try {
    // Whole days: an instant's local day would be found by Intl before the statement runs, which
    // no zone can fail in production (a client's zone is one both Intl and the database know).
    const marchDays = { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' } };
    const { id } = (await createExport(client, { ...marchDays, metrics: [{ id: 'spend' }] })).json();
    const result = await finished(client, id);
    assert.equal(result.status, 'ERROR');
    assert.deepEqual(result.warn, { error: 'The database could not compute the export (error 22023)' }, 'not the aborted transaction');
  } finally {
    await failing.stop();
  }
});

test('an export directory that cannot be written ends the export as ERROR, named by code', async () => {
  await worker.stop(); // only the broken worker runs this job
  const client = await clientWithSpend();
  const { id } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const broken = exportWorker('/dev/null/exports', { leaseSeconds: 0, maxAttempts: 1 });
  try {
    const result = await finished(client, id);
    assert.equal(result.status, 'ERROR');
    assert.match(result.warn.error, /^The export file could not be written \(E[A-Z]+\)$/);
  } finally {
    await broken.stop();
  }
});
