/**
 * The attribution engine, as the rest of the service sees it. Exports, reports, the dashboard
 * and the explanation call these, never the modules behind them (an ESLint rule keeps it so):
 *
 * - the rows of a plan, as one statement (`exportRowsSql`), read in slices side by side
 *   (`readSlicedRows`, exports) or a batch at a time with kept daily totals up to date
 *   (`readRows`, reports and the dashboard);
 * - one order's path with its credits, and what the data-driven models learnt (`createAttributionExplainer`);
 * - the weights the data-driven models learnt, which the rows' statement of a plan that has one
 *   needs (`learnWeights`, learning/);
 * - what writes note so that kept totals follow them (`changes.ts`), and the keeper that computes
 *   kept days ahead of reports (`startKeptTotalsKeeper`);
 * - the metrics, models and windows offered (`catalog.ts`, `models.ts`).
 */
export {
  AD_PLATFORMS,
  BREAKDOWN_ALIASES,
  BREAKDOWN_KEYS,
  METRIC_ALIASES,
  METRIC_CATALOG,
  METRIC_IDS,
  REQUEST_BREAKDOWN_KEYS,
  breakdownNamed,
  isAttributionMetric,
  isOrderMetric,
  platformMetricOf,
  type BreakdownKey,
  type RequestBreakdownKey,
} from './catalog.js';
export { EVERY_INSTANT, LATE_AFTER, LATE_TOUCHPOINTS_KEYED, LINKED, noteAttributionChangeSql, noteChangeCtes, noteChangedKeysSql, visitorKeysSql } from './changes.js';
export { keptTotalsOf, type KeptTotalsAsked } from './daily-totals.js';
export { learnWeights, NOTHING_LEARNT, usesLearntWeights, type LearntWeights } from './learning/index.js';
export { CHANNEL_GROUPINGS } from './learning/grouping.js';
export { MARKOV_ORDERS } from './learning/markov.js';
export { DEFAULT_TRAINING_DAYS, MAX_TRAINING_DAYS, type LearningSettings } from './learning/training.js';
export { createAttributionExplainer, standInExplainer, type AttributionExplainer } from './explanation.js';
export { keepAhead, startKeptTotalsKeeper } from './keeper.js';
export { DEFAULT_MODEL, DEFAULT_WINDOW, MODEL_ALIASES, MODEL_IDS, MODELS, UNLIMITED, WINDOW_NAMES, modelNamed, windowNamed, type ModelId } from './models.js';
export { readRows, type RowsRead } from './read-rows.js';
export {
  CLIENT_TEXT_COLUMNS,
  DIMENSION_COLUMNS,
  columnName,
  exportRowsSql,
  type AccountingMode,
  type AttributionCombination,
  type Granularity,
  type Period,
  type RowsPlan,
} from './rows.js';
export { readSlicedRows } from './slices.js';
