import { CREDIT_PARTS, CREDIT_SCALE, DAY_MS, DECAY_WEIGHT_UNIT, DIRECT, HALF_LIFE_MS, NON_CLICK_CHANNELS, VIEW_WINDOW_MS, type ModelId } from './models.js';

/*
 * The rules of models.ts in SQL. Credits are computed where the touchpoints are stored: an
 * export sums them per ad object and bucket beside the spend in the same statement, so only its
 * rows leave the database, where crediting in Node would stream out every path touchpoint of
 * every model asked (tens of millions over a year) to add them up. The explanation of one order
 * should run the same query, so that it shows what exports count (time_decay's floating point
 * can differ between V8 and the C library, see models.ts).
 *
 * Every model but time_decay gives equal shares to some touchpoints, so its credits have a closed
 * form in the columns of one pass of window functions over the path: the largest remainder
 * method gives the parts left over to the last of the equal shares. time_decay's remainders
 * differ, so it ranks them in a second pass.
 */

const P = CREDIT_PARTS;

/** One part of a credit as a numeric literal: a product with it stays exact, with CREDIT_SCALE more decimals. */
export const CREDIT_PART = `0.${'1'.padStart(CREDIT_SCALE, '0')}`;

/** The `rank`-th of `count` equal shares of `whole` parts: the last `whole % count` get a part more. */
const equalShare = (rank: string, count: string, whole = P) =>
  `(${whole} / (${count}) + CASE WHEN (${rank}) > (${count}) - ${whole} % (${count}) THEN 1 ELSE 0 END)`;

const CLICKS = `CASE WHEN path_clicks = 0 THEN ${equalShare('path_position', 'path_length')}
                     WHEN path_click THEN ${equalShare('path_clicks_so_far', 'path_clicks')} ELSE 0 END`;

/** Each model's credit of a path touchpoint, in the columns the positioned level adds (see creditsSql). */
const CREDITS: Record<Exclude<ModelId, 'time_decay'>, string> = {
  first_touch: `CASE WHEN path_position = 1 THEN ${P} ELSE 0 END`,
  last_touch: `CASE WHEN path_position = path_length THEN ${P} ELSE 0 END`,
  last_touch_non_direct: `CASE WHEN path_non_direct = 0 AND path_position = path_length THEN ${P}
                               WHEN channel <> '${DIRECT}' AND path_non_direct_so_far = path_non_direct THEN ${P} ELSE 0 END`,
  linear: equalShare('path_position', 'path_length'),
  // Ends 40% each; those between share 20%, the k-th of them being the (k + 1)-th of the path.
  position_based: `CASE WHEN path_length <= 2 THEN ${equalShare('path_position', 'path_length')}
                        WHEN path_position IN (1, path_length) THEN ${(2 * P) / 5}
                        ELSE ${equalShare('path_position - 1', 'path_length - 2', P / 5)} END`,
  clicks_only: CLICKS,
  clicks_and_views: CLICKS,
};

/** time_decay's weight: the same floating-point steps as models.ts, on the age in milliseconds. */
const DECAY_WEIGHT = `floor(power(2::float8, -(((extract(epoch FROM time_of_purchase) - extract(epoch FROM occurred_at)) * 1000)::float8
                                           / ${HALF_LIFE_MS}::float8)) * ${DECAY_WEIGHT_UNIT}::float8)::bigint`;

const quoted = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ');

/**
 * The query crediting the paths of `candidates` by `model`. `candidates` names a relation (a
 * table or a CTE) of touchpoints that may be in paths, with the columns
 *
 *   path_id           what tells paths apart (an order and a window), of any type
 *   window_days       one of WINDOWS
 *   time_of_purchase  timestamptz
 *   touchpoint_id, occurred_at (timestamptz), type ('visit' or 'view'), channel
 *
 * and any others the caller wants carried through (an ad object, the purchase total). The query
 * answers the candidates that are in their path, with those columns, `credit_parts` (bigint,
 * parts of CREDIT_PARTS) and its working columns (`path_*`, `decay_*`, `share_*`). A path_id
 * without rows is an empty path: unattributed. Several models are a UNION ALL of their queries.
 */
export function creditsSql(candidates: string, model: ModelId): string {
  const views = model === 'clicks_and_views' ? `OR (type = 'view' AND occurred_at >= time_of_purchase - interval '${VIEW_WINDOW_MS} milliseconds')` : '';
  const positioned = `
    SELECT *, row_number() OVER (ordered ROWS UNBOUNDED PRECEDING) AS path_position,
              count(*) OVER whole AS path_length,
              count(*) FILTER (WHERE path_click) OVER (ordered ROWS UNBOUNDED PRECEDING) AS path_clicks_so_far,
              count(*) FILTER (WHERE path_click) OVER whole AS path_clicks,
              count(*) FILTER (WHERE channel <> '${DIRECT}') OVER (ordered ROWS UNBOUNDED PRECEDING) AS path_non_direct_so_far,
              count(*) FILTER (WHERE channel <> '${DIRECT}') OVER whole AS path_non_direct
              ${model === 'time_decay' ? `, (sum(decay_weight) OVER whole)::bigint AS decay_total` : ''}
      FROM (
        SELECT *, channel NOT IN (${quoted(NON_CLICK_CHANNELS)}) AS path_click ${model === 'time_decay' ? `, ${DECAY_WEIGHT} AS decay_weight` : ''}
          FROM ${candidates}
         WHERE occurred_at BETWEEN time_of_purchase - window_days * interval '${DAY_MS} milliseconds' AND time_of_purchase
           AND (type = 'visit' ${views})
      ) AS path
    WINDOW ordered AS (PARTITION BY path_id ORDER BY occurred_at, touchpoint_id COLLATE "C"),
           whole AS (ordered ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)`;
  if (model !== 'time_decay') return `SELECT *, ${CREDITS[model]} AS credit_parts FROM (${positioned}) AS positioned`;
  return `
    SELECT *, share_floor + CASE WHEN row_number() OVER (PARTITION BY path_id ORDER BY share_remainder DESC, path_position DESC)
                                      <= ${P} - sum(share_floor) OVER (PARTITION BY path_id) THEN 1 ELSE 0 END AS credit_parts
      FROM (
        SELECT *, decay_weight * ${P} / decay_total AS share_floor, decay_weight * ${P} % decay_total AS share_remainder
          FROM (${positioned}) AS positioned
      ) AS shared`;
}
