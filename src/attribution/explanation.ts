import type { Tenant } from '../auth/tenant.js';
import type { Database, Queryable } from '../db/index.js';
import type { TenantShare } from '../db/tenant-share.js';
import { learntWeightsCte } from './attributed-rows.js';
import { CREDIT_PART, creditsSql } from './credits-sql.js';
import { learntFor, learntWeightsOf } from './learning/index.js';
import type { LearntModel } from './learning/training.js';
import { CREDIT_PARTS, isDataDriven, UNLIMITED, type AttributionWindow, type DataDrivenModelId, type ModelId } from './models.js';
import { pathsSql } from './paths.js';

/** Credited revenue is exact until it is written out, then rounded to this many decimal places, as exports round money. */
export const REVENUE_SCALE = 6;

export type AttributionExplainer = ReturnType<typeof createAttributionExplainer>;

export interface ExplanationAsked {
  model: ModelId;
  window: AttributionWindow;
  /**
   * The data-driven models: the first local day of the period whose credits are explained, which
   * they are trained before. Left out: the day of the purchase.
   */
  periodFrom?: string;
}

export function createAttributionExplainer(db: Database, share: TenantShare) {
  return {
    /**
     * One order's path under a model and window, each touchpoint with its credit (parts of a
     * billion written as a decimal of 9 places) and its share of the purchase total: the same
     * statement as an export's (paths.ts and creditsSql), for one order. Under a data-driven model,
     * each touchpoint's state and the weight its channel learnt, and the training period. JSON text
     * written by the database, so that amounts keep their exact decimals; undefined when the client
     * has no such order. Within the tenant's share of the database; given up, its statement
     * cancelled, when `signal` aborts.
     */
    async explain(tenant: Tenant, orderId: string, { model, window, periodFrom }: ExplanationAsked, signal?: AbortSignal): Promise<string | undefined> {
      return share.run(tenant, () =>
        db.transaction(async (tx) => {
          const learnt = isDataDriven(model) ? await learntBefore(tx, tenant, orderId, model, window, periodFrom) : undefined;
          if (learnt === null) return undefined;
          const params: unknown[] = [tenant.clientId, tenant.environment, orderId, model];
          const learntColumns = learnt
            ? `, 'state', state, 'channel_weight', ${model}_weight * 1.0 / ${CREDIT_PARTS}`
            : '';
          const [row] = await tx.query<{ explanation: string }>(
            `WITH ${pathsSql({ clientId: '$1::uuid', environment: '$2::environment', orders: { orderId: '$3::text' }, windows: [window] })}
                  ${learnt ? `, ${learntWeightsCte(learnt.weights, params)}` : ''}
             SELECT json_build_object(
                      'order_id', p.order_id, 'customer_id', p.customer_id, 'time_of_purchase', utc_iso(p.time_of_purchase),
                      'purchase_total', p.purchase_total, 'currency', p.currency, 'first_time', p.first_order,
                      'model', $4::text, 'window', coalesce(to_json(p.window_days), to_json('${UNLIMITED}'::text)), 'unattributed', c.unattributed,
                      ${learnt ? `'learnt', $${params.push(JSON.stringify(learnt.about))}::json,` : ''}
                      'touchpoints', c.touchpoints)::text AS explanation
               FROM paths p
              CROSS JOIN (
                SELECT coalesce(json_agg(json_build_object(
                         'touchpoint_id', touchpoint_id, 'occurred_at', utc_iso(occurred_at), 'type', type, 'channel', channel,
                         'platform_name', platform_name, 'campaign_id', campaign_id, 'adset_id', adset_id, 'ad_id', ad_id,
                         'credit', credit_parts * ${CREDIT_PART},
                         'revenue', round(credit_parts * purchase_total * ${CREDIT_PART}, ${REVENUE_SCALE})${learntColumns}) ORDER BY path_position)
                           FILTER (WHERE NOT unattributed), '[]') AS touchpoints,
                       bool_or(unattributed) AS unattributed
                  FROM (${creditsSql('candidates', [model], learnt && { relation: 'learnt_weights', grouping: learnt.weights.grouping })}) AS credited
              ) AS c`,
            params,
          );
          return row?.explanation;
        }, { signal }),
      );
    },

    /**
     * What a data-driven model learnt for `window` before the period from the local day
     * `periodFrom` (left out: today's, in the client's zone): learnt now if it was not kept.
     */
    async learnt(tenant: Tenant, model: DataDrivenModelId, window: AttributionWindow, periodFrom?: string, signal?: AbortSignal): Promise<LearntModel | undefined> {
      return share.run(tenant, () =>
        db.transaction(async (tx) => {
          const [client] = await tx.query<{ time_zone: string; today: string }>(
            `SELECT time_zone, to_char(now() AT TIME ZONE time_zone, 'YYYY-MM-DD') AS today FROM clients WHERE client_id = $1`,
            [tenant.clientId],
          );
          const { summary } = await learntFor(tx, tenant, model, window, { fromDay: periodFrom ?? client!.today, timeZone: client!.time_zone });
          return summary;
        }, { signal }),
      );
    },
  };
}

/**
 * The weights `model` learnt before the period from `periodFrom`, or the local day of the order's
 * purchase; null when the client has no such order.
 */
async function learntBefore(tx: Queryable, tenant: Tenant, orderId: string, model: DataDrivenModelId, window: AttributionWindow, periodFrom?: string) {
  const [order] = await tx.query<{ purchase_day: string; time_zone: string }>(
    `SELECT to_char(o.time_of_purchase AT TIME ZONE c.time_zone, 'YYYY-MM-DD') AS purchase_day, c.time_zone
       FROM orders o JOIN clients c ON c.client_id = o.client_id
      WHERE o.client_id = $1 AND o.environment = $2 AND o.order_id = $3`,
    [tenant.clientId, tenant.environment, orderId],
  );
  if (!order) return null;
  const learnt = await learntFor(tx, tenant, model, window, { fromDay: periodFrom ?? order.purchase_day, timeZone: order.time_zone });
  const { training, computed_at, channel_grouping, warning } = learnt.summary;
  return { weights: learntWeightsOf([{ model, window, learnt }]), about: { training, computed_at, channel_grouping, warning } };
}

/** The UAT test credentials keep no orders: there is none to explain, and no path to learn from. */
export const standInExplainer: AttributionExplainer = {
  explain: async () => undefined,
  learnt: async () => undefined,
};
