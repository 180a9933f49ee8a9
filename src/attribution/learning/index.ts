import type { Tenant } from '../../auth/tenant.js';
import type { Database, Queryable } from '../../db/index.js';
import { isDataDriven, windowDaysSql, type AttributionWindow, type DataDrivenModelId } from '../models.js';
import type { RowsPlan } from '../rows.js';
import type { ChannelGrouping } from './grouping.js';
import { learningSettings, learntModel, trainingPeriodBefore, type Learnt } from './training.js';

/**
 * The weights a statement credits its data-driven combinations by (rows.ts, credits-sql.ts): one
 * per model, window and state, and the grouping of the states.
 */
export interface LearntWeights {
  grouping: ChannelGrouping;
  weights: { model: DataDrivenModelId; windowDays: number | null; state: string; weight: number }[];
  /** What the answer says of them: models learnt from too few conversions. */
  warnings: string[];
}

/** Whether a plan has a data-driven combination, whose credits need learnt weights. */
export const usesLearntWeights = (plan: Pick<RowsPlan, 'attribution'>) => (plan.attribution ?? []).some(({ model }) => isDataDriven(model));

/** Weights learnt from no path: every path is credited as linear credits it (the stand-in store's). */
export const NOTHING_LEARNT: LearntWeights = { grouping: 'platform', weights: [], warnings: [] };

/** Where the period asked starts: its first local day, or its first instant. */
export type PeriodStart = { fromDay: string; timeZone: string } | { fromInstant: string };

/** What `model` learnt for `window` before a period starting at `start`, learnt now if it was not kept. */
export async function learntFor(
  tx: Queryable,
  tenant: Tenant,
  model: DataDrivenModelId,
  window: AttributionWindow,
  start: PeriodStart,
): Promise<Learnt> {
  const settings = await learningSettings(tx, tenant.clientId);
  const training = await trainingPeriodBefore(tx, start, settings.training_days);
  return learntModel(tx, tenant, { model, window, settings, training });
}

/**
 * The weights of the data-driven combinations of `plan`, learnt before its period, or undefined
 * when it has none. Its rows' statement needs them (exportRowsSql), so that every slice and
 * batch of an export credits by the same weights. Given up, its statement cancelled, when
 * `signal` aborts.
 */
export async function learnWeights(
  db: Database,
  tenant: Tenant,
  plan: Pick<RowsPlan, 'attribution' | 'period' | 'timeZone'>,
  signal?: AbortSignal,
): Promise<LearntWeights | undefined> {
  if (!usesLearntWeights(plan)) return undefined;
  const asked = new Map<string, { model: DataDrivenModelId; window: AttributionWindow }>();
  for (const { model, window } of plan.attribution ?? []) if (isDataDriven(model)) asked.set(`${model}/${window}`, { model, window });
  const start: PeriodStart = plan.period.kind === 'days' ? { fromDay: plan.period.from, timeZone: plan.timeZone } : { fromInstant: plan.period.from };
  return db.transaction(async (tx) => {
    const { channel_grouping: grouping } = await learningSettings(tx, tenant.clientId);
    const learnt: LearntWeights = { grouping, weights: [], warnings: [] };
    for (const { model, window } of asked.values()) {
      const { weights, summary } = await learntFor(tx, tenant, model, window, start);
      for (const [state, weight] of Object.entries(weights)) learnt.weights.push({ model, windowDays: windowDaysSql(window), state, weight });
      if (summary.warning) learnt.warnings.push(summary.warning);
    }
    return learnt;
  }, { signal });
}
