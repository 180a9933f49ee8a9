import { DAY_MS } from '../calendar.js';
import { UNLIMITED, WINDOWS, windowDaysSql, type AttributionWindow } from './models.js';

/**
 * Which touchpoints may be in the paths of a set of orders: the relations `creditsSql` credits.
 * One statement serves several windows at once, so that an export of many models and windows
 * reads each order's touchpoints once.
 *
 * An order's touchpoints are those of its customer (migration 0010's header): sent with its
 * customer_id, or sent without one by a visitor linked to it, directly or through one of its
 * orders. The time is bounded by the largest window, and not at all when it is UNLIMITED. There
 * are two ways to find them, giving the same candidates (test/attribution-paths.test.ts compares
 * them):
 *
 * - for one order (its explanation) or a few, from the order by indexes (0010's and 0011's): touchpoints
 *   by customer and time; the customer's visitors by direct link, and by order link through the
 *   customer's orders; their touchpoints by visitor and time;
 * - for the orders of a period (exports), from the touchpoints of the period: each is read once,
 *   in time order, with the customer its visitor is linked to, and joined to the orders of that
 *   customer by hashing. Finding each order's touchpoints by index, as for one order, costs a
 *   random read per touchpoint: 17 s for the 82,000 orders of 30 days in bench/attribution.ts,
 *   against 3 s for reading the 820,000 touchpoints of those 60 days and joining them.
 *
 * The paths of the orders of whole local days may also be read where they were kept (migration
 * 0020, src/attribution/daily-totals.ts), found the second way at the longest window: for windows up
 * to it, the same candidates. The orders of a period may also be found the first way, each from its
 * customer by index, when they are few (today's).
 */

/** The longest window but UNLIMITED: kept paths hold each order's touchpoints within it. */
export const LONGEST_KEPT_WINDOW = Math.max(...WINDOWS.flatMap((window) => (window === UNLIMITED ? [] : [window]))) as Exclude<AttributionWindow, typeof UNLIMITED>;

export interface PathsSpec {
  /** SQL of the tenant's client_id and environment (placeholders such as `$1::uuid`). */
  clientId: string;
  environment: string;
  /**
   * The orders whose paths are wanted, as SQL: one by its id, a few by theirs (a text[]), those
   * purchased in [from, before) (`byIndex`: few of them, each found from its customer), or those
   * of the local days [keptFrom, keptBefore) (dates), read from their kept paths.
   */
  orders: { orderId: string } | { orderIds: string } | Purchased | { keptFrom: string; keptBefore: string };
  /** The windows of the paths: each order has a path per window. */
  windows: readonly AttributionWindow[];
  /**
   * Whether `first_order` is worked out (a probe of the customer's orders for each order), or
   * false on every path because nothing read will use it. Kept paths always have it. Default true.
   */
  firstOrders?: boolean;
}

/** Orders purchased in [purchasedFrom, purchasedBefore), SQL instants. */
interface Purchased {
  purchasedFrom: string;
  purchasedBefore: string;
  byIndex?: boolean;
}

const TOUCHPOINT_COLUMNS = ['touchpoint_id', 'occurred_at', 'type', 'channel', 'platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id'];
const touchpointColumns = (alias: string) => TOUCHPOINT_COLUMNS.map((column) => `${alias}.${column}`).join(', ');

/**
 * The items of a WITH clause defining two relations:
 *
 *   paths       one row per order and window: path_id (text), window_days (NULL for UNLIMITED), order_id,
 *               customer_id, time_of_purchase, purchase_total, currency, and first_order
 *               (the customer's first order ever, ties broken by time_of_purchase then
 *               order_id; an order without a customer counts as one)
 *   candidates  the columns of paths, and those of a touchpoint of the order's customer within
 *               the largest window: touchpoint_id, occurred_at, type, channel, platform_name,
 *               platform_account_id, campaign_id, adset_id, ad_id; a path with no such
 *               touchpoint has one row, whose touchpoint columns are null
 *
 * so that `WITH ${pathsSql(spec)} SELECT … FROM (${creditsSql('candidates', models)}) …` credits
 * them.
 */
