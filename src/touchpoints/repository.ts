import type { Tenant } from '../auth/tenant.js';
import { LATE_AFTER, LATE_TOUCHPOINTS_KEYED, LINKED, noteChangeCtes, noteChangedKeysSql, visitorKeysSql } from '../attribution/index.js';
import { ClientGoneError } from '../db/errors.js';
import type { Database } from '../db/index.js';
import { AD_FIELDS, UTM_FIELDS, type AdField, type DerivedTouchpoint, type SourcePlatforms, type UtmField } from './derive.js';

export interface TouchpointFilter {
  visitor_id?: string;
  customer_id?: string;
  /** Inclusive bounds of occurred_at. */
  start?: string;
  end?: string;
}

/** The columns a touchpoint is written to, with their types. */
const COLUMNS: [keyof DerivedTouchpoint, string][] = [
  ['touchpoint_id', 'text'],
  ['occurred_at', 'timestamptz'],
  ['type', 'text'],
  ['visitor_id', 'text'],
  ['customer_id', 'text'],
  ['landing_url', 'text'],
  ['referrer', 'text'],
  ...UTM_FIELDS.map((field): [UtmField, string] => [field, 'text']),
  ['click_ids', 'jsonb'],
  ...AD_FIELDS.map((field): [AdField, string] => [field, 'text']),
  ['channel', 'text'],
];
const NAMES = COLUMNS.map(([name]) => name).join(', ');
const VALUES = COLUMNS.filter(([name]) => name !== 'touchpoint_id').map(([name]) => name);

/**
 * The parameters of a write of `touchpoints` at `at`, after the tenant's: the time ($3), then each
 * of COLUMNS as a JSON array of its values as text ($4 on). PostgreSQL reads these arrays in 3 µs
 * a touchpoint less than the same touchpoints as a JSON array of records, whose keys it looks up
 * in every record (docs/benchmarks.md, "Where ingestion's time goes").
 */
function writeParameters(touchpoints: readonly DerivedTouchpoint[], at: Date, { collected }: WrittenBy): unknown[] {
  const asText = (value: DerivedTouchpoint[keyof DerivedTouchpoint]) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : value);
  return [at.toISOString(), ...COLUMNS.map(([name]) => JSON.stringify(touchpoints.map((touchpoint) => asText(touchpoint[name])))), collected];
}
const COLLECTED_PARAM = `$${COLUMNS.length + 4}::boolean`;

/**
 * Who writes touchpoints: `collected` when it is the public collector (no credentials), whose
 * touchpoints replace only those it wrote itself, never one written through the API or Segment
 * (migration 0029).
 */
export interface WrittenBy {
  collected: boolean;
}
export const AUTHENTICATED: WrittenBy = { collected: false };
export const PUBLIC_COLLECTOR: WrittenBy = { collected: true };

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
 * `written`: the touchpoints of writeParameters inserted or replaced at its time, with whether
 * each was inserted, its keys, its occurred_at and the one it replaced. The tenant is $1, $2.
 *
 * Touchpoints have no foreign key to clients: its check, run for every row, was a sixth of the
 * statement's time (migration 0025). `client` takes the lock the check took, once, and without
 * the client row nothing is inserted; the client's deletion waits for the lock and removes what
 * was written before it (src/clients/deletion.ts).
 */
const WRITTEN_CTE = `client AS MATERIALIZED (SELECT 1 FROM clients WHERE client_id = $1 FOR KEY SHARE),
written AS (
  INSERT INTO touchpoints AS t (client_id, environment, ${NAMES}, collected, created_at, updated_at)
  SELECT $1, $2, ${COLUMNS.map(([name, type]) => `${name}::${type}`).join(', ')}, ${COLLECTED_PARAM}, $3::timestamptz, $3::timestamptz
    FROM client, ROWS FROM (${COLUMNS.map((_, index) => `json_array_elements_text($${index + 4}::json)`).join(', ')}) AS r(${NAMES})
   ORDER BY touchpoint_id COLLATE "C"
  ON CONFLICT (client_id, environment, touchpoint_id) DO UPDATE SET
    ${VALUES.map((name) => `${name} = excluded.${name}`).join(', ')},
    collected = excluded.collected,
    updated_at = greatest(t.updated_at, excluded.updated_at),
    replaced_occurred_at = t.occurred_at
  WHERE t.collected OR NOT excluded.collected
  RETURNING xmax = 0 AS inserted, visitor_id, customer_id, occurred_at, replaced_occurred_at)`;
/**
 * Whether a touchpoint of `written` was inserted more than a day (LATE_AFTER) before the write's
 * time. Not in the INSERT's RETURNING, which Citus computes on a worker and so refuses a stable
 * expression in (the time arithmetic reads the session's time zone).
 */
const LATE = `(inserted AND occurred_at < $3::timestamptz - ${LATE_AFTER})`;
/**
 * After WRITTEN_CTE, `keyed`: the keys of the touchpoints of `written` noted by key, as
 * noteChangedKeysSql takes them (src/attribution/changes.ts): the late ones, when there are at
 * most LATE_TOUCHPOINTS_KEYED of them.
 */
const KEYED_CTE = `keyed AS (
  SELECT coalesce(visitor_id, '') AS visitor_id, coalesce(customer_id, '') AS customer_id, occurred_at AS earliest, occurred_at AS latest, ${LINKED.none} AS linked
    FROM written WHERE ${LATE} AND (SELECT count(*) FROM written WHERE ${LATE}) <= ${LATE_TOUCHPOINTS_KEYED})`;
