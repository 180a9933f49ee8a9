import type { Tenant } from '../../auth/tenant.js';
import type { Queryable } from '../../db/index.js';
import { localDayStart } from '../../db/local-days.js';
import { IN_VISITS_PATH } from '../credits-sql.js';
import { CREDIT_PARTS, UNLIMITED, windowDaysSql, type AttributionWindow, type DataDrivenModelId } from '../models.js';
import { notConvertingVisitsSql, pathsSql } from '../paths.js';
import { stateSql, type ChannelGrouping } from './grouping.js';
import { markovOf, type MarkovOrder, type Step } from './markov.js';
import { weightsOf, type PathCount } from './paths.js';
import { learnShapley } from './shapley.js';

/**
 * Training the data-driven models on a client's paths, and keeping what was learnt
 * (attribution_learnt_models, migration 0031) so that requests reuse it.
 *
 * A model is trained per client, environment, model, window and settings on a training period:
 * the client's `training_days` (default 90) before the period asked. Its converting paths are
 * the paths the engine credits (pathsSql) of the orders placed in the training period; its
 * paths that did not convert, of each customer (or unlinked visitor), its visits of the training
 * period in no order's path. What was learnt is reused until it is LEARNT_FOR old, then learnt
 * again from the data as it is then.
 */

/** A client's settings of the data-driven models (clients table, admin API). */
export interface LearningSettings {
  channel_grouping: ChannelGrouping;
  training_days: number;
  markov_order: MarkovOrder;
}
export const DEFAULT_TRAINING_DAYS = 90;
export const MAX_TRAINING_DAYS = 730;

/**
 * Fewer converting paths than this in the training period, and answers warn that the weights are
 * not to be trusted: Google Ads asked 300 conversions in 30 days of its own data-driven model.
 */
export const FEW_CONVERSIONS = 300;
/** How long what was learnt is reused before it is learnt again from the data then. */
export const LEARNT_FOR_MS = 15 * 60_000;

/** What a model learnt, as GET /v1/attribution/models/{id} answers it. */
export interface LearntModel {
  model: DataDrivenModelId;
  window: number | typeof UNLIMITED;
  channel_grouping: ChannelGrouping;
  /** markov only. */
  markov_order?: MarkovOrder;
  training: { from: string; before: string };
  computed_at: string;
  paths: { converting: number; not_converting: number };
  /** markov only: the probability that a path converts. */
  conversion_probability?: number;
  /** Each state: its removal effect (markov) or Shapley value (shapley), and the weight credits are shared by (the largest is 1). */
  channels: { channel: string; removal_effect?: number; shapley_value?: number; weight: number }[];
  transitions?: { from: string; to: string; count: number; probability: number }[];
  coalitions?: { channels: string[]; converting: number; paths: number; value: number }[];
  /** Said when the training period had fewer than FEW_CONVERSIONS converting paths. */
  warning: string | null;
}

export interface Learnt {
  summary: LearntModel;
  /** Integer weights of states, the largest CREDIT_PARTS (credits-sql.ts). */
  weights: Record<string, number>;
}

/** The instants of a training period, ISO text. */
export interface TrainingPeriod {
  from: string;
  before: string;
}

/**
 * The training period before a period asked that starts at the local day `fromDay` of `timeZone`,
 * or at the instant `fromInstant`.
 */
export async function trainingPeriodBefore(tx: Queryable, start: { fromDay: string; timeZone: string } | { fromInstant: string }, days: number): Promise<TrainingPeriod> {
  const [row] =
    'fromDay' in start
      ? await tx.query<TrainingPeriod>(
          `SELECT utc_iso(${localDayStart('($1::date - $3::int)', '$2')}) AS "from", utc_iso(${localDayStart('$1::date', '$2')}) AS before`,
          [start.fromDay, start.timeZone, days],
        )
      : await tx.query<TrainingPeriod>(`SELECT utc_iso($1::timestamptz - $2::int * interval '1 day') AS "from", utc_iso($1::timestamptz) AS before`, [start.fromInstant, days]);
  return row!;
}

/** The client's settings of the data-driven models. */
export async function learningSettings(tx: Queryable, clientId: string): Promise<LearningSettings> {
  const [row] = await tx.query<LearningSettings>('SELECT channel_grouping, training_days, markov_order FROM clients WHERE client_id = $1', [clientId]);
  return row ?? { channel_grouping: 'platform', training_days: DEFAULT_TRAINING_DAYS, markov_order: 1 };
}

