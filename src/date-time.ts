/**
 * Dates and date-times the API accepts, and no more than PostgreSQL can store: years from 1,
 * offsets up to ±15:59.
 */

/** YYYY-MM-DD, a real calendar day. */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * ISO-8601 date-time with a time zone: `Z` or an offset written with or without a colon
 * (`-08:00`, `-0800`), optional fractional seconds.
 */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/;

export function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth;
}

const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const END_INSTANT = Date.parse('9999-12-31T23:59:59.999Z') + 1;

/** The fraction of a second in microseconds, rounded as PostgreSQL stores it (1,000,000 carries a second). */
function roundedMicros(fraction = ''): number {
  const digits = fraction.padEnd(7, '0');
  return Number(digits.slice(0, 6)) + (digits[6]! >= '5' ? 1 : 0);
}

/**
 * Also in UTC within years 1 to 9999, as stored: a fraction finer than a microsecond is rounded
 * to the microsecond, which may carry it into the next second.
 */
export function isDateTime(value: string): boolean {
  const match = DATE_TIME.exec(value);
  if (!match || !isDate(match[1]!)) return false;
  const [hour, minute, second, offsetHours, offsetMinutes] = [2, 3, 4, 6, 7].map((group) => Number(match[group] ?? 0)) as [
    number, number, number, number, number,
  ];
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 15 || offsetMinutes > 59) return false;
  const instant = instantOf(value);
  const storedSecond = Math.floor(instant / 1000) * 1000 + (roundedMicros(match[5]) === 1_000_000 ? 1000 : 0);
  return instant >= FIRST_INSTANT && storedSecond < END_INSTANT;
}

/** Milliseconds since the epoch of a date-time `isDateTime` accepts (fractions past the millisecond dropped). */
export function instantOf(value: string): number {
  // Date.parse wants upper case and the offset's colon; the API also takes -0800.
  return Date.parse(value.toUpperCase().replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
}

const HOUR_MS = 3_600_000;

/** A date-time at exactly the start of an hour in UTC (so a half-hour offset such as +05:30 is not). */
export function isWholeHour(value: string): boolean {
  return isDateTime(value) && !/\.\d*[1-9]/.test(value) && instantOf(value) % HOUR_MS === 0;
}
