import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { addDays, localToday } from '../src/calendar.js';
import { runDemo, type DemoResult } from '../src/demo/run.js';
import { DEMO_TIME_ZONE } from '../src/demo/shop.js';
import { DASHBOARD_SCREENSHOTS, assertFitsAPhone, chartColours, launchChromium, loaded, signIn, skip, watchProblems } from './browser.js';
import { makeOrder, startService, type TestService } from './helpers.js';

/*
 * What a newcomer sees after `npm install`, `npm start` and `tributary demo`: the demo shop's
 * dashboard, signed in with the demo's read key, in chromium. The shop is filled in this process
 * (runDemo, as the CLI runs it) on the test's own store, and served by the production app on a
 * port of its own. It is 75 days long: the default period and the 30 days it is compared with
 * both lie in it; the full year would take most of a minute.
 */

const DAYS = 75;
const PAID_PLATFORMS = ['google', 'meta', 'tiktok'];
/** Campaigns of each paid platform in the demo shop (src/demo/shop.ts). */
const CAMPAIGNS: Record<string, number> = { google: 3, meta: 2, tiktok: 1 };
const TABLE_METRICS = ['spend', 'rev', 'roas', 'cac', 'txns', 'visits'];
const KPIS = ['spend', 'paid_rev', 'roas', 'mer', 'transactions', 'new_share', 'blended_cac'];

/** The last `days` days ending yesterday, in the demo client's time zone: the dashboard's period choices. */
const lastDays = (days: number) => {
  const today = localToday(DEMO_TIME_ZONE, new Date());
  return { start_date: addDays(today, -days), end_date: addDays(today, -1) };
};
const ATTRIBUTION = { model: 'linear', window: '30', mode: 'cash' };

type Figures = Record<string, { value: string | null; change: string | null }>;

