import { DAY_MS } from '../calendar.js';
import { stateSql, type ChannelGrouping } from './learning/grouping.js';
import { CREDIT_PARTS, CREDIT_SCALE, DATA_DRIVEN_MODELS, DECAY_WEIGHT_UNIT, DIRECT, HALF_LIFE_MS, NON_CLICK_CHANNELS, VIEW_WINDOW_MS, type ModelId } from './models.js';

/*
 * The rules of models.ts in SQL. Credits are computed where the touchpoints are stored: an
 * export sums them per ad object and bucket beside the spend in the same statement, so only its
 * rows leave the database, where crediting in Node would stream out every path touchpoint of
 * every model asked (tens of millions over a year) to add them up. The explanation of one order
 * runs the same query, so that it shows what exports count (time_decay's floating point can
 * differ between V8 and the C library, see models.ts).
 *
 * Every model asked is credited in one pass of window functions over the candidates: the models
 * differ only in which candidates make their path (visits; visits and recent views) and in a
 * closed form of their credit in that pass's columns. Every model but time_decay gives equal
 * shares to some touchpoints, and the largest remainder method gives the parts left over to the
 * last of the equal shares; time_decay's remainders differ, so it ranks them in a second pass, as
 * the data-driven models do (a touchpoint's share is its state's learnt weight, divided equally
 * among the state's touchpoints in the path: their states are counted in a pass before).
 * A year of three models took 20 s more when each sorted the candidates on its own.
 */

const P = CREDIT_PARTS;

/** One part of a credit as a numeric literal: a product with it stays exact, with CREDIT_SCALE more decimals. */
export const CREDIT_PART = `0.${'1'.padStart(CREDIT_SCALE, '0')}`;

const IN_WINDOW = `coalesce((window_days IS NULL OR occurred_at >= time_of_purchase - window_days * interval '${DAY_MS} milliseconds')
                             AND occurred_at <= time_of_purchase, false)`;
/** Whether a candidate (of the columns creditsSql names) is in its path, of visits or of visits and recent views. */
const membership: Record<PathKind, string> = {
  visits: `${IN_WINDOW} AND type = 'visit'`,
  views: `${IN_WINDOW} AND (type = 'visit' OR occurred_at >= time_of_purchase - interval '${VIEW_WINDOW_MS} milliseconds')`,
};
/** Whether a candidate is in the path of visits that all models but clicks_and_views credit. */
export const IN_VISITS_PATH = membership.visits;

/** Which candidates make a model's path: its visits, or (clicks_and_views) its visits and the views of the last 24 hours. */
type PathKind = 'visits' | 'views';
const kindOf = (model: ModelId): PathKind => (model === 'clicks_and_views' ? 'views' : 'visits');

/** The `rank`-th of `count` equal shares of `whole` parts: the last `whole % count` get a part more. */
const equalShare = (rank: string, count: string, whole = P) =>
  `(${whole} / (${count}) + CASE WHEN (${rank}) > (${count}) - ${whole} % (${count}) THEN 1 ELSE 0 END)`;

/** A touchpoint's floor of its share and a part more when its remainder ranks among the parts left over (sharedByRemainders). */
function shareOfRemainders(name: string) {
  return `${name}_floor + CASE WHEN ${name}_rank <= ${P} - ${name}_floor_total THEN 1 ELSE 0 END`;
}
/** A data-driven model's credit: by the learnt weights, or equal shares when no state of the path weighs anything. */
function learntCredit(model: string) {
  return `CASE WHEN ${model}_total > 0 THEN ${shareOfRemainders(model)} ELSE ${equalShare('visits_position', 'visits_length')} END`;
}

const clicksCredit = (kind: PathKind) => `CASE WHEN ${kind}_clicks = 0 THEN ${equalShare(`${kind}_position`, `${kind}_length`)}
                     WHEN path_click THEN ${equalShare(`${kind}_clicks_so_far`, `${kind}_clicks`)} ELSE 0 END`;

