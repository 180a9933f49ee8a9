import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ADMIN_TOKEN, finishedExport, minimalOrder, parseCsv, startExportingService, type TestApp, type TestClient } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// CI installs the browser (.ci/run): there, a missing one is a failure, not a reason to skip.
const skip = !fs.existsSync(CHROMIUM) && !process.env.CI ? `${CHROMIUM} is missing (apt-get install chromium): the browser test is skipped` : false;
/** Kept out of git (.gitignore), to be looked at after a run. */
const SCREENSHOTS = path.join(import.meta.dirname, '..', 'test-screenshots', 'dashboard');

const DAY_MS = 86_400_000;
/** A local day of the client (UTC) and of the browser (UTC too), `days` before today. */
const dayBefore = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);
const at = (days: number, time: string) => `${dayBefore(days)}T${time}Z`;
/** The dashboard's default period: the last 30 days, ending yesterday. */
const LAST_30 = { start_date: dayBefore(30), end_date: dayBefore(1) };
const TABLE_METRICS = ['spend', 'rev', 'roas', 'cac', 'txns', 'visits'];

async function send(app: TestApp, client: TestClient, url: string, data: unknown[]) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? (data as object) : { data } });
  assert.ok(response.statusCode < 300, response.body);
}

/**
 * Spend on meta and google over the last days, and customers whose paths cross both: first
 * touch credits meta, last touch google, so that the models disagree.
 */
async function seed(app: TestApp, client: TestClient) {
  const spend = (days: number, platform_name: string, campaign_id: string, amount: number) => ({
    hour_start_iso: at(days, '10:00:00'),
    platform_name,
    platform_account_id: `${platform_name}-account`,
    campaign_id,
    campaign_name: `${campaign_id} campaign`,
    adset_id: `${campaign_id}-set`,
    adset_name: `${campaign_id} ad set`,
    ad_id: `${campaign_id}-ad`,
    ad_name: `${campaign_id} ad`,
    spend: amount,
    spend_currency: 'USD',
    impressions: 1000,
    clicks: 40,
  });
  const spendRecords = [];
  for (let days = 2; days <= 12; days++) {
    spendRecords.push(spend(days, 'meta', 'spring', 20 + days), spend(days, 'meta', 'retarget', 8), spend(days, 'google', 'search', 15 + (days % 3) * 5));
  }
  await send(app, client, '/v1/spend_hourly', spendRecords);
  const touchpoints = [];
  const orders = [];
  for (let n = 0; n < 10; n++) {
    const days = 3 + n;
    touchpoints.push(
      { touchpoint_id: `m${n}`, occurred_at: at(days, '08:00:00'), visitor_id: `v${n}`, customer_id: `c${n}`, platform_name: 'meta', campaign_id: n % 2 ? 'spring' : 'retarget', adset_id: n % 2 ? 'spring-set' : 'retarget-set', ad_id: n % 2 ? 'spring-ad' : 'retarget-ad' },
      { touchpoint_id: `g${n}`, occurred_at: at(days, '09:00:00'), visitor_id: `v${n}`, customer_id: `c${n}`, platform_name: 'google', campaign_id: 'search', adset_id: 'search-set', ad_id: 'search-ad' },
    );
    orders.push(minimalOrder(`o${n}`, { customer_id: `c${n}`, time_of_purchase: at(days, '12:00:00'), currency: 'USD', purchase_total: 50 + n * 10, products: [{ id: 'p', name: 'P', quantity: 1, price: 50 + n * 10 }] }));
  }
  await send(app, client, '/v1/touchpoints', touchpoints);
  await send(app, client, '/v2/orders', orders);
}

