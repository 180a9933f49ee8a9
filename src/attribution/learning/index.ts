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
  const [learnt] = await learntForEach(tx, tenant, [{ model, window }], start);
  return learnt!.learnt;
}

/** What each of `asked` learnt before a period starting at `start`: the client's settings and the training period read once. */
async function learntForEach(tx: Queryable, tenant: Tenant, asked: readonly Asked[], start: PeriodStart): Promise<(Asked & { learnt: Learnt })[]> {
  const settings = await learningSettings(tx, tenant.clientId);
  const training = await trainingPeriodBefore(tx, start, settings.training_days);
  const learnt = [];
  for (const { model, window } of asked) learnt.push({ model, window, learnt: await learntModel(tx, tenant, { model, window, settings, training }) });
  return learnt;
}

type Asked = { model: DataDrivenModelId; window: AttributionWindow };

/** The weights a statement credits by, of what models learnt (under one client's settings). */
export function learntWeightsOf(learnt: readonly (Asked & { learnt: Learnt })[]): LearntWeights {
  return {
    grouping: learnt[0]?.learnt.summary.channel_grouping ?? NOTHING_LEARNT.grouping,
    weights: learnt.flatMap(({ model, window, learnt: { weights } }) =>
      Object.entries(weights).map(([state, weight]) => ({ model, windowDays: windowDaysSql(window), state, weight })),
    ),
    warnings: learnt.flatMap(({ learnt: { summary } }) => (summary.warning ? [summary.warning] : [])),
  };
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
  const asked = new Map<string, Asked>();
  for (const { model, window } of plan.attribution ?? []) if (isDataDriven(model)) asked.set(`${model}/${window}`, { model, window });
  if (asked.size === 0) return undefined;
  const start: PeriodStart = plan.period.kind === 'days' ? { fromDay: plan.period.from, timeZone: plan.timeZone } : { fromInstant: plan.period.from };
  return db.transaction(async (tx) => learntWeightsOf(await learntForEach(tx, tenant, [...asked.values()], start)), { signal });
}
