import { DAY_MS, WINDOWS, type WindowDays } from './models.js';

/**
 * Which touchpoints may be in the paths of a set of orders: the relations `creditsSql` credits.
 * One statement serves several windows at once, so that an export of many models and windows
 * reads each order's touchpoints once.
 *
 * An order's touchpoints are those of its customer (migration 0010's header): sent with its
 * customer_id, or sent without one by a visitor linked to it, directly or through one of its
 * orders. The time is bounded by the largest window. There are two ways to find them, giving the
 * same candidates (test/attribution-paths.test.ts compares them):
 *
 * - for one order (its explanation), from the order by indexes (0010's and 0011's): touchpoints
 *   by customer and time; the customer's visitors by direct link, and by order link through the
 *   customer's orders; their touchpoints by visitor and time;
 * - for the orders of a period (exports), from the touchpoints of the period: each is read once,
 *   in time order, with the customer its visitor is linked to, and joined to the orders of that
 *   customer by hashing. Finding each order's touchpoints by index, as for one order, costs a
 *   random read per touchpoint: 17 s for the 82,000 orders of 30 days in bench/attribution.ts,
 *   against 3 s for reading the 820,000 touchpoints of those 60 days and joining them.
 */

export interface PathsSpec {
  /** SQL of the tenant's client_id and environment (placeholders such as `$1::uuid`). */
  clientId: string;
  environment: string;
  /** The orders whose paths are wanted, as SQL: one by its id, or those purchased in [from, before). */
  orders: { orderId: string } | { purchasedFrom: string; purchasedBefore: string };
  /** The windows of the paths: each order has a path per window. */
  windows: readonly WindowDays[];
}

const TOUCHPOINT_COLUMNS = ['touchpoint_id', 'occurred_at', 'type', 'channel', 'platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id'];
const touchpointColumns = (alias: string) => TOUCHPOINT_COLUMNS.map((column) => `${alias}.${column}`).join(', ');

/**
 * The items of a WITH clause defining two relations:
 *
 *   paths       one row per order and window: path_id (text), window_days, order_id,
 *               customer_id, time_of_purchase, purchase_total, currency, and first_order
 *               (the customer's first order ever, ties broken by time_of_purchase then
 *               order_id; an order without a customer counts as one)
 *   candidates  the columns of paths, and those of a touchpoint of the order's customer within
 *               the largest window: touchpoint_id, occurred_at, type, channel, platform_name,
 *               platform_account_id, campaign_id, adset_id, ad_id
 *
 * so that `WITH ${pathsSql(spec)} SELECT … FROM (${creditsSql('candidates', model)}) …` credits
 * them, and a path without credited rows is unattributed.
 */
export function pathsSql({ clientId, environment, orders, windows }: PathsSpec): string {
  if (windows.length === 0 || windows.some((window) => !WINDOWS.includes(window))) throw new Error(`Bad windows: ${windows.join(', ')}`);
  const tenantOf = (alias: string) => `${alias}.client_id = ${clientId} AND ${alias}.environment = ${environment}`;
  const lookback = `${Math.max(...windows)} * interval '${DAY_MS} milliseconds'`;
  const within = (touchpoint: string) => `${touchpoint}.occurred_at BETWEEN p.time_of_purchase - ${lookback} AND p.time_of_purchase`;
  const selected = 'orderId' in orders ? `o.order_id = ${orders.orderId}` : `o.time_of_purchase >= ${orders.purchasedFrom} AND o.time_of_purchase < ${orders.purchasedBefore}`;
  const orderTouchpoints = 'orderId' in orders ? touchpointsOfOneOrder(tenantOf, within) : touchpointsOfPeriod(tenantOf, within, orders, lookback);
  return `
    purchases AS (
      SELECT o.order_id, o.customer_id, o.time_of_purchase, o.purchase_total, o.currency,
             NOT EXISTS (SELECT FROM orders f
                          WHERE ${tenantOf('f')} AND f.customer_id = o.customer_id
                            AND (f.time_of_purchase, f.order_id) < (o.time_of_purchase, o.order_id)) AS first_order
        FROM orders o
       WHERE ${tenantOf('o')} AND ${selected}
    ),
    paths AS (
      SELECT p.order_id || '/' || w.window_days AS path_id, w.window_days, p.*
        FROM purchases p CROSS JOIN unnest(ARRAY[${windows.join(', ')}]::int[]) AS w (window_days)
    ),
    order_touchpoints AS (${orderTouchpoints}),
    candidates AS (
      SELECT p.*, ${touchpointColumns('c')}
        FROM paths p JOIN order_touchpoints c ON c.order_id = p.order_id
    )`;
}

type TenantOf = (alias: string) => string;

/** The touchpoints of the order in `purchases`, found from it by index. */
function touchpointsOfOneOrder(tenantOf: TenantOf, within: (touchpoint: string) => string): string {
  return `
      SELECT p.order_id, ${touchpointColumns('t')}
        FROM purchases p
        JOIN touchpoints t ON ${tenantOf('t')} AND t.customer_id IS NOT NULL AND t.customer_id = p.customer_id AND ${within('t')}
      UNION ALL
      SELECT p.order_id, ${touchpointColumns('t')}
        FROM purchases p
        JOIN LATERAL (
          SELECT i.visitor_id FROM identities i
           WHERE ${tenantOf('i')} AND i.customer_id IS NOT NULL AND i.customer_id = p.customer_id
          UNION ALL
          SELECT i.visitor_id FROM orders l
            JOIN identities i ON ${tenantOf('i')} AND i.order_id IS NOT NULL AND i.order_id = l.order_id
           WHERE ${tenantOf('l')} AND l.customer_id IS NOT NULL AND l.customer_id = p.customer_id
        ) AS v ON true
        JOIN touchpoints t ON ${tenantOf('t')} AND t.visitor_id IS NOT NULL AND t.visitor_id = v.visitor_id
                          AND t.customer_id IS NULL AND ${within('t')}`;
}

/**
 * The touchpoints of the orders in `purchases`, purchased in [from, before): every touchpoint from
 * the largest window before `from` up to `before`, with its customer, joined to the purchases of
 * that customer.
 */
function touchpointsOfPeriod(tenantOf: TenantOf, within: (touchpoint: string) => string, period: { purchasedFrom: string; purchasedBefore: string }, lookback: string): string {
  return `
      SELECT p.order_id, ${touchpointColumns('t')}
        FROM (SELECT coalesce(t.customer_id, i.customer_id, l.customer_id) AS path_customer_id, ${touchpointColumns('t')}
                FROM touchpoints t
                LEFT JOIN identities i ON t.customer_id IS NULL AND ${tenantOf('i')} AND i.visitor_id = t.visitor_id
                LEFT JOIN orders l ON ${tenantOf('l')} AND l.order_id = i.order_id
               WHERE ${tenantOf('t')} AND t.occurred_at >= ${period.purchasedFrom} - ${lookback} AND t.occurred_at < ${period.purchasedBefore}) AS t
        JOIN purchases p ON p.customer_id = t.path_customer_id AND ${within('t')}`;
}
