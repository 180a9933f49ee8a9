/**
 * What the browser tests share: chromium as CI installs it, where screenshots go, and
 * the page's own signals (signing in, the end of a load, a drawn chart, what the console said).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// CI installs the browser (.ci/run): there, a missing one is a failure, not a reason to skip.
export const skip = !fs.existsSync(CHROMIUM) && !process.env.CI ? `${CHROMIUM} is missing (apt-get install chromium): the browser test is skipped` : false;
/** Kept out of git (.gitignore), to be looked at after a run. */
export const DASHBOARD_SCREENSHOTS = path.join(import.meta.dirname, '..', 'test-screenshots', 'dashboard');

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });

/** Waits for the last load the dashboard started (a change of option starts one at once) to be drawn. */
export const loaded = (page: Page) => page.locator('#dashboard[aria-busy="false"]').waitFor({ state: 'attached' });

/** Signs in on the dashboard's page, already open, as a person does: by the fields' labels. */
export async function signIn(page: Page, clientId: string, apiKey: string): Promise<void> {
  await page.getByLabel('Client ID').fill(clientId);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** How many colours the chart's canvas holds (a sample of its pixels): a drawn chart holds several. */
export const chartColours = (page: Page): Promise<number> =>
  page.evaluate(`(() => {
    const canvas = document.querySelector('#chart canvas');
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const seen = new Set();
    for (let i = 0; i < data.length; i += 4 * 37) if (data[i + 3] > 0) seen.add(data[i] + ',' + data[i + 1] + ',' + data[i + 2]);
    return seen.size;
  })()`) as Promise<number>;

/**
 * What went wrong on `page` from now on, as it is said: console errors (a failed request among
 * them), uncaught exceptions, and Content-Security-Policy violations, whether logged or only
 * reported to the page (its securitypolicyviolation events, read with `policyViolations`).
 */
export async function watchProblems(page: Page): Promise<{ consoleErrors: string[]; policyViolations: () => Promise<string[]> }> {
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content.Security.Policy/i.test(message.text())) consoleErrors.push(`${message.type()}: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
  await page.addInitScript(`window.__policyViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => window.__policyViolations.push(event.violatedDirective + ' ' + event.blockedURI));`);
  return { consoleErrors, policyViolations: () => page.evaluate('window.__policyViolations ?? []') as Promise<string[]> };
}

/** Narrows `page` to a phone's screen (390 × 844), and asserts that nothing on it is wider. */
export async function assertFitsAPhone(page: Page): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone`);
}