/** Each model's credit of a touchpoint of its path, in the columns of the positioned pass. */
const CREDITS: Record<ModelId, string> = {
  first_touch: `CASE WHEN visits_position = 1 THEN ${P} ELSE 0 END`,
  last_touch: `CASE WHEN visits_position = visits_length THEN ${P} ELSE 0 END`,
  last_touch_non_direct: `CASE WHEN visits_non_direct = 0 AND visits_position = visits_length THEN ${P}
                               WHEN channel <> '${DIRECT}' AND visits_non_direct_so_far = visits_non_direct THEN ${P} ELSE 0 END`,
  linear: equalShare('visits_position', 'visits_length'),
  // Ends 40% each; those between share 20%, the k-th of them being the (k + 1)-th of the path.
  position_based: `CASE WHEN visits_length <= 2 THEN ${equalShare('visits_position', 'visits_length')}
                        WHEN visits_position IN (1, visits_length) THEN ${(2 * P) / 5}
                        ELSE ${equalShare('visits_position - 1', 'visits_length - 2', P / 5)} END`,
  time_decay: shareOfRemainders('decay'),
  clicks_only: clicksCredit('visits'),
  clicks_and_views: clicksCredit('views'),
  markov: learntCredit('markov'),
  shapley: learntCredit('shapley'),
};

/**
 * time_decay's weight: the same floating-point steps as models.ts, on the age in milliseconds. The
 * exponent stops at −64, whose weight rounds to 0 (then 1) as any lower one's does: PostgreSQL's
 * power() fails on an underflow (ages past about 20 years, in the unlimited window).
 */
const DECAY_WEIGHT = `greatest(1, floor(power(2::float8, greatest(-64::float8, -(((extract(epoch FROM time_of_purchase) - extract(epoch FROM occurred_at)) * 1000)::float8
                                                                                / ${HALF_LIFE_MS}::float8))) * ${DECAY_WEIGHT_UNIT}::float8)::bigint)`;

/**
 * The learnt weights a statement credits by: the relation `relation` (columns model, window_days,
 * state, weight: bigint) of the weights of each data-driven model and window, and the grouping
 * their states are of.
 */
export interface LearntWeightsSql {
  relation: string;
  grouping: ChannelGrouping;
}

/**
 * `touchpoints` with each visit's state, its learnt weight under each of `models` (0 for a state
 * not learnt), the number of the path's visits of its state (`state_length`) and the id of one of
 * them (`state_first`, the least).
 */
function statesCounted(touchpoints: string, models: readonly ModelId[], { relation, grouping }: LearntWeightsSql): string {
  // Joined by hashing: a weights relation has a row per state learnt, the candidates millions.
  const weights = models.map((model) => `coalesce(w_${model}.weight, 0) AS ${model}_weight`);
  const joins = models.map(
    (model) => `LEFT JOIN ${relation} w_${model}
                  ON w_${model}.model = '${model}' AND coalesce(w_${model}.window_days, -1) = coalesce(path.window_days, -1) AND w_${model}.state = path.state`,
  );
  // Unordered, so that the path's order is sorted within each path alone (incrementally) after it.
  const stateWindow = `PARTITION BY path_id, state`;
  return `(
        SELECT *, min(touchpoint_id COLLATE "C") FILTER (WHERE in_visits) OVER (${stateWindow}) AS state_first,
                  count(*) FILTER (WHERE in_visits) OVER (${stateWindow}) AS state_length
          FROM (SELECT path.*, ${weights.join(', ')}
                  FROM (SELECT *, ${stateSql(grouping)} AS state FROM ${touchpoints}) AS path
                  ${joins.join('\n                  ')}) AS path
      ) AS path`;
}

/**
 * `positioned` with a model's shares in whole parts by the largest remainder method: each
 * touchpoint's `floor` (null outside the path) and a rank of its `remainder`, the later touchpoint
 * first on equal ones; shareOfRemainders gives the parts left over to the first ranks.
 */
function sharedByRemainders(positioned: string, name: string, floor: string, remainder: string): string {
  return `
    SELECT *, sum(${name}_floor) OVER (PARTITION BY path_id) AS ${name}_floor_total,
              row_number() OVER (PARTITION BY path_id ORDER BY ${name}_remainder DESC NULLS LAST, visits_position DESC) AS ${name}_rank
      FROM (SELECT *, ${floor} AS ${name}_floor, ${remainder} AS ${name}_remainder FROM (${positioned}) AS positioned) AS shared`;
}

const quoted = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ');

/**
 * The query crediting the paths of `candidates` by each of `models`. `candidates` names a relation
 * (a table or a CTE) with a row per touchpoint that may be in a path, and one with no touchpoint
 * (its columns null) for a path that has none, with the columns
 *
 *   path_id           what tells paths apart (an order and a window), of any type
 *   window_days       the window's days (int), NULL for UNLIMITED (windowDaysSql)
 *   time_of_purchase  timestamptz
 *   touchpoint_id, occurred_at (timestamptz), type ('visit' or 'view'), channel
 *
 * and any others the caller wants carried through (an ad object, the purchase total). The query
 * answers, for each model, the candidates in the model's path with `model`, `credit_parts`
 * (bigint, parts of CREDIT_PARTS), `path_position` and `unattributed` false; and for each path
 * that is empty under a model, one row of that path with `unattributed` true and all the parts
 * (its touchpoint columns are none of the path's). Working columns (`visits_*`, `views_*`,
 * `decay_*`, `path_*`) come too.
 */
