import { DAY_MS } from '../calendar.js';

/**
 * Attribution models: which touchpoints make an order's path, and how each model shares the
 * order among them. Pure rules, no database: the engine runs the same rules in SQL
 * (`credits-sql.ts`, so that millions of paths are credited where they are stored), and the
 * tests hold that SQL to this module.
 *
 * Credits are exact: whole parts of CREDIT_PARTS (a billion), so that an order's credits add
 * up to exactly 1 and credited revenue (credit × purchase_total) stays an exact decimal. Each
 * model gives every touchpoint of the path a whole weight; a touchpoint's credit is its share
 * of the path's weight rounded down to a part, and the parts left over (fewer than the path's
 * touchpoints) go one each to the touchpoints whose shares lost the most in rounding, the later
 * touchpoint first on equal losses (the largest remainder method): every credit is its exact
 * share rounded down or up to 9 decimal places.
 */

export const MODELS = [
  { id: 'first_touch', name: 'First touch', definition: 'All of the credit goes to the first touchpoint of the path.' },
  { id: 'last_touch', name: 'Last touch', definition: 'All of the credit goes to the last touchpoint of the path.' },
  {
    id: 'last_touch_non_direct',
    name: 'Last non-direct touch',
    definition: 'All of the credit goes to the last touchpoint whose channel is not direct; when every touchpoint is direct, to the last one.',
  },
  { id: 'linear', name: 'Linear', definition: 'The credit is shared equally among the touchpoints of the path.' },
  {
    id: 'position_based',
    name: 'Position-based (40/20/40)',
    definition:
      '40% to the first touchpoint, 40% to the last and 20% shared equally among those between; a path of one touchpoint gives it 100%, of two 50% each.',
  },
  {
    id: 'time_decay',
    name: 'Time decay (7-day half-life)',
    definition:
      'The credit is shared in proportion to weights of 2^(−age ÷ 7 days), age being the time from the touchpoint to the purchase: a touchpoint a week before the purchase weighs half as much as one at the purchase.',
  },
  {
    id: 'clicks_only',
    name: 'Clicks only',
    definition:
      'The credit is shared equally among the touchpoints whose channel is not direct, organic_search, email or sms; when there is none, equally among all the touchpoints of the path.',
  },
  {
    id: 'clicks_and_views',
    name: 'Clicks and views',
    definition: 'As clicks_only, over the path and the view touchpoints (ad impressions) of the 24 hours before the purchase.',
  },
  {
    id: 'markov',
    name: 'Data-driven (Markov chain)',
    definition:
      "Learnt from the client's paths, converting and not: each channel weighs its removal effect in an absorbing Markov chain (the share of conversions lost without it), and the credit is shared among the path's channels in proportion to their weights, equally among a channel's touchpoints.",
  },
  {
    id: 'shapley',
    name: 'Data-driven (Shapley value)',
    definition:
      "Learnt from the client's paths, converting and not: each channel weighs its Shapley value in the game whose value is the conversion rate of the paths with exactly a set of channels, and the credit is shared among the path's channels in proportion to their weights, equally among a channel's touchpoints.",
  },
] as const;

export type ModelId = (typeof MODELS)[number]['id'];
export const MODEL_IDS: readonly ModelId[] = MODELS.map((model) => model.id);
/** The models learnt from the client's own paths (src/attribution/learning/): their credits need the weights learnt. */
export const DATA_DRIVEN_MODELS = ['markov', 'shapley'] as const satisfies readonly ModelId[];
export type DataDrivenModelId = (typeof DATA_DRIVEN_MODELS)[number];
export const isDataDriven = (model: ModelId): model is DataDrivenModelId => (DATA_DRIVEN_MODELS as readonly ModelId[]).includes(model);
/** The models whose credits follow from the path alone. */
export const RULE_MODEL_IDS = MODEL_IDS.filter((model) => !isDataDriven(model));

/**
 * The hosted API's own model ids, which exports accept as names of ours: its clicks-only model,
 * and its two clicks-and-views ones (modelled and deterministic views; ours has one kind of view).
 */
export const MODEL_ALIASES = {
  northbeam_custom: 'clicks_only',
  northbeam_custom__va: 'clicks_and_views',
  northbeam_custom__enh: 'clicks_and_views',
} as const satisfies Record<string, ModelId>;
/** The model an export's model id names, if any. */
export const modelNamed = (id: string): ModelId | undefined =>
  (MODEL_IDS as readonly string[]).includes(id) ? (id as ModelId) : MODEL_ALIASES[id as keyof typeof MODEL_ALIASES];

