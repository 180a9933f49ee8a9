import type { Queryable } from '../db/index.js';
import type { ErrorItem } from './error-envelope.js';

/** What every number of a request body must be, as an exact decimal. */
export interface NumberBounds {
  minimum: number;
  maximum: number;
  /** Decimal places: a bound on the text a stored number reads back as (1e-16383 is 16,384 digits). */
  decimals: number;
}

/**
 * Whether a JSON text may hold a number that a binary float misreads against `bounds`: one with
 * as many integer digits as the maximum (100000000000000.001 reads as the maximum), more
 * decimals than allowed, or an exponent (1e-400 reads as 0). Strings can match too; that only
 * costs the exact check.
 */
function mayHideProblems(bounds: NumberBounds): (json: string) => boolean {
  const integerDigits = String(Math.trunc(Math.max(Math.abs(bounds.minimum), bounds.maximum))).length;
  const suspicious = new RegExp(`:\\s*-?(?:\\d{${integerDigits}}|\\d*\\.\\d{${bounds.decimals + 1}}|[\\d.]+[eE])`);
  return (json) => suspicious.test(json);
}

/**
 * Every number of the document with the JSON Pointer to it, in document order: the database
 * reads a number's text as it is, where a JSON parser hands over a binary float.
 */
const NUMBERS_OUT_OF_BOUNDS = `
  WITH RECURSIVE node(pointer, place, value) AS (
    SELECT '', ARRAY[]::int[], $1::jsonb
    UNION ALL
    SELECT node.pointer || '/' || replace(replace(child.key, '~', '~0'), '/', '~1'), node.place || child.n::int, child.value
      FROM node CROSS JOIN LATERAL (
        SELECT key, value, n FROM jsonb_each(CASE WHEN jsonb_typeof(node.value) = 'object' THEN node.value END) WITH ORDINALITY AS o(key, value, n)
        UNION ALL
        SELECT (n - 1)::text, value, n FROM jsonb_array_elements(CASE WHEN jsonb_typeof(node.value) = 'array' THEN node.value END) WITH ORDINALITY AS a(value, n)
      ) AS child
  )
  SELECT pointer, CASE WHEN number < $2::numeric THEN 'minimum' WHEN number > $3::numeric THEN 'maximum' ELSE 'decimals' END AS problem
    FROM node CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN value::numeric END AS number) AS n
   WHERE number < $2::numeric OR number > $3::numeric OR scale(number) > $4
   ORDER BY place`;

/**
 * A check of the numbers of request bodies against `bounds`, as exact decimals, where the
 * schema's check of their binary floats may have been wrong; most bodies need no round trip.
 */
export function exactNumberCheck(bounds: NumberBounds) {
  const mayHide = mayHideProblems(bounds);
  const messages = {
    minimum: { msg: `Must be at least ${bounds.minimum}`, type: 'minimum' },
    maximum: { msg: `Must be at most ${bounds.maximum}`, type: 'maximum' },
    decimals: { msg: `Must have at most ${bounds.decimals} decimal places`, type: 'scale' },
  };
  return async (db: Queryable, json: string): Promise<ErrorItem[]> => {
    if (!mayHide(json)) return [];
    const rows = await db.query<{ pointer: string; problem: keyof typeof messages }>(NUMBERS_OUT_OF_BOUNDS, [
      json,
      bounds.minimum,
      bounds.maximum,
      bounds.decimals,
    ]);
    return rows.map(({ pointer, problem }) => ({ loc: `body${pointer}`, ...messages[problem] }));
  };
}
