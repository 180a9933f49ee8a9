import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import vm from 'node:vm';
import { gunzipSync } from 'node:zlib';
import { loadPixelScript, PIXEL_CACHE_CONTROL } from '../src/pixel/routes.js';
import { startService, UUID, type TestService } from './helpers.js';

interface Visit {
  id: string;
  last: number;
  source: string;
  identified: string;
}
interface PageViewResult {
  starts: boolean;
  visit: Visit;
}
interface Page {
  eventId: string;
  now: number;
  visitorId: string;
  url: string;
  referrer: string;
}
interface PixelHooks {
  VISIT_TIMEOUT_MS: number;
  sourceOf(url: string, referrer: string, siteDomain: string): string;
  pageView(visit: Visit | null, view: { eventId: string; now: number; url: string; referrer: string; siteDomain: string }): PageViewResult;
  parseState(text: string | null): { visitorId: string; visit: Visit | null } | null;
  formatState(state: { visitorId: string; visit: Visit }): string;
  eventOf(type: string, properties: unknown, page: Page): Record<string, string> | null;
  uuid(crypto: unknown): string;
}

/**
 * The pure functions of the script exactly as served, run in a context of their own whose
 * `__tributaryTest` asks the script to hand them over instead of starting. Their answers are
 * copied into this realm, where deepEqual compares prototypes too.
 */
function loadHooks(): PixelHooks {
  const context: Record<string, unknown> = { __tributaryTest: {}, URL };
  context.window = context;
  vm.runInNewContext(loadPixelScript().text, context);
  const hooks = context.__tributaryTest as Record<string, unknown>;
  const copied = (value: unknown) => (value === undefined ? value : JSON.parse(JSON.stringify(value)));
  return Object.fromEntries(
    Object.entries(hooks).map(([name, hook]) => [
      name,
      typeof hook === 'function' ? (...args: unknown[]) => copied(hook(...args)) : hook,
    ]),
  ) as unknown as PixelHooks;
}

const pixel = loadHooks();
const MINUTE = 60_000;
const START = Date.parse('2026-11-23T10:00:00Z');
const SHOP = 'https://www.shop.example';

let events = 0;
function view(url: string, { minutes = 0, referrer = '' }: { minutes?: number; referrer?: string } = {}) {
  return { eventId: `00000000-0000-4000-8000-${String(++events).padStart(12, '0')}`, now: START + minutes * MINUTE, url, referrer, siteDomain: 'shop.example' };
}

/** The visit after a first, direct landing on the home page. */
function landed(url = `${SHOP}/`, referrer = ''): Visit {
  return pixel.pageView(null, view(url, { referrer })).visit;
}