/** The window without a lookback limit, named as the hosted API names it: every touchpoint before the purchase. */
export const UNLIMITED = 'infinity';
/** Attribution windows: days of 24 hours each, or UNLIMITED. */
export const WINDOWS = [1, 3, 7, 14, 30, 60, 90, UNLIMITED] as const;
export type AttributionWindow = (typeof WINDOWS)[number];
/** Windows as requests name them: `"30"`, `"infinity"`. */
export const WINDOW_NAMES: readonly string[] = WINDOWS.map(String);
/** The window a name of WINDOW_NAMES names. */
export const windowNamed = (name: string): AttributionWindow => (name === UNLIMITED ? UNLIMITED : (Number(name) as AttributionWindow));
/** A window's days as SQL's `window_days` column holds them: NULL for no limit. */
export const windowDaysSql = (window: AttributionWindow): number | null => (window === UNLIMITED ? null : window);

/** The model and window used when a request names none: linear favours no touchpoint, and 30 days is the issue's own example. */
export const DEFAULT_MODEL: ModelId = 'linear';
export const DEFAULT_WINDOW: AttributionWindow = 30;

export const CREDIT_SCALE = 9;
/** The whole of an order's credit: every credit is a whole number of these parts. */
export const CREDIT_PARTS = 10 ** CREDIT_SCALE;

/** time_decay: the age at which a touchpoint weighs half. */
export const HALF_LIFE_MS = 7 * DAY_MS;
/**
 * time_decay: a weight is 2^(−age ÷ HALF_LIFE_MS) rounded down to a billionth, so that shares are
 * exact integer arithmetic (weight × CREDIT_PARTS stays below 2^63 for SQL's bigint), and at
 * least one billionth. At 90 days a weight is still 135,000 billionths; past about 209 days (only
 * in the UNLIMITED window) it would round to 0, and a path of such touchpoints alone would have no
 * weight to share: with a billionth each, they share its credit equally. The power is binary
 * floating point, where V8 and the C library under PostgreSQL can differ in the last bit; that
 * moves a rounded weight only within about 10^-16 of a billionth, once in tens of millions of
 * touchpoints.
 */
export const DECAY_WEIGHT_UNIT = 1_000_000_000;
/** clicks_and_views: how long before the purchase a view counts. */
export const VIEW_WINDOW_MS = DAY_MS;

/** Channels that are no click on something the shop placed or paid for: the click models leave them out. */
export const NON_CLICK_CHANNELS: readonly string[] = ['direct', 'organic_search', 'email', 'sms'];
export const DIRECT = 'direct';
export const UNATTRIBUTED = 'unattributed';

export interface Touchpoint {
  touchpoint_id: string;
  /** Milliseconds since the epoch. */
  occurred_at: number;
  type: 'visit' | 'view';
  channel: string;
  /** Its channel grouping, which the data-driven models weigh (learning/grouping.ts); its channel when left out. */
  state?: string;
}

export interface Credit<T extends Touchpoint> {
  touchpoint: T;
  /** Parts of CREDIT_PARTS. */
  parts: number;
}

/** Path order: by time, then by touchpoint_id compared byte by byte, as PostgreSQL's COLLATE "C" does. */
const pathOrder = (a: Touchpoint, b: Touchpoint) =>
  a.occurred_at - b.occurred_at || Buffer.compare(Buffer.from(a.touchpoint_id), Buffer.from(b.touchpoint_id));

/**
 * An order's path: its customer's visits from `window` × 24 hours before the purchase (or from any
 * time, for UNLIMITED) to the purchase, both ends included, and for clicks_and_views the views of
 * the last 24 hours too.
 */
function pathOf<T extends Touchpoint>(purchasedAt: number, model: ModelId, window: AttributionWindow, candidates: readonly T[]): T[] {
  const from = window === UNLIMITED ? -Infinity : purchasedAt - window * DAY_MS;
  const inPath = (touchpoint: T) =>
    touchpoint.occurred_at >= from &&
    touchpoint.occurred_at <= purchasedAt &&
    (touchpoint.type === 'visit' || (model === 'clicks_and_views' && touchpoint.occurred_at >= purchasedAt - VIEW_WINDOW_MS));
  return candidates.filter(inPath).sort(pathOrder);
}

