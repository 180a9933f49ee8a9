import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { RULE_MODEL_IDS } from '../src/attribution/models.js';
import { addDays, localToday } from '../src/calendar.js';
import { createClientRepository } from '../src/clients/repository.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/index.js';
import { DEMO_SOURCE_PLATFORMS, DEMO_TIME_ZONE, generateShop } from '../src/demo/shop.js';
import { UUID, createChildStore, embeddedStoreOnly, makeOrder, runCli, serverUrl, type ChildStore, type TestApp } from './helpers.js';

/*
 * `tributary demo` run as a newcomer runs it, in a child process on a fresh store of the kind the
 * suite runs on, then read back through the API and the tables. The shop is 60 days long here
 * (`--days 60`): the full year takes most of a minute; its shape is checked on the generator.
 * On the embedded store, also the guard of a store a server holds: the lock every process
 * opening it takes (src/db/pglite.ts).
 */

const DAYS = 60;
const PAID_PLATFORMS = ['google', 'meta', 'tiktok'];

interface Demo {
  client_id: string;
  api_key: string;
  read_api_key: string;
  dashboard_url: string;
}

/** Runs the demo; its stdout must be one line, the JSON of the new client. */
async function demo(env: NodeJS.ProcessEnv, days = DAYS): Promise<Demo> {
  const result = await runCli(env, ['demo', '--days', String(days)]);
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.split('\n');
  assert.deepEqual(lines.slice(1), [''], `stdout holds one line: ${result.stdout}`);
  assert.match(result.stderr, /records stored in \d+ s/);
  return JSON.parse(lines[0]!) as Demo;
}

/** The production API over `db`, as the server builds it. */
async function withApp<T>(db: Database, work: (app: TestApp) => Promise<T>): Promise<T> {
  const app = await buildApp({ config: loadConfig({ OVERLOAD_EVENT_LOOP_DELAY_MS: '0' }), db, environment: 'production' });
  try {
    return await work(app);
  } finally {
    await app.close();
  }
}

const headersOf = (client_id: string, key: string) => ({ authorization: key, 'data-client-id': client_id });

