import { LINKED, noteChangeCtes, visitorKeysSql } from '../attribution/index.js';
import type { Tenant } from '../auth/tenant.js';
import { ClientGoneError } from '../db/errors.js';
import type { Database, Queryable } from '../db/index.js';

export interface AliasToAttach {
  order_id: string;
  type: string;
  id: string;
}

/** Aliases of the request (by position) that are attached to other orders; nothing was stored. */
export class AliasConflictError extends Error {
  constructor(readonly conflicts: { index: number; attached_to: string }[]) {
    super('Aliases already attached to other orders');
  }
}

/** Order ids of a request that do not exist (with the position of their first mention); nothing was stored. */
export class UnknownOrdersError extends Error {
  constructor(readonly missing: { index: number; order_id: string }[]) {
    super('Unknown order ids');
  }
}

/**
 * Patched orders (by position) that would hold an e-mail or phone number beside its hash, one
 * sent and the other stored; `fields` names the plain ones (customer_email, customer_phone_number).
 * Nothing was stored.
 */
export class ExclusiveFieldsError extends Error {
  constructor(readonly orders: { index: number; fields: string[] }[]) {
    super('Fields that exclude each other');
  }
}

export interface DateRange {
  /** First day, YYYY-MM-DD, inclusive (UTC). */
  start: string;
  /** Last day, YYYY-MM-DD, inclusive (UTC). */
  end: string;
}

const ALIAS_RECORDS = `jsonb_to_recordset($3::jsonb) AS a(order_id text, type text, id text, n int)`;
const aliasRecords = (aliases: readonly AliasToAttach[]) =>
  JSON.stringify(aliases.map(({ order_id, type, id }, n) => ({ order_id, type, id, n })));

/** The client's orders ($1, $2) whose time of purchase falls on the UTC days $3 to $4. */
const IN_RANGE = `client_id = $1 AND environment = $2
  AND time_of_purchase >= $3::date::timestamp AT TIME ZONE 'UTC'
  AND time_of_purchase < ($4::date + 1)::timestamp AT TIME ZONE 'UTC'`;

/** The JSON text of order `o` as it was sent, with its aliases and timestamps. */
const STORED_ORDER = `(o.body || jsonb_build_object(
  'alternate_order_ids', coalesce(
    (SELECT jsonb_agg(jsonb_build_object('type', a.alias_type, 'id', a.alias_id)
                      ORDER BY a.created_at, a.alias_type, a.alias_id)
       FROM order_aliases a
      WHERE a.client_id = $1 AND a.environment = $2 AND a.order_id = o.order_id),
    '[]'::jsonb),
  'created_at', utc_iso(o.created_at),
  'updated_at', utc_iso(o.updated_at)))::text`;

/** Orders read per FETCH of an unpaged listing: what memory holds of it at once. */
const ORDER_BATCH = 500;

export type OrderRepository = ReturnType<typeof createOrderRepository>;

/**
 * What is stored of order `b.body` as sent: all of it but its aliases, which have a table of
 * their own. Each jsonb operator builds its result anew, keys sorted again: done only where
 * needed (removing aliases no order had, and adding no defaults, took about 10 ms of the 50 ms
 * a batch of 1,000 took to insert).
 */
const STORED_BODY = `CASE WHEN b.body ? 'alternate_order_ids' THEN b.body - 'alternate_order_ids' ELSE b.body END`;

/**
 * Before a patch of the orders `orderIds`: locks those that exist, in key order as the upsert
 * locks them, and answers the earliest of their times of purchase (text, or null), read under the
 * locks (not from a statement's snapshot, which a concurrent write may have overtaken). (The
 * upsert reads the times it replaces as it replaces them: migration 0030.)
 */
async function earliestBeforePatch(tx: Queryable, tenant: Tenant, orderIds: readonly string[]): Promise<string | null> {
  const [row] = await tx.query<{ earliest: string | null }>(
    `WITH locked AS MATERIALIZED (
       SELECT o.time_of_purchase
         FROM (SELECT order_id FROM unnest($3::text[]) AS order_id ORDER BY order_id COLLATE "C") AS k
        CROSS JOIN LATERAL (SELECT time_of_purchase FROM orders
                             WHERE client_id = $1 AND environment = $2 AND order_id = k.order_id
                               FOR UPDATE) AS o
     )
     SELECT min(time_of_purchase)::text AS earliest FROM locked`,
    [tenant.clientId, tenant.environment, orderIds],
  );
  return row!.earliest;
}

