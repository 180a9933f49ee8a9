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

/**
 * A step of the paths, counted: from `(start)` (null) or a state (its last k channels) to a
 * state, or to the end of the path, converting or not. What SQL counts of a client's paths
 * (training.ts), and stepsOf of paths given whole.
 */
export interface Step {
  from: readonly string[] | null;
  to: readonly string[] | 'conversion' | 'null';
  count: number;
}

/** The steps of `paths` in a chain of `order`. */
export function stepsOf(paths: readonly PathCount[], order: MarkovOrder): Step[] {
  const steps = new Map<string, Step>();
  const count = (from: Step['from'], to: Step['to'], times: number) => {
    if (times === 0) return;
    const key = JSON.stringify([from, to]);
    const step = steps.get(key) ?? { from, to, count: 0 };
    step.count += times;
    steps.set(key, step);
  };
  for (const { states, converting, notConverting } of paths) {
    let from: readonly string[] | null = null;
    states.forEach((_, i) => {
      const to = states.slice(Math.max(0, i + 1 - order), i + 1);
      count(from, to, converting + notConverting);
      from = to;
    });
    if (from === null) continue;
    count(from, 'conversion', converting);
    count(from, 'null', notConverting);
  }
  return [...steps.values()];
}

/** The chain of `paths`; a channel only paths counted no times have is in it with no effect. */
export function learnMarkov(paths: readonly PathCount[], order: MarkovOrder = 1): MarkovModel {
  const model = markovOf(stepsOf(paths, order), order);
  const removalEffects = Object.fromEntries(statesOf(paths).map((channel) => [channel, model.removalEffects[channel] ?? 0]));
  return { ...model, removalEffects };
}

/** The chain of counted steps: its conversion probability, transitions, and each channel's removal effect. */
export function markovOf(steps: readonly Step[], order: MarkovOrder): MarkovModel {
  const chain = chainOf(steps);
  const conversionProbability = chain.conversionFrom(() => false);
  const channels = [...new Set(chain.lastChannel.filter((channel) => channel !== undefined))].sort();
  const removalEffects = Object.fromEntries(
    channels.map((channel) => {
      const without = chain.conversionFrom((state) => chain.lastChannel[state] === channel);
      return [channel, conversionProbability > 0 ? 1 - without / conversionProbability : 0];
    }),
  );
  return { order, conversionProbability, transitions: chain.transitions(), removalEffects };
}

/** The chain: states numbered from 0 (start), then 1 (conversion), 2 (null), then those of channels. */
function chainOf(steps: readonly Step[]) {
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
  for (const { from, to, count } of steps) {
    const source = from === null ? 0 : stateOf(from);
    const target = to === 'conversion' ? 1 : to === 'null' ? 2 : stateOf(to);
    counts[source]!.set(target, (counts[source]!.get(target) ?? 0) + count);
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