describe("the demo shop's dashboard in a real browser, signed in with the demo's read key", { skip }, () => {
  let service: TestService;
  let demo: DemoResult;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: Awaited<ReturnType<typeof watchProblems>>;
  let filledInMs: number;
  /** The console errors of the first load: those after it are the later steps'. */
  let errorsOfFirstLoad = 0;
  let demoOutput = '';

  before(async () => {
    service = await startService();
    const progress = new Writable({
      write(chunk, _encoding, done) {
        demoOutput += String(chunk);
        done();
      },
    }) as unknown as NodeJS.WriteStream;
    const started = performance.now();
    demo = await runDemo(service.db, service.config, { days: DAYS, seed: 1, progress });
    filledInMs = performance.now() - started;
    url = await service.production.listen({ host: '127.0.0.1', port: 0 });
    fs.mkdirSync(DASHBOARD_SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
    page = await browser.newPage({ timezoneId: 'UTC', viewport: { width: 1440, height: 900 } });
    problems = await watchProblems(page);
  });

  after(async () => {
    await browser?.close();
    await service?.close();
  });

  const readerHeaders = () => ({ authorization: demo.read_api_key, 'data-client-id': demo.client_id });
  const report = async (query: Record<string, string>) => {
    const response = await service.production.inject({ method: 'GET', url: `/v1/reports/performance?${new URLSearchParams(query)}`, headers: readerHeaders() });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { rows: Record<string, number | string | null>[]; totals: Record<string, number | null>; currency: string | null };
  };
  const shot = (name: string) => page.screenshot({ path: path.join(DASHBOARD_SCREENSHOTS, `${name}.png`), fullPage: true });
  const periodDates = () => page.$$eval('#period-shown time', (times) => times.map((time) => time.getAttribute('datetime')));
  const headline = () =>
    page.$$eval('#kpis [data-kpi]', (cards) =>
      Object.fromEntries(
        cards.map((card) => [
          card.getAttribute('data-kpi'),
          { value: card.querySelector('.value')?.getAttribute('data-value') ?? null, change: card.querySelector('.change')?.getAttribute('data-change') ?? null },
        ]),
      ),
    ) as Promise<Figures>;
  /** The table's rows of one depth: their key, the name shown, its kind (class) and each metric cell's API value. */
  const tableRows = (depth: number) =>
    page.$$eval(`#performance tbody tr[data-depth="${depth}"]`, (rows) =>
      rows.map((row) => ({
        key: row.getAttribute('data-key')!,
        name: row.querySelector('td.name .label')?.textContent ?? '',
        kind: row.getAttribute('class'),
        values: Object.fromEntries([...row.querySelectorAll('td[data-metric]')].map((cell) => [cell.getAttribute('data-metric'), cell.getAttribute('data-value')])),
      })),
    );
  /** A string the page wrote as a number: not blank, and finite. */
  const isNumber = (text: string | null | undefined) => typeof text === 'string' && text.trim() !== '' && Number.isFinite(Number(text));

  test('signing in with the read key loads the dashboard of the last 30 days, with no console error and no policy violation', async (t) => {
    t.diagnostic(`the demo shop of ${DAYS} days was filled in ${(filledInMs / 1000).toFixed(1)} s; screenshots in ${DASHBOARD_SCREENSHOTS}`);
    assert.match(demoOutput, /records stored in \d+ s/);
    await page.goto(`${url}/`);
    await signIn(page, demo.client_id, demo.read_api_key);
    await loaded(page);
    await page.locator('#chart canvas').waitFor();
    errorsOfFirstLoad = problems.consoleErrors.length;
    assert.equal(await page.locator('#error').isHidden(), true, await page.locator('#error').innerText());
    const { start_date, end_date } = lastDays(30);
    assert.deepEqual(await periodDates(), [start_date, end_date], "the last 30 days ending yesterday in the client's time zone");
    assert.deepEqual(problems.consoleErrors, []);
    assert.deepEqual(await problems.policyViolations(), []);
  });

  test('every headline figure shows a value and its change against the previous 30 days', async () => {
    const shown = await headline();
    assert.deepEqual(Object.keys(shown), KPIS);
    for (const [kpi, { value, change }] of Object.entries(shown)) {
      assert.ok(isNumber(value), `${kpi}: value ${JSON.stringify(value)}`);
      assert.ok(Number(value) > 0, `${kpi}: value ${value}`);
      assert.ok(isNumber(change), `${kpi}: change ${JSON.stringify(change)}`);
    }
  });

  test('new and returning customers are both counted', async () => {
    const customers = Object.fromEntries(
      await page.$$eval('#customers-figures [data-metric]', (figures) => figures.map((figure) => [figure.getAttribute('data-metric'), figure.querySelector('.value')?.getAttribute('data-value') ?? null])),
    ) as Record<string, string | null>;
    assert.deepEqual(Object.keys(customers).sort(), ['new_customers', 'returning_customers']);
    for (const [metric, value] of Object.entries(customers)) assert.ok(isNumber(value) && Number(value) > 0, `${metric}: ${JSON.stringify(value)}`);
  });

  test('the chart is drawn', async () => {
    const colours = await chartColours(page);
    assert.ok(colours >= 3, `the chart canvas holds ${colours} colours`);
  });

  test('the table lists the three paid platforms, every row as the reports API answers it', async () => {
    const answer = await report({ ...lastDays(30), ...ATTRIBUTION, level: 'platform', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') });
    const shown = await tableRows(0);
    const keys = shown.map((row) => row.key);
    for (const platform of PAID_PLATFORMS) assert.ok(keys.includes(platform), `${platform} is listed: ${keys.join(', ')}`);
    const byKey = (rows: { key: string; values: Record<string, string | null> }[]) => Object.fromEntries(rows.map((row) => [row.key, row.values]));
    const expected = answer.rows.map((row) => ({
      key: String(row.platform),
      values: Object.fromEntries(TABLE_METRICS.map((metric) => [metric, row[metric] === null || row[metric] === undefined ? '' : String(row[metric])])),
    }));
    assert.deepEqual(byKey(shown), byKey(expected));
    for (const platform of PAID_PLATFORMS) {
      const { values } = shown.find((row) => row.key === platform)!;
      assert.ok(Number(values.spend) > 0 && Number(values.rev) > 0, `${platform}: ${JSON.stringify(values)}`);
    }
  });

  test("opening a paid platform shows its campaigns, each by its name, as the reports API has them", async () => {
    const campaigns = await report({ ...lastDays(30), ...ATTRIBUTION, level: 'campaign', granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') });
    for (const platform of PAID_PLATFORMS) {
      await page.locator('#performance tbody tr[data-depth="0"] .toggle', { hasText: platform }).click();
      // A row's key is its ids joined by U+0000, which a CSS selector cannot name (and the pages'
      // policy refuses waitForFunction's eval): the rows are read until the platform's are in.
      const under = `${platform}\u0000`;
      const campaignsOf = async () => (await tableRows(1)).filter((row) => row.key.startsWith(under));
      let shown = await campaignsOf();
      for (const deadline = Date.now() + 10_000; shown.length === 0 && Date.now() < deadline; shown = await campaignsOf()) await page.waitForTimeout(50);
      assert.equal(shown.length, CAMPAIGNS[platform], `${platform}: ${shown.map((row) => row.name).join(', ')}`);
      for (const row of shown) {
        assert.notEqual(row.name.trim(), '', `a campaign of ${platform} without a name shown: ${row.key}`);
        assert.equal(row.kind, 'object', `${platform}'s ${row.name} is shown as unnamed`);
      }
      const named = campaigns.rows.filter((row) => row.platform === platform).map((row) => String(row.campaign));
      assert.deepEqual(shown.map((row) => row.name).sort(), named.sort());
    }
  });

  test('each period choice loads its figures: the last 7, 30 and 90 days', async () => {
    for (const days of [7, 90, 30]) {
      await page.getByLabel('Period').selectOption(String(days));
      await loaded(page);
      const period = lastDays(days);
      assert.deepEqual(await periodDates(), [period.start_date, period.end_date], `the last ${days} days`);
      const shown = await headline();
      assert.deepEqual(Object.keys(shown), KPIS);
      for (const [kpi, { value }] of Object.entries(shown)) assert.ok(isNumber(value) && Number(value) > 0, `last ${days} days, ${kpi}: ${JSON.stringify(value)}`);
      const store = await report({ ...period, level: 'total', granularity: 'PERIOD', metrics: 'spend,transactions' });
      assert.equal(shown.spend!.value, String(store.totals.spend), `last ${days} days: the store's spend`);
      assert.equal(shown.transactions!.value, String(store.totals.transactions), `last ${days} days: the store's orders`);
      assert.ok((await tableRows(0)).length >= PAID_PLATFORMS.length, `last ${days} days: the table`);
      assert.equal(await page.locator('#chart canvas').count(), 1, `last ${days} days: the chart`);
      assert.equal(await page.locator('#error').isHidden(), true);
    }
  });

  test('the read key may not write', async () => {
    const refused = await service.production.inject({ method: 'POST', url: '/v2/orders', headers: readerHeaders(), payload: [makeOrder('from-the-read-key')] });
    assert.equal(refused.statusCode, 403, refused.body);
  });

  test('at 1440 and at 390 pixels wide, nothing is wider than the screen; no console error since the first load', async () => {
    await shot('demo-1440');
    await assertFitsAPhone(page);
    await shot('demo-390');
    await page.setViewportSize({ width: 1440, height: 900 });
    assert.deepEqual(problems.consoleErrors.slice(errorsOfFirstLoad), []);
    assert.deepEqual(await problems.policyViolations(), []);
  });
});
