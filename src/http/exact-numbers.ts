import type { ErrorItem } from './error-envelope.js';
import { pointerSegment } from './json-pointers.js';

/** What every number of a request body must be, as an exact decimal, and how it is stored. */
export interface NumberBounds {
  /** Integers: a number out of them is refused. */
  minimum: number;
  maximum: number;
  /**
   * Decimal places a number is stored with: one sent with more is rounded to them (half away from
   * zero). A bound on the text a stored number reads back as (1e-16383 is 16,384 digits).
   */
  scale: number;
}

/** A number rounded to the scale: where it was (`body/<JSON pointer>`), and what was stored. */
export interface RoundedNumber {
  loc: string;
  msg: string;
}

/** A request body's numbers, read as exact decimals. */
export interface ExactNumbers {
  /**
   * The body as it is to be stored: the JSON text as sent, less the numbers with more decimal
   * places than the scale or with an exponent, each written out as a plain decimal of at most
   * the scale's places, and those out of bounds, written as 0 (stored only where their key is
   * given again, and so dropped).
   */
  json: string;
  /** Numbers out of bounds, whose key is not given again: the request is refused. */
  problems: ErrorItem[];
  /** Numbers whose value the rounding changed, in document order. */
  rounded: RoundedNumber[];
}

/** A decimal: `digits` × 10^`exponent`, its digits without leading or trailing zeros ('' is 0, whatever the exponent). */
interface Decimal {
  negative: boolean;
  digits: string;
  exponent: number;
}

const [ZERO, FIVE, NINE, MINUS, QUOTE, COMMA] = ['0', '5', '9', '-', '"', ','].map((char) => char.charCodeAt(0)) as [number, number, number, number, number, number];
const [OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY] = ['{', '}', '[', ']'].map((char) => char.charCodeAt(0)) as [number, number, number, number];
const BACKSLASH = 0x5c;

function decimalOf(negative: boolean, integer: string, fraction: string, exponent: number): Decimal {
  const written = integer + fraction;
  let start = 0;
  while (start < written.length && written.charCodeAt(start) === ZERO) start++;
  let end = written.length;
  while (end > start && written.charCodeAt(end - 1) === ZERO) end--;
  return { negative, digits: written.slice(start, end), exponent: exponent - fraction.length + (written.length - end) };
}

/**
 * An exponent as written. Past ±10^15 it is clamped: a body's digits are far fewer than that, so
 * such a number is still below the scale (it rounds to 0) or above any bound, as it truly is.
 */
function exponentOf(written: string | undefined): number {
  if (written === undefined) return 0;
  const digits = written.replace(/^[+-]?0*/, '');
  const magnitude = digits.length > 15 ? 1e15 : Number(digits || '0');
  return written.startsWith('-') ? -magnitude : magnitude;
}

