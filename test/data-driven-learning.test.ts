import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CONVERSION, learnMarkov, MARKOV_ORDERS, NULL, START } from '../src/attribution/learning/markov.js';
import { statesOf, weightsOf, type PathCount } from '../src/attribution/learning/paths.js';
import { learnShapley } from '../src/attribution/learning/shapley.js';

/*
 * The data-driven models (src/attribution/learning/): the Markov chain's removal effects and the
 * Shapley values against figures worked out by hand as fractions, against independent
 * implementations (the absorbing chain solved by Gaussian elimination, the Shapley value summed
 * over every subset of channels) on generated paths, and their invariants.
 */

/** `actual` within `tolerance` of `expected`. */
function near(actual: number | undefined, expected: number, tolerance: number, what: string) {
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= tolerance, `${what}: ${actual} is not within ${tolerance} of ${expected}`);
}

/** Every entry of `actual` within `tolerance` of `expected`'s, with the same keys. */
function nearRecord(actual: Readonly<Record<string, number>>, expected: Readonly<Record<string, number>>, tolerance: number, what: string) {
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${what}: keys`);
  for (const [key, value] of Object.entries(expected)) near(actual[key], value, tolerance, `${what} of ${JSON.stringify(key)}`);
}

const path = (states: string, converting: number, notConverting: number): PathCount => ({
  states: states.split('>'),
  converting,
  notConverting,
});

// ---------------------------------------------------------------------------------------------
// Independent implementations.
// ---------------------------------------------------------------------------------------------

/** Solves A·x = b by Gaussian elimination with partial pivoting (A is n×n, not singular). */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let column = 0; column < n; column++) {
    let pivot = column;
    for (let row = column + 1; row < n; row++) if (Math.abs(m[row]![column]!) > Math.abs(m[pivot]![column]!)) pivot = row;
    [m[column], m[pivot]] = [m[pivot]!, m[column]!];
    const top = m[column]!;
    assert.ok(top[column] !== 0, 'singular system');
    for (let row = column + 1; row < n; row++) {
      const below = m[row]!;
      const factor = below[column]! / top[column]!;
      if (factor === 0) continue;
      for (let k = column; k <= n; k++) below[k] = below[k]! - factor * top[k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let row = n - 1; row >= 0; row--) {
    let sum = m[row]![n]!;
    for (let k = row + 1; k < n; k++) sum -= m[row]![k]! * x[k]!;
    x[row] = sum / m[row]![row]!;
  }
  return x;
}

/**
 * The absorbing chain of order k built from the path counts (states keyed by their list of
 * channels, so that no name can be taken for another), its conversion probability from start
 * the solution of (I − Q)·x = r, and each channel's removal effect from the same system with
 * the rows of the states ending with the channel replaced by x = 0 (a transition into them ends
 * in (null)).
 */
function referenceMarkov(paths: readonly PathCount[], order: number) {
  const numbers = new Map<string, number>([['start', 0]]);
  const last: (string | undefined)[] = [undefined];
  const toStates: Map<number, number>[] = [new Map()];
  const converted: number[] = [0];
  const total: number[] = [0];
  const stateOf = (channels: readonly string[]) => {
    const key = JSON.stringify(channels);
    let state = numbers.get(key);
    if (state === undefined) {
      state = numbers.size;
      numbers.set(key, state);
      last.push(channels.at(-1));
      toStates.push(new Map());
      converted.push(0);
      total.push(0);
    }
    return state;
  };
  for (const { states, converting, notConverting } of paths) {
    if (states.length === 0) continue;
    const times = converting + notConverting;
    let from = 0;
    for (let i = 0; i < states.length; i++) {
      const to = stateOf(states.slice(Math.max(0, i + 1 - order), i + 1));
      toStates[from]!.set(to, (toStates[from]!.get(to) ?? 0) + times);
      total[from]! += times;
      from = to;
    }
    converted[from]! += converting;
    total[from]! += times;
  }
  const n = numbers.size;
  const conversionWithout = (channel: string | undefined) => {
    const a = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
    const r = new Array<number>(n).fill(0);
    for (let state = 0; state < n; state++) {
      if (total[state] === 0) continue; // Reached by no path that counts: x = 0.
      if (state > 0 && channel !== undefined && last[state] === channel) continue; // Removed: x = 0.
      for (const [to, count] of toStates[state]!) a[state]![to]! -= count / total[state]!;
      r[state] = converted[state]! / total[state]!;
    }
    return solve(a, r)[0]!;
  };
  const conversionProbability = conversionWithout(undefined);
  const channels = [...new Set(paths.flatMap((p) => p.states))];
  const removalEffects = Object.fromEntries(
    channels.map((channel) => [channel, conversionProbability > 0 ? 1 - conversionWithout(channel) / conversionProbability : 0]),
  );
  return { conversionProbability, removalEffects };
}

/** The value of a set of channels: the conversion rate of the paths with exactly those channels, 0 for none. */
function gameOf(paths: readonly PathCount[]) {
  const sets = new Map<string, { converting: number; paths: number }>();
  for (const { states, converting, notConverting } of paths) {
    if (states.length === 0) continue;
    const key = JSON.stringify([...new Set(states)].sort());
    const set = sets.get(key) ?? { converting: 0, paths: 0 };
    set.converting += converting;
    set.paths += converting + notConverting;
    sets.set(key, set);
  }
  return (channels: readonly string[]) => {
    const set = sets.get(JSON.stringify([...channels].sort()));
    return set && set.paths > 0 ? set.converting / set.paths : 0;
  };
}

const factorial = (n: number): number => (n <= 1 ? 1 : n * factorial(n - 1));

/** φ_c = Σ over the 2^(n−1) sets S of the other channels of |S|!·(n − |S| − 1)!/n! · (v(S ∪ {c}) − v(S)). */
function bruteShapley(paths: readonly PathCount[]): Record<string, number> {
  const channels = [...new Set(paths.flatMap((p) => p.states))];
  const n = channels.length;
  const v = gameOf(paths);
  const values: [string, number][] = [];
  for (const [index, channel] of channels.entries()) {
    let sum = 0;
    for (let mask = 0; mask < 1 << n; mask++) {
      if (mask & (1 << index)) continue;
      const set = channels.filter((_, i) => mask & (1 << i));
      const weight = (factorial(set.length) * factorial(n - set.length - 1)) / factorial(n);
      sum += weight * (v([...set, channel]) - v(set));
    }
    values.push([channel, sum]);
  }
  return Object.fromEntries(values);
}

// ---------------------------------------------------------------------------------------------
// Generated paths.
// ---------------------------------------------------------------------------------------------

/** Names of channels, odd ones included; none has a '>' (see the test of names with ' > '). */
const NAMES = ['paid', 'email', 'direct', 'social', '(null)', 'constructor', 'é', 'Paid'];

/** Up to `maxChannels` channels, up to 40 distinct paths of 1 to 8 touchpoints, counts 0 to 50, at least one conversion. */
const pathsArbitrary = (maxChannels = 6) =>
  fc
    .shuffledSubarray(NAMES.slice(0, Math.max(maxChannels, 1)), { minLength: 1, maxLength: maxChannels })
    .chain((channels) =>
      fc.uniqueArray(
        fc.record({
          states: fc.array(fc.constantFrom(...channels), { minLength: 1, maxLength: 8 }),
          converting: fc.nat(50),
          notConverting: fc.nat(50),
        }),
        { minLength: 1, maxLength: 40, selector: (p) => JSON.stringify(p.states) },
      ),
    )
    .map((paths): PathCount[] => (paths.some((p) => p.converting > 0) ? paths : [{ ...paths[0]!, converting: 1 }, ...paths.slice(1)]));

const orderArbitrary = fc.constantFrom(...MARKOV_ORDERS);
const unitArbitrary = fc.integer({ min: 1, max: 1_000_000_000 });

// ---------------------------------------------------------------------------------------------
// By hand.
// ---------------------------------------------------------------------------------------------

describe('the Markov chain, computed by hand', () => {
  /*
   * Paths (converting, not converting):
   *   A>B    3, 1   (4 paths)
   *   A>A>B  1, 1   (2)  a self-loop A→A
   *   A>B>A  1, 2   (3)  a cycle A→B→A
   *   C      1, 3   (4)
   *   B>C    2, 0   (2)
   *
   * Transitions of order 1 (each of a path counted converting + not converting times):
   *   (start) → A 4 + 2 + 3 = 9, → C 4, → B 2;                          of 15
   *   A → B 4 + 2 + 3 = 9, A → A 2, A → (conversion) 1, A → (null) 2;  of 14
   *   B → (conversion) 3 + 1 = 4, B → (null) 1 + 1 = 2, B → A 3, B → C 2; of 11
   *   C → (conversion) 1 + 2 = 3, C → (null) 3;                         of 6
   *
   * Probabilities of converting from each state:
   *   pC = 3/6 = 1/2
   *   pA = 2/14·pA + 9/14·pB + 1/14        ⇒ 12·pA = 9·pB + 1
   *   pB = 4/11 + 3/11·pA + 2/11·pC = (5 + 3·pA)/11
   *   ⇒ 44·pB = 20 + (9·pB + 1) ⇒ pB = 21/35 = 3/5, pA = (27/5 + 1)/12 = 8/15
   *   P = 9/15·8/15 + 2/15·3/5 + 4/15·1/2 = (72 + 18 + 30)/225 = 8/15
   *
   * Without A (pA = 0): pB = 5/11, P' = 2/15·5/11 + 4/15·1/2 = (10 + 22)/165 = 32/165;
   *   effect 1 − (32/165)/(8/15) = 1 − 4/11 = 7/11.
   * Without B (pB = 0): pA = 1/12, P' = 9/15·1/12 + 4/15·1/2 = 3/60 + 8/60 = 11/60;
   *   effect 1 − (11/60)/(8/15) = 1 − 11/32 = 21/32.
   * Without C (pC = 0): pB = (4 + 3·pA)/11, 12·pA = 9·pB + 1 ⇒ 44·pB = 16 + 9·pB + 1 ⇒ pB = 17/35,
   *   pA = (153/35 + 1)/12 = 47/105, P' = 9/15·47/105 + 2/15·17/35 = (423 + 102)/1575 = 1/3;
   *   effect 1 − (1/3)/(8/15) = 1 − 5/8 = 3/8.
   * (Checked with exact fractions.)
   */
  const paths = [path('A>B', 3, 1), path('A>A>B', 1, 1), path('A>B>A', 1, 2), path('C', 1, 3), path('B>C', 2, 0)];

  test('transitions, their counts and probabilities', () => {
    const expected = [
      [START, 'A', 9, 9 / 15], [START, 'C', 4, 4 / 15], [START, 'B', 2, 2 / 15],
      ['A', 'B', 9, 9 / 14], ['A', 'A', 2, 2 / 14], ['A', CONVERSION, 1, 1 / 14], ['A', NULL, 2, 2 / 14],
      ['B', CONVERSION, 4, 4 / 11], ['B', NULL, 2, 2 / 11], ['B', 'A', 3, 3 / 11], ['B', 'C', 2, 2 / 11],
      ['C', CONVERSION, 3, 3 / 6], ['C', NULL, 3, 3 / 6],
    ] as const;
    const { transitions } = learnMarkov(paths);
    const key = (from: string, to: string) => `${from} → ${to}`;
    assert.deepEqual(transitions.map(({ from, to }) => key(from, to)).sort(), expected.map(([from, to]) => key(from, to)).sort());
    for (const [from, to, count, probability] of expected) {
      const transition = transitions.find((t) => t.from === from && t.to === to)!;
      assert.equal(transition.count, count, key(from, to));
      near(transition.probability, probability, 1e-12, key(from, to));
    }
  });

  test('conversion probability 8/15, removal effects A 7/11, B 21/32, C 3/8', () => {
    const model = learnMarkov(paths);
    assert.equal(model.order, 1);
    near(model.conversionProbability, 8 / 15, 1e-12, 'conversion probability');
    nearRecord(model.removalEffects, { A: 7 / 11, B: 21 / 32, C: 3 / 8 }, 1e-12, 'removal effect');
    // Proportional weights: B the largest; A 7/11 ÷ 21/32 = 32/33, C 3/8 ÷ 21/32 = 4/7.
    assert.deepEqual(weightsOf(model.removalEffects, 1_000_000_000), { A: 969_696_970, B: 1_000_000_000, C: 571_428_571 });
    assert.deepEqual(weightsOf(model.removalEffects, 1_000_000_000), weightsOf(referenceMarkov(paths, 1).removalEffects, 1_000_000_000));
  });

  test('of order 2, where a visitor goes next depends on where it came from', () => {
    /*
     * A>B converts once, C>B does not, once.
     * Order 1: (start) → A 1/2, → C 1/2; A → B, C → B; B → (conversion) 1/2, → (null) 1/2. P = 1/2.
     *   Without A: P' = 1/2·1/2 = 1/4, effect 1/2; without C likewise 1/2; without B P' = 0, effect 1.
     * Order 2: states A, C, A > B, C > B; A > B → (conversion) 1, C > B → (null) 1. P = 1/2.
     *   Without A: P' = 0, effect 1; without C: P' = 1/2, effect 0; without B (both A > B and C > B): effect 1.
     */
    const twoPaths = [path('A>B', 1, 0), path('C>B', 0, 1)];
    const first = learnMarkov(twoPaths, 1);
    near(first.conversionProbability, 1 / 2, 1e-12, 'order 1 conversion probability');
    nearRecord(first.removalEffects, { A: 1 / 2, B: 1, C: 1 / 2 }, 1e-12, 'order 1 removal effect');
    const second = learnMarkov(twoPaths, 2);
    assert.equal(second.order, 2);
    near(second.conversionProbability, 1 / 2, 1e-12, 'order 2 conversion probability');
    nearRecord(second.removalEffects, { A: 1, B: 1, C: 0 }, 1e-12, 'order 2 removal effect');
    assert.deepEqual(
      second.transitions.map(({ from, to, count, probability }) => [from, to, count, probability]).sort(),
      [
        [START, 'A', 1, 1 / 2], [START, 'C', 1, 1 / 2], ['A', 'A > B', 1, 1], ['C', 'C > B', 1, 1],
        ['A > B', CONVERSION, 1, 1], ['C > B', NULL, 1, 1],
      ].sort(),
    );
  });
});

describe('Shapley values, computed by hand', () => {
  test('three channels, every set of them seen', () => {
    /*
     * Paths (converting, not converting) and their sets of channels:
     *   A      1, 3   {A}
     *   B      1, 1   {B}
     *   A>B    2, 2   {A, B}
     *   B>A>A  1, 1   {A, B}   (order and repeats do not matter)
     *   A>C>B  3, 1   {A, B, C}
     *   C      0, 5   {C}
     * v(∅) = 0, v(A) = 1/4, v(B) = 1/2, v(C) = 0, v(AB) = 3/6 = 1/2, v(AC) = v(BC) = 0 (no path), v(ABC) = 3/4.
     * n = 3: the weight of a set S of the other channels is |S|!(2 − |S|)!/3!: 1/3, 1/6, 1/6, 1/3 for ∅, one, one, both.
     *   φA = 1/3·(v(A) − 0) + 1/6·(v(AB) − v(B)) + 1/6·(v(AC) − v(C)) + 1/3·(v(ABC) − v(BC))
     *      = 1/12 + 0 + 0 + 1/4 = 1/3
     *   φB = 1/3·(1/2) + 1/6·(v(AB) − v(A)) + 1/6·(v(BC) − v(C)) + 1/3·(v(ABC) − v(AC))
     *      = 1/6 + 1/24 + 0 + 1/4 = 11/24
     *   φC = 1/3·0 + 1/6·(v(AC) − v(A)) + 1/6·(v(BC) − v(B)) + 1/3·(v(ABC) − v(AB))
     *      = 0 − 1/24 − 1/12 + 1/12 = −1/24
     *   Σ = 8/24 + 11/24 − 1/24 = 3/4 = v(ABC).
     */
    const paths = [path('A', 1, 3), path('B', 1, 1), path('A>B', 2, 2), path('B>A>A', 1, 1), path('A>C>B', 3, 1), path('C', 0, 5)];
    const model = learnShapley(paths);
    nearRecord(model.values, { A: 1 / 3, B: 11 / 24, C: -1 / 24 }, 1e-12, 'Shapley value');
    assert.deepEqual(model.coalitions, [
      { channels: ['A'], converting: 1, paths: 4, value: 1 / 4 },
      { channels: ['B'], converting: 1, paths: 2, value: 1 / 2 },
      { channels: ['C'], converting: 0, paths: 5, value: 0 },
      { channels: ['A', 'B'], converting: 3, paths: 6, value: 1 / 2 },
      { channels: ['A', 'B', 'C'], converting: 3, paths: 4, value: 3 / 4 },
    ]);
    // C's value is negative: it weighs nothing; B the largest, A 1/3 ÷ 11/24 = 8/11 of it.
    assert.deepEqual(weightsOf(model.values, 1_000_000_000), { A: 727_272_727, B: 1_000_000_000, C: 0 });
  });

  test('the paths of the Markov chain example: no path has all three channels', () => {
    /*
     * Sets: {A, B} from A>B, A>A>B, A>B>A: (3 + 1 + 1)/(4 + 2 + 3) = 5/9; {C} 1/4; {B, C} 2/2 = 1; the others 0.
     *   φA = 1/3·v(A) + 1/6·(v(AB) − v(B)) + 1/6·(v(AC) − v(C)) + 1/3·(v(ABC) − v(BC))
     *      = 0 + 5/54 − 1/24 − 1/3 = (20 − 9 − 72)/216 = −61/216
     *   φB = 1/3·v(B) + 1/6·(v(AB) − v(A)) + 1/6·(v(BC) − v(C)) + 1/3·(v(ABC) − v(AC))
     *      = 0 + 5/54 + 1/8 + 0 = (20 + 27)/216 = 47/216
     *   φC = 1/3·v(C) + 1/6·(v(AC) − v(A)) + 1/6·(v(BC) − v(B)) + 1/3·(v(ABC) − v(AB))
     *      = 1/12 + 0 + 1/6 − 5/27 = (18 + 36 − 40)/216 = 7/108
     *   Σ = (−61 + 47 + 14)/216 = 0 = v(ABC).
     */
    const paths = [path('A>B', 3, 1), path('A>A>B', 1, 1), path('A>B>A', 1, 2), path('C', 1, 3), path('B>C', 2, 0)];
    const model = learnShapley(paths);
    nearRecord(model.values, { A: -61 / 216, B: 47 / 216, C: 7 / 108 }, 1e-12, 'Shapley value');
    assert.deepEqual(
      model.coalitions.map(({ channels, converting, paths: n }) => [channels, converting, n]),
      [[['C'], 1, 4], [['A', 'B'], 5, 9], [['B', 'C'], 2, 2]],
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Against the independent implementations.
// ---------------------------------------------------------------------------------------------

describe('against independent implementations', () => {
  test('the independent implementations agree with the figures by hand', () => {
    const paths = [path('A>B', 3, 1), path('A>A>B', 1, 1), path('A>B>A', 1, 2), path('C', 1, 3), path('B>C', 2, 0)];
    const reference = referenceMarkov(paths, 1);
    near(reference.conversionProbability, 8 / 15, 1e-12, 'conversion probability');
    nearRecord(reference.removalEffects, { A: 7 / 11, B: 21 / 32, C: 3 / 8 }, 1e-12, 'removal effect');
    nearRecord(bruteShapley(paths), { A: -61 / 216, B: 47 / 216, C: 7 / 108 }, 1e-12, 'Shapley value');
  });

  for (const order of MARKOV_ORDERS) {
    test(`the Markov chain of order ${order}: conversion probability and removal effects as by matrix inversion`, () => {
      fc.assert(
        fc.property(pathsArbitrary(), (paths) => {
          const model = learnMarkov(paths, order);
          const reference = referenceMarkov(paths, order);
          assert.equal(model.order, order);
          near(model.conversionProbability, reference.conversionProbability, 1e-9, 'conversion probability');
          nearRecord(model.removalEffects, reference.removalEffects, 1e-9, 'removal effect');
          // The transitions out of each state that any counted path leaves: probabilities summing to 1.
          const out = new Map<string, number>();
          for (const { from, count, probability } of model.transitions) {
            assert.ok(count > 0 && probability > 0 && probability <= 1, `${from}: ${count}, ${probability}`);
            out.set(from, (out.get(from) ?? 0) + probability);
          }
          for (const [from, sum] of out) near(sum, 1, 1e-12, `probabilities out of ${from}`);
        }),
        { numRuns: 60 },
      );
    });
  }

  test('Shapley values as summed over every subset of up to 8 channels', () => {
    fc.assert(
      fc.property(pathsArbitrary(8), (paths) => {
        nearRecord(learnShapley(paths).values, bruteShapley(paths), 1e-9, 'Shapley value');
      }),
      { numRuns: 150 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------------------------

describe('properties', () => {
  /** Distinct names without '>' (so that no two states of a chain of higher order can share a name). */
  const renamingArbitrary = fc.uniqueArray(fc.string({ unit: fc.constantFrom(...'ab:() é_'), maxLength: 4 }), {
    minLength: NAMES.length,
    maxLength: NAMES.length,
  });

  test('renaming channels changes no removal effect or Shapley value', () => {
    fc.assert(
      fc.property(pathsArbitrary(8), orderArbitrary, renamingArbitrary, (paths, order, names) => {
        const renamed = new Map(NAMES.map((name, i) => [name, names[i]!]));
        const renamedPaths = paths.map((p) => ({ ...p, states: p.states.map((state) => renamed.get(state)!) }));
        const rename = (values: Record<string, number>) => Object.fromEntries(Object.entries(values).map(([name, value]) => [renamed.get(name)!, value]));
        const markov = learnMarkov(paths, order);
        const renamedMarkov = learnMarkov(renamedPaths, order);
        near(renamedMarkov.conversionProbability, markov.conversionProbability, 1e-12, 'conversion probability');
        nearRecord(renamedMarkov.removalEffects, rename(markov.removalEffects), 1e-12, 'removal effect');
        nearRecord(learnShapley(renamedPaths).values, rename(learnShapley(paths).values), 1e-12, 'Shapley value');
      }),
      { numRuns: 150 },
    );
  });

  test('with one channel, its removal effect is 1 and it has all the weight', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...NAMES),
        fc.array(fc.record({ length: fc.integer({ min: 1, max: 8 }), converting: fc.nat(50), notConverting: fc.nat(50) }), { minLength: 1, maxLength: 8 }),
        orderArbitrary,
        unitArbitrary,
        (channel, shapes, order, unit) => {
          const paths = shapes.map(({ length, converting, notConverting }) => ({ states: new Array<string>(length).fill(channel), converting, notConverting }));
          const converting = paths.reduce((sum, p) => sum + p.converting, 0);
          const all = paths.reduce((sum, p) => sum + p.converting + p.notConverting, 0);
          const markov = learnMarkov(paths, order);
          const shapley = learnShapley(paths);
          near(markov.conversionProbability, all > 0 ? converting / all : 0, 1e-12, 'conversion probability');
          near(shapley.values[channel], all > 0 ? converting / all : 0, 1e-12, 'Shapley value');
          if (converting > 0) {
            assert.deepEqual(markov.removalEffects, { [channel]: 1 });
            assert.deepEqual(weightsOf(markov.removalEffects, unit), { [channel]: unit });
            assert.deepEqual(weightsOf(shapley.values, unit), { [channel]: unit });
          } else {
            assert.deepEqual(markov.removalEffects, { [channel]: 0 });
            assert.deepEqual(weightsOf(markov.removalEffects, unit), { [channel]: 0 });
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('a channel in no converting path has a Shapley value of at most 0, and no weight', () => {
    // Paths with 'lost' among their channels that never convert.
    const lostArbitrary = fc.array(
      fc.record({
        states: fc.array(fc.constantFrom('lost', ...NAMES.slice(0, 4)), { minLength: 1, maxLength: 8 }).map((states) => ['lost', ...states]),
        notConverting: fc.nat(50),
      }),
      { minLength: 1, maxLength: 10 },
    );
    fc.assert(
      fc.property(pathsArbitrary(), lostArbitrary, unitArbitrary, (paths, lost, unit) => {
        const all = [...paths, ...lost.map(({ states, notConverting }) => ({ states, converting: 0, notConverting }))];
        const { values } = learnShapley(all);
        const weights = weightsOf(values, unit);
        const converted = new Set(all.filter((p) => p.converting > 0).flatMap((p) => p.states));
        const never = statesOf(all).filter((channel) => !converted.has(channel));
        assert.ok(never.includes('lost'));
        for (const channel of never) {
          assert.ok(values[channel]! <= 0, `${channel}: ${values[channel]}`);
          assert.equal(weights[channel], 0, channel);
        }
      }),
      { numRuns: 200 },
    );
  });

  test('Shapley values add up to the value of the set of every channel', () => {
    fc.assert(
      fc.property(pathsArbitrary(8), fc.boolean(), (paths, withAll) => {
        const channels = statesOf(paths);
        // Half of the time, a path with every channel, so that the value of the whole set is seldom 0.
        const all = withAll ? [...paths, { states: [...channels].reverse(), converting: 3, notConverting: 5 }] : paths;
        const { values } = learnShapley(all);
        const sum = Object.values(values).reduce((s, value) => s + value, 0);
        near(sum, gameOf(all)(channels), 1e-9, 'Σ φ');
      }),
      { numRuns: 200 },
    );
  });

  test('removal effects are within [0, 1]', () => {
    fc.assert(
      fc.property(pathsArbitrary(), orderArbitrary, (paths, order) => {
        const { removalEffects } = learnMarkov(paths, order);
        assert.deepEqual(Object.keys(removalEffects), statesOf(paths));
        for (const [channel, effect] of Object.entries(removalEffects)) assert.ok(effect >= 0 && effect <= 1, `${channel}: ${effect}`);
      }),
      { numRuns: 200 },
    );
  });

  test('weightsOf: the largest effect weighs exactly unit, the others in proportion, negative ones 0', () => {
    const effectsArbitrary = fc.dictionary(
      fc.string({ maxLength: 4 }),
      fc.oneof(fc.double({ min: -1, max: 1, noNaN: true }), fc.constantFrom(0, -0, 1, -1, 1e-300)),
      { maxKeys: 8 },
    );
    fc.assert(
      fc.property(effectsArbitrary, unitArbitrary, (effects, unit) => {
        const weights = weightsOf(effects, unit);
        assert.deepEqual(Object.keys(weights), Object.keys(effects));
        const largest = Math.max(0, ...Object.values(effects));
        for (const [key, effect] of Object.entries(effects)) {
          const weight = weights[key]!;
          assert.ok(Number.isInteger(weight) && weight >= 0 && weight <= unit, `${key}: ${weight}`);
          if (effect <= 0 || largest === 0) assert.equal(weight, 0, key);
          else if (effect === largest) assert.equal(weight, unit, key);
          else assert.ok(Math.abs(weight - (effect / largest) * unit) <= 0.5, `${key}: ${weight} for ${effect} of ${largest}`);
        }
      }),
      { numRuns: 300 },
    );
    assert.deepEqual(weightsOf({}, 100), {});
    assert.deepEqual(weightsOf({ a: -0.5, b: 0 }, 100), { a: 0, b: 0 });
    assert.deepEqual(weightsOf({ a: 0.2, b: 0.6, c: -0.1, d: 0.3 }, 100), { a: 33, b: 100, c: 0, d: 50 });
  });

  test('weightsOf on learned removal effects and Shapley values', () => {
    fc.assert(
      fc.property(pathsArbitrary(), orderArbitrary, unitArbitrary, (paths, order, unit) => {
        for (const effects of [learnMarkov(paths, order).removalEffects, learnShapley(paths).values]) {
          const weights = weightsOf(effects, unit);
          const largest = Math.max(...Object.values(effects));
          if (largest > 0) assert.ok(Object.entries(effects).some(([key, effect]) => effect === largest && weights[key] === unit));
          for (const [key, effect] of Object.entries(effects)) if (effect <= 0) assert.equal(weights[key], 0, key);
        }
      }),
      { numRuns: 100 },
    );
  });

  test('paths with no states are ignored', () => {
    fc.assert(
      fc.property(
        pathsArbitrary(),
        fc.array(fc.record({ at: fc.nat(), converting: fc.nat(50), notConverting: fc.nat(50) }), { minLength: 1, maxLength: 5 }),
        (paths, empties) => {
          const withEmpty = [...paths];
          for (const { at, converting, notConverting } of empties) withEmpty.splice(at % (withEmpty.length + 1), 0, { states: [], converting, notConverting });
          for (const order of MARKOV_ORDERS) assert.deepEqual(learnMarkov(withEmpty, order), learnMarkov(paths, order));
          assert.deepEqual(learnShapley(withEmpty), learnShapley(paths));
          assert.deepEqual(statesOf(withEmpty), statesOf(paths));
        },
      ),
      { numRuns: 100 },
    );
    // Nothing but empty paths: nothing learned.
    const empty = [{ states: [], converting: 4, notConverting: 1 }];
    assert.deepEqual(learnMarkov(empty), { order: 1, conversionProbability: 0, transitions: [], removalEffects: {} });
    assert.deepEqual(learnShapley(empty), { coalitions: [], values: {} });
  });
});

describe('names of channels', () => {
  // A channel (a `platform:campaign`, say) may have ' > ' in its name: at order 2 the channel
  // 'a > b' and the second-order state of a then b are both named 'a > b'. Correctly: a>b always
  // converts, 'a > b' never, so P = 1/2; without a, P' = 0 (effect 1); without b, 0 (effect 1);
  // without 'a > b', 1/2 (effect 0).
  test(
    "a channel whose name has ' > ' is a state apart from the channels it seems to join",
    () => {
      const paths = [
        { states: ['a', 'b'], converting: 1, notConverting: 0 },
        { states: ['a > b'], converting: 0, notConverting: 1 },
      ];
      const reference = referenceMarkov(paths, 2);
      nearRecord(reference.removalEffects, { a: 1, b: 1, 'a > b': 0 }, 1e-12, 'reference removal effect');
      const model = learnMarkov(paths, 2);
      near(model.conversionProbability, 1 / 2, 1e-12, 'conversion probability');
      nearRecord(model.removalEffects, { a: 1, b: 1, 'a > b': 0 }, 1e-12, 'removal effect');
    },
  );
});
