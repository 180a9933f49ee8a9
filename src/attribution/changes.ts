import type { Tenant } from '../auth/tenant.js';
import type { Queryable } from '../db/index.js';

/*
 * What writes to touchpoints, identities and orders tell the kept daily totals of attribution
 * (src/attribution/daily-totals.ts, migration 0015): which kept days they may have changed. A write
 * notes the earliest instant whose credits or visits it may have changed (attribution_changes),
 * or, for late touchpoints and identity links, whose they are (attribution_change_keys, migration
 * 0024), which the report that marks kept days stale resolves (markChangedDaysStale). Each write
 * notes in its own transaction, last, its keys in key order, then its instant: every transaction
 * that writes locks its data rows first, then these rows in that order, so that writes of one
 * client cannot deadlock on them (a transaction of two writes that each noted would lock them
 * between them: the collector's touchpoints and links are noted together, after both). A report
 * takes the keys, then the instants, in that order too (takeChangedKeys), and resolves the keys
 * in a later statement, whose snapshot holds the writes that noted them.
 *
 * Cash credits and visits change from an instant on; accrual credits from a window before it.
 * What a write notes:
 *
 * - touchpoints inserted more than a day late, up to LATE_TOUCHPOINTS_KEYED of them in a write:
 *   their visitor_id and customer_id, and their times. A visit changes the visits of its day,
 *   and new visits (a visitor's first) of its day and of its visitor's first visit before it,
 *   which is among the visitor's visits after it; it changes the paths of its customer's orders
 *   from its time on, within the longest kept window.
 *   Its customer is its own customer_id, else its visitor's link, which only a reader after the
 *   link's write can tell: a report resolves the key, and a link writes the same key (below), so
 *   that of two concurrent writes of a visitor's touchpoint and link, the later waits for the
 *   earlier, and a report reads both notes or the earlier alone;
 * - other touchpoints (live ones, a backfill's, a replacement): the earliest of their times, and
 *   of the times of those they replaced, as the upsert replaced them (migration 0019);
 * - an identity link made or changed: its visitor's key, `linked`. A new link to a customer
 *   changes the orders of that customer placed from the visitor's first touchpoint on; a link
 *   through an order, or changed, the paths of whichever customer from the visitor's first
 *   touchpoint on (the order's customer may be written concurrently, unseen by either write; a
 *   changed link's old customer is not read back). Both read when the key is resolved, so they
 *   see every touchpoint committed before. A link sent again as it is: nothing;
 * - an order written: the earliest of its time of purchase before (read under the row's lock,
 *   not from the statement's snapshot, which a concurrent write may have overtaken) and after;
 *   and the keys of the visitors linked through it, as changed links (their touchpoints become
 *   its customer's, in the paths of the customer's other orders);
 * - an erasure: -infinity, and its client's keys are dropped.
 */

/**
 * SQL lowering the change instant of the client `$1`, environment `$2`, to the single value
 * `earliest` selects (an instant, -infinity, or NULL when nothing changed: no row written). Live
 * traffic seldom lowers it: the row is then left as it is, not written again by every batch.
 * `after`: a WITH item read whole first, whose rows are so locked before this one (noteChangeCtes).
 */
export const noteAttributionChangeSql = (earliest: string, after?: string) => `
  INSERT INTO attribution_changes AS c (client_id, environment, slot, earliest)
  SELECT $1, $2, pg_backend_pid() % ${CHANGE_SLOTS}, e.earliest
    FROM (${earliest}) AS e (earliest)${after ? ` CROSS JOIN (SELECT count(*) FROM ${after}) AS after_keys` : ''}
   WHERE e.earliest IS NOT NULL
  ON CONFLICT (client_id, environment, slot) DO UPDATE SET earliest = excluded.earliest WHERE excluded.earliest < c.earliest`;

/**
 * Rows a client's change instant is spread over, by the writing connection: a row's lock is held
 * until its writer commits, and one row had the collector's concurrent groups of a client wait
 * for each other's commits (a third of its throughput). The instant is the least of them.
 */
const CHANGE_SLOTS = 8;