export function creditsSql(candidates: string, models: readonly ModelId[], learnt?: LearntWeightsSql): string {
  const kinds = [...new Set(models.map(kindOf))];
  const decay = models.includes('time_decay');
  const learntModels = DATA_DRIVEN_MODELS.filter((model) => models.includes(model));
  if (learntModels.length > 0 && !learnt) throw new Error(`${learntModels.join(', ')}: credits need the weights learnt`);
  const running = (column: string, filter: string) => `count(*) FILTER (WHERE ${filter}) OVER (ordered ROWS UNBOUNDED PRECEDING) AS ${column}`;
  const whole = (column: string, filter: string) => `count(*) FILTER (WHERE ${filter}) OVER whole AS ${column}`;
  const kindColumns = kinds.flatMap((kind) => [
    running(`${kind}_position`, `in_${kind}`),
    whole(`${kind}_length`, `in_${kind}`),
    running(`${kind}_clicks_so_far`, `in_${kind} AND path_click`),
    whole(`${kind}_clicks`, `in_${kind} AND path_click`),
  ]);
  if (models.includes('last_touch_non_direct')) {
    const nonDirect = `in_visits AND channel <> '${DIRECT}'`;
    kindColumns.push(running('visits_non_direct_so_far', nonDirect), whole('visits_non_direct', nonDirect));
  }
  if (decay) kindColumns.push(`(sum(decay_weight) OVER whole)::bigint AS decay_total`);
  // A learnt weight counts once per state of the path: at one of the state's touchpoints.
  for (const model of learntModels) kindColumns.push(`(sum(${model}_weight) FILTER (WHERE in_visits AND touchpoint_id = state_first) OVER whole)::bigint AS ${model}_total`);
  let touchpoints = `(
        SELECT *, ${kinds.map((kind) => `${membership[kind]} AS in_${kind}`).join(', ')},
                  channel NOT IN (${quoted(NON_CLICK_CHANNELS)}) AS path_click
                  ${decay ? `, CASE WHEN ${membership.visits} THEN ${DECAY_WEIGHT} END AS decay_weight` : ''}
          FROM ${candidates}
      ) AS path`;
  if (learnt && learntModels.length > 0) touchpoints = statesCounted(touchpoints, learntModels, learnt);
  let positioned = `
    SELECT *, row_number() OVER (ordered ROWS UNBOUNDED PRECEDING) AS path_row, ${kindColumns.join(',\n              ')}
      FROM ${touchpoints}
    WINDOW ordered AS (PARTITION BY path_id ORDER BY occurred_at, touchpoint_id COLLATE "C"),
           whole AS (ordered ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)`;
  if (decay) positioned = sharedByRemainders(positioned, 'decay', `decay_weight * ${P} / decay_total`, `decay_weight * ${P} % decay_total`);
  for (const model of learntModels) {
    // A share is weight ÷ (its state's touchpoints × the path's total); remainders of different
    // denominators are ranked as exact fractions, scaled far past the smallest difference between two.
    const denominator = `(state_length * ${model}_total)`;
    positioned = sharedByRemainders(
      positioned,
      model,
      `CASE WHEN in_visits AND ${model}_total > 0 THEN ${model}_weight * ${P} / ${denominator} END`,
      `CASE WHEN in_visits AND ${model}_total > 0 THEN div((${model}_weight * ${P} % ${denominator})::numeric * 1e40, ${denominator}::numeric) END`,
    );
  }
  const credited = models.map(
    (model) =>
      `('${model}', in_${kindOf(model)}, ${kindOf(model)}_length, ${kindOf(model)}_position, CASE WHEN in_${kindOf(model)} THEN ${CREDITS[model]} END)`,
  );
  return `
    SELECT positioned.*, m.model, m.unattributed, CASE WHEN m.unattributed THEN ${P} ELSE m.credit END AS credit_parts,
           CASE WHEN NOT m.unattributed THEN m.path_rank END AS path_position
      FROM (${positioned}) AS positioned
     CROSS JOIN LATERAL (SELECT model, path_length = 0 AS unattributed, path_rank, credit
                           FROM (VALUES ${credited.join(',\n                                        ')}) AS m (model, in_path, path_length, path_rank, credit)
                          WHERE in_path OR (path_length = 0 AND path_row = 1)) AS m`;
}
