import type { Tenant } from '../auth/tenant.js';
import { noteAttributionChangeSql } from '../attribution/changes.js';
import type { Database } from '../db/index.js';
import { AD_FIELDS, UTM_FIELDS, type DerivedTouchpoint, type SourcePlatforms } from './derive.js';

export interface TouchpointFilter {
  visitor_id?: string;
  customer_id?: string;
  /** Inclusive bounds of occurred_at. */
  start?: string;
  end?: string;
}

/** The columns a touchpoint is written to, with their types as read from a request's records. */
const COLUMNS: [string, string][] = [
  ['touchpoint_id', 'text'],
  ['occurred_at', 'timestamptz'],
  ['type', 'text'],
  ['visitor_id', 'text'],
  ['customer_id', 'text'],
  ['landing_url', 'text'],
  ['referrer', 'text'],
  ...UTM_FIELDS.map((field): [string, string] => [field, 'text']),
  ['click_ids', 'jsonb'],
  ...AD_FIELDS.map((field): [string, string] => [field, 'text']),
  ['channel', 'text'],
];
const NAMES = COLUMNS.map(([name]) => name).join(', ');
const VALUES = COLUMNS.filter(([name]) => name !== 'touchpoint_id').map(([name]) => name);

/**
 * Touchpoints as JSON texts joined by commas, in `order`, each with the customer it is linked to:
 * its own customer_id, else its visitor's identity link, direct or through an order (`i`, `o`).
 */
const touchpointsJson = (row: string, order: string) => `coalesce(string_agg(json_build_object(
    'touchpoint_id', ${row}.touchpoint_id, 'occurred_at', utc_iso(${row}.occurred_at), 'type', ${row}.type,
    'visitor_id', ${row}.visitor_id, 'customer_id', ${row}.customer_id,
    'linked_customer_id', coalesce(${row}.customer_id, i.customer_id, o.customer_id),
    'landing_url', ${row}.landing_url, 'referrer', ${row}.referrer,
    ${UTM_FIELDS.map((field) => `'${field}', ${row}.${field}`).join(', ')},
    'click_ids', ${row}.click_ids,
    ${AD_FIELDS.map((field) => `'${field}', ${row}.${field}`).join(', ')},
    'channel', ${row}.channel,
    'created_at', utc_iso(${row}.created_at), 'updated_at', utc_iso(${row}.updated_at))::text, ',' ORDER BY ${order}), '')`;