describe('visits', () => {
  test('a first page view starts a visit named by its event', () => {
    const first = view(`${SHOP}/`);
    const { starts, visit } = pixel.pageView(null, first);
    assert.equal(starts, true);
    assert.deepEqual(visit, { id: first.eventId, last: first.now, source: '', identified: '' });
  });

  test('29 minutes without a page view keep the visit; 30 start a new one', () => {
    const visit = landed();
    const kept = pixel.pageView(visit, view(`${SHOP}/shirts`, { minutes: 29, referrer: `${SHOP}/` }));
    assert.equal(kept.starts, false);
    assert.deepEqual(kept.visit, { ...visit, last: START + 29 * MINUTE });

    // Inactivity counts from the last page view, not from the visit's start.
    assert.equal(pixel.pageView(kept.visit, view(`${SHOP}/cart`, { minutes: 29 + 29 })).starts, false);

    const later = view(`${SHOP}/cart`, { minutes: 30, referrer: `${SHOP}/` });
    const renewed = pixel.pageView(visit, later);
    assert.equal(renewed.starts, true);
    assert.equal(renewed.visit.id, later.eventId);
  });

  test('new UTM parameters start a new visit; the same ones keep it', () => {
    const visit = landed(`${SHOP}/?utm_source=meta&utm_medium=cpc&utm_campaign=spring`);
    const same = pixel.pageView(visit, view(`${SHOP}/?utm_campaign=spring&utm_medium=cpc&utm_source=meta&page=2`, { minutes: 5 }));
    assert.equal(same.starts, false);
    assert.equal(same.visit.id, visit.id);

    assert.equal(pixel.pageView(visit, view(`${SHOP}/?utm_source=meta&utm_medium=cpc&utm_campaign=summer`, { minutes: 5 })).starts, true);
    assert.equal(pixel.pageView(visit, view(`${SHOP}/?utm_source=google&utm_medium=cpc&utm_campaign=spring`, { minutes: 5 })).starts, true);
    // A campaign arriving during a direct visit starts one too.
    assert.equal(pixel.pageView(landed(), view(`${SHOP}/?utm_source=newsletter`, { minutes: 1 })).starts, true);
  });

  test('a new click id starts a new visit, whatever the case of its name', () => {
    const visit = landed(`${SHOP}/?utm_source=meta&fbclid=abc`);
    assert.equal(pixel.pageView(visit, view(`${SHOP}/?utm_source=meta&fbclid=abc`, { minutes: 1 })).starts, false);
    assert.equal(pixel.pageView(visit, view(`${SHOP}/?utm_source=meta&fbclid=def`, { minutes: 1 })).starts, true);
    assert.equal(pixel.pageView(visit, view(`${SHOP}/?utm_source=meta&fbclid=abc&gclid=g1`, { minutes: 1 })).starts, true);
    assert.equal(pixel.pageView(landed(`${SHOP}/?ScCid=s1`), view(`${SHOP}/?sccid=s1`, { minutes: 1 })).starts, false);
    for (const name of ['gclid', 'gbraid', 'wbraid', 'fbclid', 'ttclid', 'msclkid', 'twclid', 'li_fat_id', 'ScCid', 'epik']) {
      assert.equal(pixel.pageView(landed(), view(`${SHOP}/?${name}=x1`, { minutes: 1 })).starts, true, name);
    }
    // Empty values and other parameters name no campaign.
    assert.equal(pixel.pageView(landed(), view(`${SHOP}/?gclid=&q=shirts`, { minutes: 1 })).starts, false);
  });

  test('arriving from another site starts a new visit; from the shop itself does not', () => {
    const visit = landed();
    assert.equal(pixel.pageView(visit, view(`${SHOP}/`, { minutes: 3, referrer: 'https://www.google.com/' })).starts, true);
    assert.equal(pixel.pageView(visit, view(`${SHOP}/`, { minutes: 3, referrer: 'https://notshop.example/' })).starts, true);
    for (const referrer of [`${SHOP}/shirts`, 'https://shop.example/', 'https://checkout.shop.example/thanks', 'not a url']) {
      assert.equal(pixel.pageView(visit, view(`${SHOP}/cart`, { minutes: 3, referrer })).starts, false, referrer);
    }
  });

  test('the same source again within a visit (a reload of the landing page) keeps it', () => {
    const fromGoogle = landed(`${SHOP}/`, 'https://www.google.com/');
    assert.equal(pixel.pageView(fromGoogle, view(`${SHOP}/`, { minutes: 2, referrer: 'https://www.google.com/' })).starts, false);
    assert.equal(pixel.pageView(fromGoogle, view(`${SHOP}/`, { minutes: 2, referrer: 'https://duckduckgo.com/' })).starts, true);
    // Campaign parameters name the source before the referrer does.
    const campaign = landed(`${SHOP}/?utm_source=meta`, 'https://l.facebook.com/');
    assert.equal(pixel.pageView(campaign, view(`${SHOP}/?utm_source=meta`, { minutes: 2, referrer: 'https://m.facebook.com/' })).starts, false);
  });

  test('a visit keeps a digest of its source, not the campaign values', () => {
    const { source } = landed(`${SHOP}/?utm_source=meta&utm_campaign=spring&fbclid=abc`);
    assert.match(source, /^[0-9a-z]{1,7}$/);
    assert.equal(pixel.sourceOf(`${SHOP}/?UTM_Source=meta&utm_source=other`, '', 'shop.example'), 'campaign:utm_source=meta');
  });
});

