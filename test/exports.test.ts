import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import { createExportJobs } from '../src/exports/jobs.js';
import { createExportProducer } from '../src/exports/produce.js';
import { startExportWorker } from '../src/exports/worker.js';
import { assertErrorEnvelope, startService, tempDir, type TestApp, type TestClient } from './helpers.js';

const exportsDir = tempDir();
const service = await startService({ EXPORTS_DIR: exportsDir, PUBLIC_URL: 'https://tributary.example.com' });
/** A worker over this file's store, writing files of 3 rows into `dir`. */
function exportWorker(dir: string, overrides: { leaseSeconds?: number; maxAttempts?: number } = {}) {
  return startExportWorker({
    jobs: createExportJobs(service.db),
    produce: createExportProducer({ db: service.db, exportsDir: dir, rowsPerFile: 3 }),
    concurrency: 1,
    leaseSeconds: 30,
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

async function clientWithSpend(app: TestApp = service.production): Promise<TestClient> {
  const client = await service.createClient();
  const response = await app.inject({
    method: 'POST',
    url: '/v1/spend_hourly',
    headers: client.headers,
    payload: {
      data: [record(hour(1, 10), 'a', 1.25), record(hour(1, 11), 'a', 2), record(hour(2, 9), 'b', 4), record(hour(3, 9), 'a', 0), record(hour(4, 9), 'b', 1)],
    },
  });
  assert.equal(response.statusCode, 201, response.body);
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
  const header = 'date,platform,campaign,campaign_id,currency,Spend,Clicks_total,CPC';
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
  const { id } = (
    await createExport(client, { ...FIXED_MARCH, options: { remove_zero_spend: true, export_aggregation: 'DATE' }, metrics: [{ id: 'spend' }] })
  ).json();
  const result = await finished(client, id);
  const [file] = await Promise.all(result.result.map(download));
  assert.equal(file!.body, ['date,currency,Spend', '2024-03-01,USD,3.25', '2024-03-02,USD,4', '2024-03-04,USD,1', ''].join('\r\n'));
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
  const { id } = (await createExport(client, { ...FIXED_MARCH, options: { export_aggregation: 'DATE' }, metrics: [{ id: 'spend' }] }, service.uat)).json();
  const result = await finished(client, id, service.uat);
  const files = await Promise.all(result.result.map(download));
  const rows = files.flatMap((file) => file.body.split('\r\n').slice(1, -1));
  assert.deepEqual(rows.map((row) => row.split(',')[0]), ['2024-03-01', '2024-03-02', '2024-03-03', '2024-03-04'], 'the UAT spend');
  const { id: productionId } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const production = await finished(client, productionId);
  const [empty] = await Promise.all(production.result.map(download));
  assert.equal(empty!.body, 'date,platform,currency,Spend\r\n', 'no production spend');
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
    [{ metrics: [{ id: 'revenue' }] }, [['body/metrics/0/id', 'not_supported']]],
    [{ period_type: 'FIXED', metrics: [{ id: 'spend' }] }, [['body/period_options', 'period']]],
    [
      { period_type: 'FIXED', period_options: { period_starting_at: '2020-01-01T00:00:00Z', period_ending_at: '2024-01-01T00:00:00Z' }, metrics: [{ id: 'spend' }] },
      [['body/period_options', 'period']],
    ],
    [{ period_type: 'LAST_2_DAYS', metrics: [{ id: 'spend' }] }, [['body/period_type', 'enum']]],
    [{ level: 'keyword', metrics: [{ id: 'spend' }] }, [['body/level', 'enum']]],
    [{ attribution_options: { attribution_models: ['linear'] }, metrics: [{ id: 'spend' }] }, [['body/attribution_options/attribution_models/0', 'enum']]],
    [{ breakdowns: [{ key: 'Platform', values: ['meta'] }], metrics: [{ id: 'spend' }] }, [['body/breakdowns/0/key', 'enum']]],
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
});

test('an export holding several currencies says so in warn', async () => {
  const client = await clientWithSpend();
  const euros = await service.production.inject({
    method: 'POST',
    url: '/v1/spend_hourly',
    headers: client.headers,
    payload: { data: [{ ...record(hour(1, 10), 'eu', 3), spend_currency: 'EUR' }] },
  });
  assert.equal(euros.statusCode, 201, euros.body);
  const { id } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
  const result = await finished(client, id);
  assert.match(result.warn.currencies, /EUR, USD .* never added together/);
});

test('the catalogs list what an export can hold', async () => {
  const client = await service.createClient();
  const get = (url: string) => service.production.inject({ method: 'GET', url, headers: client.headers }).then((response) => response.json());
  const { metrics } = await get('/v1/exports/metrics');
  assert.deepEqual(metrics.map((metric: { id: string }) => metric.id), ['spend', 'impressions', 'clicks', 'ctr', 'cpc', 'cpm']);
  assert.deepEqual(await get('/v1/exports/attribution-models'), { attribution_models: [] });
  assert.deepEqual(await get('/v1/exports/breakdowns'), { breakdowns: [] });
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

test('a failing attempt ends as ERROR with the first error, named by code, and the process goes on', async () => {
  const client = await clientWithSpend();
  // A zone the database does not know fails the rows' statement itself, mid-cursor.
  await service.db.query("UPDATE clients SET time_zone = 'Nowhere/Atlantis' WHERE client_id = $1", [client.client_id]);
  const failing = exportWorker(exportsDir, { leaseSeconds: 0, maxAttempts: 1 });
  await worker.stop(); // only the failing worker runs this job
  try {
    const { id } = (await createExport(client, { ...FIXED_MARCH, metrics: [{ id: 'spend' }] })).json();
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