interface Asked {
  model: DataDrivenModelId;
  window: AttributionWindow;
  settings: LearningSettings;
  training: TrainingPeriod;
}

/** What `model` learnt on the training period: kept, when learnt less than LEARNT_FOR ago, else learnt now and kept. */
export async function learntModel(tx: Queryable, tenant: Tenant, asked: Asked, now = new Date()): Promise<Learnt> {
  const key = keyOf(tenant, asked);
  const [kept] = await tx.query<{ summary: LearntModel; weights: Record<string, number> }>(
    `SELECT learnt AS summary, weights FROM attribution_learnt_models
      WHERE client_id = $1 AND environment = $2 AND model = $3 AND attribution_window = $4 AND channel_grouping = $5 AND markov_order = $6
        AND trained_from = $7 AND trained_before = $8 AND computed_at > $9`,
    [...key, new Date(now.getTime() - LEARNT_FOR_MS).toISOString()],
  );
  if (kept) return kept;
  const learnt = await learn(tx, tenant, asked, now);
  await tx.query(
    `INSERT INTO attribution_learnt_models AS k
            (client_id, environment, model, attribution_window, channel_grouping, markov_order, trained_from, trained_before, computed_at, weights, learnt)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (client_id, environment, model, attribution_window, channel_grouping, markov_order, trained_from, trained_before)
     DO UPDATE SET computed_at = excluded.computed_at, weights = excluded.weights, learnt = excluded.learnt`,
    [...key, now.toISOString(), JSON.stringify(learnt.weights), JSON.stringify(learnt.summary)],
  );
  // Training periods follow the periods asked: what no request asked for a day goes.
  await tx.query('DELETE FROM attribution_learnt_models WHERE client_id = $1 AND environment = $2 AND computed_at < $3', [
    tenant.clientId,
    tenant.environment,
    new Date(now.getTime() - 24 * 3_600_000).toISOString(),
  ]);
  return learnt;
}

const keyOf = ({ clientId, environment }: Tenant, { model, window, settings, training }: Asked) => [
  clientId,
  environment,
  model,
  String(window),
  settings.channel_grouping,
  model === 'markov' ? settings.markov_order : 0,
  training.from,
  training.before,
];

/** Trains `model` on the client's paths of the training period. */
async function learn(tx: Queryable, tenant: Tenant, { model, window, settings, training }: Asked, now: Date): Promise<Learnt> {
  const paths = pathStatesSql(window, settings.channel_grouping);
  const params = [tenant.clientId, tenant.environment, training.from, training.before];
  const counted = model === 'markov' ? await markovSteps(tx, paths, params, settings.markov_order) : await coalitions(tx, paths, params);
  const common = {
    model,
    window: windowDaysSql(window) ?? (UNLIMITED as typeof UNLIMITED),
    channel_grouping: settings.channel_grouping,
    training,
    computed_at: now.toISOString(),
    paths: counted.paths,
    warning:
      counted.paths.converting < FEW_CONVERSIONS
        ? `${model} learnt from ${counted.paths.converting} converting paths (fewer than ${FEW_CONVERSIONS}) between ${training.from} and ${training.before}: its weights may be chance`
        : null,
  };
  if ('steps' in counted) {
    const { removalEffects, conversionProbability, transitions } = markovOf(counted.steps, settings.markov_order);
    const weights = weightsOf(removalEffects, CREDIT_PARTS);
    const channels = Object.entries(removalEffects).map(([channel, effect]) => ({ channel, removal_effect: effect, weight: weights[channel]! / CREDIT_PARTS }));
    return {
      weights,
      summary: { ...common, markov_order: settings.markov_order, conversion_probability: conversionProbability, channels, transitions },
    };
  }
  const { values, coalitions: sets } = learnShapley(counted.sets);
  const weights = weightsOf(values, CREDIT_PARTS);
  const channels = Object.entries(values).map(([channel, value]) => ({ channel, shapley_value: value, weight: weights[channel]! / CREDIT_PARTS }));
  return { weights, summary: { ...common, channels, coalitions: sets } };
}

