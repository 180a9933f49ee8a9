import { daysSpanned } from '../calendar.js';
import type { ErrorItem } from './errors.js';

/**
 * The problems of a query's range of local days, `start_date` to `end_date` (both counted): an end
 * before the start, or more days than `maxDays`, said by `tooLong`.
 */
export function dayRangeProblems({ start_date, end_date }: { start_date: string; end_date: string }, maxDays: number, tooLong: string): ErrorItem[] {
  const days = daysSpanned(start_date, end_date);
  if (days < 1) return [{ loc: 'query/end_date', msg: 'end_date must not be before start_date', type: 'period' }];
  return days > maxDays ? [{ loc: 'query/end_date', msg: tooLong, type: 'period' }] : [];
}
