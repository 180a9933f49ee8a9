import { DAY_MS, WINDOWS, type WindowDays } from './models.js';

/**
 * Which touchpoints may be in the paths of a set of orders: the relations `creditsSql` credits.
 * One statement serves any set of orders (one order for its explanation, the purchases of a
 * period in cash mode, every order whose path may reach a period in accrual mode) and several
 * windows at once, so that an export of many models and windows reads each order's touchpoints
 * once.
 *
 * An order's touchpoints are those of its customer (migration 0010's header): sent with its
 * customer_id, or sent without one by a visitor linked to it, directly or through one of its
 * orders. Each is found from the order by an index (0010's and 0011's): touchpoints by customer
 * and time; the customer's visitors by direct link, and by order link through the customer's
 * orders; their touchpoints by visitor and time. The time is bounded by the largest window.
 */

export interface PathsSpec {
  /** SQL of the tenant's client_id and environment (placeholders such as `$1::uuid`). */
  clientId: string;
  environment: string;
  /** A condition on the orders `o` whose paths are wanted, such as `o.order_id = $3`. */
  orders: string;
  /** The windows of the paths: each order has a path per window. */
  windows: readonly WindowDays[];
}

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
  const within = `t.occurred_at BETWEEN p.time_of_purchase - ${Math.max(...windows)} * interval '${DAY_MS} milliseconds' AND p.time_of_purchase`;
  const TOUCHPOINT = 't.touchpoint_id, t.occurred_at, t.type, t.channel, t.platform_name, t.platform_account_id, t.campaign_id, t.adset_id, t.ad_id';
  return `
    purchases AS (
      SELECT o.order_id, o.customer_id, o.time_of_purchase, o.purchase_total, o.currency,
             NOT EXISTS (SELECT FROM orders f
                          WHERE ${tenantOf('f')} AND f.customer_id = o.customer_id
                            AND (f.time_of_purchase, f.order_id) < (o.time_of_purchase, o.order_id)) AS first_order
        FROM orders o
       WHERE ${tenantOf('o')} AND (${orders})
    ),
    paths AS (
      SELECT p.order_id || '/' || w.window_days AS path_id, w.window_days, p.*
        FROM purchases p CROSS JOIN unnest(ARRAY[${windows.join(', ')}]::int[]) AS w (window_days)
    ),
    order_touchpoints AS (
      SELECT p.order_id, ${TOUCHPOINT}
        FROM purchases p
        JOIN touchpoints t ON ${tenantOf('t')} AND t.customer_id IS NOT NULL AND t.customer_id = p.customer_id AND ${within}
      UNION ALL
      SELECT p.order_id, ${TOUCHPOINT}
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
                          AND t.customer_id IS NULL AND ${within}
    ),
    candidates AS (
      SELECT p.*, ${TOUCHPOINT.replaceAll('t.', 'c.')}
        FROM paths p JOIN order_touchpoints c ON c.order_id = p.order_id
    )`;
}
