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
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isCalendarDay(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!);
}

export function isDate(value: string): boolean {
  const match = DATE.exec(value);
  return match !== null && isCalendarDay(Number(match[1]), Number(match[2]), Number(match[3]));
}

// Date.UTC reads years 0 to 99 as 1900 to 1999; 400 Gregorian years later the calendar repeats.
const FOUR_CENTURIES_MS = 146_097 * 86_400_000;
const FIRST_INSTANT = Date.UTC(401, 0, 1) - FOUR_CENTURIES_MS;
const END_INSTANT = Date.UTC(10_000, 0, 1);

/** The fraction of a second in microseconds, rounded as PostgreSQL stores it (1,000,000 carries a second). */
function roundedMicros(fraction = ''): number {
  const digits = fraction.padEnd(7, '0');
  return Number(digits.slice(0, 6)) + (digits[6]! >= '5' ? 1 : 0);
}

interface ParsedDateTime {
  /** Milliseconds since the epoch (fractions past the millisecond dropped). */
  instant: number;
  fraction: string;
}

/** A date-time of the accepted form, with real fields; whether it can be stored is not checked. */
function parseDateTime(value: string): ParsedDateTime | undefined {
  const match = DATE_TIME.exec(value);
  if (!match) return undefined;
  // Read group by group: every touchpoint and order is checked here, and destructuring arrays would allocate for each.
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = Number(match[6]);
  const offsetHours = Number(match[9] ?? 0);
  const offsetMinutes = Number(match[10] ?? 0);
  if (!isCalendarDay(year, month, day) || hour > 23 || minute > 59 || second > 59 || offsetHours > 15 || offsetMinutes > 59) return undefined;
  const fraction = match[7] ?? '';
  const local = Date.UTC(year + 400, month - 1, day, hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0'))) - FOUR_CENTURIES_MS;
  const offsetMs = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return { instant: local - offsetMs, fraction };
}

/** The instant of a date-time that is in UTC within years 1 to 9999 once stored, or undefined. */
function storableInstant(value: string): ParsedDateTime | undefined {
  const parsed = parseDateTime(value);
  if (!parsed) return undefined;
  // A fraction finer than a microsecond is rounded to the microsecond, which may carry it into the next second.
  const storedSecond = Math.floor(parsed.instant / 1000) * 1000 + (roundedMicros(parsed.fraction) === 1_000_000 ? 1000 : 0);
  return parsed.instant >= FIRST_INSTANT && storedSecond < END_INSTANT ? parsed : undefined;
}

/**
 * Also in UTC within years 1 to 9999, as stored: a fraction finer than a microsecond is rounded
 * to the microsecond, which may carry it into the next second.
 */
export function isDateTime(value: string): boolean {
  return storableInstant(value) !== undefined;
}

/** Milliseconds since the epoch of a date-time `isDateTime` accepts (fractions past the millisecond dropped). */
export function instantOf(value: string): number {
  return parseDateTime(value)?.instant ?? NaN;
}

const HOUR_MS = 3_600_000;

/** A date-time at exactly the start of an hour in UTC (so a half-hour offset such as +05:30 is not). */
export function isWholeHour(value: string): boolean {
  const parsed = storableInstant(value);
  return parsed !== undefined && parsed.instant % HOUR_MS === 0 && !/[1-9]/.test(parsed.fraction);
}