/** Every instant may have changed. */
export const EVERY_INSTANT = `SELECT '-infinity'::timestamptz`;

/** Touchpoints inserted more than a day late that a write notes by key, at most; more (a backfill) are noted by their earliest time. */
export const LATE_TOUCHPOINTS_KEYED = 100;

/** How late a touchpoint inserted is noted by key rather than by its time: live traffic notes only today's days, which are not kept. */
export const LATE_AFTER = "interval '1 day'";

/** How a key noted came to be: what it may have changed (migration 0024, attribution_change_keys.linked). */
export const LINKED = { none: 0, newToCustomer: 1, changed: 2 } as const;

/**
 * SQL noting the keys of the relation `keys` (columns visitor_id and customer_id, text, '' for
 * none; earliest and latest, timestamptz; linked, int) for the client `$1`, environment `$2`:
 * one row each, merged with what earlier writes noted there, in key order.
 */
export const noteChangedKeysSql = (keys: string) => `
  INSERT INTO attribution_change_keys AS k (client_id, environment, visitor_id, customer_id, earliest, latest, linked)
  SELECT $1, $2, n.visitor_id, n.customer_id, min(n.earliest), max(n.latest), max(n.linked) FROM (${keys}) AS n
   GROUP BY n.visitor_id, n.customer_id
   ORDER BY n.visitor_id COLLATE "C", n.customer_id COLLATE "C"
  ON CONFLICT (client_id, environment, visitor_id, customer_id) DO UPDATE SET
    earliest = least(k.earliest, excluded.earliest), latest = greatest(k.latest, excluded.latest), linked = greatest(k.linked, excluded.linked)
  RETURNING 1`;

/**
 * SQL of the keys of visitors whose link changed, as noteChangedKeysSql takes them: `linked` (SQL
 * of a LINKED value) for each `visitor_id` of the relation `visitors`.
 */
export const visitorKeysSql = (visitors: string, linked: string) =>
  `SELECT visitor_id, '' AS customer_id, NULL::timestamptz AS earliest, NULL::timestamptz AS latest, ${linked} AS linked FROM ${visitors}`;

/**
 * The items of a WITH clause noting a write's change, last: the keys of the relation `keys`
 * (noteChangedKeysSql), then the instant `earliest` selects (noteAttributionChangeSql), its row
 * locked after theirs.
 */
export const noteChangeCtes = (keys: string, earliest: string) => `
  noted_keys AS (${noteChangedKeysSql(keys)}),
  noted AS (${noteAttributionChangeSql(earliest, 'noted_keys')})`;

/** A key noted (attribution_change_keys, migration 0024), as taken. */
export interface ChangedKey {
  visitor_id: string;
  customer_id: string;
  earliest: string | null;
  latest: string | null;
  linked: number;
}

/**
 * Takes the keys a client's writes noted: locks them in the order writes lock them (waiting for
 * a write noting one to commit, whose note it then reads as that write left it), and deletes
 * them. Keys written after the statement began are the next report's. The report's first lock
 * after its client's (markChangedDaysStale), and an erasure's. The times are made text outside
 * the DELETE: the cast reads the session's time zone, which Citus refuses in a RETURNING.
 */
export function takeChangedKeys(tx: Queryable, { clientId, environment }: Tenant): Promise<ChangedKey[]> {
  return tx.query<ChangedKey>(
    `WITH taken AS (
       SELECT visitor_id, customer_id FROM attribution_change_keys
        WHERE client_id = $1 AND environment = $2
        ORDER BY visitor_id COLLATE "C", customer_id COLLATE "C"
          FOR UPDATE
     ),
     deleted AS (
       DELETE FROM attribution_change_keys k USING taken t
        WHERE k.client_id = $1 AND k.environment = $2 AND k.visitor_id = t.visitor_id AND k.customer_id = t.customer_id
       RETURNING k.visitor_id, k.customer_id, k.earliest, k.latest, k.linked
     )
     SELECT visitor_id, customer_id, earliest::text AS earliest, latest::text AS latest, linked FROM deleted`,
    [clientId, environment],
  );
}

