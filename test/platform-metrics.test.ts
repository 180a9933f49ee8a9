import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { assertErrorEnvelope, finishedExport, minimalOrder, parseCsv, startExportingService, type TestClient } from './helpers.js';
import { pipelineScriptsExport } from './pipeline-scripts.js';

/*
 * The hosted API's platform metric ids (googleClicks, metaLinkClicks, tiktokSpend, ...): each is
 * the spend, impressions or clicks of one platform's spend records, on every row, in exports and
 * reports, on both stores. Data goes in through the API; the files are read by column header, as
 * the data-pipeline scripts read them.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

const DAY = '2026-11-22';
const NEXT_DAY = '2026-11-23';

/** Which platform each platform_name used below is, as a person reading docs/decisions.md would say; null: none with ids of its own. */
const PLATFORM_OF: Record<string, string | null> = {
  'Google Ads': 'google',
  google: 'google',
  'Facebook Ads': 'meta',
  META: 'meta',
  Instagram: 'meta',
  TikTok: 'tiktok',
  'Bing Ads': 'microsoft',
  'YouTube Ads': null,
};
/** The ids of each platform's figures, as the hosted API's clients send them. */
const IDS: Record<string, Record<'spend' | 'impressions' | 'clicks', string>> = {
  google: { spend: 'googleSpend', impressions: 'googleImpressions', clicks: 'googleClicks' },
  meta: { spend: 'metaSpend', impressions: 'metaImpressions', clicks: 'metaLinkClicks' },
  tiktok: { spend: 'tiktokSpend', impressions: 'tiktokImpressions', clicks: 'tiktokClicks' },
  snapchat: { spend: 'snapchatSpend', impressions: 'snapchatImpressions', clicks: 'snapchatClicks' },
  pinterest: { spend: 'pinterestSpend', impressions: 'pinterestImpressions', clicks: 'pinterestClicks' },
  microsoft: { spend: 'microsoftSpend', impressions: 'microsoftImpressions', clicks: 'microsoftClicks' },
  linkedin: { spend: 'linkedinSpend', impressions: 'linkedinImpressions', clicks: 'linkedinClicks' },
  x: { spend: 'xSpend', impressions: 'xImpressions', clicks: 'xClicks' },
};
const FIGURES = ['spend', 'impressions', 'clicks'] as const;
const PLATFORM_IDS = Object.values(IDS).flatMap((ids) => FIGURES.map((figure) => ids[figure]));