/**
 * The items of a WITH clause defining `path_states`: the client's paths of the training period
 * ($1 client, $2 environment, [$3, $4) the period), a row per touchpoint with its state, in
 * columns path_key, converted, occurred_at, touchpoint_id and state: each order's path (its
 * visits within the window, as the engine credits them), and the visits of each customer, or
 * unlinked visitor, in no order's path. What is learnt is counted of them in SQL (markovSteps,
 * coalitions): their sequences, a path's touchpoints each, stay in the database.
 */
function pathStatesSql(window: AttributionWindow, grouping: ChannelGrouping): string {
  const spec = { clientId: '$1::uuid', environment: '$2::environment' };
  return `${pathsSql({ ...spec, orders: { purchasedFrom: '$3::timestamptz', purchasedBefore: '$4::timestamptz' }, windows: [window], firstOrders: false })},
    ${notConvertingVisitsSql({ ...spec, visitedFrom: '$3::timestamptz', visitedBefore: '$4::timestamptz', window })},
    path_states AS (
      SELECT path_id AS path_key, true AS converted, occurred_at, touchpoint_id, ${stateSql(grouping)} AS state
        FROM candidates WHERE ${IN_VISITS_PATH}
      UNION ALL
      SELECT coalesce('c' || path_customer_id, 'v' || visitor_id, 't' || touchpoint_id), false, occurred_at, touchpoint_id, ${stateSql(grouping)}
        FROM not_converting)`;
}

type PathTotals = { converting: number; not_converting: number };

/**
 * The steps of the paths in a chain of `order`, counted. Each touchpoint is grouped by the
 * order + 1 states up to it (`seen` of them are its path's; lag() gives null before the first):
 * all but its last are the state it leaves (none at a path's first), its last `order` the state
 * it enters; a path's last touchpoint also ends it. The arrays of states are made here, of the
 * groups: in SQL, of every touchpoint, they cost a fifth of the statement.
 */
async function markovSteps(tx: Queryable, paths: string, params: unknown[], order: MarkovOrder): Promise<{ steps: Step[]; paths: PathTotals }> {
  const back = Array.from({ length: order }, (_, i) => order - i);
  const rows = await tx.query<{ states: (string | null)[]; seen: number; ended: boolean | null; count: string }>(
    `WITH ${paths},
          windows AS (
            SELECT ${back.map((n) => `lag(state, ${n}) OVER along AS back_${n}`).join(', ')}, state,
                   least(row_number() OVER along, ${order + 1})::int AS seen,
                   CASE WHEN lead(true) OVER along IS NULL THEN converted END AS ended
              FROM path_states
            WINDOW along AS (PARTITION BY converted, path_key COLLATE "C" ORDER BY occurred_at, touchpoint_id COLLATE "C"))
     SELECT ARRAY[${back.map((n) => `back_${n}`).join(', ')}, state] AS states, seen, ended, count(*)
       FROM windows GROUP BY ${back.map((n) => `back_${n}`).join(', ')}, state, seen, ended`,
    params,
  );
  const totals = { converting: 0, not_converting: 0 };
  const steps = rows.flatMap(({ states, seen, ended, count }): Step[] => {
    const window = states.slice(order + 1 - seen) as string[];
    const to = window.slice(-order);
    const step: Step = { from: seen > 1 ? window.slice(0, -1) : null, to, count: Number(count) };
    if (ended === null) return [step];
    totals[ended ? 'converting' : 'not_converting'] += Number(count);
    return [step, { from: to, to: ended ? 'conversion' : 'null', count: Number(count) }];
  });
  return { steps, paths: totals };
}

/** The sets of states of the paths, counted converting and not. */
async function coalitions(tx: Queryable, paths: string, params: unknown[]): Promise<{ sets: PathCount[]; paths: PathTotals }> {
  const rows = await tx.query<{ states: string[]; converting: string; not_converting: string }>(
    `WITH ${paths},
          sets AS (SELECT converted, array_agg(DISTINCT state COLLATE "C" ORDER BY state COLLATE "C") AS states FROM path_states GROUP BY path_key, converted)
     SELECT states, count(*) FILTER (WHERE converted) AS converting, count(*) FILTER (WHERE NOT converted) AS not_converting
       FROM sets GROUP BY states`,
    params,
  );
  const sets = rows.map((row) => ({ states: row.states, converting: Number(row.converting), notConverting: Number(row.not_converting) }));
  const total = (of: 'converting' | 'notConverting') => sets.reduce((sum, set) => sum + set[of], 0);
  return { sets, paths: { converting: total('converting'), not_converting: total('notConverting') } };
}