/** The rows a client has in each table the demo writes. */
async function rowCounts(db: Database, clientId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['clients', 'api_keys', 'orders', 'order_aliases', 'spend_hourly', 'spend_daily', 'touchpoints', 'identities']) {
    const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE client_id = $1`, [clientId]);
    counts[table] = row!.n;
  }
  return counts;
}

describe('tributary demo', () => {
  let store: ChildStore;
  let first: Demo;
  const now = () => Date.now();
  const today = () => localToday(DEMO_TIME_ZONE, new Date());

  /** The embedded store's lock (src/db/pglite.ts), which names the process holding the store. */
  let lockFile: string;

  before(async () => {
    store = await createChildStore();
    lockFile = path.join(store.env.DATA_DIR!, 'pglite', 'tributary.pid');
    if (!serverUrl) {
      // A server killed without closing the embedded store left its lock behind.
      fs.mkdirSync(path.dirname(lockFile), { recursive: true });
      fs.writeFileSync(lockFile, String(spawnSync(process.execPath, ['-e', '']).pid));
    }
    first = await demo(store.env);
  });
  after(() => store.cleanup());

  test('a lock left on the embedded store by a process that died does not stop it, and it lets the store go', { skip: embeddedStoreOnly }, () => {
    assert.match(first.client_id, UUID);
    assert.equal(fs.existsSync(lockFile), false);
  });

  test('while a running server holds the embedded store, it refuses at once, names the process, and leaves the store as it was', { skip: embeddedStoreOnly }, async () => {
    // This process opens the store as the server does, and holds it meanwhile.
    await store.withStore(async (db) => {
      const clients = await createClientRepository(db).list();
      const refused = await runCli(store.env, ['demo', '--days', '3']);
      assert.notEqual(refused.code, 0);
      assert.equal(refused.stdout, '');
      // What it was doing, then the error, as the last line.
      const { error } = JSON.parse(refused.stderr.trim().split('\n').at(-1)!) as { error: string };
      assert.match(error, new RegExp(`in use by a running server \\(process ${process.pid}\\): stop it, run the demo, start it again`));
      assert.deepEqual(await createClientRepository(db).list(), clients);
      assert.equal(fs.readFileSync(lockFile, 'utf8'), String(process.pid));
    });
  });

  test('prints the new client, a write key, a read key and the dashboard; both keys work as their scopes say', async () => {
    assert.deepEqual(Object.keys(first).sort(), ['api_key', 'client_id', 'dashboard_url', 'read_api_key']);
    assert.match(first.client_id, UUID);
    assert.notEqual(first.api_key, first.read_api_key);
    assert.equal(first.dashboard_url, `http://localhost:${loadConfig(store.env).port}/`);
    await store.withStore(async (db) => {
      const client = await createClientRepository(db).find(first.client_id);
      assert.match(client!.name, /^Demo shop \S+$/);
      assert.equal(client!.time_zone, DEMO_TIME_ZONE);
      assert.deepEqual(client!.source_platforms, DEMO_SOURCE_PLATFORMS);
      await withApp(db, async (app) => {
        const reader = headersOf(first.client_id, first.read_api_key);
        const writer = headersOf(first.client_id, first.api_key);
        const refused = await app.inject({ method: 'POST', url: '/v2/orders', headers: reader, payload: [makeOrder('read-only')] });
        assert.equal(refused.statusCode, 403, refused.body);
        const range = `start_date=${addDays(today(), -2)}&end_date=${addDays(today(), 1)}&page_size=10`;
        for (const headers of [writer, reader]) {
          const listed = await app.inject({ method: 'GET', url: `/v2/orders?${range}`, headers });
          assert.equal(listed.statusCode, 200, listed.body);
          assert.ok(listed.json().total_count > 0, listed.body);
        }
      });
    });
  });

  test("the dashboard opens on kept days: the keeper's days are credited under every rule model before the server starts", async () => {
    await store.withStore(async (db) => {
      const [kept] = await db.query<{ kept_ahead_on: string }>(
        "SELECT kept_ahead_on::text FROM attribution_totals_kept WHERE client_id = $1 AND environment = 'production'",
        [first.client_id],
      );
      assert.equal(kept?.kept_ahead_on, today(), "kept ahead today: the server's keeper has nothing left to do for it");
      const days = await db.query<{ totals: string; days: number }>(
        'SELECT totals, count(*)::int AS days FROM attribution_days WHERE client_id = $1 AND NOT stale GROUP BY totals',
        [first.client_id],
      );
      const keepAheadDays = loadConfig(store.env).keepAheadDays;
      const credited = days.filter((row) => row.days === keepAheadDays);
      assert.ok(credited.length >= RULE_MODEL_IDS.length * 2, `${credited.length} combinations of ${keepAheadDays} days: ${JSON.stringify(days)}`);
    });
  });

  test("orders: up to now in the client's zone, returning customers, discount codes, refunds, no personal data", async () => {
    type Order = { order_id: string; customer_id: string; time_of_purchase: string; discount_codes?: string[]; refunds?: { refund_made_at: string }[] } & Record<string, unknown>;
    const orders = await store.withStore((db) =>
      withApp(db, async (app) => {
        const url = `/v2/orders?start_date=${addDays(today(), -DAYS - 2)}&end_date=${addDays(today(), 1)}`;
        const response = await app.inject({ method: 'GET', url, headers: headersOf(first.client_id, first.api_key) });
        assert.equal(response.statusCode, 200, response.body);
        return response.json().data as Order[];
      }),
    );
    assert.ok(orders.length > 1000, `${orders.length} orders`);
    const instants = orders.map((order) => Date.parse(order.time_of_purchase));
    for (const order of orders) assert.match(order.time_of_purchase, /T\d\d:\d\d:\d\d-0[45]:00$/, 'written in New York time');
    assert.ok(Math.max(...instants) <= now());
    assert.ok(Math.max(...instants) > now() - 36 * 3_600_000, 'the latest order is of today or yesterday');
    assert.ok(Math.min(...instants) >= Date.parse(`${addDays(today(), -DAYS)}T00:00:00Z`));

    const perCustomer = new Map<string, number>();
    for (const order of orders) perCustomer.set(order.customer_id, (perCustomer.get(order.customer_id) ?? 0) + 1);
    const returning = [...perCustomer.values()].filter((count) => count > 1).length;
    assert.ok(returning > perCustomer.size * 0.1, `${returning} of ${perCustomer.size} customers ordered again`);

    const codes = new Set(orders.flatMap((order) => order.discount_codes ?? []));
    assert.ok(codes.has('WELCOME10') && codes.has('LOYALTY15'), [...codes].join());
    const discounted = orders.filter((order) => order.discount_codes).length / orders.length;
    assert.ok(discounted > 0.1 && discounted < 0.4, `${discounted} discounted`);

    const refunded = orders.filter((order) => order.refunds);
    assert.ok(refunded.length > orders.length * 0.02 && refunded.length < orders.length * 0.12, `${refunded.length} refunded`);
    for (const order of refunded) {
      const madeAt = Date.parse(order.refunds![0]!.refund_made_at);
      assert.ok(madeAt > Date.parse(order.time_of_purchase) && madeAt <= now(), order.order_id);
    }
    for (const field of ['customer_email', 'customer_name', 'customer_phone_number', 'customer_shipping_address', 'customer_ip_address']) {
      assert.equal(orders.filter((order) => order[field] !== undefined).length, 0, field);
    }
  });

  test('spend on three platforms with campaigns, ad sets and ads every hour; touchpoints with UTMs and click ids, visits and views; identity links', async () => {
    await store.withStore(async (db) => {
      const id = first.client_id;
      const platforms = await db.query(
        `SELECT platform_name, count(DISTINCT campaign_id)::int AS campaigns, count(DISTINCT adset_id)::int AS adsets, count(DISTINCT ad_id)::int AS ads,
                count(DISTINCT period)::int AS hours, (sum(spend) > 0) AS spent, (sum(clicks) > 0) AS clicked, (sum(impressions) > 0) AS seen
           FROM spend_hourly WHERE client_id = $1 GROUP BY platform_name ORDER BY platform_name`,
        [id],
      );
      const hours = platforms.map((row) => row.hours as number);
      assert.ok(hours.every((n) => n === hours[0] && n > (DAYS - 1) * 24 && n <= DAYS * 24 + 1), String(hours));
      assert.deepEqual(
        platforms.map(({ hours: _hours, ...row }) => row),
        [
          { platform_name: 'google', campaigns: 3, adsets: 6, ads: 12, spent: true, clicked: true, seen: true },
          { platform_name: 'meta', campaigns: 2, adsets: 4, ads: 8, spent: true, clicked: true, seen: true },
          { platform_name: 'tiktok', campaigns: 1, adsets: 2, ads: 4, spent: true, clicked: true, seen: true },
        ],
      );
      const [names] = await db.query(`SELECT count(*)::int AS unnamed FROM spend_hourly WHERE client_id = $1 AND (campaign_name = '' OR adset_name = '' OR ad_name = '')`, [id]);
      assert.equal(names!.unnamed, 0);

      const kinds = await db.query<{ type: string; channel: string }>('SELECT DISTINCT type, channel FROM touchpoints WHERE client_id = $1 ORDER BY 1, 2', [id]);
      assert.deepEqual(
        kinds.map((row) => `${row.type}/${row.channel}`),
        ['view/paid', 'visit/direct', 'visit/email', 'visit/organic_search', 'visit/paid'],
      );
      const [touchpoints] = await db.query(
        `SELECT count(*) FILTER (WHERE click_ids ? 'fbclid')::int AS fbclid, count(*) FILTER (WHERE click_ids ? 'gclid')::int AS gclid,
                count(*) FILTER (WHERE click_ids ? 'ttclid')::int AS ttclid,
                count(*) FILTER (WHERE channel = 'paid' AND type = 'visit' AND (utm_source IS NULL OR utm_medium IS NULL OR utm_term IS NULL OR utm_content IS NULL
                                  OR campaign_id <> utm_campaign OR adset_id <> utm_term OR ad_id <> utm_content OR click_ids = '{}'))::int AS paid_without_utms,
                count(*) FILTER (WHERE customer_id IS NOT NULL)::int AS signed_in,
                count(*) FILTER (WHERE customer_id IS NULL AND visitor_id NOT IN (SELECT visitor_id FROM identities WHERE client_id = $1))::int AS anonymous
           FROM touchpoints WHERE client_id = $1`,
        [id],
      );
      for (const [field, n] of Object.entries(touchpoints!)) assert.ok(field === 'paid_without_utms' ? n === 0 : (n as number) > 0, `${field}: ${n}`);
      // The platforms are the source mapping's, and every ad object touched is one of spend's.
      const strays = await db.query(
        `SELECT platform_name, campaign_id, adset_id, ad_id FROM touchpoints WHERE client_id = $1 AND channel = 'paid'
         EXCEPT SELECT platform_name, campaign_id, adset_id, ad_id FROM spend_hourly WHERE client_id = $1`,
        [id],
      );
      assert.deepEqual(strays, []);

      const [links] = await db.query<{ to_customers: number; through_orders: number }>(
        'SELECT count(customer_id)::int AS to_customers, count(order_id)::int AS through_orders FROM identities WHERE client_id = $1',
        [id],
      );
      assert.ok(links!.to_customers > links!.through_orders && links!.through_orders > 0, JSON.stringify(links));
    });
  });

  test("the dashboard's report of the last 30 days: spend and revenue on every paid campaign, first and last touch apart", async () => {
    type Row = { platform: string; campaign: string; campaign_id: string; spend: number; rev: number };
    const [end, start] = [addDays(today(), -1), addDays(today(), -30)];
    const reports = await store.withStore((db) =>
      withApp(db, async (app) => {
        const byModel: Record<string, Row[]> = {};
        for (const model of ['linear', 'first_touch', 'last_touch']) {
          const url = `/v1/reports/performance?start_date=${start}&end_date=${end}&level=campaign&granularity=PERIOD&metrics=spend,rev,roas&model=${model}`;
          const response = await app.inject({ method: 'GET', url, headers: headersOf(first.client_id, first.read_api_key) });
          assert.equal(response.statusCode, 200, response.body);
          assert.equal(response.json().currency, 'USD');
          byModel[model] = (response.json().rows as Row[]).filter((row) => PAID_PLATFORMS.includes(row.platform));
        }
        return byModel;
      }),
    );
    const linear = reports.linear!;
    assert.equal(linear.length, 6, JSON.stringify(linear));
    for (const row of linear) assert.ok(row.spend > 0 && row.rev > 0, JSON.stringify(row));
    const roas = linear.reduce((sum, row) => sum + row.rev, 0) / linear.reduce((sum, row) => sum + row.spend, 0);
    assert.ok(roas > 1.2 && roas < 5, `paid ROAS ${roas}`);
    const revenueOf = (model: string, name: string) => reports[model]!.find((row) => row.campaign.startsWith(name))?.rev ?? 0;
    assert.ok(revenueOf('first_touch', 'Prospecting') > revenueOf('last_touch', 'Prospecting'), 'prospecting opens paths');
    assert.ok(revenueOf('last_touch', 'Brand search') > revenueOf('first_touch', 'Brand search'), 'brand search closes them');
  });

  test("a second run makes a second client and leaves the first one's rows as they were", async () => {
    const before = await store.withStore((db) => rowCounts(db, first.client_id));
    const second = await demo(store.env);
    assert.notEqual(second.client_id, first.client_id);
    await store.withStore(async (db) => {
      assert.deepEqual(await rowCounts(db, first.client_id), before);
      const clients = createClientRepository(db);
      const names = await Promise.all([first, second].map(async ({ client_id }) => (await clients.find(client_id))!.name));
      assert.notEqual(names[0], names[1]);
      assert.ok((await rowCounts(db, second.client_id)).orders! > 1000);
    });
  });
});