export function pathsSql({ clientId, environment, orders, windows, firstOrders = true }: PathsSpec): string {
  if (windows.length === 0 || windows.some((window) => !WINDOWS.includes(window))) throw new Error(`Bad windows: ${windows.join(', ')}`);
  const tenantOf = (alias: string) => `${alias}.client_id = ${clientId} AND ${alias}.environment = ${environment}`;
  const lookback = windows.includes(UNLIMITED) ? undefined : `${Math.max(...(windows as number[]))} * interval '${DAY_MS} milliseconds'`;
  const notBefore: NotBefore = (column, instant) => (lookback ? [`${column} >= ${instant} - ${lookback}`] : []);
  const eachWindow = (row: string) =>
    `SELECT ${row}.order_id || '/' || coalesce(w.window_days::text, '${UNLIMITED}') AS path_id, w.window_days, ${row}.*
       FROM ${row === 'p' ? 'purchases' : 'purchase_touchpoints'} ${row}
      CROSS JOIN unnest(ARRAY[${windows.map((window) => windowDaysSql(window) ?? 'NULL').join(', ')}]::int[]) AS w (window_days)`;
  if ('keptFrom' in orders) {
    if (!lookback || Math.max(...(windows as number[])) > LONGEST_KEPT_WINDOW) throw new Error(`Kept paths hold no window beyond ${LONGEST_KEPT_WINDOW} days`);
    return keptPaths(tenantOf, orders, Math.max(...(windows as number[])), notBefore, eachWindow);
  }
  const within = (touchpoint: string) => [...notBefore(`${touchpoint}.occurred_at`, 'p.time_of_purchase'), `${touchpoint}.occurred_at <= p.time_of_purchase`].join(' AND ');
  const selected =
    'orderId' in orders ? `o.order_id = ${orders.orderId}`
    : 'orderIds' in orders ? `o.order_id = ANY (${orders.orderIds})`
    : `o.time_of_purchase >= ${orders.purchasedFrom} AND o.time_of_purchase < ${orders.purchasedBefore}`;
  const purchaseTouchpoints = !('purchasedFrom' in orders) || orders.byIndex ? touchpointsByIndex(tenantOf, within) : touchpointsOfPeriod(tenantOf, within, orders, notBefore);
  return `
    purchases AS (
      SELECT o.order_id, o.customer_id, o.time_of_purchase, o.purchase_total, o.currency,
             ${firstOrders ? `NOT EXISTS (SELECT FROM orders f
                          WHERE ${tenantOf('f')} AND f.customer_id = o.customer_id
                            AND (f.time_of_purchase, f.order_id) < (o.time_of_purchase, o.order_id))` : 'false'} AS first_order
        FROM orders o
       WHERE ${tenantOf('o')} AND ${selected}
    ),
    paths AS (${eachWindow('p')}),
    purchase_touchpoints AS (${purchaseTouchpoints}),
    candidates AS (${eachWindow('c')})`;
}

type TenantOf = (alias: string) => string;

/**
 * How many days before its purchase a touchpoint came, rounded up: a touchpoint is within a window
 * of n days when it is at most n. Kept paths hold it (`reach_days`, migration 0023; 0 on an
 * order's own row), in their key, so that those within a window are read alone.
 */
const reachDays = (touchpointAt: string, purchasedAt: string) => `ceil(extract(epoch FROM ${purchasedAt} - ${touchpointAt}) / ${DAY_MS / 1000})::int`;

/**
 * The relations of pathsSql from the kept paths of the local days [keptFrom, keptBefore), of the
 * touchpoints within `windowDays`: an order's row (touchpoint_id '', its touchpoint columns null)
 * stands for the path that has no touchpoint within the windows; beside touchpoints it is in no
 * path, so creditsSql passes it over. The customer is not kept: `paths` has it null.
 */
