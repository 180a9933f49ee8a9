import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, skip } from './browser.js';
import { startService, UUID, minimalOrder, type TestClient, type TestService } from './helpers.js';


interface CollectBody {
  client_id: string;
  events: Record<string, string>[];
}

/** The install snippet of docs/api.md, "The pixel", pointed at `serviceUrl` for `clientId`. */
function installSnippet(serviceUrl: string, clientId: string): string {
  const page = fs.readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
  const snippet = [...page.matchAll(/```html\n([\s\S]*?)```/g)].map((match) => match[1]!).find((block) => block.includes('data-client-id="CLIENT_ID"'));
  assert.ok(snippet, 'docs/api.md shows the install snippet');
  return snippet.replace('https://tributary.example', serviceUrl).replace('CLIENT_ID', clientId);
}

/**
 * A shop on another site than the service, www.shop.localhost with its checkout on
 * checkout.shop.localhost (Chromium resolves *.localhost to this machine): its pages install the
 * pixel, link to each other, and may call it inline.
 */
async function startShop(snippet: string): Promise<{ url: string; close(): Promise<void> }> {
  const inline: Record<string, string> = {
    // Called before the script can have loaded: the queue keeps it.
    '/thanks': "tributary('purchase', { order_id: 'order-1' });",
  };
  const server = http.createServer((request, response) => {
    const page = new URL(request.url!, 'http://shop').pathname;
    if (page === '/favicon.ico') return void response.writeHead(404).end();
    const call = inline[page] ? `<script>${inline[page]}</script>` : '';
    const checkout = `http://checkout.shop.localhost:${(server.address() as AddressInfo).port}`;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html><head><meta charset="utf-8"><title>Test shop ${page}</title>${snippet}${call}</head>
<body style="font-family: sans-serif; margin: 2em"><h1>Test shop: ${page}</h1>
<nav><a id="home" href="/">Home</a> · <a id="products" href="/products">Products</a> · <a id="cart" href="/cart">Cart</a> · <a id="thanks" href="${checkout}/thanks">Thank you</a></nav>
<p>Cookie: <code id="cookie"></code></p>
<script>window.addEventListener('load', function () { document.getElementById('cookie').textContent = document.cookie; });</script>
</body></html>`);
  });
  // The service is on 127.0.0.1: another site, as Tributary is for a shop.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://www.shop.localhost:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function eventually(what: string, check: () => boolean | Promise<boolean>) {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (await check()) return;
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('the pixel in a real browser', { skip }, () => {
  let service: TestService;
  let client: TestClient;
  let serviceUrl: string;
  let shop: Awaited<ReturnType<typeof startShop>>;
  let profile: string;
  let screenshots: string;
  let context: BrowserContext;
  let page: Page;
  const collected: CollectBody[] = [];
  const serviceRequests: string[] = [];

  before(async () => {
    service = await startService();
    client = await service.createClient();
    serviceUrl = await service.production.listen({ host: '127.0.0.1', port: 0 });
    shop = await startShop(installSnippet(serviceUrl, client.client_id));
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-chromium-'));
    screenshots = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-pixel-screenshots-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    await context.clock.install();
    page = context.pages()[0] ?? (await context.newPage());
    page.on('request', (request: Request) => {
      if (!request.url().startsWith(serviceUrl)) return;
      serviceRequests.push(`${request.method()} ${new URL(request.url()).pathname}`);
      if (request.method() === 'POST') collected.push(JSON.parse(request.postData()!) as CollectBody);
    });
  });

  after(async () => {
    await context?.close();
    await shop?.close();
    await service?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  let steps = 0;
  /** Goes to a page and waits for its load (the async pixel delays it), keeping a screenshot to look at. */
  async function visit(step: string, go: () => Promise<unknown>) {
    await go();
    await page.waitForLoadState('load');
    await page.screenshot({ path: path.join(screenshots, `${++steps}-${step}.png`) });
  }

  const events = () => collected.flatMap((body) => body.events);

  async function touchpointsOf(query: string) {
    const response = await service.production.inject({ method: 'GET', url: `/v1/touchpoints?${query}`, headers: client.headers });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as Record<string, unknown>[];
  }

  test('a landing from a Meta ad, two more pages, an identify and a purchase credit the order to the Meta visit', async (t) => {
    t.diagnostic(`screenshots in ${screenshots}`);
    await visit('landing', () => page.goto(`${shop.url}/?utm_source=meta&utm_medium=cpc&utm_campaign=spring&fbclid=abc`));
    await eventually('the landing page view', () => events().length === 1);
    const [landing] = events();
    const visitorId = landing!.visitor_id!;
    assert.match(visitorId, UUID);
    assert.match(landing!.event_id!, UUID);
    assert.deepEqual(landing, {
      event_id: landing!.event_id,
      type: 'page',
      occurred_at: landing!.occurred_at,
      visitor_id: visitorId,
      url: `${shop.url}/?utm_source=meta&utm_medium=cpc&utm_campaign=spring&fbclid=abc`,
    });
    assert.ok(Math.abs(Date.parse(landing!.occurred_at!) - Date.now()) < 60_000, landing!.occurred_at);
    assert.equal(collected[0]!.client_id, client.client_id);

    // The visitor id lives in a first-party cookie of the shop, and in its localStorage.
    const [cookie] = await context.cookies(shop.url);
    assert.ok(cookie, 'a cookie');
    assert.equal(cookie.name, '_trb');
    assert.ok(cookie.value.startsWith(`${visitorId}.${landing!.event_id}.`), cookie.value);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.domain, '.shop.localhost', 'shared with the shop\'s subdomains');
    assert.ok(cookie.expires * 1000 > Date.now() + 364 * 24 * 3600 * 1000, 'kept for a year');
    assert.equal(await page.evaluate("window.localStorage.getItem('_trb')"), cookie.value);

    // Two more pages of the same visit send nothing, nor does the checkout on its subdomain.
    await visit('products', () => page.click('#products'));
    await visit('cart', () => page.click('#cart'));
    await page.evaluate("tributary('identify', { customer_id: 'cust-1' })");
    await visit('thanks', () => page.click('#thanks'));
    assert.match(page.url(), /^http:\/\/checkout\.shop\.localhost:\d+\/thanks$/);
    await eventually('the identify and purchase', () => events().length === 3);
    assert.deepEqual(
      events().map(({ event_id: _id, occurred_at: _at, ...rest }) => rest),
      [
        { type: 'page', visitor_id: visitorId, url: landing!.url },
        { type: 'identify', visitor_id: visitorId, customer_id: 'cust-1' },
        { type: 'purchase', visitor_id: visitorId, order_id: 'order-1' },
      ],
    );
    assert.equal(new Set(events().map((event) => event.event_id)).size, 3, 'an event id each');
    assert.ok(collected.every((body) => body.events.length === 1), 'a request each');

    // The collector stored the visit: one touchpoint, the landing's event id, derived as a Meta campaign visit.
    await eventually('the stored visit', async () => (await touchpointsOf(`visitor_id=${visitorId}`)).length === 1);
    const [stored] = await touchpointsOf(`visitor_id=${visitorId}`);
    assert.equal(stored!.touchpoint_id, landing!.event_id);
    assert.equal(stored!.type, 'visit');
    assert.equal(stored!.platform_name, 'meta');
    assert.equal(stored!.campaign_id, 'spring');
    assert.equal(stored!.channel, 'paid');

    const purchasedAt = new Date(await page.evaluate(() => Date.now())).toISOString();
    const order = minimalOrder('order-1', { customer_id: 'cust-1', time_of_purchase: purchasedAt });
    const posted = await service.production.inject({ method: 'POST', url: '/v2/orders', headers: client.headers, payload: [order] });
    assert.equal(posted.statusCode, 200, posted.body);

    const explained = await service.production.inject({ method: 'GET', url: '/v2/orders/order-1/attribution?model=last_touch', headers: client.headers });
    assert.equal(explained.statusCode, 200, explained.body);
    const explanation = explained.json();
    assert.equal(explanation.unattributed, false);
    assert.deepEqual(
      explanation.touchpoints.map(({ touchpoint_id, type, channel, platform_name, campaign_id, credit }: Record<string, unknown>) => ({ touchpoint_id, type, channel, platform_name, campaign_id, credit })),
      [{ touchpoint_id: landing!.event_id, type: 'visit', channel: 'paid', platform_name: 'meta', campaign_id: 'spring', credit: 1 }],
    );
    assert.deepEqual(serviceRequests.filter((request) => request !== 'GET /pixel.js' && request !== 'POST /v1/collect'), [], 'the pixel asks nothing else');
  });

  test('coming back 31 minutes later is a new visit', async () => {
    const before = events().length;
    await page.clock.fastForward('31:00');
    await visit('31-minutes-later', () => page.goto(`${shop.url}/products`));
    await eventually('the second visit', () => events().length === before + 1);
    const second = events().at(-1)!;
    assert.equal(second.type, 'page');
    assert.equal(second.url, `${shop.url}/products`);
    const first = events()[0]!;
    assert.equal(second.visitor_id, first.visitor_id, 'the same visitor');
    assert.ok(Date.parse(second.occurred_at!) - Date.parse(first.occurred_at!) >= 31 * 60_000);

    await eventually('the second stored visit', async () => (await touchpointsOf(`customer_id=cust-1`)).length === 2);
    const stored = await touchpointsOf(`customer_id=cust-1`);
    assert.deepEqual(stored.map(({ touchpoint_id, channel }) => ({ touchpoint_id, channel })), [
      { touchpoint_id: first.event_id, channel: 'paid' },
      { touchpoint_id: second.event_id, channel: 'direct' },
    ]);

    // Another page right after it only keeps it alive.
    await visit('after-the-second-visit', () => page.click('#cart'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(events().length, before + 1);
  });

  test('arriving from a search engine is a new visit; route changes of a single-page shop after it are not', async () => {
    const before = events().length;
    await visit('from-google', () => page.goto(`${shop.url}/products`, { referer: 'https://www.google.com/' }));
    await eventually('the visit from Google', () => events().length === before + 1);
    const fromGoogle = events().at(-1)!;
    assert.equal(fromGoogle.referrer, 'https://www.google.com/');

    await page.evaluate("history.pushState({}, '', '/products/shirt'); tributary('page')");
    await page.evaluate("history.pushState({}, '', '/cart'); tributary('page')");
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(events().length, before + 1, 'document.referrer is still Google, yet the route changes are internal');

    await eventually('the stored visit from Google', async () => (await touchpointsOf(`visitor_id=${fromGoogle.visitor_id}`)).length === 3);
    const stored = await touchpointsOf(`visitor_id=${fromGoogle.visitor_id}`);
    assert.equal(stored.at(-1)!.touchpoint_id, fromGoogle.event_id);
    assert.equal(stored.at(-1)!.channel, 'organic_search');
  });
});
