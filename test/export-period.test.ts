import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localToday } from '../src/calendar.js';
import { PeriodError, resolvePeriod } from '../src/exports/period.js';
import { PERIOD_TYPES } from '../src/exports/schema.js';

// Monday 11 March 2024, 03:30 UTC: still Sunday the 10th in New York (the day DST began there).
const NOW = new Date('2024-03-11T03:30:00Z');
const NEW_YORK = 'America/New_York';

test('today is the date in the client\'s time zone', () => {
  assert.equal(localToday(NEW_YORK, NOW), '2024-03-10');
  assert.equal(localToday('UTC', NOW), '2024-03-11');
  assert.equal(localToday('Asia/Tokyo', NOW), '2024-03-11');
  assert.equal(localToday('Pacific/Kiritimati', new Date('2024-12-31T10:30:00Z')), '2025-01-01');
});

const EXPECTED: [string, string, string, string][] = [
  // period type, zone, from, to (exclusive)
  ['TODAY', NEW_YORK, '2024-03-10', '2024-03-11'],
  ['YESTERDAY', NEW_YORK, '2024-03-09', '2024-03-10'],
  ['YESTERDAY_AND_TODAY', NEW_YORK, '2024-03-09', '2024-03-11'],
  ['LAST_7_DAYS', NEW_YORK, '2024-03-03', '2024-03-10'],
  ['LAST_7_DAYS', 'UTC', '2024-03-04', '2024-03-11'],
  ['LAST_30_DAYS', 'UTC', '2024-02-10', '2024-03-11'], // through 29 February
  ['THIS_WEEK', NEW_YORK, '2024-03-04', '2024-03-11'], // Sunday: the week began on Monday the 4th
  ['THIS_WEEK', 'UTC', '2024-03-11', '2024-03-12'], // Monday: the week begins today
  ['LAST_WEEK', NEW_YORK, '2024-02-26', '2024-03-04'],
  ['THIS_WEEK_AND_LAST_WEEK', NEW_YORK, '2024-02-26', '2024-03-11'],
  ['LAST_4_WEEKS', NEW_YORK, '2024-02-05', '2024-03-04'],
  ['MONTH_TO_DATE', NEW_YORK, '2024-03-01', '2024-03-11'],
  ['THIS_MONTH', NEW_YORK, '2024-03-01', '2024-04-01'],
  ['LAST_MONTH', NEW_YORK, '2024-02-01', '2024-03-01'],
  ['THIS_MONTH_AND_LAST_MONTH', NEW_YORK, '2024-02-01', '2024-04-01'],
  ['LAST_3_MONTHS', NEW_YORK, '2023-12-01', '2024-03-01'],
  ['LAST_12_MONTHS', NEW_YORK, '2023-03-01', '2024-03-01'],
  ['YEAR_TO_DATE', NEW_YORK, '2024-01-01', '2024-03-11'],
  ['LAST_YEAR', NEW_YORK, '2023-01-01', '2024-01-01'],
  ['LAST_3_YEARS', NEW_YORK, '2021-01-01', '2024-01-01'],
];

for (const [type, zone, from, to] of EXPECTED) {
  test(`${type} in ${zone} is [${from}, ${to})`, () => {
    assert.deepEqual(resolvePeriod(type as never, undefined, zone, NOW), { kind: 'days', from, to });
  });
}

test('every relative period type resolves to a non-empty range of days ending no later than tomorrow', () => {
  for (const type of PERIOD_TYPES.filter((type) => type !== 'FIXED')) {
    const period = resolvePeriod(type, undefined, 'Europe/Berlin', NOW);
    assert.equal(period.kind, 'days');
    assert.ok(period.from < period.to, `${type}: ${JSON.stringify(period)}`);
    assert.ok(period.to <= '2024-04-01', type);
  }
});

test('a FIXED period is two instants, start before end, at most two years apart', () => {
  const fixed = (period_starting_at: string, period_ending_at: string) =>
    resolvePeriod('FIXED', { period_starting_at, period_ending_at }, NEW_YORK, NOW);
  assert.deepEqual(fixed('2024-03-01T00:00:00-0500', '2024-03-08T00:00:00-0500'), {
    kind: 'instants',
    from: '2024-03-01T00:00:00-0500',
    to: '2024-03-08T00:00:00-0500',
  });
  assert.equal(fixed('2022-01-01T00:00:00Z', '2024-01-01T00:00:00Z').kind, 'instants', 'exactly two years');
  assert.throws(() => fixed('2022-01-01T00:00:00Z', '2024-01-03T00:00:00Z'), PeriodError);
  assert.throws(() => fixed('2024-03-08T00:00:00Z', '2024-03-01T00:00:00Z'), PeriodError);
  assert.throws(() => fixed('2024-03-08T00:00:00Z', '2024-03-08T00:00:00Z'), PeriodError);
  assert.throws(() => resolvePeriod('FIXED', undefined, NEW_YORK, NOW), /period_options/);
});

test('a FIXED period of two dates is those whole local days, the last included, at most two years', () => {
  const fixed = (period_starting_at: string, period_ending_at: string) =>
    resolvePeriod('FIXED', { period_starting_at, period_ending_at }, NEW_YORK, NOW);
  assert.deepEqual(fixed('2026-11-16', '2026-11-22'), { kind: 'days', from: '2026-11-16', to: '2026-11-23' });
  assert.deepEqual(fixed('2024-02-29', '2024-02-29'), { kind: 'days', from: '2024-02-29', to: '2024-03-01' });
  assert.deepEqual(fixed('2024-02-29', '2026-02-28'), { kind: 'days', from: '2024-02-29', to: '2026-03-01' }, 'two years from a leap day');
  assert.throws(() => fixed('2024-02-29', '2026-03-01'), /at most 2 years/);
  assert.throws(() => fixed('2026-11-22', '2026-11-16'), /must not be before/);
  assert.throws(() => fixed('9999-12-01', '9999-12-31'), /before 9999-12-31/);
  assert.throws(() => fixed('2026-11-16', '2026-11-23T00:00:00Z'), /both as dates/);
  assert.throws(() => fixed('2026-11-16T00:00:00Z', '2026-11-22'), /both as dates/);
});