const isClick = (touchpoint: Touchpoint) => !NON_CLICK_CHANNELS.includes(touchpoint.channel);
const allTo = (path: readonly Touchpoint[], index: number) => path.map((_, i) => (i === index ? 1 : 0));
const equal = (path: readonly Touchpoint[]) => path.map(() => 1);
const clicks = (path: readonly Touchpoint[]) => (path.some(isClick) ? path.map((touchpoint) => (isClick(touchpoint) ? 1 : 0)) : equal(path));

/**
 * A data-driven model's weights of a path's touchpoints: its channel's learnt weight shared
 * equally among the channel's touchpoints, as integers (each multiplied by the lowest common
 * multiple of those counts); equal, as linear, when no channel of the path weighs anything.
 */
function learntWeights(path: readonly Touchpoint[], learnt: Readonly<Record<string, number>>): bigint[] {
  const stateOf = (touchpoint: Touchpoint) => touchpoint.state ?? touchpoint.channel;
  const counts = new Map<string, number>();
  for (const touchpoint of path) counts.set(stateOf(touchpoint), (counts.get(stateOf(touchpoint)) ?? 0) + 1);
  if ([...counts.keys()].every((state) => !learnt[state])) return path.map(() => 1n);
  const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
  const multiple = [...counts.values()].reduce((lcm, count) => (lcm * BigInt(count)) / gcd(lcm, BigInt(count)), 1n);
  return path.map((touchpoint) => (BigInt(learnt[stateOf(touchpoint)] ?? 0) * multiple) / BigInt(counts.get(stateOf(touchpoint))!));
}

/** Each rule model's whole weights of a (non-empty) path's touchpoints; credits are shares of their sum. */
const WEIGHTS: Record<Exclude<ModelId, DataDrivenModelId>, (path: readonly Touchpoint[], purchasedAt: number) => number[]> = {
  first_touch: (path) => allTo(path, 0),
  last_touch: (path) => allTo(path, path.length - 1),
  last_touch_non_direct: (path) => {
    const lastNonDirect = path.findLastIndex((touchpoint) => touchpoint.channel !== DIRECT);
    return allTo(path, lastNonDirect === -1 ? path.length - 1 : lastNonDirect);
  },
  linear: equal,
  // 2 × (n − 2) each for the ends and 1 each for the n − 2 between: 40%, 40% and 20% of 5 × (n − 2).
  position_based: (path) =>
    path.length <= 2 ? equal(path) : path.map((_, i) => (i === 0 || i === path.length - 1 ? 2 * (path.length - 2) : 1)),
  time_decay: (path, purchasedAt) =>
    path.map((touchpoint) => Math.max(1, Math.floor(2 ** -((purchasedAt - touchpoint.occurred_at) / HALF_LIFE_MS) * DECAY_WEIGHT_UNIT))),
  clicks_only: clicks,
  clicks_and_views: clicks,
};

/** CREDIT_PARTS shared in proportion to `weights` by the largest remainder method (see the top of this file). */
function apportion(weights: readonly bigint[]): number[] {
  const total = weights.reduce((sum, weight) => sum + weight, 0n);
  const scaled = weights.map((weight) => weight * BigInt(CREDIT_PARTS));
  const parts = scaled.map((share) => Number(share / total));
  const leftover = CREDIT_PARTS - parts.reduce((sum, part) => sum + part, 0);
  const byLoss = weights.map((_, i) => i).sort((a, b) => Number(scaled[b]! % total - scaled[a]! % total) || b - a);
  for (const i of byLoss.slice(0, leftover)) parts[i]! += 1;
  return parts;
}

/**
 * The credit `model` gives each touchpoint of an order's path, or UNATTRIBUTED when the path is
 * empty. A data-driven model shares it by the weights learnt of each state (`learnt`; a state
 * not in it weighs nothing).
 */
export function attribute<T extends Touchpoint>(
  purchasedAt: number,
  model: ModelId,
  window: AttributionWindow,
  candidates: readonly T[],
  learnt: Readonly<Record<string, number>> = {},
): Credit<T>[] | typeof UNATTRIBUTED {
  const path = pathOf(purchasedAt, model, window, candidates);
  if (path.length === 0) return UNATTRIBUTED;
  const parts = apportion(isDataDriven(model) ? learntWeights(path, learnt) : WEIGHTS[model](path, purchasedAt).map(BigInt));
  return path.map((touchpoint, i) => ({ touchpoint, parts: parts[i]! }));
}

/** A credit as an exact decimal: 333333334 parts is `0.333333334`. */
export const creditText = (parts: number) =>
  `${Math.floor(parts / CREDIT_PARTS)}.${String(parts % CREDIT_PARTS).padStart(CREDIT_SCALE, '0')}`;
