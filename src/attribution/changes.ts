/*
 * What writes to touchpoints, identities and orders tell the kept daily totals of attribution
 * (src/exports/daily-totals.ts, migration 0015): the earliest instant whose credits or visits
 * they may have changed. Each write lowers its client's attribution_changes.earliest in its own
 * transaction, once and last: every transaction that writes locks its data rows first and this
 * row last, so that writes of one client cannot deadlock on it (a transaction of two writes
 * that each noted would lock it between them: the collector's touchpoints and links are noted
 * together, after both). The totals read and clear it.
 *
 * Cash credits and visits change from that instant on; accrual credits from a window before it.
 * What a write gives as its earliest instant:
 *
 * - a touchpoint inserted: its occurred_at (orders after it may have it in their path; it may be
 *   its visitor's first visit); replaced: the earlier of its occurred_at before (the replaced
 *   row's, as the upsert replaced it: migration 0019) and after;
 * - an identity link made to a customer: the first order of that customer placed from the
 *   visitor's first touchpoint on (those orders' paths take in the visitor's touchpoints), none
 *   if it has none; made through an order, or changed: the first touchpoint of the visitor (the
 *   order's customer may be written concurrently, unseen by either write; a changed link's old
 *   customer is not read back); sent again as it is: nothing;
 * - an order written: the earliest of its time of purchase before (read under the row's lock,
 *   not from the statement's snapshot, which a concurrent write may have overtaken) and after,
 *   and of the first touchpoint of the visitors linked through it (their touchpoints become its
 *   customer's, in the paths of the customer's other orders);
 * - an erasure: -infinity.
 */

/**
 * SQL lowering the change instant of the client `$1`, environment `$2`, to the single value
 * `earliest` selects (an instant, -infinity, or NULL when nothing changed: no row written). Live
 * traffic seldom lowers it: the row is then left as it is, not written again by every batch.
 */
export const noteAttributionChangeSql = (earliest: string) => `
  INSERT INTO attribution_changes AS c (client_id, environment, slot, earliest)
  SELECT $1, $2, pg_backend_pid() % ${CHANGE_SLOTS}, e.earliest FROM (${earliest}) AS e (earliest) WHERE e.earliest IS NOT NULL
  ON CONFLICT (client_id, environment, slot) DO UPDATE SET earliest = excluded.earliest WHERE excluded.earliest < c.earliest`;

/**
 * Rows a client's change instant is spread over, by the writing connection: a row's lock is held
 * until its writer commits, and one row had the collector's concurrent groups of a client wait
 * for each other's commits (a third of its throughput). The instant is the least of them.
 */
const CHANGE_SLOTS = 8;

/** Every instant may have changed. */
export const EVERY_INSTANT = `SELECT '-infinity'::timestamptz`;