function keptPaths(
  tenantOf: TenantOf,
  { keptFrom, keptBefore }: { keptFrom: string; keptBefore: string },
  windowDays: number,
  notBefore: NotBefore,
  eachWindow: (row: string) => string,
): string {
  const ofDays = `${tenantOf('k')} AND k.day >= ${keptFrom} AND k.day < ${keptBefore}`;
  const orderColumns = 'k.order_id, NULL::text AS customer_id, k.time_of_purchase, k.purchase_total, k.currency, k.first_order';
  // `purchases` reads the table again rather than `purchase_touchpoints`, which, named twice, would be
  // materialized (0.2 s of a month's 1.2 s at the benchmark's scale).
  return `
    purchase_touchpoints AS (
      SELECT ${orderColumns}, nullif(k.touchpoint_id, '') AS touchpoint_id, ${TOUCHPOINT_COLUMNS.slice(1).map((column) => `k.${column}`).join(', ')}
        FROM attribution_paths k
       WHERE ${ofDays} AND k.reach_days <= ${windowDays} AND (k.touchpoint_id = '' OR ${notBefore('k.occurred_at', 'k.time_of_purchase').join(' AND ')})
    ),
    purchases AS (SELECT ${orderColumns} FROM attribution_paths k WHERE ${ofDays} AND k.reach_days = 0 AND k.touchpoint_id = ''),
    paths AS (${eachWindow('p')}),
    candidates AS (${eachWindow('c')})`;
}
/** The columns of a kept path's row (attribution_paths, after its key): the order's, then the touchpoint's. */
export const KEPT_PATH_COLUMNS = ['order_id', 'time_of_purchase', 'purchase_total', 'currency', 'first_order', ...TOUCHPOINT_COLUMNS];

/**
 * The rows of kept paths of the orders of `purchases`, after `WITH ${pathsSql(…)}` of a period at
 * LONGEST_KEPT_WINDOW: `day` (`dayOf` their purchase), `reach_days` and KEPT_PATH_COLUMNS, the
 * order's row (its touchpoint_id '', the touchpoint's columns null) and one per touchpoint.
 * keptPaths reads them.
 */
export function pathsToKeepSql(dayOf: (instant: string) => string): string {
  const orderColumns = KEPT_PATH_COLUMNS.filter((column) => !TOUCHPOINT_COLUMNS.includes(column)).join(', ');
  return `
    SELECT ${dayOf('time_of_purchase')} AS day, ${reachDays('occurred_at', 'time_of_purchase')} AS reach_days, ${KEPT_PATH_COLUMNS.join(', ')}
      FROM purchase_touchpoints WHERE touchpoint_id IS NOT NULL
    UNION ALL
    SELECT ${dayOf('time_of_purchase')}, 0, ${orderColumns}, '', ${TOUCHPOINT_COLUMNS.slice(1).map(() => 'NULL').join(', ')} FROM purchases`;
}

/** The conditions that `column` is at most the largest window before `instant`: none for UNLIMITED. */
type NotBefore = (column: string, instant: string) => string[];

/**
 * The orders of `purchases`, each with its touchpoints (none: one row), found from it by index: a
 * few random reads per order and touchpoint, for one order or a few thousand.
 */
function touchpointsByIndex(tenantOf: TenantOf, within: (touchpoint: string) => string): string {
  return `
      SELECT p.*, ${touchpointColumns('t')}
        FROM purchases p
        LEFT JOIN LATERAL (
          SELECT ${touchpointColumns('t')}
            FROM touchpoints t
           WHERE ${tenantOf('t')} AND t.customer_id IS NOT NULL AND t.customer_id = p.customer_id AND ${within('t')}
          UNION ALL
          SELECT ${touchpointColumns('t')}
            FROM (SELECT i.visitor_id FROM identities i
                   WHERE ${tenantOf('i')} AND i.customer_id IS NOT NULL AND i.customer_id = p.customer_id
                  UNION ALL
                  SELECT i.visitor_id FROM orders l
                    JOIN identities i ON ${tenantOf('i')} AND i.order_id IS NOT NULL AND i.order_id = l.order_id
                   WHERE ${tenantOf('l')} AND l.customer_id IS NOT NULL AND l.customer_id = p.customer_id) AS v
            JOIN touchpoints t ON ${tenantOf('t')} AND t.visitor_id IS NOT NULL AND t.visitor_id = v.visitor_id
                              AND t.customer_id IS NULL AND ${within('t')}
        ) AS t ON true`;
}