/** A JSON number's parts: sign, integer digits, fraction digits, exponent. */
const NUMBER = /(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/y;

function parsedAt(text: string, at: number): { value: Decimal; end: number; exponentWritten: boolean; fractionDigits: number } {
  NUMBER.lastIndex = at;
  const [, sign, integer, fraction = '', exponent] = NUMBER.exec(text)!;
  return {
    value: decimalOf(sign === '-', integer!, fraction, exponentOf(exponent)),
    end: NUMBER.lastIndex,
    exponentWritten: exponent !== undefined,
    fractionDigits: fraction.length,
  };
}

const signOf = (value: Decimal) => (value.digits === '' ? 0 : value.negative ? -1 : 1);

/** -1, 0 or 1 as |a| is below, equal to or above |b|; neither is 0. */
function compareMagnitudes(a: Decimal, b: Decimal): number {
  // The place above the leading digit decides, then the digits from the leading one.
  const aTop = a.digits.length + a.exponent;
  const bTop = b.digits.length + b.exponent;
  if (aTop !== bTop) return aTop < bTop ? -1 : 1;
  const shared = Math.min(a.digits.length, b.digits.length);
  for (let i = 0; i < shared; i++) {
    const difference = a.digits.charCodeAt(i) - b.digits.charCodeAt(i);
    if (difference !== 0) return Math.sign(difference);
  }
  // The longer ends in a digit that is not 0.
  return Math.sign(a.digits.length - b.digits.length);
}

function compare(a: Decimal, b: Decimal): number {
  const [aSign, bSign] = [signOf(a), signOf(b)];
  if (aSign !== bSign || aSign === 0) return Math.sign(aSign - bSign);
  return aSign * compareMagnitudes(a, b);
}

/** `digits` + 1, as digits. */
function increment(digits: string): string {
  let at = digits.length - 1;
  while (at >= 0 && digits[at] === '9') at--;
  if (at < 0) return `1${'0'.repeat(digits.length)}`;
  return `${digits.slice(0, at)}${String.fromCharCode(digits.charCodeAt(at) + 1)}${'0'.repeat(digits.length - at - 1)}`;
}

/**
 * `value` rounded to `scale` decimal places, half away from zero, from its digits: the work is
 * on the digits that are kept, so 1e-16383 costs what 0 costs. `value` itself when it has no
 * more places.
 */
function rounded(value: Decimal, scale: number): Decimal {
  if (value.digits === '' || value.exponent >= -scale) return value;
  // The digits at places 10^-scale and above; the first one dropped decides.
  const kept = value.digits.length + value.exponent + scale;
  if (kept < 0) return { negative: false, digits: '', exponent: 0 };
  const head = kept === 0 ? '0' : value.digits.slice(0, kept);
  const up = value.digits.charCodeAt(kept) >= FIVE;
  const result = decimalOf(value.negative, up ? increment(head) : head, '', -scale);
  return result.digits === '' ? { ...result, negative: false } : result;
}

/** `value` as a plain decimal (no exponent, no trailing zeros): for values within the bounds and the scale, at most 29 characters. */
function plain(value: Decimal): string {
  if (value.digits === '') return '0';
  const sign = value.negative ? '-' : '';
  if (value.exponent >= 0) return `${sign}${value.digits}${'0'.repeat(value.exponent)}`;
  const point = value.digits.length + value.exponent;
  if (point > 0) return `${sign}${value.digits.slice(0, point)}.${value.digits.slice(point)}`;
  return `${sign}0.${'0'.repeat(-point)}${value.digits}`;
}

/** The end of the JSON string that opens at `open`. */
function stringEnd(text: string, open: number): number {
  for (let from = open + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

const keyOf = (token: string): string => (token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1));

/**
 * Whether a JSON text may hold a number that needs more than its binary float: one with as many
 * integer digits as the widest bound (100000000000000.001 reads as the maximum), more decimal
 * places than the scale, or an exponent (1e-400 reads as 0). Strings can match too; that only
 * costs the reading.
 */
function mayNeedReading(bounds: NumberBounds): (json: string) => boolean {
  const integerDigits = String(Math.trunc(Math.max(Math.abs(bounds.minimum), Math.abs(bounds.maximum)))).length;
  const suspicious = new RegExp(`(?:^|[:[,])\\s*-?(?:\\d{${integerDigits}}|\\d*\\.\\d{${bounds.scale + 1}}|\\d[\\d.]*[eE])`);
  return (json) => suspicious.test(json);
}

/**
 * The numbers of request bodies, as exact decimals read from the JSON text (never through a
 * binary float): those out of `bounds` (which their floats may hide), and the body to store, each
 * number of more decimal places than the scale rounded to it, half away from zero, and reported.
 * Every resource that stores numbers from a body reads them with this one rule. Most bodies have
 * no number that needs it, and are not read again.
 */
export function exactNumbers(bounds: NumberBounds): (json: string) => ExactNumbers {
  const [minimum, maximum] = [bounds.minimum, bounds.maximum].map((bound) => {
    if (!Number.isInteger(bound)) throw new Error(`bounds must be integers: ${bound}`);
    return parsedAt(String(bound), 0).value;
  }) as [Decimal, Decimal];
  const mayNeed = mayNeedReading(bounds);
  const messages = {
    minimum: { msg: `Must be at least ${bounds.minimum}`, type: 'minimum' },
    maximum: { msg: `Must be at most ${bounds.maximum}`, type: 'maximum' },
  };

  return (json) => {
    if (!mayNeed(json)) return { json, problems: [], rounded: [] };

    // Where the reading is: the key or index of each open container, and the keys an open object has had.
    const path: (string | number)[] = [];
    const keys: (Set<string> | null)[] = [];
    let expectingKey = false;
    const loc = () => `body${path.map((segment) => `/${pointerSegment(String(segment))}`).join('')}`;
    const pieces: string[] = [];
    let copiedTo = 0;
    let problems: ErrorItem[] = [];
    let roundedNumbers: RoundedNumber[] = [];
    /** What the value at `place` was found to be, when its key comes again: the last one counts, as for JSON.parse and jsonb. */
    const forget = (place: string) => {
      const elsewhere = (item: { loc: string }) => item.loc !== place && !item.loc.startsWith(`${place}/`);
      problems = problems.filter(elsewhere);
      roundedNumbers = roundedNumbers.filter(elsewhere);
    };
    const write = (at: number, end: number, text: string) => {
      pieces.push(json.slice(copiedTo, at), text);
      copiedTo = end;
    };

    for (let at = 0; at < json.length; ) {
      const char = json.charCodeAt(at);
      if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
        expectingKey = char === OPEN_OBJECT;
        keys.push(expectingKey ? new Set() : null);
        path.push(expectingKey ? '' : 0);
        at++;
      } else if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
        keys.pop();
        path.pop();
        at++;
      } else if (char === COMMA) {
        if (keys.at(-1)) expectingKey = true;
        else (path[path.length - 1] as number)++;
        at++;
      } else if (char === QUOTE) {
        const end = stringEnd(json, at);
        if (expectingKey) {
          const key = keyOf(json.slice(at, end));
          const seen = keys.at(-1)!;
          path[path.length - 1] = key;
          if (seen.has(key)) forget(loc());
          else seen.add(key);
        }
        expectingKey = false;
        at = end;
      } else if (char === MINUS || (char >= ZERO && char <= NINE)) {
        const { value, end, exponentWritten, fractionDigits } = parsedAt(json, at);
        const outOf = compare(value, minimum) < 0 ? 'minimum' : compare(value, maximum) > 0 ? 'maximum' : undefined;
        if (outOf) {
          problems.push({ loc: loc(), ...messages[outOf] });
          // Stored only if its key comes again, and then the database drops it: it need not parse it.
          write(at, end, '0');
        } else if (exponentWritten || fractionDigits > bounds.scale) {
          // Written out, so that the database reads no exponent (it cannot read 0e-99999) and keeps no place past the scale.
          const stored = rounded(value, bounds.scale);
          const text = plain(stored);
          write(at, end, text);
          if (stored !== value) roundedNumbers.push({ loc: loc(), msg: `Rounded to ${bounds.scale} decimal places: stored as ${text}` });
        }
        at = end;
      } else {
        at++; // whitespace, ':', and the letters of true, false and null
      }
    }
    pieces.push(json.slice(copiedTo));
    return { json: copiedTo === 0 ? json : pieces.join(''), problems, rounded: roundedNumbers };
  };
}