describe('the demo shop', () => {
  const now = new Date('2025-12-10T15:30:00Z');

  test('is the same for the same seed and moment, another for another seed', () => {
    const shop = (seed: number) => {
      const made = generateShop({ seed, now, days: 10 });
      return { ...made, spend: [...made.spend()] };
    };
    assert.deepEqual(shop(7), shop(7));
    assert.notDeepEqual(shop(7).orders, shop(8).orders);
  });

  test('a year: some 12,000 orders of 5,500 customers, a Black Friday peak and a quiet January, spend every hour of 24 ads', () => {
    const shop = generateShop({ seed: 1, now, days: 365 });
    assert.ok(shop.orders.length > 10_000 && shop.orders.length < 14_000, `${shop.orders.length} orders`);
    assert.equal(shop.customers, 5_500);
    const ordersOn = (prefix: string) => shop.orders.filter((order) => String(order.time_of_purchase).startsWith(prefix)).length;
    // Black Friday 2025 is 28 November; a year earlier, the 29th (before the period).
    assert.ok(ordersOn('2025-11-28') > 2.5 * ordersOn('2025-11-14'), `${ordersOn('2025-11-28')} on Black Friday`);
    assert.ok(ordersOn('2025-01') < 0.85 * ordersOn('2025-03'), 'January is quieter than March');
    assert.equal(shop.spendRecords, 24 * ((Date.parse('2025-12-10T15:00:00Z') - Date.parse('2024-12-11T05:00:00Z')) / 3_600_000 + 1));
    assert.ok(shop.touchpoints.length > 40_000, `${shop.touchpoints.length} touchpoints`);
  });
});