/** The visitors linked through the orders `$3` (text[]). */
const LINKED_THROUGH_ORDERS = `(SELECT i.visitor_id FROM identities i
  WHERE i.client_id = $1 AND i.environment = $2 AND i.order_id = ANY ($3::text[])) AS v`;

/**
 * Notes the attribution change of a write of the orders `orderIds`, as the last statement of its
 * transaction: the keys of the visitors linked through them, as changed links (their touchpoints
 * are the orders' customers', whom the write may have made or changed), then the earliest of
 * their times of purchase before and after (`earliest`, instants or nulls).
 */
const noteChange = (tx: Queryable, tenant: Tenant, orderIds: readonly string[], earliest: (string | null)[]) =>
  tx.query(
    `WITH ${noteChangeCtes(visitorKeysSql(LINKED_THROUGH_ORDERS, String(LINKED.changed)), 'SELECT min(e) FROM unnest($4::timestamptz[]) AS e')} SELECT`,
    [tenant.clientId, tenant.environment, orderIds, earliest],
  );

export function createOrderRepository(db: Database) {
  /**
   * Attaches aliases, skipping those already attached to the same order, in one statement: the
   * conflict on the key finds an alias another request attached, committed or not (it waits for
   * that request), and returns the alias when it is attached to another order. Such a row is
   * "updated" to what it holds, only to be returned; the error then rolls the request back.
   */
  async function attachAliases(tx: Queryable, tenant: Tenant, aliases: readonly AliasToAttach[]): Promise<number> {
    // Each alias once, with the request positions it was given at: a row may be the target of one
    // conflict per statement.
    const byKey = new Map<string, { alias: AliasToAttach; positions: number[] }>();
    aliases.forEach((alias, n) => {
      const key = `${alias.type}\u0000${alias.id}`;
      const seen = byKey.get(key);
      if (!seen) return void byKey.set(key, { alias, positions: [n] });
      // The routes refuse one alias for two orders of a request; this keeps the guarantee here too.
      if (seen.alias.order_id !== alias.order_id) throw new AliasConflictError([{ index: n, attached_to: seen.alias.order_id }]);
      seen.positions.push(n);
    });
    const distinct = [...byKey.values()].map(({ alias }) => alias);
    if (distinct.length === 0) return 0;
    // Sorted as the key is (byte-wise), so that concurrent requests lock alias keys in one order.
    const rows = await tx.query<{ type: string; id: string; order_id: string }>(
      `INSERT INTO order_aliases AS x (client_id, environment, alias_type, alias_id, order_id)
       SELECT $1, $2, a.type, a.id, a.order_id FROM ${ALIAS_RECORDS}
        ORDER BY a.type COLLATE "C", a.id COLLATE "C"
       ON CONFLICT (client_id, environment, alias_type, alias_id)
         DO UPDATE SET order_id = x.order_id WHERE x.order_id <> excluded.order_id
       RETURNING x.alias_type AS type, x.alias_id AS id, x.order_id`,
      [tenant.clientId, tenant.environment, aliasRecords(distinct)],
    );
    const conflicts = rows.flatMap((row) => {
      const { alias, positions } = byKey.get(`${row.type}\u0000${row.id}`)!;
      return row.order_id === alias.order_id ? [] : positions.map((index) => ({ index, attached_to: row.order_id }));
    });
    if (conflicts.length > 0) throw new AliasConflictError(conflicts.sort((a, b) => a.index - b.index));
    return rows.length;
  }

  return {
    /**
     * Inserts or replaces every order of `batchJson` (a JSON array of orders, as received with its
     * amounts rounded to their scale by exactNumbers, so that amounts are stored from their
     * decimal text, never through a binary float) and attaches the
     * aliases. `defaults` holds the fields an order that leaves them out is stored with. One
     * transaction: all of it is stored, or none; its attribution change is noted last.
     */
    upsert(tenant: Tenant, batchJson: string, orderIds: readonly string[], aliases: readonly AliasToAttach[], defaults: Record<string, unknown> = {}) {
      return db.transaction(async (tx) => {
        // Sorted by order_id as the key is (byte-wise), so that concurrent batches lock rows in one order.
        // updated_at never goes back, should a transaction that started earlier write the row later;
        // no volatile function in SET, which a distributed PostgreSQL (Citus) refuses there. The
        // time of purchase an order had is kept as the upsert replaces it (migration 0030).
        const withDefaults = Object.keys(defaults).length > 0;
        // Orders have no foreign key to clients (migration 0028): `client` takes the lock its check
        // took for every order, once, and without the client row nothing is inserted.
        const [written] = await tx.query<{ inserted: number; written: number; earliest: string | null; client_found: boolean }>(
          `WITH client AS MATERIALIZED (SELECT 1 FROM clients WHERE client_id = $1 FOR KEY SHARE),
           written AS (
             INSERT INTO orders AS o (client_id, environment, order_id, time_of_purchase, body, created_at, updated_at)
             SELECT $1, $2, b.body->>'order_id', (b.body->>'time_of_purchase')::timestamptz,
                    ${withDefaults ? `$4::jsonb || ${STORED_BODY}` : STORED_BODY}, now(), now()
               FROM client, jsonb_array_elements($3::jsonb) AS b(body)
              ORDER BY b.body->>'order_id' COLLATE "C"
             ON CONFLICT (client_id, environment, order_id) DO UPDATE SET
               time_of_purchase = excluded.time_of_purchase, body = excluded.body, updated_at = greatest(o.updated_at, excluded.updated_at),
               replaced_time_of_purchase = o.time_of_purchase
             RETURNING (xmax = 0) AS inserted, time_of_purchase, replaced_time_of_purchase
           )
           SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*)::int AS written,
                  min(least(time_of_purchase, replaced_time_of_purchase))::text AS earliest,
                  EXISTS (SELECT 1 FROM client) AS client_found
             FROM written`,
          [tenant.clientId, tenant.environment, batchJson, ...(withDefaults ? [JSON.stringify(defaults)] : [])],
        );
        if (!written!.client_found) throw new ClientGoneError();
        await attachAliases(tx, tenant, aliases);
        await noteChange(tx, tenant, orderIds, [written!.earliest]);
        return { inserted: written!.inserted, updated: written!.written - written!.inserted };
      });
    },

    /**
     * Changes the fields each order of `patchJson` (a JSON array of patches, as received with its
     * amounts rounded to their scale, whose
     * order ids are `orderIds`) sends, clears those it sends as null, and attaches the aliases. One transaction: when an order is
     * unknown (UnknownOrdersError), an e-mail or phone number would be stored beside its hash
     * (ExclusiveFieldsError) or an alias is taken, nothing is stored. The orders are locked in
     * key order, as the upsert locks them, and updated_at never goes back. The attribution
     * change is noted last.
     */
    patch(tenant: Tenant, patchJson: string, orderIds: readonly string[], aliases: readonly AliasToAttach[], updatedAt: Date) {
      return db.transaction(async (tx) => {
        // earliestBeforePatch takes the row locks first, one key lookup per order in key order
        // (byte-wise), as the upsert takes them; the UPDATE then finds its rows by key among the
        // patch's (a join to them was planned as a hash of all the client's orders on a table
        // without statistics). The orders it does not return are unknown; `both` names the pairs of exclusive fields
        // the merged body would hold. The new time of purchase is read in `patch`: Citus refuses
        // the text-to-timestamptz cast (not immutable) inside the UPDATE's coalesce.
        const earliestBefore = await earliestBeforePatch(tx, tenant, orderIds);
        const rows = await tx.query<{ n: number; both: string[] }>(
          `WITH patch AS (
             SELECT p.body->>'order_id' AS order_id, p.n::int - 1 AS n,
                    (p.body->>'time_of_purchase')::timestamptz AS time_of_purchase,
                    (SELECT jsonb_object_agg(f.key, f.value) FROM jsonb_each(p.body) AS f
                      WHERE f.value <> 'null'::jsonb AND f.key <> 'alternate_order_ids') AS fields,
                    ARRAY(SELECT f.key FROM jsonb_each(p.body) AS f WHERE f.value = 'null'::jsonb) AS cleared
               FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS p(body, n)
           )
           UPDATE orders o
              SET body = (o.body - p.cleared) || p.fields,
                  time_of_purchase = coalesce(p.time_of_purchase, o.time_of_purchase),
                  updated_at = greatest(o.updated_at, $4::timestamptz)
             FROM patch p
            WHERE o.client_id = $1 AND o.environment = $2
              AND o.order_id = ANY (ARRAY(SELECT order_id FROM patch)) AND o.order_id = p.order_id
           RETURNING p.n, ARRAY(SELECT pair[1] FROM (VALUES (ARRAY['customer_email', 'hashed_customer_email']),
                                                            (ARRAY['customer_phone_number', 'hashed_customer_phone_number'])) AS e(pair)
                                 WHERE o.body ?& pair) AS both`,
          [tenant.clientId, tenant.environment, patchJson, updatedAt],
        );
        const found = new Set(rows.map((row) => row.n));
        const missing = orderIds.flatMap((order_id, index) => (found.has(index) ? [] : [{ index, order_id }]));
        if (missing.length > 0) throw new UnknownOrdersError(missing);
        const exclusive = rows.filter((row) => row.both.length > 0).sort((a, b) => a.n - b.n);
        if (exclusive.length > 0) throw new ExclusiveFieldsError(exclusive.map(({ n, both }) => ({ index: n, fields: both })));
        await attachAliases(tx, tenant, aliases);
        const [after] = await tx.query<{ earliest: string | null }>(
          'SELECT min(time_of_purchase)::text AS earliest FROM orders WHERE client_id = $1 AND environment = $2 AND order_id = ANY ($3::text[])',
          [tenant.clientId, tenant.environment, orderIds],
        );
        await noteChange(tx, tenant, orderIds, [earliestBefore, after!.earliest]);
        return { updated: rows.length };
      });
    },

    /** Attaches aliases to existing orders; throws when an order is unknown or an alias taken. */
    addAliases(tenant: Tenant, aliases: readonly AliasToAttach[]) {
      return db.transaction(async (tx) => {
        // One key lookup per alias (OFFSET 0 keeps it from becoming an anti-join, which a table
        // without statistics, as on the embedded store, may plan as a hash of all the client's
        // orders: 82 ms a request at 300,000 orders, against 1.2 ms).
        const missing = await tx.query<{ order_id: string; index: number }>(
          `SELECT DISTINCT ON (a.order_id) a.order_id, a.n AS index
             FROM ${ALIAS_RECORDS}
             LEFT JOIN LATERAL (SELECT 1 AS found FROM orders o
                                 WHERE o.client_id = $1 AND o.environment = $2 AND o.order_id = a.order_id
                                 OFFSET 0) o ON true
            WHERE o.found IS NULL
            ORDER BY a.order_id, a.n`,
          [tenant.clientId, tenant.environment, aliasRecords(aliases)],
        );
        if (missing.length > 0) throw new UnknownOrdersError(missing.sort((a, b) => a.index - b.index));
        const added = await attachAliases(tx, tenant, aliases);
        return { added, ignored: aliases.length - added };
      });
    },

    /**
     * One page of orders by time of purchase, as the comma-separated JSON texts of the orders as
     * they were sent, with their aliases and timestamps (text, so amounts keep their exact
     * decimals). One statement, so the count and the page agree.
     */
    async list(tenant: Tenant, range: DateRange, page: number, pageSize: number): Promise<{ items: string; total: number }> {
      const [row] = await db.query<{ items: string; total: number }>(
        `SELECT (SELECT count(*)::int FROM orders WHERE ${IN_RANGE}) AS total,
                coalesce((SELECT string_agg(${STORED_ORDER}, ',' ORDER BY o.time_of_purchase, o.order_id)
                   FROM (SELECT * FROM orders WHERE ${IN_RANGE}
                          ORDER BY time_of_purchase, order_id LIMIT $5 OFFSET $6) o), '') AS items`,
        [tenant.clientId, tenant.environment, range.start, range.end, pageSize, (page - 1) * pageSize],
      );
      return row!;
    },

    /**
     * Every order of the range, in the order of `list`, through a cursor: `onBatch` gets the
     * comma-separated JSON texts of up to ORDER_BATCH orders and their number, and is awaited
     * before the next batch is read.
     */
    listAll(tenant: Tenant, range: DateRange, onBatch: (items: string, count: number) => Promise<void>): Promise<void> {
      return db.eachBatch<{ item: string }>(
        `SELECT ${STORED_ORDER} AS item FROM orders o WHERE ${IN_RANGE} ORDER BY o.time_of_purchase, o.order_id`,
        [tenant.clientId, tenant.environment, range.start, range.end],
        ORDER_BATCH,
        (rows) => onBatch(rows.map((row) => row.item).join(','), rows.length),
      );
    },
  };
}

/**
 * The orders of the UAT test credentials: writes succeed as if every order they name existed and
 * every alias were free, nothing is kept, and reads find nothing. The checks that read no stored
 * data (the amounts' among them) are the routes', as for production.
 */
export const standInOrders: OrderRepository = {
  upsert: async (_tenant, _batchJson, orderIds) => ({ inserted: orderIds.length, updated: 0 }),
  patch: async (_tenant, _patchJson, orderIds) => ({ updated: orderIds.length }),
  addAliases: async (_tenant, aliases) => ({ added: aliases.length, ignored: 0 }),
  list: async () => ({ items: '', total: 0 }),
  listAll: async () => {},
};
