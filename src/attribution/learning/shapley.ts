import { statesOf, type PathCount } from './paths.js';

/**
 * Shapley values of channels (fractribution's game): the value of a set of channels is the
 * conversion rate of the paths whose channels are exactly that set, 0 for a set no path has.
 *
 * The Shapley value of c over the n channels is Σ over sets S without c of
 * |S|!·(n − |S| − 1)!/n! · (v(S ∪ {c}) − v(S)). As v is 0 but on the sets paths have, it is, exactly,
 * Σ over those sets T: +w(|T| − 1)·v(T) when T holds c, −w(|T|)·v(T) when not, w(s) being that
 * coefficient: a sum over the sets seen rather than the 2^n sets, so that it stays exact for any
 * number of channels (where enumerating the sets would have to be replaced by sampling past 15 or so).
 */

export interface Coalition {
  /** Its channels, in code-unit order. */
  channels: string[];
  converting: number;
  /** Paths with exactly these channels, converting or not. */
  paths: number;
  /** converting ÷ paths. */
  value: number;
}

export interface ShapleyModel {
  coalitions: Coalition[];
  /** Each channel's Shapley value; they add up to the value of the set of every channel (0 unless a path has them all). */
  values: Record<string, number>;
}

export function learnShapley(paths: readonly PathCount[]): ShapleyModel {
  const bySet = new Map<string, Coalition>();
  for (const { states, converting, notConverting } of paths) {
    if (states.length === 0) continue;
    const channels = [...new Set(states)].sort();
    const key = JSON.stringify(channels);
    const coalition = bySet.get(key) ?? { channels, converting: 0, paths: 0, value: 0 };
    coalition.converting += converting;
    coalition.paths += converting + notConverting;
    bySet.set(key, coalition);
  }
  const coalitions = [...bySet.values()].filter((coalition) => coalition.paths > 0).sort((a, b) => compareSets(a.channels, b.channels));
  for (const coalition of coalitions) coalition.value = coalition.converting / coalition.paths;
  const channels = statesOf(paths);
  const weight = coefficients(channels.length);
  const values = Object.fromEntries(
    channels.map((channel) => [
      channel,
      coalitions.reduce(
        (sum, { channels: members, value }) => sum + (members.includes(channel) ? weight[members.length - 1]! * value : -weight[members.length]! * value),
        0,
      ),
    ]),
  );
  return { coalitions, values };
}

/** w(s) = s!·(n − s − 1)!/n! for s = 0 … n − 1 (and 0 for s = n, a set that holds every channel has no channel outside it). */
function coefficients(n: number): number[] {
  // w(0) = 1/n, and w(s + 1) = w(s)·(s + 1)/(n − s − 1).
  const weight = [1 / n];
  for (let s = 0; s < n - 1; s++) weight.push((weight[s]! * (s + 1)) / (n - s - 1));
  weight.push(0);
  return weight;
}

const compareSets = (a: readonly string[], b: readonly string[]) => a.length - b.length || (a.join('\u0000') < b.join('\u0000') ? -1 : 1);
