import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { DAY_MS } from '../src/calendar.js';
import { creditsSql } from '../src/attribution/credits-sql.js';
import {
  attribute,
  creditText,
  CREDIT_PARTS,
  MODEL_IDS,
  UNATTRIBUTED,
  UNLIMITED,
  WINDOWS,
  windowDaysSql,
  type AttributionWindow,
  type Credit,
  type ModelId,
  type Touchpoint,
} from '../src/attribution/models.js';
import { createTestDatabase } from './helpers.js';

/*
 * The attribution models' rules (src/attribution/models.ts) against credits computed by hand,
 * their invariants over generated paths, and their SQL (src/attribution/credits-sql.ts) against
 * them on both stores.
 */

const HOUR_MS = 3_600_000;
/** The windows of a number of days. */
const DAY_WINDOWS = WINDOWS.filter((window) => window !== UNLIMITED);
const PURCHASE = Date.parse('2024-03-20T12:00:00.000Z');

const touchpoint = (type: Touchpoint['type']) => (touchpoint_id: string, msBefore: number, channel = 'paid'): Touchpoint => ({
  touchpoint_id,
  occurred_at: PURCHASE - msBefore,
  type,
  channel,
});
const visit = touchpoint('visit');
const view = touchpoint('view');

/** The path's touchpoint ids with their credits as decimals, or unattributed. */
function credits(model: ModelId, candidates: Touchpoint[], window: AttributionWindow = 30) {
  const result = attribute(PURCHASE, model, window, candidates);
  return result === UNATTRIBUTED ? result : result.map(({ touchpoint, parts }) => [touchpoint.touchpoint_id, creditText(parts)]);
}

describe('each model, computed by hand', () => {
  // Given out of order: the path is a (10 days before, paid), b (3 days, direct), c (1 hour, direct).
  const abc = [visit('c', HOUR_MS, 'direct'), visit('a', 10 * DAY_MS, 'paid'), visit('b', 3 * DAY_MS, 'direct')];

  test('first_touch and last_touch give everything to one end of the path', () => {
    assert.deepEqual(credits('first_touch', abc), [['a', '1.000000000'], ['b', '0.000000000'], ['c', '0.000000000']]);
    assert.deepEqual(credits('last_touch', abc), [['a', '0.000000000'], ['b', '0.000000000'], ['c', '1.000000000']]);
  });

  test('last_touch_non_direct skips direct touchpoints, and takes the last one when all are direct', () => {
    assert.deepEqual(credits('last_touch_non_direct', abc), [['a', '1.000000000'], ['b', '0.000000000'], ['c', '0.000000000']]);
    const allDirect = [visit('a', 2 * DAY_MS, 'direct'), visit('b', DAY_MS, 'direct')];
    assert.deepEqual(credits('last_touch_non_direct', allDirect), [['a', '0.000000000'], ['b', '1.000000000']]);
    const email = [visit('a', 2 * DAY_MS, 'email'), visit('b', DAY_MS, 'direct')];
    assert.deepEqual(credits('last_touch_non_direct', email), [['a', '1.000000000'], ['b', '0.000000000']]);
  });

  test('linear: thirds, the part left over by rounding going to the last touchpoint', () => {
    assert.deepEqual(credits('linear', abc), [['a', '0.333333333'], ['b', '0.333333333'], ['c', '0.333333334']]);
    const seven = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id, i) => visit(id, (7 - i) * HOUR_MS));
    // 1/7 = 0.142857142857…: six parts left over, for all but the first.
    assert.deepEqual(credits('linear', seven), [
      ['a', '0.142857142'], ['b', '0.142857143'], ['c', '0.142857143'], ['d', '0.142857143'],
      ['e', '0.142857143'], ['f', '0.142857143'], ['g', '0.142857143'],
    ]);
  });

  test('position_based with 1, 2, 3, 4 and 5 touchpoints', () => {
    const path = (n: number) => ['a', 'b', 'c', 'd', 'e'].slice(0, n).map((id, i) => visit(id, (n - i) * HOUR_MS));
    assert.deepEqual(credits('position_based', path(1)), [['a', '1.000000000']]);
    assert.deepEqual(credits('position_based', path(2)), [['a', '0.500000000'], ['b', '0.500000000']]);
    assert.deepEqual(credits('position_based', path(3)), [['a', '0.400000000'], ['b', '0.200000000'], ['c', '0.400000000']]);
    assert.deepEqual(credits('position_based', path(4)), [['a', '0.400000000'], ['b', '0.100000000'], ['c', '0.100000000'], ['d', '0.400000000']]);
    // 0.2 / 3 = 0.0666…: the two parts left over go to the later two of the middle.
    assert.deepEqual(credits('position_based', path(5)), [
      ['a', '0.400000000'], ['b', '0.066666666'], ['c', '0.066666667'], ['d', '0.066666667'], ['e', '0.400000000'],
    ]);
  });

  test('time_decay: a week before weighs half, two weeks a quarter', () => {
    const path = [visit('a', 14 * DAY_MS), visit('b', 7 * DAY_MS), visit('c', 0)];
    // Weights 1/4, 1/2, 1 of 7/4: 1/7, 2/7, 4/7.
    assert.deepEqual(credits('time_decay', path), [['a', '0.142857143'], ['b', '0.285714286'], ['c', '0.571428571']]);
  });

  test('time_decay: half a week before weighs 1/√2', () => {
    const path = [visit('a', 3.5 * DAY_MS), visit('b', 0)];
    // 1/√2 ÷ (1 + 1/√2) = √2 − 1 = 0.41421356237…, and 2 − √2 = 0.58578643762….
    assert.deepEqual(credits('time_decay', path), [['a', '0.414213562'], ['b', '0.585786438']]);
  });

  test('clicks_only shares among clicks, and among all when none is a click', () => {
    const channels = ['paid', 'direct', 'referral', 'organic_search', 'sms', 'organic_social', 'other', 'email'];
    const path = channels.map((channel, i) => visit(channel, (8 - i) * HOUR_MS, channel));
    assert.deepEqual(credits('clicks_only', path), [
      ['paid', '0.250000000'], ['direct', '0.000000000'], ['referral', '0.250000000'], ['organic_search', '0.000000000'],
      ['sms', '0.000000000'], ['organic_social', '0.250000000'], ['other', '0.250000000'], ['email', '0.000000000'],
    ]);
    const noClick = [visit('a', 2 * HOUR_MS, 'direct'), visit('b', HOUR_MS, 'email')];
    assert.deepEqual(credits('clicks_only', noClick), [['a', '0.500000000'], ['b', '0.500000000']]);
  });

  test('clicks_and_views adds the views of the last 24 hours to the path', () => {
    const candidates = [visit('a', 3 * DAY_MS), view('b', 25 * HOUR_MS), view('c', 23 * HOUR_MS), visit('d', HOUR_MS, 'direct')];
    assert.deepEqual(credits('clicks_and_views', candidates), [['a', '0.500000000'], ['c', '0.500000000'], ['d', '0.000000000']]);
    assert.deepEqual(credits('clicks_only', candidates), [['a', '1.000000000'], ['d', '0.000000000']]);
  });
});

