import type { Tenant } from '../auth/tenant.js';
import type { Database, Queryable } from '../db/index.js';

/** An alias to attach, with `loc`, where the request named it (for error reports). */
export interface AliasToAttach {
  order_id: string;
  type: string;
  id: string;
  loc: string;
}

export interface AliasConflict extends AliasToAttach {
  attached_to: string;
}

/** Some aliases of the request are attached to other orders already; nothing was stored. */
export class AliasConflictError extends Error {
  constructor(readonly conflicts: AliasConflict[]) {
    super('Aliases already attached to other orders');
  }
}

/** Some order ids of an alias request do not exist; nothing was stored. */
export class UnknownOrdersError extends Error {
  constructor(readonly missing: Pick<AliasToAttach, 'order_id' | 'loc'>[]) {
    super('Unknown order ids');
  }
}

export interface DateRange {
  /** First day, YYYY-MM-DD, inclusive (UTC). */
  start: string;
  /** Last day, YYYY-MM-DD, inclusive (UTC). */
  end: string;
}

const ALIAS_RECORDS = `jsonb_to_recordset($3::jsonb) AS a(order_id text, type text, id text, loc text, n int)`;

export type OrderRepository = ReturnType<typeof createOrderRepository>;

export function createOrderRepository(db: Database) {
  /** Attaches aliases, skipping those already attached to the same order. */
  async function attachAliases(tx: Queryable, tenant: Tenant, aliases: readonly AliasToAttach[]): Promise<number> {
    if (aliases.length === 0) return 0;
    const records = JSON.stringify(aliases.map((alias, n) => ({ ...alias, n })));
    const params = [tenant.clientId, tenant.environment, records];
    // Sorted, so that concurrent requests lock alias keys in the same order and never deadlock.
    const added = await tx.query(
      `INSERT INTO order_aliases (client_id, environment, alias_type, alias_id, order_id)
       SELECT $1, $2, a.type, a.id, a.order_id FROM ${ALIAS_RECORDS}
        ORDER BY a.type, a.id
       ON CONFLICT DO NOTHING
       RETURNING 1`,
      params,
    );
    // A separate statement, so that it also sees aliases committed by others while it waited.
    const conflicts = await tx.query<AliasConflict & { n: number }>(
      `SELECT a.order_id, a.type, a.id, a.loc, a.n, x.order_id AS attached_to
         FROM ${ALIAS_RECORDS}
         JOIN order_aliases x
           ON x.client_id = $1 AND x.environment = $2 AND x.alias_type = a.type AND x.alias_id = a.id
        WHERE x.order_id <> a.order_id
        ORDER BY a.n`,
      params,
    );
    if (conflicts.length > 0) throw new AliasConflictError(conflicts.map(({ n: _n, ...conflict }) => conflict));
    return added.length;
  }

  return {
    /**
     * Inserts or replaces every order of `batchJson` (a JSON array of orders, as received, so that
     * amounts reach `numeric` columns from their decimal text without passing through a binary
     * float) and attaches the aliases. One transaction: all of it is stored, or none.
     */
    upsert(tenant: Tenant, batchJson: string, aliases: readonly AliasToAttach[]) {
      return db.transaction(async (tx) => {
        // Ordered by order_id, so that concurrent batches lock rows in the same order.
        const rows = await tx.query<{ inserted: boolean }>(
          `INSERT INTO orders AS o (client_id, environment, order_id, customer_id, time_of_purchase, currency,
                                    purchase_total, tax, shipping_cost, discount_amount, body, created_at, updated_at)
           SELECT $1, $2, b.body->>'order_id', b.body->>'customer_id', (b.body->>'time_of_purchase')::timestamptz,
                  b.body->>'currency', (b.body->>'purchase_total')::numeric, (b.body->>'tax')::numeric,
                  (b.body->>'shipping_cost')::numeric, (b.body->>'discount_amount')::numeric,
                  b.body - 'alternate_order_ids', now(), now()
             FROM jsonb_array_elements($3::jsonb) AS b(body)
            ORDER BY b.body->>'order_id'
           ON CONFLICT (client_id, environment, order_id) DO UPDATE SET
             customer_id = excluded.customer_id, time_of_purchase = excluded.time_of_purchase,
             currency = excluded.currency, purchase_total = excluded.purchase_total, tax = excluded.tax,
             shipping_cost = excluded.shipping_cost, discount_amount = excluded.discount_amount,
             body = excluded.body, updated_at = excluded.updated_at
           RETURNING (xmax = 0) AS inserted`,
          [tenant.clientId, tenant.environment, batchJson],
        );
        await attachAliases(tx, tenant, aliases);
        const inserted = rows.filter((row) => row.inserted).length;
        return { inserted, updated: rows.length - inserted };
      });
    },

    /** Attaches aliases to existing orders; throws when an order is unknown or an alias taken. */
    addAliases(tenant: Tenant, aliases: readonly AliasToAttach[]) {
      return db.transaction(async (tx) => {
        const missing = await tx.query<{ order_id: string; loc: string; n: number }>(
          `SELECT DISTINCT ON (a.order_id) a.order_id, a.loc, a.n
             FROM ${ALIAS_RECORDS}
            WHERE NOT EXISTS (SELECT 1 FROM orders o
                               WHERE o.client_id = $1 AND o.environment = $2 AND o.order_id = a.order_id)
            ORDER BY a.order_id, a.n`,
          [tenant.clientId, tenant.environment, JSON.stringify(aliases.map((alias, n) => ({ ...alias, n })))],
        );
        if (missing.length > 0) {
          throw new UnknownOrdersError(missing.sort((a, b) => a.n - b.n).map(({ order_id, loc }) => ({ order_id, loc })));
        }
        const added = await attachAliases(tx, tenant, aliases);
        return { added, ignored: aliases.length - added };
      });
    },

    /**
     * One page of orders by time of purchase, each as the JSON text of the order as it was sent
     * plus its aliases and timestamps (text, so that amounts keep their exact decimals).
     */
    async list(tenant: Tenant, range: DateRange, page: number, pageSize: number) {
      const filter = `o.client_id = $1 AND o.environment = $2
        AND o.time_of_purchase >= $3::date::timestamp AT TIME ZONE 'UTC'
        AND o.time_of_purchase < ($4::date + 1)::timestamp AT TIME ZONE 'UTC'`;
      const params = [tenant.clientId, tenant.environment, range.start, range.end];
      const [count] = await db.query<{ total: number }>(`SELECT count(*)::int AS total FROM orders o WHERE ${filter}`, params);
      const rows = await db.query<{ order_json: string }>(
        `SELECT (o.body || jsonb_build_object(
                   'alternate_order_ids', coalesce(
                     (SELECT jsonb_agg(jsonb_build_object('type', a.alias_type, 'id', a.alias_id)
                                       ORDER BY a.created_at, a.alias_type, a.alias_id)
                        FROM order_aliases a
                       WHERE a.client_id = o.client_id AND a.environment = o.environment AND a.order_id = o.order_id),
                     '[]'::jsonb),
                   'created_at', utc_iso(o.created_at),
                   'updated_at', utc_iso(o.updated_at)))::text AS order_json
           FROM orders o
          WHERE ${filter}
          ORDER BY o.time_of_purchase, o.order_id
          LIMIT $5 OFFSET $6`,
        [...params, pageSize, (page - 1) * pageSize],
      );
      return { orders: rows.map((row) => row.order_json), total: count!.total };
    },
  };
}