/** Positional parameters of a statement built piece by piece: each value once, where it is first used. */
class Parameters {
  readonly values: unknown[] = [];
  add(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
}

export type TouchpointRepository = ReturnType<typeof createTouchpointRepository>;

/**
 * `written`: the touchpoints of the JSON array `json` (json, not jsonb: each record is read once,
 * and building a jsonb of the whole batch first is work thrown away) inserted or replaced at `at`,
 * with whether each was inserted, its occurred_at and the one it replaced. The tenant is $1, $2.
 */
const writtenCte = (json: string, at: string) => `written AS (
  INSERT INTO touchpoints AS t (client_id, environment, ${NAMES}, created_at, updated_at)
  SELECT $1, $2, ${NAMES}, ${at}::timestamptz, ${at}::timestamptz
    FROM json_to_recordset(${json}::json) AS r(${COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')})
   ORDER BY touchpoint_id COLLATE "C"
  ON CONFLICT (client_id, environment, touchpoint_id) DO UPDATE SET
    ${VALUES.map((name) => `${name} = excluded.${name}`).join(', ')},
    updated_at = greatest(t.updated_at, excluded.updated_at),
    replaced_occurred_at = t.occurred_at
  RETURNING xmax = 0 AS inserted, occurred_at, replaced_occurred_at)`;
/**
 * The attribution change of `written`: the earliest of its touchpoints' times, and of the times
 * of those it replaced, as the upsert replaced them (migration 0019). A pipeline that sends a
 * batch again (a retry) so notes the batch's own days, where it used to note every instant and
 * drop every kept day of its client.
 */
const WRITTEN_EARLIEST = 'SELECT min(least(occurred_at, replaced_occurred_at)) FROM written';
const WRITTEN_COUNTS = 'SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated FROM written';

/**
 * `linked`: the visitors whose link the links of `body` (`{"data": [...]}`) made or changed at `at`,
 * each replacing its earlier link. A link sent again as it is (a shop identifying its logged-in
 * customer on every page) is left as it is: it changes no path, and noting it would drop the kept
 * days from the visitor's first touchpoint on, weeks of them, at every page view.
 */
const linkedCte = (body: string, at: string) => `linked AS (
  INSERT INTO identities AS i (client_id, environment, visitor_id, customer_id, order_id, linked_at)
  SELECT $1, $2, r.visitor_id, r.customer_id, r.order_id, ${at}::timestamptz
    FROM jsonb_to_recordset(${body}::jsonb -> 'data') AS r(visitor_id text, customer_id text, order_id text)
   ORDER BY r.visitor_id COLLATE "C"
  ON CONFLICT (client_id, environment, visitor_id) DO UPDATE SET
    customer_id = excluded.customer_id, order_id = excluded.order_id, linked_at = excluded.linked_at
   WHERE (i.customer_id, i.order_id) IS DISTINCT FROM (excluded.customer_id, excluded.order_id)
  RETURNING visitor_id, customer_id, xmax = 0 AS inserted)`;
/** How many links `body` sends, the answer's count whether or not they changed a link. */
const linksSent = (body: string) => `jsonb_array_length(${body}::jsonb -> 'data')`;
/**
 * The attribution change of `linked`. A visitor's touchpoints are in the paths of its customer's
 * orders placed from its first touchpoint on: a new link to a customer changes those orders, so
 * it notes the first of them, or nothing when there is none (a shop's customer signing in before
 * buying). A concurrent order of that customer, unseen by this statement's snapshot, notes its
 * own purchase. A link through an order notes the visitor's first touchpoint: the order's customer
 * read here may be overtaken by a concurrent write of the order (its arrival, or a new customer),
 * whose own snapshot does not see this link either, so neither would note the customer's other
 * orders. A changed link also changes the orders of the customer it linked to before, whose
 * earlier value the upsert does not return: it notes the visitor's first touchpoint. One probe of
 * touchpoints_by_visitor a visitor, and one of orders_by_customer (as a join, it was planned as a
 * scan of every touchpoint, the links' count being unknown to the planner); the orders are probed
 * for new links only.
 */
const LINKED_EARLIEST = `SELECT min(CASE WHEN l.inserted AND l.customer_id IS NOT NULL THEN customers_orders.first_at ELSE first.occurred_at END)
                           FROM linked l
                          CROSS JOIN LATERAL (SELECT t.occurred_at FROM touchpoints t
                                               WHERE t.client_id = $1 AND t.environment = $2 AND t.visitor_id = l.visitor_id
                                               ORDER BY t.occurred_at LIMIT 1) AS first
                          CROSS JOIN LATERAL (SELECT min(o.time_of_purchase) AS first_at FROM orders o
                                               WHERE l.inserted AND o.client_id = $1 AND o.environment = $2 AND o.time_of_purchase >= first.occurred_at
                                                 AND o.customer_id = l.customer_id) AS customers_orders`;

export function createTouchpointRepository(db: Database) {
  /**
   * The touchpoints a filter matches (a SELECT of whole rows). A customer's are those it was
   * sent with, and those of visitors linked to it that were sent without one: two disjoint
   * index scans, the visitors found by their direct links (an index) and by their order links
   * (the client's order links, each order found by its key). `tenantOf(alias)` is the condition
   * that a table's rows are the client's.
   */
  function matching(tenantOf: (alias: string) => string, filter: TouchpointFilter, params: Parameters): string {
    const time = [
      ...(filter.start === undefined ? [] : [`t.occurred_at >= ${params.add(filter.start, 'timestamptz')}`]),
      ...(filter.end === undefined ? [] : [`t.occurred_at <= ${params.add(filter.end, 'timestamptz')}`]),
    ];
    const where = (...conditions: string[]) => [tenantOf('t'), ...conditions, ...time].join(' AND ');
    if (filter.customer_id !== undefined) {
      const customer = params.add(filter.customer_id, 'text');
      return `SELECT t.* FROM touchpoints t WHERE ${where(`t.customer_id = ${customer}`)}
              UNION ALL
              SELECT t.* FROM touchpoints t
               WHERE ${where('t.customer_id IS NULL')}
                 AND t.visitor_id IN (SELECT i.visitor_id FROM identities i WHERE ${tenantOf('i')} AND i.customer_id = ${customer}
                                      UNION ALL
                                      SELECT i.visitor_id FROM identities i
                                        JOIN orders o ON ${tenantOf('o')} AND o.order_id = i.order_id
                                       WHERE ${tenantOf('i')} AND i.order_id IS NOT NULL AND o.customer_id = ${customer})`;
    }
    const visitor = filter.visitor_id === undefined ? [] : [`t.visitor_id = ${params.add(filter.visitor_id, 'text')}`];
    return `SELECT t.* FROM touchpoints t WHERE ${where(...visitor)}`;
  }

  return {
    /** The client's mapping of utm_source values to platform names. */
    async sourcePlatforms(clientId: string): Promise<SourcePlatforms> {
      const [row] = await db.query<{ source_platforms: SourcePlatforms }>('SELECT source_platforms FROM clients WHERE client_id = $1', [clientId]);
      return row?.source_platforms ?? {};
    },

    /**
     * Inserts each touchpoint, or replaces the one of the same touchpoint_id: one statement, all
     * or nothing. Rows are sorted by key (byte-wise, as the key is), so that concurrent requests
     * lock them in one order. `writtenAt` is the request's time, passed in (updated_at never goes
     * back, should an earlier request commit later). The attribution change is noted last
     * (src/attribution/changes.ts).
     */
    async upsert(tenant: Tenant, touchpoints: readonly DerivedTouchpoint[], writtenAt: Date): Promise<{ inserted: number; updated: number }> {
      const [counts] = await db.query<{ inserted: number; updated: number }>(
        `WITH ${writtenCte('$3', '$4')},
         noted AS (${noteAttributionChangeSql(WRITTEN_EARLIEST)})
         ${WRITTEN_COUNTS}`,
        [tenant.clientId, tenant.environment, JSON.stringify(touchpoints), writtenAt.toISOString()],
      );
      return counts!;
    },

    /**
     * upsert and link in one transaction that notes the attribution change of both once, last: a
     * transaction of the two that each noted would lock the change row between them
     * (src/attribution/changes.ts).
     */
    upsertAndLink(tenant: Tenant, touchpoints: readonly DerivedTouchpoint[], linksJson: string, at: Date): Promise<{ inserted: number; updated: number; linked: number }> {
      return db.transaction(async (tx) => {
        const tenantParams = [tenant.clientId, tenant.environment];
        const [written] = await tx.query<{ inserted: number; updated: number; earliest: string | null }>(
          `WITH ${writtenCte('$3', '$4')}
           SELECT counts.*, (${WRITTEN_EARLIEST})::text AS earliest FROM (${WRITTEN_COUNTS}) AS counts`,
          [...tenantParams, JSON.stringify(touchpoints), at.toISOString()],
        );
        const [linked] = await tx.query<{ linked: number; earliest: string | null }>(
          `WITH ${linkedCte('$3', '$4')}
           SELECT ${linksSent('$3')} AS linked, (${LINKED_EARLIEST})::text AS earliest`,
          [...tenantParams, linksJson, at.toISOString()],
        );
        await tx.query(noteAttributionChangeSql('SELECT least($3::timestamptz, $4::timestamptz)'), [...tenantParams, written!.earliest, linked!.earliest]);
        return { inserted: written!.inserted, updated: written!.updated, linked: linked!.linked };
      });
    },

    /** One page of the touchpoints a filter matches, by occurred_at then touchpoint_id, and how many there are. */
    async list(tenant: Tenant, filter: TouchpointFilter, page: number, pageSize: number): Promise<{ items: string; total: number }> {
      const params = new Parameters();
      const [client, environment] = [params.add(tenant.clientId, 'uuid'), params.add(tenant.environment, 'text')];
      // Every table's rows are the client's by its own condition, not only through a join: Citus
      // then sends the whole statement to the client's shard.
      const tenantOf = (alias: string) => `${alias}.client_id = ${client} AND ${alias}.environment = ${environment}`;
      const matched = matching(tenantOf, filter, params);
      const [limit, offset] = [params.add(pageSize, 'int'), params.add((page - 1) * pageSize, 'bigint')];
      const [row] = await db.query<{ items: string; total: number }>(
        `SELECT (SELECT count(*)::int FROM (${matched}) m) AS total,
                (SELECT ${touchpointsJson('p', 'p.occurred_at, p.touchpoint_id')}
                   FROM (SELECT * FROM (${matched}) m ORDER BY occurred_at, touchpoint_id LIMIT ${limit} OFFSET ${offset}) p
                   LEFT JOIN identities i ON ${tenantOf('i')} AND i.visitor_id = p.visitor_id
                   LEFT JOIN orders o ON ${tenantOf('o')} AND o.order_id = i.order_id) AS items`,
        params.values,
      );
      return row!;
    },

    /**
     * Links each visitor of `bodyJson` (`{"data": [...]}`, as received) to its customer or order,
     * replacing the visitor's earlier link: the link of the request written last holds. Sorted by
     * key, as touchpoints are; `linkedAt` is the request's time. Notes the attribution change
     * from the visitors' first touchpoints.
     */
    async link(tenant: Tenant, bodyJson: string, linkedAt: Date): Promise<number> {
      const [row] = await db.query<{ linked: number }>(
        `WITH ${linkedCte('$3', '$4')},
         noted AS (${noteAttributionChangeSql(LINKED_EARLIEST)})
         SELECT ${linksSent('$3')} AS linked`,
        [tenant.clientId, tenant.environment, bodyJson, linkedAt.toISOString()],
      );
      return row!.linked;
    },
  };
}

/**
 * The touchpoints and identities of the UAT test credentials: no source mapping, every
 * touchpoint new and every visitor linked, nothing kept, lists empty.
 */
export const standInTouchpoints: TouchpointRepository = {
  sourcePlatforms: async () => ({}),
  upsert: async (_tenant, touchpoints) => ({ inserted: touchpoints.length, updated: 0 }),
  upsertAndLink: async (_tenant, touchpoints, linksJson) => ({
    inserted: touchpoints.length,
    updated: 0,
    linked: (JSON.parse(linksJson) as { data: unknown[] }).data.length,
  }),
  list: async () => ({ items: '', total: 0 }),
  link: async (_tenant, bodyJson) => (JSON.parse(bodyJson) as { data: unknown[] }).data.length,
};
