/**
 * What the data-driven models learn from: the client's paths of a training period, each a
 * sequence of states (a touchpoint's channel grouping, `platform_name` or its channel, or
 * `platform:campaign`), counted as they converted or not. Sequences that occur many times are
 * given once with their counts.
 */
export interface PathCount {
  states: readonly string[];
  /** How many orders had this path. */
  converting: number;
  /** How many visitors (or customers) had this path and no order within the window after it. */
  notConverting: number;
}

/**
 * Integer weights in proportion to `effects` (a removal effect, a Shapley value), the largest
 * CREDIT_PARTS: what the engine shares an order's credit by (credits-sql.ts). A negative effect
 * weighs nothing.
 */
export function weightsOf(effects: Readonly<Record<string, number>>, unit: number): Record<string, number> {
  const largest = Math.max(0, ...Object.values(effects));
  return Object.fromEntries(Object.entries(effects).map(([state, effect]) => [state, largest > 0 ? Math.round((Math.max(0, effect) / largest) * unit) : 0]));
}

/** Every state of `paths`, in code-unit order. */
export const statesOf = (paths: readonly PathCount[]) => [...new Set(paths.flatMap((path) => path.states))].sort();