describe('the dashboard and the API reference in a real browser', { skip }, () => {
  let service: Awaited<ReturnType<typeof startExportingService>>;
  let client: TestClient;
  let url: string;
  let uatUrl: string;
  let browser: Browser;
  let page: Page;
  const policyViolations: string[] = [];
  const watchPolicy = (on: Page) =>
    on.on('console', (message) => {
      if (/Content.Security.Policy/i.test(message.text())) policyViolations.push(message.text());
    });

  before(async () => {
    service = await startExportingService();
    client = await service.createClient();
    await seed(service.production, client);
    url = await service.production.listen({ host: '127.0.0.1', port: 0 });
    uatUrl = await service.uat.listen({ host: '127.0.0.1', port: 0 });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ timezoneId: 'UTC', viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    // Download links are signed for the configured public URL: sent to this test's server instead.
    const publicUrl = service.config.publicUrl;
    await page.route(`${publicUrl}/**`, (route) => route.continue({ url: route.request().url().replace(publicUrl, url) }));
    watchPolicy(page);
  });

  after(async () => {
    await browser?.close();
    await service?.close();
  });

  /** Waits for the last load the page started (a change of option starts one at once) to be drawn. */
  const loaded = (on = page) => on.locator('#dashboard[aria-busy="false"]').waitFor({ state: 'attached' });
  const shot = (name: string, on = page) => on.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  /** The period line: its text, and the dates it names as its <time> elements give them. */
  const periodShown = async (on = page) => ({
    text: await on.locator('#period-shown').innerText(),
    dates: await on.$$eval('#period-shown time', (times) => times.map((time) => time.getAttribute('datetime'))),
  });
  const report = async (query: Record<string, string>) => {
    const response = await service.production.inject({ method: 'GET', url: `/v1/reports/performance?${new URLSearchParams(query)}`, headers: client.headers });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { rows: Record<string, number | string | null>[]; totals: Record<string, number | null>; currency: string | null };
  };
  /** The table's rows of one depth: the name shown and the API's value of each metric cell. */
  const tableRows = (depth: number) =>
    page.$$eval(`#performance tbody tr[data-depth="${depth}"]`, (rows) =>
      rows.map((row) => ({
        name: row.querySelector('td.name')!.textContent!.trim(),
        ...Object.fromEntries([...row.querySelectorAll('td[data-metric]')].map((cell) => [cell.getAttribute('data-metric'), cell.getAttribute('data-value')])),
      })),
    );
  const asShown = (rows: Record<string, unknown>[], name: string) =>
    rows.map((row) => ({ name: String(row[name]), ...Object.fromEntries(TABLE_METRICS.map((metric) => [metric, row[metric] === null ? '' : String(row[metric])])) }));
  const byName = (rows: { name: string }[]) => [...rows].sort((a, b) => (a.name < b.name ? -1 : 1));

  test('signing in shows the chart, the table as the reports API and exports answer, and the feeds', async (t) => {
    t.diagnostic(`screenshots in ${SCREENSHOTS}`);
    await page.goto(`${url}/`);
    await shot('1-sign-in');
    await page.getByLabel('Client ID').fill(client.client_id);
    await page.getByLabel('API key').fill(client.api_key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await loaded();
    await page.locator('#chart canvas').waitFor();
    assert.match(String(await page.evaluate("sessionStorage.getItem('tributary.credentials')")), /"apiKey"/);
    assert.equal(await page.evaluate('document.cookie'), '');
    assert.doesNotMatch(page.url(), new RegExp(client.api_key));

    // The chart is drawn: its canvas holds pixels of several colours.
    const colours = (await page.evaluate(`(() => {
      const canvas = document.querySelector('#chart canvas');
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      const seen = new Set();
      for (let i = 0; i < data.length; i += 4 * 37) if (data[i + 3] > 0) seen.add(data[i] + ',' + data[i + 1] + ',' + data[i + 2]);
      return seen.size;
    })()`)) as number;
    assert.ok(colours >= 3, `the chart canvas holds ${colours} colours`);

    // The table's platforms are the report's rows of the whole period, and its totals the report's totals.
    const options = { ...LAST_30, model: 'linear', window: '30', mode: 'cash', metrics: TABLE_METRICS.join(',') };
    const platforms = await report({ ...options, level: 'platform', granularity: 'PERIOD' });
    assert.deepEqual(byName(await tableRows(0)), byName(asShown(platforms.rows, 'platform')));
    const totals = await page.$$eval('#performance tfoot td[data-metric]', (cells) => cells.map((cell) => [cell.getAttribute('data-metric'), cell.getAttribute('data-value')]));
    assert.deepEqual(Object.fromEntries(totals), Object.fromEntries(TABLE_METRICS.map((metric) => [metric, String(platforms.totals[metric])])));

    // ... and the sums of an export of the same options (rows per day).
    const created = await service.production.inject({
      method: 'POST',
      url: '/v1/exports/data-export',
      headers: client.headers,
      payload: {
        level: 'platform',
        period_type: 'FIXED',
        period_options: { period_starting_at: LAST_30.start_date, period_ending_at: LAST_30.end_date },
        attribution_options: { attribution_models: ['linear'], attribution_windows: ['30'], accounting_modes: ['cash'] },
        metrics: TABLE_METRICS.map((id) => ({ id })),
      },
    });
    const result = await finishedExport(service.production, client, created.json().id);
    const [header, ...lines] = parseCsv((await service.production.inject({ method: 'GET', url: new URL(result.result[0]!).pathname + new URL(result.result[0]!).search })).body);
    const exported = new Map<string, Record<string, number>>();
    for (const line of lines) {
      const row = Object.fromEntries(header!.map((name, index) => [name, line[index]!]));
      const sums = exported.get(row.platform!) ?? { spend: 0, rev: 0, txns: 0, visits: 0 };
      for (const metric of Object.keys(sums)) sums[metric]! += Number(row[metric]);
      exported.set(row.platform!, sums);
    }
    for (const row of await tableRows(0)) {
      for (const metric of ['spend', 'rev', 'txns', 'visits']) {
        assert.ok(Math.abs(Number((row as Record<string, string>)[metric]) - exported.get(row.name)![metric]!) < 1e-5, `${row.name} ${metric}`);
      }
    }

    // Feeds: today's arrivals are counted.
    const today = await page.$$eval('#feeds tbody tr:first-child td', (cells) => cells.map((cell) => Number(cell.textContent)));
    assert.deepEqual(today, [10, 33, 20]);
    await shot('2-dashboard');
  });

  test('platforms open to campaigns, ad sets and ads, as the reports API has them; columns sort', async () => {
    await page.locator('#performance tbody tr[data-depth="0"] .toggle', { hasText: 'meta' }).click();
    await page.locator('#performance tbody tr[data-depth="1"]').first().waitFor();
    const campaigns = await report({ ...LAST_30, level: 'campaign', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') });
    assert.deepEqual(byName(await tableRows(1)), byName(asShown(campaigns.rows.filter((row) => row.platform === 'meta'), 'campaign')));
    await page.locator('#performance tbody tr[data-depth="1"] .toggle', { hasText: 'spring campaign' }).click();
    await page.locator('#performance tbody tr[data-depth="2"] .toggle', { hasText: 'spring ad set' }).click();
    await page.locator('#performance tbody tr[data-depth="3"]', { hasText: 'spring ad' }).waitFor();

    await page.getByRole('button', { name: 'Spend' }).click();
    const ascending = (await tableRows(0)).map((row) => Number(row.spend));
    assert.deepEqual(ascending, [...ascending].sort((a, b) => a - b));
    assert.equal(await page.locator('#performance th[data-key="spend"]').getAttribute('aria-sort'), 'ascending');
    await shot('3-expanded');
  });

  test('the CSV download is the export of what is shown', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    const [header, ...lines] = parseCsv(csv);
    assert.deepEqual(header!.slice(0, 4), ['date', 'platform', 'campaign', 'campaign_id']);
    assert.ok(header!.includes('adset_id') && header!.includes('ad_id'), 'at the deepest level open');
    const spend = lines.reduce((sum, line) => sum + Number(line[header!.indexOf('spend')]), 0);
    assert.ok(Math.abs(spend - Number(await page.getAttribute('#performance tfoot td[data-metric="spend"]', 'data-value'))) < 1e-6);
  });

  test('changing the model changes the figures', async () => {
    const revenue = async () => Object.fromEntries((await tableRows(0)).map((row) => [row.name, row.rev]));
    await page.locator('#model').selectOption('first_touch');
    await loaded();
    const first = await revenue();
    await page.locator('#model').selectOption('last_touch');
    await loaded();
    const last = await revenue();
    assert.notDeepEqual(first, last);
    const lastTouch = await report({ ...LAST_30, model: 'last_touch', level: 'platform', granularity: 'PERIOD', metrics: 'rev' });
    assert.deepEqual(last, Object.fromEntries(lastTouch.rows.map((row) => [row.platform, String(row.rev)])));
    assert.equal(await page.locator('#learnt').isHidden(), true);
  });

  test('a data-driven model shows what it learnt, and warns when that was few orders', async () => {
    const revenue = async () => Object.fromEntries((await tableRows(0)).map((row) => [row.name, row.rev]));
    // Nothing to learn from before the last 30 days: shared as linear, and said so.
    await page.locator('#model').selectOption('markov');
    await loaded();
    const markov = await report({ ...LAST_30, model: 'markov', level: 'platform', granularity: 'PERIOD', metrics: 'rev' });
    assert.deepEqual(await revenue(), Object.fromEntries(markov.rows.map((row) => [row.platform, String(row.rev)])));
    assert.equal(await page.locator('#learnt-title').innerText(), 'What Data-driven (Markov chain) learnt');
    assert.match(await page.locator('#model-warning').innerText(), /^No order of that time had a path to learn from/);
    assert.equal(await page.locator('#learnt-channels').isHidden(), true, 'no channel learnt: no table');
    // A period whose 90 days before hold the orders: the weights, strongest first, as the API shows them.
    await page.getByLabel('Period').selectOption('custom');
    await page.getByLabel('From', { exact: true }).fill(dayBefore(2));
    await page.getByLabel('To', { exact: true }).fill(dayBefore(1));
    await loaded();
    const learnt = await service.production.inject({ method: 'GET', url: `/v1/attribution/models/markov?window=30&period_from=${dayBefore(2)}`, headers: client.headers });
    const channels = (learnt.json().learnt.channels as { channel: string; weight: number }[]).sort((a, b) => b.weight - a.weight);
    assert.equal(channels.length, 2);
    assert.equal(await page.locator('#learnt-channels').isVisible(), true);
    const shown = await page.$$eval('#learnt-channels tbody tr', (rows) => rows.map((row) => [row.querySelector('th')!.textContent, row.querySelector('td.weight')!.textContent]));
    assert.deepEqual(shown, channels.map(({ channel, weight }) => [channel, `${(weight * 100).toFixed(1)}%`]));
    assert.match(await page.locator('#learnt-summary').innerText(), /^From \d+ orders with a path and \d+ visitors who did not buy/);
    assert.match(await page.locator('#model-warning').innerText(), /^Learnt from few orders \(\d+; about 300 are needed\)/);
    await shot('3b-data-driven-model');
    await page.locator('#model').selectOption('last_touch');
    await page.getByLabel('Period').selectOption('30');
    await loaded();
    assert.equal(await page.locator('#learnt').isHidden(), true);
  });

  test('a custom period, at phone width and in dark mode', async () => {
    await page.getByLabel('Period').selectOption('custom');
    await page.getByLabel('From', { exact: true }).fill(dayBefore(8));
    await page.getByLabel('To', { exact: true }).fill(dayBefore(2));
    await loaded();
    const shown = await periodShown();
    assert.deepEqual(shown.dates, [dayBefore(8), dayBefore(2)]);
    assert.match(shown.text, /\(UTC\)$/);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone`);
    await shot('4-phone-dark');
    await page.setViewportSize({ width: 1280, height: 900 });
    await shot('5-laptop-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  test("dates are the client's: a browser in Tokyo asks for a New York client's days, and says so", async () => {
    const newYork = await service.createClient('New York');
    const patched = await service.production.inject({
      method: 'PATCH',
      url: `/admin/v1/clients/${newYork.client_id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { time_zone: 'America/New_York' },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    const context = await browser.newContext({ timezoneId: 'Asia/Tokyo', locale: 'en-GB', viewport: { width: 1280, height: 900 } });
    try {
      const tokyo = await context.newPage();
      watchPolicy(tokyo);
      // Noon on 1 December in Tokyo, 22:00 on 30 November in New York. Tokyo's last 30 days
      // would be 1 to 30 November; New York's are 31 October to 29 November.
      await tokyo.clock.setFixedTime(new Date('2026-12-01T03:00:00Z'));
      const asked: { start_date: string | null; end_date: string | null }[] = [];
      tokyo.on('request', (request) => {
        const { pathname, searchParams } = new URL(request.url());
        if (pathname === '/v1/reports/performance') asked.push({ start_date: searchParams.get('start_date'), end_date: searchParams.get('end_date') });
      });
      await tokyo.goto(`${url}/`);
      await tokyo.getByLabel('Client ID').fill(newYork.client_id);
      await tokyo.getByLabel('API key').fill(newYork.api_key);
      await tokyo.getByRole('button', { name: 'Sign in' }).click();
      await loaded(tokyo);
      assert.ok(asked.length >= 2, 'the chart and the table');
      assert.deepEqual(new Set(asked.map((query) => JSON.stringify(query))), new Set([JSON.stringify({ start_date: '2026-10-31', end_date: '2026-11-29' })]));
      assert.deepEqual(await periodShown(tokyo), { text: '31 Oct – 29 Nov 2026 (America/New_York)', dates: ['2026-10-31', '2026-11-29'] });
      assert.match(await tokyo.locator('#feeds caption').innerText(), /last 30 days in America\/New_York/);
      await shot('6a-tokyo-browser-new-york-client', tokyo);

      // Another load: another period, one for all of its requests.
      asked.length = 0;
      await tokyo.getByLabel('Period').selectOption('7');
      await loaded(tokyo);
      assert.ok(asked.length >= 2);
      assert.deepEqual(new Set(asked.map((query) => JSON.stringify(query))), new Set([JSON.stringify({ start_date: '2026-11-23', end_date: '2026-11-29' })]));
      assert.deepEqual((await periodShown(tokyo)).dates, ['2026-11-23', '2026-11-29']);
    } finally {
      await context.close();
    }
  });

  test('a wrong key shows the API error with its request id', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Client ID').fill(client.client_id);
    await page.getByLabel('API key').fill('wrong-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const error = page.getByRole('alert');
    await error.waitFor();
    assert.match(await error.innerText(), /Invalid credentials[\s\S]*Request id: [0-9a-f-]{36}/);
    assert.equal(await page.evaluate("sessionStorage.getItem('tributary.credentials')"), null);
    await shot('6-wrong-key');
  });

  test("on the UAT port, the test credentials show the empty states, which point to the reference", async () => {
    await page.goto(`${uatUrl}/`);
    await page.getByLabel('Client ID').fill('test');
    await page.getByLabel('API key').fill('None');
    await page.getByRole('button', { name: 'Sign in' }).click();
    for (const empty of ['#chart-empty', '#table-empty', '#feeds-empty']) {
      await page.locator(empty).waitFor();
      assert.equal(await page.locator(`${empty} a`).getAttribute('href'), '/docs');
    }
    assert.equal(await page.locator('#performance').isVisible(), false);
    await shot('6b-uat-empty');
    await page.getByRole('button', { name: 'Sign out' }).click();
  });

  test('/docs lists every path of /openapi.json, on both ports, under the pages policy', async () => {
    for (const base of [url, uatUrl]) {
      const document = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, unknown> };
      await page.goto(`${base}/docs`);
      await page.locator('.opblock').first().waitFor();
      const shown = await page.$$eval('.opblock-summary-path, .opblock-summary-path__deprecated', (paths) => paths.map((element) => element.getAttribute('data-path')));
      assert.deepEqual([...new Set(shown)].sort(), Object.keys(document.paths).sort());
    }
    await shot('7-docs');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot('8-docs-dark');
    assert.deepEqual(policyViolations, []);
  });
});
