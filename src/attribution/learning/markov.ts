import { statesOf, type PathCount } from './paths.js';

/**
 * The absorbing Markov chain of a client's paths (ChannelAttribution's model): from `(start)`
 * through the states of each path to `(conversion)` or `(null)`. Of order k, a state is the last
 * k channels seen (fewer at the start of a path), so that where a visitor goes next may depend
 * on where it has been. A channel's removal effect is the share of conversions lost when it is
 * removed: every transition into a state ending with it goes to `(null)` instead.
 */

export const START = '(start)';
export const CONVERSION = '(conversion)';
export const NULL = '(null)';
/** The orders of chain offered: beyond 4, states are too many for the paths of a shop. */
export const MARKOV_ORDERS = [1, 2, 3, 4] as const;
export type MarkovOrder = (typeof MARKOV_ORDERS)[number];

export interface Transition {
  from: string;
  to: string;
  count: number;
  probability: number;
}

export interface MarkovModel {
  order: MarkovOrder;
  /** The probability that a path from (start) converts. */
  conversionProbability: number;
  /** Every transition seen, its count (paths taking it) and its probability; states of order k are their channels joined by ' > '. */
  transitions: Transition[];
  /** Each channel's removal effect: 1 − (conversion probability without it ÷ with it), 0 when nothing converts. */
  removalEffects: Record<string, number>;
}

/** A solution is taken as exact when no probability moved more than this in a sweep. */
const CONVERGED = 1e-15;
/** Sweeps at most: each halves the error many times over on paths as shops have them. */
const MAX_SWEEPS = 100_000;

export function learnMarkov(paths: readonly PathCount[], order: MarkovOrder = 1): MarkovModel {
  const chain = chainOf(paths, order);
  const conversionProbability = chain.conversionFrom(() => false);
  const removalEffects = Object.fromEntries(
    statesOf(paths).map((channel) => {
      const without = chain.conversionFrom((state) => chain.lastChannel[state] === channel);
      return [channel, conversionProbability > 0 ? 1 - without / conversionProbability : 0];
    }),
  );
  return { order, conversionProbability, transitions: chain.transitions(), removalEffects };
}

/** The chain: states numbered from 0 (start), then 1 (conversion), 2 (null), then those of channels. */
function chainOf(paths: readonly PathCount[], order: MarkovOrder) {
  const names = [START, CONVERSION, NULL];
  const lastChannel: (string | undefined)[] = [undefined, undefined, undefined];
  const numbers = new Map<string, number>();
  const counts: Map<number, number>[] = [new Map(), new Map(), new Map()];
  const stateOf = (channels: readonly string[]) => {
    // Told apart by the channels themselves: a channel's name may hold ' > ' too.
    const key = JSON.stringify(channels);
    let state = numbers.get(key);
    if (state === undefined) {
      state = names.push(channels.join(' > ')) - 1;
      numbers.set(key, state);
      lastChannel.push(channels.at(-1));
      counts.push(new Map());
    }
    return state;
  };
  const count = (from: number, to: number, times: number) => {
    if (times > 0) counts[from]!.set(to, (counts[from]!.get(to) ?? 0) + times);
  };
  for (const { states, converting, notConverting } of paths) {
    if (states.length === 0) continue;
    let from = 0;
    for (let i = 0; i < states.length; i++) {
      const to = stateOf(states.slice(Math.max(0, i + 1 - order), i + 1));
      count(from, to, converting + notConverting);
      from = to;
    }
    count(from, 1, converting);
    count(from, 2, notConverting);
  }
  // Each transient state's exits as probabilities, its self-loop apart: solved for, p(s) = Σ p(s→t)·p(t) ÷ (1 − p(s→s)).
  const exits = counts.map((out, state) => {
    const total = [...out.values()].reduce((sum, n) => sum + n, 0);
    const loop = (out.get(state) ?? 0) / total;
    return [...out].filter(([to]) => to !== state).map(([to, n]) => ({ to, share: n / total / (1 - loop) }));
  });
  // Swept from the states seen last (near the ends of paths) back to start, so that a sweep carries most of the way.
  const sweepOrder = names.map((_, state) => state).filter((state) => state > 2).reverse();
  return {
    lastChannel,
    /** The probability of converting from (start) when the states `removed` lead to (null). */
    conversionFrom(removed: (state: number) => boolean): number {
      const p = new Float64Array(names.length);
      p[1] = 1;
      const solvedFrom = (state: number) => exits[state]!.reduce((sum, { to, share }) => sum + share * p[to]!, 0);
      for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        let moved = 0;
        for (const state of sweepOrder) {
          if (removed(state)) continue;
          const next = solvedFrom(state);
          moved = Math.max(moved, Math.abs(next - p[state]!));
          p[state] = next;
        }
        if (moved <= CONVERGED) break;
      }
      return solvedFrom(0);
    },
    transitions: (): Transition[] =>
      counts.flatMap((out, from) => {
        const total = [...out.values()].reduce((sum, n) => sum + n, 0);
        return [...out].map(([to, n]) => ({ from: names[from]!, to: names[to]!, count: n, probability: n / total }));
      }),
  };
}