/**
 * The orders of `purchases`, purchased in [from, before), each with its touchpoints (none: one
 * row): every touchpoint from the largest window before `from` (from the first, for UNLIMITED)
 * up to `before`, with its customer, joined to the purchases of that customer. The touchpoints
 * with their customers are materialized, found once: without table statistics (right after a
 * load, and always on the embedded store) the planner joined them to the purchases in a nested
 * loop that found every touchpoint's customer again for each purchase, cubic in one customer's
 * orders (84 s for 1,000 orders and 1,000 touchpoints, against 3 s; test/one-customer.test.ts).
 */
function touchpointsOfPeriod(tenantOf: TenantOf, within: (touchpoint: string) => string, period: { purchasedFrom: string; purchasedBefore: string }, notBefore: NotBefore): string {
  return `
      WITH period_touchpoints AS MATERIALIZED (
        ${touchpointsWithCustomersSql(tenantOf, [...notBefore('t.occurred_at', period.purchasedFrom), `t.occurred_at < ${period.purchasedBefore}`])}
      )
      SELECT p.*, ${touchpointColumns('t')}
        FROM purchases p
        LEFT JOIN period_touchpoints t ON t.path_customer_id = p.customer_id AND ${within('t')}`;
}

/**
 * The client's touchpoints `t` meeting `conditions`, each with its visitor_id and the customer
 * whose paths it is in (path_customer_id): its own, else its visitor's, linked directly or
 * through an order; null for none.
 */
function touchpointsWithCustomersSql(tenantOf: TenantOf, conditions: string[]): string {
  return `SELECT coalesce(t.customer_id, i.customer_id, l.customer_id) AS path_customer_id, t.visitor_id, ${touchpointColumns('t')}
          FROM touchpoints t
          LEFT JOIN identities i ON t.customer_id IS NULL AND ${tenantOf('i')} AND i.visitor_id = t.visitor_id
          LEFT JOIN orders l ON ${tenantOf('l')} AND l.order_id = i.order_id
         WHERE ${[tenantOf('t'), ...conditions].join(' AND ')}`;
}

/**
 * The items of a WITH clause defining `not_converting`: the visits of [visitedFrom, visitedBefore)
 * that are in no order's path under `window` (their customer has no order at or within the window
 * after them, or they have no customer), with path_customer_id, visitor_id and the touchpoint
 * columns. What the data-driven models learn from beside the orders' paths (learning/training.ts).
 * Those without a customer apart from the others, so that the others can be an anti-join (hashed
 * when there are many) rather than a probe of the orders' index for each visit.
 */
export function notConvertingVisitsSql({ clientId, environment, visitedFrom, visitedBefore, window }: {
  clientId: string;
  environment: string;
  visitedFrom: string;
  visitedBefore: string;
  window: AttributionWindow;
}): string {
  const tenantOf = (alias: string) => `${alias}.client_id = ${clientId} AND ${alias}.environment = ${environment}`;
  const withinWindow = window === UNLIMITED ? [] : [`o.time_of_purchase <= v.occurred_at + ${window} * interval '${DAY_MS} milliseconds'`];
  return `
    training_visits AS MATERIALIZED (
      ${touchpointsWithCustomersSql(tenantOf, [`t.type = 'visit'`, `t.occurred_at >= ${visitedFrom}`, `t.occurred_at < ${visitedBefore}`])}
    ),
    not_converting AS (
      SELECT * FROM training_visits v WHERE v.path_customer_id IS NULL
      UNION ALL
      SELECT * FROM training_visits v
       WHERE NOT EXISTS (SELECT FROM orders o
                          WHERE ${tenantOf('o')} AND o.customer_id = v.path_customer_id AND ${['o.time_of_purchase >= v.occurred_at', ...withinWindow].join(' AND ')})
         AND v.path_customer_id IS NOT NULL
    )`;
}
