import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import type { TenantShare } from '../db/tenant-share.js';
import { CREDIT_PART, creditsSql } from './credits-sql.js';
import { UNLIMITED, type AttributionWindow, type ModelId } from './models.js';
import { pathsSql } from './paths.js';

/** Credited revenue is exact until it is written out, then rounded to this many decimal places, as exports round money. */
export const REVENUE_SCALE = 6;

export type AttributionExplainer = ReturnType<typeof createAttributionExplainer>;

export function createAttributionExplainer(db: Database, share: TenantShare) {
  return {
    /**
     * One order's path under `model` and `window`, each touchpoint with its credit (parts of a
     * billion written as a decimal of 9 places) and its share of the purchase total: the same
     * statement as an export's (paths.ts and creditsSql), for one order. JSON text written by the
     * database, so that amounts keep their exact decimals; undefined when the client has no such
     * order. Within the tenant's share of the database; given up, its statement cancelled, when
     * `signal` aborts.
     */
    async explain(tenant: Tenant, orderId: string, model: ModelId, window: AttributionWindow, signal?: AbortSignal): Promise<string | undefined> {
      const [row] = await share.run(tenant, () => db.transaction((tx) => tx.query<{ explanation: string }>(
        `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders: { orderId: '$3::text' }, windows: [window] })}
         SELECT json_build_object(
                  'order_id', p.order_id, 'customer_id', p.customer_id, 'time_of_purchase', utc_iso(p.time_of_purchase),
                  'purchase_total', p.purchase_total, 'currency', p.currency, 'first_time', p.first_order,
                  'model', $4::text, 'window', coalesce(to_json(p.window_days), to_json('${UNLIMITED}'::text)), 'unattributed', c.unattributed,
                  'touchpoints', c.touchpoints)::text AS explanation
           FROM paths p
          CROSS JOIN (
            SELECT coalesce(json_agg(json_build_object(
                     'touchpoint_id', touchpoint_id, 'occurred_at', utc_iso(occurred_at), 'type', type, 'channel', channel,
                     'platform_name', platform_name, 'campaign_id', campaign_id, 'adset_id', adset_id, 'ad_id', ad_id,
                     'credit', credit_parts * ${CREDIT_PART},
                     'revenue', round(credit_parts * purchase_total * ${CREDIT_PART}, ${REVENUE_SCALE})) ORDER BY path_position)
                       FILTER (WHERE NOT unattributed), '[]') AS touchpoints,
                   bool_or(unattributed) AS unattributed
              FROM (${creditsSql('candidates', [model])}) AS credited
          ) AS c`,
        [tenant.clientId, tenant.environment, orderId, model],
      ), { signal }));
      return row?.explanation;
    },
  };
}

/** The UAT test credentials keep no orders: there is none to explain. */
export const standInExplainer: AttributionExplainer = {
  explain: async () => undefined,
};