describe('stored state', () => {
  test('is read back as written, and anything else is read as none', () => {
    const state = { visitorId: '6f1c0a52-3b9e-4c1d-9f55-0e2b7a8c9d10', visit: landed() };
    const text = pixel.formatState(state);
    assert.match(text, /^[0-9a-f-]{36}\.[0-9a-f-]{36}\.[0-9a-z]+\.[0-9a-z]*\.[0-9a-z]*$/, 'cookie-safe characters only');
    assert.deepEqual(pixel.parseState(text), state);
    for (const garbage of [null, '', 'x.y.z.w.v', `not-a-uuid.${state.visit.id}.1.a.`, `${state.visitorId}.${state.visit.id}.1`]) {
      assert.equal(pixel.parseState(garbage), null, String(garbage));
    }
    // A visitor whose visit part is damaged keeps its id, and starts a new visit.
    assert.deepEqual(pixel.parseState(`${state.visitorId}.bad.1..`), { visitorId: state.visitorId, visit: null });
  });

  test('ids are random UUIDs, also where crypto.randomUUID is missing (insecure contexts)', () => {
    assert.match(pixel.uuid(webcrypto), UUID);
    const fallback = pixel.uuid({ getRandomValues: (bytes: Uint8Array) => webcrypto.getRandomValues(bytes) });
    assert.match(fallback, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(fallback, pixel.uuid({ getRandomValues: (bytes: Uint8Array) => webcrypto.getRandomValues(bytes) }));
  });
});

describe('events', () => {
  const page: Page = {
    eventId: '11111111-1111-4111-8111-111111111111',
    now: START,
    visitorId: '22222222-2222-4222-8222-222222222222',
    url: `${SHOP}/thanks?order=1001`,
    referrer: 'https://www.google.com/',
  };
  const common = { event_id: page.eventId, occurred_at: '2026-11-23T10:00:00.000Z', visitor_id: page.visitorId };

  test('a page view carries its URL and referrer', () => {
    assert.deepEqual(pixel.eventOf('page', undefined, page), { ...common, type: 'page', url: page.url, referrer: page.referrer });
    assert.deepEqual(pixel.eventOf('page', undefined, { ...page, referrer: '' }), { ...common, type: 'page', url: page.url });
  });

  test('identify carries the customer id, purchase the order id, as strings, and neither the page', () => {
    assert.deepEqual(pixel.eventOf('identify', { customer_id: 'c-77', email: 'jane@example.com' }, page), { ...common, type: 'identify', customer_id: 'c-77' });
    assert.deepEqual(pixel.eventOf('purchase', { order_id: 'A-1001' }, page), { ...common, type: 'purchase', order_id: 'A-1001' });
    assert.deepEqual(pixel.eventOf('purchase', { order_id: 1001 }, page), { ...common, type: 'purchase', order_id: '1001' });
  });

  test('calls without their id, or of unknown types, make no event', () => {
    for (const [type, properties] of [
      ['identify', undefined],
      ['identify', { customer_id: '' }],
      ['identify', { order_id: '1' }],
      ['purchase', { order_id: null }],
      ['purchase', { order_id: Number.NaN }],
      ['purchase', { order_id: { id: 1 } }],
      ['track', { order_id: '1' }],
    ] as const) {
      assert.equal(pixel.eventOf(type, properties, page), null, `${type} ${JSON.stringify(properties)}`);
    }
  });
});

describe('GET /pixel.js', () => {
  let service: TestService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  for (const port of ['production', 'uat'] as const) {
    test(`is served on the ${port} port, cacheable, revalidated with its ETag`, async () => {
      const app = service[port];
      const response = await app.inject({ method: 'GET', url: '/pixel.js' });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(response.headers['cache-control'], PIXEL_CACHE_CONTROL);
      assert.equal(response.headers['cross-origin-resource-policy'], 'cross-origin');
      assert.equal(response.headers['content-encoding'], undefined);
      assert.equal(response.body, loadPixelScript().text);
      assert.match(response.body, /^\/\*! Tributary pixel/);
      const etag = String(response.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/, 'a strong ETag');

      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const cached = await app.inject({ method: 'GET', url: '/pixel.js', headers: { 'if-none-match': ifNoneMatch } });
        assert.equal(cached.statusCode, 304, ifNoneMatch);
        assert.equal(cached.body, '');
        assert.equal(cached.headers.etag, etag);
        assert.equal(cached.headers['cache-control'], PIXEL_CACHE_CONTROL);
      }
      const changed = await app.inject({ method: 'GET', url: '/pixel.js', headers: { 'if-none-match': '"an-older-version"' } });
      assert.equal(changed.statusCode, 200);

      const head = await app.inject({ method: 'HEAD', url: '/pixel.js' });
      assert.equal(head.statusCode, 200);
      assert.equal(head.headers.etag, etag);
    });

    test(`is sent gzipped under 4 KB on the ${port} port when the browser takes gzip`, async () => {
      const app = service[port];
      const response = await app.inject({ method: 'GET', url: '/pixel.js', headers: { 'accept-encoding': 'br, gzip, deflate' } });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-encoding'], 'gzip');
      assert.equal(response.headers.vary, 'Accept-Encoding');
      const bytes = response.rawPayload;
      assert.equal(gunzipSync(bytes).toString('utf8'), loadPixelScript().text);
      console.log(`pixel.js: ${Buffer.byteLength(loadPixelScript().text)} bytes, ${bytes.length} bytes gzipped`);
      assert.ok(bytes.length < 4096, `${bytes.length} bytes gzipped`);

      const etag = String(response.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]{27}-gzip"$/, 'another ETag than the uncompressed bytes have');
      const cached = await app.inject({ method: 'GET', url: '/pixel.js', headers: { 'accept-encoding': 'gzip', 'if-none-match': etag } });
      assert.equal(cached.statusCode, 304);

      const refused = await app.inject({ method: 'GET', url: '/pixel.js', headers: { 'accept-encoding': 'gzip;q=0, identity' } });
      assert.equal(refused.headers['content-encoding'], undefined);
      assert.equal(refused.body, loadPixelScript().text);
    });
  }
});