async function send(client: TestClient, url: string, payload: object) {
  const response = await app.inject({ method: 'POST', url, headers: { ...client.headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
}

const daily = (date: string, platform_name: string, campaign_id: string, spend: number, impressions: number, clicks: number) =>
  ({ date, platform_name, platform_account_id: `${platform_name}-acct`, campaign_id, campaign_name: campaign_id, spend, spend_currency: 'USD', impressions, clicks });

/**
 * A shop (time zone UTC) with daily spend on two days under the hosted API's platform names and
 * under ours, in other letter cases, on a platform without ids of its own (YouTube Ads), and
 * TikTok's second day as hourly records only (rolled up into the day). A Google click converts
 * into an order of 200 and a Facebook one into an order of 50, on the first day.
 */
async function shop(): Promise<TestClient> {
  const client = await service.createClient();
  await send(client, '/v1/spend', {
    data: [
      daily(DAY, 'Google Ads', 'brand', 120, 4000, 30),
      daily(DAY, 'google', 'search', 10.5, 100, 5),
      daily(DAY, 'Facebook Ads', 'retarget', 80, 10000, 25),
      daily(DAY, 'META', 'prospect', 20, 2000, 7),
      daily(DAY, 'TikTok', 'viral', 15, 3000, 12),
      daily(DAY, 'YouTube Ads', 'video', 5, 500, 2),
      daily(NEXT_DAY, 'Google Ads', 'brand', 60, 2000, 11),
      daily(NEXT_DAY, 'Instagram', 'stories', 9, 900, 3),
      daily(NEXT_DAY, 'Bing Ads', 'search', 4, 400, 4),
    ],
  });
  const hourly = (hour: string, spend: number, impressions: number, clicks: number) =>
    ({ hour_start_iso: `${NEXT_DAY}T${hour}:00:00Z`, platform_name: 'TikTok', platform_account_id: 'TikTok-acct', campaign_id: 'viral', campaign_name: 'viral', spend, spend_currency: 'USD', impressions, clicks });
  await send(client, '/v1/spend_hourly', { data: [hourly('09', 3, 300, 1), hourly('15', 4, 700, 6)] });
  const click = (touchpoint_id: string, hour: string, customer_id: string, platform_name: string, campaign_id: string) =>
    ({ touchpoint_id, occurred_at: `${DAY}T${hour}:00:00Z`, customer_id, platform_name, campaign_id, utm_medium: 'cpc' });
  await send(client, '/v1/touchpoints', { data: [click('tp-g', '10', 'cust-g', 'Google Ads', 'brand'), click('tp-f', '09', 'cust-f', 'Facebook Ads', 'retarget')] });
  const order = (order_id: string, customer_id: string, hour: string, purchase_total: number) =>
    minimalOrder(order_id, { customer_id, time_of_purchase: `${DAY}T${hour}:00:00Z`, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });
  await send(client, '/v2/orders', [order('g-1', 'cust-g', '12', 200), order('f-1', 'cust-f', '13', 50)]);
  return client;
}

const client = await shop();

/** The CSV of an export created with `body` (sent as JSON text, as the scripts send it), the header first. */
async function exportCsv(body: object): Promise<string[][]> {
  const created = await app.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: { ...client.headers, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  assert.equal(created.statusCode, 201, created.body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result));
  const link = new URL(result.result[0]!);
  const file = await app.inject({ method: 'GET', url: link.pathname + link.search });
  assert.equal(file.statusCode, 200, file.body);
  return parseCsv(file.body);
}

/** The rows of a CSV as objects by header. */
function byHeader([header, ...rows]: string[][]): Record<string, string>[] {
  return rows.map((row) => Object.fromEntries(header!.map((column, index) => [column, row[index]!])));
}

test("the data-pipeline scripts' export, as they send it: googleClicks and metaLinkClicks under their labels, each platform's on its rows, 0 on the others'", async () => {
  const csv = await exportCsv(pipelineScriptsExport(DAY));
  assert.deepEqual(csv[0], [
    'date', 'platform', 'currency', 'attribution_model', 'attribution_window', 'accounting_mode',
    'spend_amount', 'AOV', 'Google_Clicks', 'Imprs', 'FB_Link_Clicks_Default', 'ROAS',
  ]);
  const rows = Object.fromEntries(byHeader(csv).map((row) => [row.platform, row]));
  const read = (platform: string) => {
    const { date, spend_amount, Google_Clicks, Imprs, FB_Link_Clicks_Default } = rows[platform]!;
    return { date, spend_amount, Google_Clicks, Imprs, FB_Link_Clicks_Default };
  };
  // The breakdown keeps the hosted API's names: google and META are other values, and Amazon has no data.
  assert.deepEqual(Object.keys(rows).sort(), ['Facebook Ads', 'Google Ads', 'TikTok', 'YouTube Ads']);
  assert.deepEqual(read('Google Ads'), { date: DAY, spend_amount: '120', Google_Clicks: '30', Imprs: '4000', FB_Link_Clicks_Default: '0' });
  assert.deepEqual(read('Facebook Ads'), { date: DAY, spend_amount: '80', Google_Clicks: '0', Imprs: '10000', FB_Link_Clicks_Default: '25' });
  assert.deepEqual(read('TikTok'), { date: DAY, spend_amount: '15', Google_Clicks: '0', Imprs: '3000', FB_Link_Clicks_Default: '0' });
  assert.deepEqual(read('YouTube Ads'), { date: DAY, spend_amount: '5', Google_Clicks: '0', Imprs: '500', FB_Link_Clicks_Default: '0' });
  // The attributed metrics beside them are those of the same rows.
  assert.deepEqual([rows['Google Ads']!.AOV, rows['Google Ads']!.ROAS], ['200.000000', '1.666667']);
  assert.deepEqual([rows['Facebook Ads']!.AOV, rows['Facebook Ads']!.ROAS], ['50.000000', '0.625000']);
});

test('every platform metric, by id: a row carries its platform\'s spend, impressions and clicks under its ids, whatever the spelling and letter case of platform_name, and 0 under every other platform\'s', async () => {
  const rows = byHeader(
    await exportCsv({
      level: 'campaign',
      time_granularity: 'DAILY',
      period_type: 'FIXED',
      period_options: { period_starting_at: DAY, period_ending_at: NEXT_DAY },
      options: { include_ids: true },
      metrics: [...FIGURES, ...PLATFORM_IDS].map((id) => ({ id })),
    }),
  );
  assert.equal(rows.length, 10);
  for (const row of rows) {
    const platform = PLATFORM_OF[row.platform!];
    assert.notEqual(platform, undefined, row.platform);
    for (const [name, ids] of Object.entries(IDS)) {
      for (const figure of FIGURES) {
        // A platform without records (snapchat, ...) reads 0 like any other: a sum of no records, not an empty cell.
        assert.equal(row[ids[figure]], name === platform ? row[figure] : '0', `${ids[figure]} of ${row.platform} ${row.campaign} on ${row.date}`);
      }
    }
  }
  // TikTok's second day is its hourly records rolled up.
  const tiktok = rows.find((row) => row.platform === 'TikTok' && row.date === NEXT_DAY)!;
  assert.deepEqual([tiktok.tiktokSpend, tiktok.tiktokImpressions, tiktok.tiktokClicks], ['7', '1000', '7']);
});

/** Per date, each figure summed over the rows of each platform (null: rows of platforms without ids), from rows of ad objects. */
function platformTotals(rows: Record<string, string>[]) {
  const totals: Record<string, Record<string, number>> = {};
  for (const row of rows) {
    const platform = PLATFORM_OF[row.platform!] ?? 'none';
    for (const figure of FIGURES) {
      const key = `${row.date} ${figure}`;
      totals[key] ??= {};
      totals[key][platform] = (totals[key][platform] ?? 0) + Number(row[figure]);
    }
  }
  return totals;
}

test('summed over the ad objects (export_aggregation DATE), a platform metric is its platform\'s part of the plain figure: with and without attribution and order metrics', async () => {
  const period = { period_type: 'FIXED', period_options: { period_starting_at: DAY, period_ending_at: NEXT_DAY } };
  const objects = byHeader(await exportCsv({ ...period, level: 'ad', metrics: FIGURES.map((id) => ({ id })) }));
  const expected = platformTotals(objects);
  const asked = [...FIGURES, ...PLATFORM_IDS].map((id) => ({ id }));
  const variants = {
    spend: asked,
    'order metrics': [...asked, { id: 'revenue' }, { id: 'mer' }],
    attribution: [...asked, { id: 'rev' }, { id: 'roas' }],
  };
  for (const [variant, metrics] of Object.entries(variants)) {
    const rows = byHeader(await exportCsv({ ...period, options: { export_aggregation: 'DATE' }, metrics }));
    assert.deepEqual(rows.map((row) => row.date), [DAY, NEXT_DAY], variant);
    for (const row of rows) {
      for (const figure of FIGURES) {
        const parts = expected[`${row.date} ${figure}`]!;
        let platforms = 0;
        for (const [name, ids] of Object.entries(IDS)) {
          assert.equal(Number(row[ids[figure]]), parts[name] ?? 0, `${variant}: ${ids[figure]} on ${row.date}`);
          platforms += Number(row[ids[figure]]);
        }
        // The platforms' parts and the records of platforms without ids make up the plain figure.
        assert.equal(platforms + (parts.none ?? 0), Number(row[figure]), `${variant}: ${figure} on ${row.date}`);
      }
    }
  }
});

test('the reports API takes platform metric ids: the rows an export holds, and totals that are sums of the rows', async () => {
  const response = await app.inject({
    method: 'GET',
    url: `/v1/reports/performance?start_date=${DAY}&end_date=${NEXT_DAY}&granularity=PERIOD&level=platform&metrics=clicks,googleClicks,metaLinkClicks,tiktokSpend,pinterestSpend,roas`,
    headers: client.headers,
  });
  assert.equal(response.statusCode, 200, response.body);
  const { rows, totals } = response.json() as { rows: Record<string, number | string>[]; totals: Record<string, number | null> };
  const of = (platform: string) => rows.find((row) => row.platform === platform)!;
  assert.deepEqual([of('Google Ads').clicks, of('Google Ads').googleClicks, of('Google Ads').metaLinkClicks], [41, 41, 0]);
  assert.deepEqual([of('META').clicks, of('META').googleClicks, of('META').metaLinkClicks], [7, 0, 7]);
  assert.deepEqual([of('TikTok').tiktokSpend, of('google').tiktokSpend], [22, 0]);
  const sum = (id: string) => rows.reduce((total, row) => total + Number(row[id]), 0);
  assert.deepEqual(totals, { clicks: sum('clicks'), googleClicks: 46, metaLinkClicks: 35, tiktokSpend: 22, pinterestSpend: 0, roas: totals.roas });
  assert.equal(totals.googleClicks, sum('googleClicks'));

  const total = await app.inject({
    method: 'GET',
    url: `/v1/reports/performance?start_date=${DAY}&end_date=${NEXT_DAY}&granularity=PERIOD&level=total&metrics=googleClicks,metaLinkClicks,revenue`,
    headers: client.headers,
  });
  assert.equal(total.statusCode, 200, total.body);
  assert.deepEqual(total.json().rows.map((row: Record<string, unknown>) => [row.googleClicks, row.metaLinkClicks, row.revenue]), [[46, 35, 250]]);
});

test('GET /v1/exports/metrics lists every platform metric with a definition naming its platform_name values', async () => {
  const response = await app.inject({ method: 'GET', url: '/v1/exports/metrics', headers: client.headers });
  assert.equal(response.statusCode, 200, response.body);
  const metrics = new Map((response.json().metrics as { id: string; label: string; definition: string }[]).map((metric) => [metric.id, metric]));
  for (const id of PLATFORM_IDS) assert.ok(metrics.has(id), id);
  assert.equal(metrics.get('googleClicks')!.label, 'Google clicks');
  assert.match(metrics.get('googleClicks')!.definition, /^Sum of clicks of Google.s spend records only, those whose platform_name is "google" or "google ads" in any letter case/);
  assert.match(metrics.get('metaLinkClicks')!.definition, /clicks of Meta's spend records.*"meta", "meta ads", "facebook", "facebook ads", "instagram" or "instagram ads"/);
  assert.match(metrics.get('tiktokSpend')!.definition, /spend of TikTok's spend records/);
  // One id per figure: Meta's clicks are metaLinkClicks only.
  assert.equal(metrics.has('metaClicks'), false);
});

test('an id of the same shape for no platform we know (fooClicks), or in another case (GoogleClicks), is a 422 with the error envelope, in exports and reports', async () => {
  for (const id of ['fooClicks', 'GoogleClicks', 'metaClicks']) {
    const refused = await app.inject({
      method: 'POST',
      url: '/v1/exports/data-export',
      headers: { ...client.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ ...pipelineScriptsExport(DAY), metrics: [{ id: 'spend' }, { id }] }),
    });
    const body = assertErrorEnvelope(refused, 422);
    assert.deepEqual(
      body.errors!.map(({ loc, type }) => ({ loc, type })),
      [{ loc: 'body/metrics/1/id', type: 'enum' }],
      refused.body,
    );
    assert.match(body.errors![0]!.msg, /Unknown metric id/);

    const report = await app.inject({ method: 'GET', url: `/v1/reports/performance?start_date=${DAY}&end_date=${DAY}&metrics=spend,${id}`, headers: client.headers });
    assert.match(assertErrorEnvelope(report, 422).errors![0]!.msg, new RegExp(`Unknown metric id "${id}"`));
  }
});
