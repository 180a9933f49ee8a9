import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertFitsAPhone, chartColours, DASHBOARD_SCREENSHOTS as SCREENSHOTS, launchChromium, skip } from './browser.js';
import { ADMIN_TOKEN, finishedExport, minimalOrder, parseCsv, startExportingService, type TestApp, type TestClient } from './helpers.js';


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

/** An hour of spend `days` ago of a campaign with one ad set and one ad, all named after it. */
const spendRecord = (days: number, platform_name: string, campaign_id: string, amount: number) => ({
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

/**
 * Spend on meta and google over the last days, and customers whose paths cross both: first
 * touch credits meta, last touch google, so that the models disagree.
 */
async function seed(app: TestApp, client: TestClient) {
  const spendRecords = [];
  for (let days = 2; days <= 12; days++) {
    spendRecords.push(spendRecord(days, 'meta', 'spring', 20 + days), spendRecord(days, 'meta', 'retarget', 8), spendRecord(days, 'google', 'search', 15 + (days % 3) * 5));
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

/** The dashboard's store figures of a period (level=total, no model) and its previous period of the same length. */
const STORE_METRICS = ['spend', 'revenue', 'transactions', 'new_customers', 'returning_customers', 'mer', 'blended_cac'];
const PREVIOUS_30 = { start_date: dayBefore(60), end_date: dayBefore(31) };

/**
 * A shop with two consecutive periods of 30 days, the second busier than the first: spend on
 * meta and google in both; in the last 30 days, returning customers of the 30 days before, and
 * orders that came direct, from an e-mail, with no touchpoint at all, or through ad objects
 * without an ad set (a meta touchpoint naming its campaign only) or without a campaign (a google
 * click id alone).
 */
async function seedTwoPeriods(app: TestApp, client: TestClient) {
  const spendRecords = [];
  for (let days = 2; days <= 29; days++) {
    spendRecords.push(spendRecord(days, 'meta', 'spring', 30 + (days % 5) * 4), spendRecord(days, 'meta', 'retarget', 12), spendRecord(days, 'google', 'search', 18 + (days % 4) * 3));
  }
  for (let days = 31; days <= 58; days++) spendRecords.push(spendRecord(days, 'meta', 'spring', 22), spendRecord(days, 'meta', 'retarget', 10), spendRecord(days, 'google', 'search', 25));
  await send(app, client, '/v1/spend_hourly', spendRecords);

  const touchpoints: Record<string, unknown>[] = [];
  const orders: Record<string, unknown>[] = [];
  const order = (id: string, customer: string, days: number, total: number) =>
    minimalOrder(id, { customer_id: customer, time_of_purchase: at(days, '12:00:00'), currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
  const touch = (id: string, days: number, time: string, customer: string, fields: Record<string, string>) =>
    touchpoints.push({ touchpoint_id: id, occurred_at: at(days, time), visitor_id: `visitor-${customer}`, customer_id: customer, ...fields });
  const meta = (campaign: string) => ({ platform_name: 'meta', campaign_id: campaign, adset_id: `${campaign}-set`, ad_id: `${campaign}-ad` });
  const google = { platform_name: 'google', campaign_id: 'search', adset_id: 'search-set', ad_id: 'search-ad' };
  // The 30 days before: 14 orders, each through meta then google.
  for (let n = 0; n < 14; n++) {
    const days = 32 + 2 * n;
    touch(`p-m${n}`, days, '08:00:00', `r${n}`, meta(n % 2 ? 'spring' : 'retarget'));
    touch(`p-g${n}`, days, '09:00:00', `r${n}`, google);
    orders.push(order(`p${n}`, `r${n}`, days, 60 + n * 5));
  }
  // The last 30 days: 24 orders, the first 8 by customers of the 30 days before.
  for (let n = 0; n < 24; n++) {
    const days = 2 + n;
    const customer = n < 8 ? `r${n}` : `c${n}`;
    const kind = n % 6;
    if (kind === 0) touch(`t${n}`, days, '08:00:00', customer, {});
    if (kind === 1) touch(`t${n}`, days, '08:00:00', customer, { landing_url: 'https://shop.example/?utm_medium=email' });
    if (kind === 3) {
      touch(`t${n}`, days, '08:00:00', customer, { platform_name: 'meta', campaign_id: 'spring' });
      touch(`t${n}b`, days, '09:00:00', customer, google);
    }
    if (kind === 4) {
      touch(`t${n}`, days, '08:00:00', customer, { landing_url: `https://shop.example/?gclid=click-${n}` });
      touch(`t${n}b`, days, '09:00:00', customer, meta('retarget'));
    }
    if (kind === 5) {
      touch(`t${n}`, days, '08:00:00', customer, meta('spring'));
      touch(`t${n}b`, days, '09:00:00', customer, google);
    }
    orders.push(order(`o${n}`, customer, days, 80 + n * 7));
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
    browser = await launchChromium();
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
  const report = async (query: Record<string, string>, as: TestClient = client) => {
    const response = await service.production.inject({ method: 'GET', url: `/v1/reports/performance?${new URLSearchParams(query)}`, headers: as.headers });
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
  /** The environment badge: its text, the environment the API named, and whether it shows. */
  const environmentShown = async (on = page) => ({
    text: (await on.locator('#environment').textContent())!,
    environment: await on.locator('#environment').getAttribute('data-environment'),
    visible: await on.locator('#environment').isVisible(),
  });

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
    const colours = await chartColours(page);
    assert.ok(colours >= 3, `the chart canvas holds ${colours} colours`);

    // The table's platforms are the report's rows of the whole period, and its totals the report's totals.
    const options = { ...LAST_30, model: 'linear', window: '30', mode: 'cash', metrics: TABLE_METRICS.join(',') };
    const platforms = await report({ ...options, level: 'platform', granularity: 'PERIOD' });
    assert.deepEqual(byName(await tableRows(0)), byName(asShown(platforms.rows, 'platform')));
    // The row of every row's total: the report's totals (the paid channels' row is above it).
    const totals = await page.$$eval('#performance tfoot tr.all td[data-metric]', (cells) => cells.map((cell) => [cell.getAttribute('data-metric'), cell.getAttribute('data-value')]));
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

    // Feeds: today's arrivals are counted, once the figures are in.
    await page.locator('section:has(#feeds)[aria-busy="false"]').waitFor({ state: 'attached' });
    const today = await page.$$eval('#feeds tbody tr:first-child td', (cells) => cells.map((cell) => Number(cell.textContent)));
    assert.deepEqual(today, [10, 33, 20]);
    // The port's environment, as the API names it.
    assert.deepEqual(await environmentShown(), { text: 'Production', environment: 'production', visible: true });
    const me = (await service.production.inject({ method: 'GET', url: '/v1/client', headers: client.headers })).json();
    assert.equal(await page.locator('#client-name').textContent(), me.name);
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
    assert.ok(Math.abs(spend - Number(await page.getAttribute('#performance tfoot tr.all td[data-metric="spend"]', 'data-value'))) < 1e-6);
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
    await assertFitsAPhone(page);
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
      // The period, and the 30 days before it that the headline compares it with: both New York's days.
      const periods = (...dates: [string, string][]) => new Set(dates.map(([start_date, end_date]) => JSON.stringify({ start_date, end_date })));
      assert.deepEqual(new Set(asked.map((query) => JSON.stringify(query))), periods(['2026-10-31', '2026-11-29'], ['2026-10-01', '2026-10-30']));
      assert.deepEqual(await periodShown(tokyo), { text: '31 Oct – 29 Nov 2026 (America/New_York)', dates: ['2026-10-31', '2026-11-29'] });
      assert.match(await tokyo.locator('#feeds caption').innerText(), /last 30 days in America\/New_York/);
      await shot('6a-tokyo-browser-new-york-client', tokyo);

      // Another load: another period, one for all of its requests.
      asked.length = 0;
      await tokyo.getByLabel('Period').selectOption('7');
      await loaded(tokyo);
      assert.ok(asked.length >= 2);
      assert.deepEqual(new Set(asked.map((query) => JSON.stringify(query))), periods(['2026-11-23', '2026-11-29'], ['2026-11-16', '2026-11-22']));
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
    // The UAT port says so, from the API's answer, in the bar and in the tab's title.
    assert.deepEqual(await environmentShown(), { text: 'UAT', environment: 'uat', visible: true });
    assert.match(await page.title(), /^UAT/);
    await shot('6b-uat-empty');
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.equal(await page.locator('#client-name').textContent(), '', 'nothing of the client stays on the page');
    assert.equal(await page.locator('#feeds tbody tr').count(), 0, 'nor its feeds');
  });

  describe('a shop with two periods: the headline, the comparison of models, the names of rows', () => {
    let shop: TestClient;
    let page2: Page;
    /** Every request the page sent to the API: what a key of scope read must be allowed. */
    const sent: { method: string; path: string }[] = [];
    const kpis = (on = page2) =>
      on.$$eval('#kpis [data-kpi]', (cards) =>
        Object.fromEntries(
          cards.map((card) => [
            card.getAttribute('data-kpi'),
            {
              value: card.querySelector('.value')!.getAttribute('data-value'),
              change: card.querySelector('.change')!.getAttribute('data-change'),
              previous: card.querySelector('.change')!.getAttribute('data-previous'),
              changeText: card.querySelector('.change')!.textContent!.trim(),
            },
          ]),
        ),
      ) as Promise<Record<string, { value: string; change: string; previous: string; changeText: string }>>;
    /** The rows of a table at one depth: name shown (without its tag), key, and the cells' values by metric or model. */
    const rowsShown = (table: string, depth: number, by: 'data-metric' | 'data-model') =>
      page2.$$eval(
        `#${table} tbody tr[data-depth="${depth}"]`,
        (rows, attribute) =>
          rows.map((row) => ({
            name: row.querySelector('td.name .label')!.textContent!,
            tag: row.querySelector('td.name .tag')?.textContent ?? null,
            key: row.getAttribute('data-key')!,
            values: Object.fromEntries([...row.querySelectorAll(`td[${attribute}]`)].map((cell) => [cell.getAttribute(attribute), cell.getAttribute('data-value')])),
          })),
        by,
      );
    const close = (actual: string, expected: number, what: string) => assert.ok(Math.abs(Number(actual) - expected) < 1e-9 && actual !== '', `${what}: ${actual} shown, ${expected} expected`);
    const paidRevenue = (answer: { rows: Record<string, unknown>[] }) => answer.rows.filter((row) => Number(row.spend) !== 0).reduce((sum, row) => sum + Number(row.rev), 0);
    const relative = (now: number, then: number) => (now - then) / Math.abs(then);

    before(async () => {
      shop = await service.createClient('Two periods');
      await seedTwoPeriods(service.production, shop);
      page2 = await browser.newPage({ timezoneId: 'UTC', viewport: { width: 1440, height: 900 }, acceptDownloads: true });
      const publicUrl = service.config.publicUrl;
      await page2.route(`${publicUrl}/**`, (route) => route.continue({ url: route.request().url().replace(publicUrl, url) }));
      watchPolicy(page2);
      page2.on('request', (request) => {
        const { pathname } = new URL(request.url());
        if (/^\/v\d\//.test(pathname)) sent.push({ method: request.method(), path: pathname });
      });
      await page2.goto(`${url}/`);
      await page2.getByLabel('Client ID').fill(shop.client_id);
      // A marketer's key: one of scope read, which may send nothing that writes.
      const readKey = await service.production.inject({
        method: 'POST',
        url: `/admin/v1/clients/${shop.client_id}/api-keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { scope: 'read' },
      });
      assert.equal(readKey.statusCode, 201, readKey.body);
      await page2.getByLabel('API key').fill((readKey.json() as { api_key: string }).api_key);
      await page2.getByRole('button', { name: 'Sign in' }).click();
      await loaded(page2);
    });

    after(() => page2?.close());

    test('the headline figures are the reports API\'s, each with its change against the 30 days before', async () => {
      assert.deepEqual(await environmentShown(page2), { text: 'Production', environment: 'production', visible: true });
      const store = await report({ ...LAST_30, level: 'total', granularity: 'PERIOD', metrics: STORE_METRICS.join(',') }, shop);
      const storeBefore = await report({ ...PREVIOUS_30, level: 'total', granularity: 'PERIOD', metrics: STORE_METRICS.join(',') }, shop);
      const attribution = { model: 'linear', window: '30', mode: 'cash' };
      const platforms = await report({ ...LAST_30, ...attribution, level: 'platform', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') }, shop);
      const paidQuery = { ...attribution, level: 'total', channels: 'paid', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') };
      const [paidNow, paidThen] = [await report({ ...LAST_30, ...paidQuery }, shop), await report({ ...PREVIOUS_30, ...paidQuery }, shop)];
      const [now, earlier] = [store.totals as Record<string, number>, storeBefore.totals as Record<string, number>];
      const shown = await kpis();
      assert.deepEqual(Object.keys(shown), ['spend', 'paid_rev', 'roas', 'mer', 'transactions', 'new_share', 'blended_cac']);

      // The API's totals, as it answered them.
      for (const metric of ['spend', 'mer', 'transactions', 'blended_cac']) {
        assert.equal(shown[metric]!.value, String(now[metric]), metric);
        assert.equal(shown[metric]!.previous, String(earlier[metric]), `${metric} before`);
        close(shown[metric]!.change, relative(now[metric]!, earlier[metric]!), `${metric} change`);
      }
      // The paid channels' figures are the API's channels=paid totals: the rows of the platforms with spend, added up.
      const [paid, paidBefore] = [paidNow.totals.rev!, paidThen.totals.rev!];
      close(String(paid), paidRevenue(platforms), 'the paid total is the sum of the paid platforms\' rows');
      assert.equal(shown.paid_rev!.value, String(paid), 'attributed revenue');
      assert.equal(shown.paid_rev!.previous, String(paidBefore), 'attributed revenue before');
      close(shown.paid_rev!.change, relative(paid, paidBefore), 'attributed revenue change');
      assert.equal(shown.roas!.value, String(paidNow.totals.roas), 'ROAS');
      close(shown.roas!.value, Math.round((paid / now.spend!) * 1e6) / 1e6, 'ROAS is paid revenue ÷ spend');
      close(shown.roas!.change, relative(paidNow.totals.roas!, paidThen.totals.roas!), 'ROAS change');
      close(shown.new_share!.value, now.new_customers! / now.transactions!, "new customers' share");
      close(shown.new_share!.change, now.new_customers! / now.transactions! - earlier.new_customers! / earlier.transactions!, "new customers' share change, in points");

      // Not trivial: both periods have figures, which differ; paid revenue is not the store's.
      assert.ok(earlier.spend! > 0 && now.spend !== earlier.spend && paid !== paidBefore);
      assert.equal(now.transactions, 24);
      assert.equal(earlier.transactions, 14);
      assert.ok(paid < now.revenue!, 'direct, e-mail and unattributed orders are not paid revenue');
      assert.match(shown.spend!.changeText, /^[▲▼] [+−]\d+(\.\d)?% vs the previous 30 days$/);
      assert.match(shown.transactions!.changeText, /^▲ \+71% vs the previous 30 days$/, '24 orders against 14');
      assert.match(shown.new_share!.changeText, /^▼ −33(\.3)? pts vs the previous 30 days$/, '16 first orders of 24 against 14 of 14');
      assert.match(await page2.locator('#headline-note').innerText(), /^Compared with .+\. Attributed revenue and ROAS follow the model, window and mode picked \(Linear, 30-day window, cash\)/);

      // The table's footer tells the paid channels from every row, whose total is the API's.
      const footer = async (row: string) =>
        Object.fromEntries(await page2.$$eval(`#performance tfoot tr.${row} td[data-metric]`, (cells) => cells.map((cell) => [cell.getAttribute('data-metric'), cell.getAttribute('data-value')])));
      assert.deepEqual(await footer('all'), Object.fromEntries(TABLE_METRICS.map((metric) => [metric, String(platforms.totals[metric])])));
      assert.deepEqual(await footer('paid'), Object.fromEntries(TABLE_METRICS.map((metric) => [metric, String(paidNow.totals[metric])])));
      assert.match(await page2.locator('#performance tfoot tr.paid th').innerText(), /^Paid channels/);
      assert.match(await page2.locator('#performance tfoot tr.all th').innerText(), /^All rows/);

      // New and returning customers: the store's, for the period.
      const customers = Object.fromEntries(
        await page2.$$eval('#customers-figures [data-metric]', (figures) => figures.map((figure) => [figure.getAttribute('data-metric'), figure.querySelector('.value')!.getAttribute('data-value')])),
      );
      assert.deepEqual(customers, { new_customers: String(now.new_customers), returning_customers: String(store.rows[0]!.returning_customers) });
      assert.deepEqual([now.new_customers, store.rows[0]!.returning_customers], [16, 8]);

      // The chart's legend says which revenue is which.
      const legend = await page2.$$eval('#chart .u-legend .u-series th', (labels) => labels.map((label) => label.textContent!.trim()));
      assert.deepEqual(legend.slice(1), ['Spend', 'Store revenue (all orders)', 'Attributed revenue, paid channels', 'MER']);
      await shot('9-headline-1440', page2);
    });

    test('the comparison of models shows each row\'s revenue under each model, as the reports API answers it', async () => {
      const header = await page2.$$eval('#comparison thead th[data-model]', (cells) => cells.map((cell) => cell.getAttribute('data-model')));
      assert.deepEqual(header, ['linear', 'first_touch', 'last_touch'], 'the model picked first, then the others compared');
      const expected = async (model: string, level: string) => {
        return report({ ...LAST_30, model, window: '30', mode: 'cash', level, granularity: 'PERIOD', metrics: 'spend,rev' }, shop);
      };
      const shown = await rowsShown('comparison', 0, 'data-model');
      assert.ok(shown.length >= 5, 'meta, google, direct, e-mail, unattributed');
      const revenueOf: Record<string, Map<string, string>> = {};
      for (const model of header) {
        const answer = await expected(model!, 'platform');
        revenueOf[model!] = new Map(answer.rows.map((row) => [String(row.platform), String(row.rev)]));
        for (const row of shown) assert.equal(row.values[model!], revenueOf[model!]!.get(row.key) ?? '', `${row.name} under ${model}`);
        const all = await page2.getAttribute(`#comparison tfoot tr.all td[data-model="${model}"]`, 'data-value');
        assert.equal(all, String(answer.totals.rev), `every row under ${model}`);
        const paidUnder = await report({ ...LAST_30, model: model!, window: '30', mode: 'cash', level: 'total', channels: 'paid', granularity: 'PERIOD', metrics: 'rev' }, shop);
        assert.equal(await page2.getAttribute(`#comparison tfoot tr.paid td[data-model="${model}"]`, 'data-value'), String(paidUnder.totals.rev), `paid channels under ${model}`);
        close(String(paidUnder.totals.rev), paidRevenue(answer), `paid channels under ${model}: the paid platforms' rows`);
      }
      assert.notEqual(revenueOf.first_touch!.get('meta'), revenueOf.last_touch!.get('meta'), 'the models disagree on meta');
      // The table above and the comparison show the same rows, in the same order.
      assert.deepEqual(shown.map((row) => row.key), (await rowsShown('performance', 0, 'data-metric')).map((row) => row.key));

      // Another model ticked: asked for, and shown beside the others.
      await page2.locator('#compare-pick summary').click();
      await page2.getByRole('checkbox', { name: 'Position-based (40/20/40)' }).check();
      await page2.locator('#comparison thead th[data-model="position_based"]').waitFor();
      const positionBased = await expected('position_based', 'platform');
      for (const row of await rowsShown('comparison', 0, 'data-model')) {
        assert.equal(row.values.position_based, String(positionBased.rows.find((candidate) => candidate.platform === row.key)?.rev ?? ''), row.name);
      }
      await page2.getByRole('checkbox', { name: 'Position-based (40/20/40)' }).uncheck();
      await page2.locator('#compare-pick summary').click();
      await page2.locator('#comparison thead th[data-model="position_based"]').waitFor({ state: 'detached' });
    });

    test('rows without a name say what they are; channels without a platform are named by their channel', async () => {
      const platforms = await rowsShown('performance', 0, 'data-metric');
      const named = Object.fromEntries(platforms.map((row) => [row.key, [row.name, row.tag]]));
      assert.deepEqual(named, {
        meta: ['meta', null],
        google: ['google', null],
        direct: ['Direct', 'channel, no ad platform'],
        email: ['E-mail', 'channel, no ad platform'],
        unattributed: ['Unattributed', 'no touchpoint'],
      });
      // Channels and unattributed orders have no ad objects to open.
      for (const name of ['Direct', 'E-mail', 'Unattributed']) assert.equal(await page2.locator('#performance tbody tr[data-depth="0"]', { hasText: name }).locator('.toggle').count(), 0, name);

      await page2.locator('#performance tbody tr[data-depth="0"] .toggle', { hasText: 'google' }).click();
      await page2.locator('#performance tbody tr[data-depth="1"]').first().waitFor();
      assert.deepEqual((await rowsShown('performance', 1, 'data-metric')).map((row) => row.name).sort(), ['(no campaign)', 'search campaign']);
      await page2.locator('#performance tbody tr[data-depth="0"] .toggle', { hasText: 'meta' }).click();
      await page2.locator('#performance tbody tr[data-depth="1"] .toggle', { hasText: 'spring campaign' }).click();
      await page2.locator('#performance tbody tr[data-depth="2"]').first().waitFor();
      const adSets = await rowsShown('performance', 2, 'data-metric');
      assert.deepEqual(adSets.map((row) => row.name).sort(), ['(no ad set)', 'spring ad set']);
      // As the API has them: the ad set without a name or id is meta's spring campaign's "".
      const apiAdSets = await report({ ...LAST_30, model: 'linear', window: '30', mode: 'cash', level: 'adset', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') }, shop);
      const unnamed = apiAdSets.rows.find((row) => row.platform === 'meta' && row.campaign_id === 'spring' && row.adset_id === '')!;
      assert.equal(unnamed.adset, '');
      assert.equal(adSets.find((row) => row.name === '(no ad set)')!.values.rev, String(unnamed.rev));
      await page2.locator('#performance tbody tr[data-depth="2"] .toggle', { hasText: '(no ad set)' }).click();
      await page2.locator('#performance tbody tr[data-depth="3"]', { hasText: '(no ad)' }).waitFor();

      // The comparison follows the rows opened, under every model.
      const compared = await rowsShown('comparison', 2, 'data-model');
      assert.deepEqual(compared.map((row) => row.name).sort(), ['(no ad set)', 'spring ad set']);
      for (const model of ['first_touch', 'last_touch']) {
        const answer = await report({ ...LAST_30, model, window: '30', mode: 'cash', level: 'adset', granularity: 'PERIOD', metrics: 'rev' }, shop);
        const byKey = new Map(answer.rows.map((row) => [[row.platform, row.campaign_id, row.adset_id].join('\u0000'), String(row.rev)]));
        for (const row of compared) assert.equal(row.values[model], byKey.get(row.key) ?? '', `${row.name} under ${model}`);
      }
      await shot('9b-rows-and-models-1440', page2);
    });

    test('while figures change, the old ones are dimmed and the page says it is busy', async () => {
      const slow = (address: URL) => address.pathname === '/v1/reports/performance';
      await page2.route(slow, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await route.continue();
      });
      try {
        const shownBefore = (await kpis()).spend!.value;
        await page2.locator('#mode').selectOption('accrual');
        assert.equal(await page2.locator('#dashboard').getAttribute('aria-busy'), 'true');
        await page2.locator('#period-shown .updating').waitFor();
        await page2.waitForTimeout(300);
        assert.equal(await page2.locator('#dashboard').getAttribute('aria-busy'), 'true');
        assert.equal((await kpis()).spend!.value, shownBefore, 'the old figures stay while the new ones come');
        assert.ok(Number(await page2.$eval('#kpis', (element) => element.ownerDocument.defaultView!.getComputedStyle(element).opacity)) < 0.6, 'dimmed');
        await shot('9c-loading-1440', page2);
      } finally {
        await page2.unroute(slow);
      }
      await loaded(page2);
      await page2.waitForTimeout(300);
      assert.equal(Number(await page2.$eval('#kpis', (element) => element.ownerDocument.defaultView!.getComputedStyle(element).opacity)), 1, 'no longer dimmed');
      const accrual = await report({ ...LAST_30, model: 'linear', window: '30', mode: 'accrual', level: 'platform', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') }, shop);
      close((await kpis()).paid_rev!.value, paidRevenue(accrual), 'attributed revenue in accrual mode');
      await page2.locator('#mode').selectOption('cash');
      await loaded(page2);
    });

    test('a period that cannot be shown clears the figures and says why, asking the API nothing', async () => {
      await page2.getByLabel('Period').selectOption('custom');
      await loaded(page2);
      assert.notEqual((await kpis()).spend!.value, '');
      const asked = sent.length;
      const problem = page2.locator('#period-problem');
      const cleared = async () => {
        assert.ok(Object.values(await kpis()).every((figure) => figure.value === ''), 'no headline figure left');
        assert.equal(await page2.locator('#performance tbody tr').count(), 0);
        assert.equal(await page2.locator('#comparison tbody tr').count(), 0);
        assert.equal(await page2.locator('#customers-figures [data-metric]').count(), 0);
        assert.equal(await page2.locator('#chart canvas').count(), 0);
        assert.equal(await page2.locator('#download').isDisabled(), true);
        assert.equal(await page2.locator('#period-shown').innerText(), '');
      };

      await page2.getByLabel('To', { exact: true }).fill(dayBefore(40));
      await loaded(page2);
      assert.match(await problem.innerText(), /^The period ends on .+, before it starts on .+: pick a last day on or after the first\.$/);
      await cleared();
      await shot('11-invalid-period-1440', page2);

      await page2.getByLabel('From', { exact: true }).fill(dayBefore(140));
      assert.match(await problem.innerText(), /^That period is 101 days long: the dashboard shows at most 92 days at a time\./);
      await cleared();

      await page2.getByLabel('From', { exact: true }).fill('');
      assert.equal(await problem.innerText(), 'Pick the first day of the period to see its figures.');
      await cleared();
      await page2.waitForTimeout(300);
      assert.deepEqual(sent.slice(asked), [], 'no request for a period that cannot be shown');

      await page2.getByLabel('Period').selectOption('30');
      await loaded(page2);
      assert.equal(await problem.isHidden(), true);
      assert.notEqual((await kpis()).spend!.value, '');
    });

    test('on a phone, the headline comes first and nothing is wider than the screen; light and dark', async () => {
      for (const scheme of ['light', 'dark'] as const) {
        await page2.emulateMedia({ colorScheme: scheme });
        await assertFitsAPhone(page2);
        const top = async (selector: string) => (await page2.locator(selector).boundingBox())!.y;
        assert.ok((await top('#kpis')) < (await top('#chart')) && (await top('#kpis')) < (await top('#performance')), 'the headline before the chart and the table');
        // Each figure on one line, none cut.
        const wrapped = await page2.$$eval('#kpis .value', (values) =>
          values.filter((value) => value.scrollWidth > value.clientWidth || value.getBoundingClientRect().height > 1.5 * parseFloat(value.ownerDocument.defaultView!.getComputedStyle(value).lineHeight)).length,
        );
        assert.equal(wrapped, 0);
        await shot(`10-phone-390-${scheme}`, page2);
      }
      await page2.setViewportSize({ width: 1440, height: 900 });
      await shot('10b-desktop-1440-dark', page2);
      await page2.emulateMedia({ colorScheme: 'light' });
    });

    test('the CSV download still works, and the page needs nothing a read-only key may not do', async () => {
      const [download] = await Promise.all([page2.waitForEvent('download'), page2.getByRole('button', { name: 'Download CSV' }).click()]);
      const [header] = parseCsv(fs.readFileSync((await download.path())!, 'utf8'));
      assert.ok(header!.includes('ad_id'), 'at the deepest level open');
      // Keys of scope read may GET anything and POST /v1/exports/data-export only.
      const writes = sent.filter(({ method }) => method !== 'GET');
      assert.ok(writes.length > 0);
      assert.deepEqual(new Set(writes.map(({ method, path }) => `${method} ${path}`)), new Set(['POST /v1/exports/data-export']));
    });
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
