import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { localDayStart } from '../db/local-days.js';

export type Feed = 'orders' | 'spend' | 'touchpoints';

/** Records of a feed last written on a local day (null: before the days asked for), and the feed's last write ever. */
export interface FeedReceipts {
  feed: Feed;
  day: string | null;
  received: number;
  last_at: string;
}

/**
 * Records of each feed by the local day of their last write (updated_at: a record sent again
 * counts on the day it was last received), and the feed's last write ever. One pass over the
 * client's rows of each table: the days before the period are only read for the last write.
 */
const FEED_HEALTH_SQL = `
  WITH received AS (
    SELECT 'orders' AS feed, updated_at FROM orders WHERE client_id = $1 AND environment = $2
    UNION ALL SELECT 'spend', updated_at FROM spend_hourly WHERE client_id = $1 AND environment = $2
    UNION ALL SELECT 'spend', updated_at FROM spend_daily WHERE client_id = $1 AND environment = $2
    UNION ALL SELECT 'touchpoints', updated_at FROM touchpoints WHERE client_id = $1 AND environment = $2)
  SELECT feed, to_char(CASE WHEN updated_at >= ${localDayStart('$4::date', '$3')} THEN updated_at AT TIME ZONE $3 END, 'YYYY-MM-DD') AS day,
         count(*)::int AS received, utc_iso(max(updated_at)) AS last_at
    FROM received
   GROUP BY 1, 2`;

export type FeedRepository = ReturnType<typeof createFeedRepository>;

export function createFeedRepository(db: Database) {
  return {
    /** What the feeds of a tenant delivered, per day of `timeZone` from `firstDay` (YYYY-MM-DD) on. */
    receipts: (tenant: Tenant, timeZone: string, firstDay: string) =>
      db.query<FeedReceipts>(FEED_HEALTH_SQL, [tenant.clientId, tenant.environment, timeZone, firstDay]),
  };
}

/** The UAT test credentials keep nothing: no feed ever delivered. */
export const standInFeeds: FeedRepository = {
  receipts: async () => [],
};