describe('paths', () => {
  test('touchpoints at the same instant are in touchpoint_id order, compared byte by byte', () => {
    // UTF-8 puts 'Z' (5A) before 'a' (61), 'a' before 'é' (C3 A9), '～' (EF BD 9E) before '😀' (F0 9F 98 80),
    // where JavaScript's UTF-16 order puts '😀' (D83D …) first.
    const tied = ['😀', 'a', '～', 'é', 'Z'].map((id) => visit(id, HOUR_MS));
    assert.deepEqual(credits('first_touch', tied)[0], ['Z', '1.000000000']);
    assert.deepEqual(credits('last_touch', tied)[4], ['😀', '1.000000000']);
    assert.deepEqual(
      (credits('linear', tied) as string[][]).map(([id]) => id),
      ['Z', 'a', 'é', '～', '😀'],
    );
  });

  test('the window includes both of its ends: exactly its days of 24 hours before, and the purchase', () => {
    for (const window of DAY_WINDOWS) {
      const candidates = [
        visit('early', window * DAY_MS + 1),
        visit('start', window * DAY_MS),
        visit('end', 0),
        visit('late', -1),
      ];
      assert.deepEqual(credits('linear', candidates, window), [['start', '0.500000000'], ['end', '0.500000000']], `window ${window}`);
    }
  });

  test('the unlimited window takes every visit up to the purchase, and views still only from 24 hours before', () => {
    const candidates = [visit('long ago', 400 * DAY_MS), visit('last week', 7 * DAY_MS), visit('late', -1), view('old view', DAY_MS + 1), view('view', HOUR_MS)];
    assert.deepEqual(credits('linear', candidates, UNLIMITED), [['long ago', '0.500000000'], ['last week', '0.500000000']]);
    assert.deepEqual(credits('linear', candidates, 90), [['last week', '1.000000000']]);
    assert.deepEqual(credits('clicks_and_views', candidates, UNLIMITED), [
      ['long ago', '0.333333333'],
      ['last week', '0.333333333'],
      ['view', '0.333333334'],
    ]);
  });

  test('time_decay weighs by age in the unlimited window: at least a billionth, so that ancient touchpoints alone share equally', () => {
    // 400 days is 57.1 half-lives: 2^-57.1 of a billion rounds to 0, so it weighs the least weight, 1; a week weighs 500,000,000.
    assert.deepEqual(credits('time_decay', [visit('long ago', 400 * DAY_MS), visit('last week', 7 * DAY_MS)], UNLIMITED), [
      ['long ago', '0.000000002'],
      ['last week', '0.999999998'],
    ]);
    assert.deepEqual(credits('time_decay', [visit('long ago', 400 * DAY_MS), visit('longer ago', 30 * 365 * DAY_MS)], UNLIMITED), [
      ['longer ago', '0.500000000'],
      ['long ago', '0.500000000'],
    ]);
  });

  test('views count only in clicks_and_views, and only from 24 hours before the purchase', () => {
    const candidates = [view('early', DAY_MS + 1), view('start', DAY_MS), view('end', 0), view('late', -1)];
    assert.deepEqual(credits('clicks_and_views', candidates, 1), [['start', '0.500000000'], ['end', '0.500000000']]);
    assert.deepEqual(credits('clicks_and_views', candidates, 90), [['start', '0.500000000'], ['end', '0.500000000']]);
    for (const model of MODEL_IDS.filter((id) => id !== 'clicks_and_views')) {
      assert.equal(credits(model, candidates), UNATTRIBUTED, model);
      assert.deepEqual(credits(model, [...candidates, visit('visit', 2 * HOUR_MS)]), [['visit', '1.000000000']], model);
    }
  });

  test('a path of views only shares among its views, clicks first', () => {
    const views = [view('a', 3 * HOUR_MS, 'paid'), view('b', 2 * HOUR_MS, 'direct'), view('c', HOUR_MS, 'paid')];
    assert.deepEqual(credits('clicks_and_views', views), [['a', '0.500000000'], ['b', '0.000000000'], ['c', '0.500000000']]);
  });

  test('a data-driven model shares by the learnt weights of its channels, equally within a channel', () => {
    // paid weighs 3, direct 1: paid's 3/4 is shared by its two touchpoints, 0.375 each.
    const path = [visit('a', 3 * DAY_MS, 'paid'), visit('b', 2 * DAY_MS, 'direct'), visit('c', DAY_MS, 'paid')];
    const learnt = { paid: 3, direct: 1 };
    for (const model of ['markov', 'shapley'] as const) {
      const result = attribute(PURCHASE, model, 30, path, learnt);
      assert.notEqual(result, UNATTRIBUTED);
      assert.deepEqual((result as Credit<Touchpoint>[]).map(({ parts }) => creditText(parts)), ['0.375000000', '0.250000000', '0.375000000']);
    }
    // paid's 2/3 in thirds: 2/9 = 222222222.2 parts each; email's 1/3 = 333333333.3 parts. The part
    // left over goes to the largest remainder, email's.
    const ninths = [visit('a', 3 * DAY_MS, 'paid'), visit('b', 2 * DAY_MS, 'paid'), visit('c', DAY_MS, 'paid'), visit('d', HOUR_MS, 'email')];
    const shares = attribute(PURCHASE, 'markov', 30, ninths, { paid: 2, email: 1 }) as Credit<Touchpoint>[];
    assert.deepEqual(shares.map(({ parts }) => creditText(parts)), ['0.222222222', '0.222222222', '0.222222222', '0.333333334']);
    // No channel of the path learnt: equal shares, as linear.
    assert.deepEqual(attribute(PURCHASE, 'shapley', 30, path, { email: 5 }), attribute(PURCHASE, 'linear', 30, path));
  });

  test('an empty path is unattributed', () => {
    const outside = [visit('before', 31 * DAY_MS), visit('after', -HOUR_MS), view('old view', 2 * DAY_MS)];
    for (const model of MODEL_IDS) {
      assert.equal(credits(model, []), UNATTRIBUTED, model);
      assert.equal(credits(model, outside), UNATTRIBUTED, model);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Generated paths

const CHANNELS = ['paid', 'direct', 'organic_search', 'email', 'sms', 'referral', 'organic_social', 'other'];
/** Times before the purchase around the edges of windows and of the views' 24 hours, so that ends and ties come often. */
const EDGES = [0, -1, 1, ...DAY_WINDOWS.flatMap((days) => [days * DAY_MS - 1, days * DAY_MS, days * DAY_MS + 1])];
/** Ages only the unlimited window takes: past where time_decay's weight rounds to 0, and past where PostgreSQL's power() underflows. */
const ANCIENT = [400 * DAY_MS, 30 * 365 * DAY_MS];
const candidatesArbitrary = (purchasedAt: number) =>
  fc.uniqueArray(
    fc.record({
      touchpoint_id: fc.oneof(fc.constantFrom('a', 'b', 'B', 'é', '～', '😀'), fc.string({ minLength: 1, maxLength: 3 })),
      occurred_at: fc
        .oneof(fc.constantFrom(...EDGES), fc.integer({ min: -2 * DAY_MS, max: 92 * DAY_MS }), fc.constantFrom(...ANCIENT))
        .map((before) => purchasedAt - before),
      type: fc.constantFrom('visit' as const, 'view' as const),
      channel: fc.constantFrom(...CHANNELS),
    }),
    { selector: (candidate) => candidate.touchpoint_id, maxLength: 12 },
  );
/** Purchases in 2024, some right after a change of the clocks in New York. */
const purchaseArbitrary = fc.oneof(
  fc.integer({ min: Date.parse('2024-01-01T00:00:00Z'), max: Date.parse('2025-01-01T00:00:00Z') }),
  fc.constantFrom(Date.parse('2024-03-10T07:00:00Z'), Date.parse('2024-11-03T06:00:00Z')).chain((change) =>
    fc.integer({ min: change, max: change + 3 * DAY_MS }),
  ),
);
const orderArbitrary = purchaseArbitrary.chain((purchasedAt) => candidatesArbitrary(purchasedAt).map((candidates) => ({ purchasedAt, candidates })));

describe('properties of generated paths', () => {
  test('every model and window credits an order exactly 1, each credit between 0 and 1, over its path in order', () => {
    // The data-driven models by any weights of the channels: none, some, every one.
    const learntArbitrary = fc.dictionary(fc.constantFrom(...CHANNELS), fc.oneof(fc.constant(0), fc.integer({ min: 1, max: CREDIT_PARTS })));
    fc.assert(
      fc.property(orderArbitrary, learntArbitrary, ({ purchasedAt, candidates }, learnt) => {
        for (const model of MODEL_IDS) {
          for (const window of WINDOWS) {
            const result = attribute(purchasedAt, model, window, candidates, learnt);
            const from = (candidate: Touchpoint) =>
              candidate.type === 'visit' ? (window === UNLIMITED ? -Infinity : purchasedAt - window * DAY_MS) : model === 'clicks_and_views' ? purchasedAt - DAY_MS : Infinity;
            const eligible = candidates.filter((candidate) => candidate.occurred_at >= from(candidate) && candidate.occurred_at <= purchasedAt);
            if (result === UNATTRIBUTED) {
              assert.equal(eligible.length, 0);
              continue;
            }
            assert.equal(result.length, eligible.length);
            assert.equal(result.reduce((sum, { parts }) => sum + parts, 0), CREDIT_PARTS);
            for (const { parts } of result) assert.ok(Number.isInteger(parts) && parts >= 0 && parts <= CREDIT_PARTS);
            result.slice(1).forEach(({ touchpoint }, i) => assert.ok(touchpoint.occurred_at >= result[i]!.touchpoint.occurred_at));
            if (model === 'linear') {
              const share = Math.floor(CREDIT_PARTS / result.length);
              for (const { parts } of result) assert.ok(parts === share || parts === share + 1);
            }
            // A channel that learnt no weight gets nothing, unless no channel of the path learnt any.
            if ((model === 'markov' || model === 'shapley') && result.some(({ touchpoint }) => learnt[touchpoint.channel])) {
              for (const { touchpoint, parts } of result) if (!learnt[touchpoint.channel]) assert.equal(parts, 0, touchpoint.channel);
            }
            // With one channel, they are linear.
            if ((model === 'markov' || model === 'shapley') && new Set(result.map(({ touchpoint }) => touchpoint.channel)).size === 1) {
              assert.deepEqual(result, attribute(purchasedAt, 'linear', window, candidates));
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the models in SQL', async () => {
  const { db, drop } = await createTestDatabase({ migrated: false });
  after(drop);

  interface Order {
    purchasedAt: number;
    candidates: Touchpoint[];
  }

  /**
   * Every order credited by every model and window in one query, as `model/order/window` →
   * [touchpoint_id, parts][] in path order, or UNATTRIBUTED for an empty path among candidates.
   */
  async function sqlCredits(orders: Order[], timeZone: string, learnt: Record<string, number>): Promise<Map<string, [string, number][] | typeof UNATTRIBUTED>> {
    const rows = orders.flatMap(({ purchasedAt, candidates }, order) =>
      candidates.map((candidate) => ({
        order_number: order,
        time_of_purchase: new Date(purchasedAt).toISOString(),
        ...candidate,
        occurred_at: new Date(candidate.occurred_at).toISOString(),
      })),
    );
    const credited = await db.transaction(async (tx) => {
      // A zone with clocks that change: a window is days of 24 hours whatever the session's zone.
      await tx.query(`SET LOCAL TIME ZONE '${timeZone}'`);
      return tx.query<{ path_id: string; touchpoint_id: string; credit_parts: number; unattributed: boolean }>(
        `WITH candidates AS (
           SELECT c.order_number || '/' || coalesce(w.window_days::text, '${UNLIMITED}') AS path_id, w.window_days,
                  c.time_of_purchase, c.touchpoint_id, c.occurred_at, c.type, c.channel, ''::text AS platform_name, ''::text AS campaign_id
             FROM jsonb_to_recordset($1::jsonb) AS c(order_number int, time_of_purchase timestamptz, touchpoint_id text, occurred_at timestamptz, type text, channel text)
            CROSS JOIN unnest($2::int[]) AS w(window_days)
         ),
         learnt_weights AS (
           SELECT m.model, w.window_days, s.state, s.weight
             FROM unnest($3::text[], $4::bigint[]) AS s(state, weight)
            CROSS JOIN unnest($2::int[]) AS w(window_days) CROSS JOIN unnest(ARRAY['markov', 'shapley']) AS m(model)
         )
         SELECT model || '/' || path_id AS path_id, touchpoint_id, credit_parts::int AS credit_parts, unattributed
           FROM (${creditsSql('candidates', MODEL_IDS, { relation: 'learnt_weights', grouping: 'platform' })}) AS credited
          ORDER BY 1, path_position`,
        [JSON.stringify(rows), WINDOWS.map(windowDaysSql), Object.keys(learnt), Object.values(learnt)],
      );
    });
    const paths = new Map<string, [string, number][] | typeof UNATTRIBUTED>();
    for (const { path_id, touchpoint_id, credit_parts, unattributed } of credited) {
      const path = paths.get(path_id) ?? [];
      assert.ok(path !== UNATTRIBUTED && (path.length === 0 || !unattributed), `${path_id}: an unattributed path has one row`);
      paths.set(path_id, unattributed ? UNATTRIBUTED : [...path, [touchpoint_id, credit_parts]]);
    }
    return paths;
  }

  function tsCredits(orders: Order[], learnt: Record<string, number>): Map<string, [string, number][] | typeof UNATTRIBUTED> {
    const paths = new Map<string, [string, number][] | typeof UNATTRIBUTED>();
    orders.forEach(({ purchasedAt, candidates }, order) => {
      // An order without candidates has no row in them to be credited from.
      if (candidates.length === 0) return;
      for (const model of MODEL_IDS) {
        for (const window of WINDOWS) {
          const result = attribute(purchasedAt, model, window, candidates, learnt);
          paths.set(`${model}/${order}/${window}`, result === UNATTRIBUTED ? result : result.map(({ touchpoint, parts }) => [touchpoint.touchpoint_id, parts]));
        }
      }
    });
    return paths;
  }

  test('credit generated paths as the TypeScript rules do, for every model and window', async () => {
    // Learnt weights of some channels: none, equal ones, the largest, any.
    const learntArbitrary = fc.dictionary(fc.constantFrom(...CHANNELS), fc.oneof(fc.constantFrom(0, 1, CREDIT_PARTS), fc.integer({ min: 0, max: CREDIT_PARTS })));
    await fc.assert(
      fc.asyncProperty(fc.array(orderArbitrary, { minLength: 1, maxLength: 6 }), fc.constantFrom('UTC', 'America/New_York'), learntArbitrary, async (orders, zone, learnt) => {
        assert.deepEqual(Object.fromEntries(await sqlCredits(orders, zone, learnt)), Object.fromEntries(tsCredits(orders, learnt)));
      }),
      { numRuns: 40 },
    );
  });

  test('a 7-day window across the spring change of the clocks is 168 hours', async () => {
    const purchasedAt = Date.parse('2024-03-12T12:00:00Z');
    const at = (touchpoint_id: string, occurred_at: number): Touchpoint => ({ touchpoint_id, occurred_at, type: 'visit', channel: 'paid' });
    const candidates = [at('start', purchasedAt - 168 * HOUR_MS), at('early', purchasedAt - 168 * HOUR_MS - 1)];
    const paths = await sqlCredits([{ purchasedAt, candidates }], 'America/New_York', {});
    assert.deepEqual(paths.get('first_touch/0/7'), [['start', CREDIT_PARTS]]);
  });
});
