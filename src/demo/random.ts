/**
 * A seeded pseudo-random generator (sfc32, seeded through splitmix32): the same seed gives the
 * same numbers on every machine and Node.js version, so that a demo shop is the same for a given
 * seed and day. Not for anything secret.
 */
export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** A whole number from `min` to `max`, both included. */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** An item of `items`, each as likely as its weight. */
  weighted<T>(items: readonly T[], weights: readonly number[]): T;
  /** A factor around 1, from 1 - spread to 1 + spread. */
  jitter(spread: number): number;
  /** An exponentially distributed number of this mean. */
  exponential(mean: number): number;
  /** `length` characters of `alphabet`. */
  chars(length: number, alphabet?: string): string;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export function createRandom(seed: number): Random {
  const mix = splitmix32(seed);
  let [a, b, c, d] = [mix(), mix(), mix(), mix()];
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  // The first numbers of a fresh state are the least mixed.
  for (let i = 0; i < 12; i++) next();

  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    weighted(items, weights) {
      let total = 0;
      for (const weight of weights) total += weight;
      let point = next() * total;
      for (let i = 0; i < items.length; i++) {
        point -= weights[i]!;
        if (point < 0) return items[i]!;
      }
      return items[items.length - 1]!;
    },
    jitter: (spread) => 1 - spread + 2 * spread * next(),
    exponential: (mean) => -mean * Math.log(1 - next()),
    chars(length, alphabet = ALPHANUMERIC) {
      let text = '';
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(next() * alphabet.length)];
      return text;
    },
  };
  return random;
}
