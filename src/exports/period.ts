import type { Period } from '../attribution/index.js';
import { addDays, addMonths, addYears, dateOf, firstOfMonth, firstOfYear, localToday, monday, utcMidnight, DAY_MS } from '../calendar.js';
import { instantOf, isDate } from '../date-time.js';
import type { PERIOD_TYPES } from './schema.js';

type PeriodType = (typeof PERIOD_TYPES)[number];

export class PeriodError extends Error {}

const MAX_FIXED_YEARS = 2;

const LAST_N = /^LAST_(\d+)_(DAYS|WEEKS|MONTHS|YEARS)$/;

/** The relative period `type` as of `today`: [from, to) in local days. Periods end today included only when they say "today" or "to date". */
function relativeDays(type: Exclude<PeriodType, 'FIXED'>, today: string): [string, string] {
  const tomorrow = addDays(today, 1);
  const week = monday(today);
  const month = firstOfMonth(today);
  const year = firstOfYear(today);
  const lastN = LAST_N.exec(type);
  if (lastN) {
    const n = Number(lastN[1]);
    switch (lastN[2]) {
      case 'DAYS':
        return [addDays(today, -n), today];
      case 'WEEKS':
        return [addDays(week, -7 * n), week];
      case 'MONTHS':
        return [addMonths(month, -n), month];
      default:
        return [addYears(year, -n), year];
    }
  }
  const periods: Record<string, [string, string]> = {
    TODAY: [today, tomorrow],
    YESTERDAY: [addDays(today, -1), today],
    YESTERDAY_AND_TODAY: [addDays(today, -1), tomorrow],
    MONTH_TO_DATE: [month, tomorrow],
    LAST_MONTH: [addMonths(month, -1), month],
    THIS_WEEK: [week, tomorrow],
    LAST_WEEK: [addDays(week, -7), week],
    THIS_WEEK_AND_LAST_WEEK: [addDays(week, -7), tomorrow],
    THIS_MONTH: [month, addMonths(month, 1)],
    THIS_MONTH_AND_LAST_MONTH: [addMonths(month, -1), addMonths(month, 1)],
    YEAR_TO_DATE: [year, tomorrow],
    LAST_YEAR: [addYears(year, -1), year],
  };
  const period = periods[type];
  if (!period) throw new PeriodError(`Unknown period type ${type}`);
  return period;
}

/** The local days `first` to `last`, both included: [first, the day after last). */
function fixedDays(first: string, last: string): Period {
  if (first > last) throw new PeriodError('period_ending_at must not be before period_starting_at');
  const to = addDays(last, 1);
  if (!isDate(to)) throw new PeriodError('period_ending_at must be before 9999-12-31');
  const latest = utcMidnight(first);
  latest.setUTCFullYear(latest.getUTCFullYear() + MAX_FIXED_YEARS);
  if (to > dateOf(latest)) throw new PeriodError(`A FIXED period may be at most ${MAX_FIXED_YEARS} years long`);
  return { kind: 'days', from: first, to };
}

/**
 * The period an export asks for. `options` is required for FIXED: two date-times (instants, start
 * before end) or two dates (whole local days, the last included), at most two years apart.
 */
export function resolvePeriod(
  type: PeriodType,
  options: { period_starting_at: string; period_ending_at: string } | undefined,
  timeZone: string,
  now: Date,
): Period {
  if (type !== 'FIXED') {
    const [from, to] = relativeDays(type, localToday(timeZone, now));
    return { kind: 'days', from, to };
  }
  if (!options) throw new PeriodError('A FIXED period needs period_options with period_starting_at and period_ending_at');
  const { period_starting_at: first, period_ending_at: last } = options;
  if (isDate(first) && isDate(last)) return fixedDays(first, last);
  if (isDate(first) || isDate(last)) {
    throw new PeriodError('Give period_starting_at and period_ending_at both as dates (whole days) or both as date-times');
  }
  const from = instantOf(first);
  const to = instantOf(last);
  if (from >= to) throw new PeriodError('period_ending_at must be after period_starting_at');
  const latest = new Date(from);
  latest.setUTCFullYear(latest.getUTCFullYear() + MAX_FIXED_YEARS);
  if (to > latest.getTime()) throw new PeriodError(`A FIXED period may be at most ${MAX_FIXED_YEARS} years long`);
  return { kind: 'instants', from: first, to: last };
}

/** The days a period spans: whole local days, or the days between two instants, a part counted whole. */
export function periodDays(period: Period): number {
  const ms = period.kind === 'days' ? utcMidnight(period.to).getTime() - utcMidnight(period.from).getTime() : instantOf(period.to) - instantOf(period.from);
  return Math.ceil(ms / DAY_MS);
}
