/** Data written straight into a store with set-based SQL, for the benchmarks that need a lot of it. */
import type { Database } from '../src/db/index.js';
import { generateOrders } from './generate.js';

const TEMPLATES = 1000;
const CHUNK = 20_000;
/** Order n's customer is n × this, modulo the number of customers: a prime, so that it spreads them. */
export const ORDER_CUSTOMER_FACTOR = 7919;

/**
 * Order `n` of [0, count): template `n % 1000` again (1,000 realistic orders from
 * bench/generate.ts), with the id `order-<n>`, the customer `cust-<n × ORDER_CUSTOMER_FACTOR mod customers>` and a
 * time `n / count` of the way through `days` days from `from`.
 */
const ORDERS_SQL = `
  INSERT INTO orders (client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)
  SELECT $1, 'production', o.id, o.at,
         t.body || jsonb_build_object('order_id', o.id, 'customer_id', o.customer, 'time_of_purchase', utc_iso(o.at)), now(), now()
    FROM generate_series($3::int, $4::int - 1) AS n
    JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(body, i) ON t.i = n % ${TEMPLATES} + 1
   CROSS JOIN LATERAL (SELECT 'order-' || n AS id, 'cust-' || (n::bigint * ${ORDER_CUSTOMER_FACTOR} % $5) AS customer,
                              $6::timestamptz + n * ($7::int * interval '1 day' / $8::int) AS at) AS o`;

/** Inserts `count` orders of one client (see ORDERS_SQL), 20,000 a statement. */
export async function insertOrders(db: Database, clientId: string, { count, customers, from, days }: { count: number; customers: number; from: Date; days: number }) {
  const templates = JSON.stringify(generateOrders(7, 'template', TEMPLATES).map(({ alternate_order_ids: _, ...order }) => order));
  for (let n = 0; n < count; n += CHUNK) {
    await db.query(ORDERS_SQL, [clientId, templates, n, Math.min(n + CHUNK, count), customers, from.toISOString(), days, count]);
  }
}