/**
 * The attribution change of the touchpoints of `written` not noted by key (after KEYED_CTE): the
 * earliest of their times, and of the times of those they replaced, as the upsert replaced them
 * (migration 0019). A pipeline that sends a batch again (a retry) so notes the batch's own days,
 * where it used to note every instant and drop every kept day of its client.
 */
const WRITTEN_EARLIEST = `SELECT min(least(occurred_at, replaced_occurred_at)) FROM written WHERE NOT (${LATE} AND EXISTS (SELECT FROM keyed))`;
/** How many touchpoints `written` inserted and replaced, and whether their client still exists (the lock of WRITTEN_CTE found its row). */
const WRITTEN_COUNTS =
  'SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated, EXISTS (SELECT 1 FROM client) AS client_found FROM written';
type WrittenCounts = { inserted: number; updated: number; client_found: boolean };

/** The counts of a write, once its client is known to exist: a client deleted since the request was authenticated had nothing written. */
function countsOf({ inserted, updated, client_found }: WrittenCounts): { inserted: number; updated: number } {
  if (!client_found) throw new ClientGoneError();
  return { inserted, updated };
}

/**
 * `linked`: the visitors whose link the links of `body` (`{"data": [...]}`) made or changed at `at`,
 * each replacing its earlier link. A link sent again as it is (a shop identifying its logged-in
 * customer on every page) is left as it is: it changes no path, and noting it would make the kept
 * days from the visitor's first touchpoint on stale, weeks of them, at every page view.
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
/** The keys `linked` notes (src/attribution/changes.ts): each visitor's, as a new link to a customer or a changed one. */
const LINKED_KEYS = visitorKeysSql('linked', `CASE WHEN inserted AND customer_id IS NOT NULL THEN ${LINKED.newToCustomer} ELSE ${LINKED.changed} END`);
/** Keys as JSON (keyedCte's columns), read back by noteChangedKeysSql. */
const KEYS_OF_JSON = 'SELECT * FROM json_to_recordset($3::json) AS k(visitor_id text, customer_id text, earliest timestamptz, latest timestamptz, linked int)';

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
     * Inserts each touchpoint, or replaces the one of the same touchpoint_id (the collector's only
     * those it wrote, `writtenBy`; the others are left as they are, and not counted): one
     * statement, all or nothing. Rows are sorted by key (byte-wise, as the key is), so that concurrent requests
     * lock them in one order. `writtenAt` is the request's time, passed in (updated_at never goes
     * back, should an earlier request commit later). The attribution change is noted last
     * (src/attribution/changes.ts).
     */
    async upsert(tenant: Tenant, touchpoints: readonly DerivedTouchpoint[], writtenAt: Date, writtenBy = AUTHENTICATED): Promise<{ inserted: number; updated: number }> {
      const [counts] = await db.query<WrittenCounts>(
        `WITH ${WRITTEN_CTE}, ${KEYED_CTE}, ${noteChangeCtes('SELECT * FROM keyed', WRITTEN_EARLIEST)}
         ${WRITTEN_COUNTS}`,
        [tenant.clientId, tenant.environment, ...writeParameters(touchpoints, writtenAt, writtenBy)],
      );
      return countsOf(counts!);
    },

    /**
     * upsert and link in one transaction that notes the attribution change of both once, last:
     * a transaction of the two that each noted would lock the notes' rows between them
     * (src/attribution/changes.ts).
     */
    upsertAndLink(
      tenant: Tenant,
      touchpoints: readonly DerivedTouchpoint[],
      linksJson: string,
      at: Date,
      writtenBy = AUTHENTICATED,
    ): Promise<{ inserted: number; updated: number; linked: number }> {
      return db.transaction(async (tx) => {
        const tenantParams = [tenant.clientId, tenant.environment];
        const [written] = await tx.query<WrittenCounts & { earliest: string | null; keys: unknown[] | null }>(
          `WITH ${WRITTEN_CTE}, ${KEYED_CTE}
           SELECT counts.*, (${WRITTEN_EARLIEST})::text AS earliest, (SELECT json_agg(keyed) FROM keyed) AS keys FROM (${WRITTEN_COUNTS}) AS counts`,
          [...tenantParams, ...writeParameters(touchpoints, at, writtenBy)],
        );
        const counts = countsOf(written!);
        const [linked] = await tx.query<{ linked: number; keys: unknown[] | null }>(
          `WITH ${linkedCte('$3', '$4')}
           SELECT ${linksSent('$3')} AS linked, (SELECT json_agg(k) FROM (${LINKED_KEYS}) AS k) AS keys`,
          [...tenantParams, linksJson, at.toISOString()],
        );
        await tx.query(
          `WITH ${noteChangeCtes(KEYS_OF_JSON, 'SELECT $4::timestamptz')} SELECT`,
          [...tenantParams, JSON.stringify([...(written!.keys ?? []), ...(linked!.keys ?? [])]), written!.earliest],
        );
        return { ...counts, linked: linked!.linked };
      });
    },

    /** One page of the touchpoints a filter matches, by occurred_at then touchpoint_id, and how many there are. */
    async list(tenant: Tenant, filter: TouchpointFilter, page: number, pageSize: number): Promise<{ items: string; total: number }> {
      const params = new Parameters();
      const [client, environment] = [params.add(tenant.clientId, 'uuid'), params.add(tenant.environment, 'environment')];
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
     * key, as touchpoints are; `linkedAt` is the request's time. Notes the visitors' keys.
     */
    async link(tenant: Tenant, bodyJson: string, linkedAt: Date): Promise<number> {
      const [row] = await db.query<{ linked: number }>(
        `WITH ${linkedCte('$3', '$4')},
         noted_keys AS (${noteChangedKeysSql(LINKED_KEYS)})
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
