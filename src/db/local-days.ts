/**
 * The first instant of the local day `day` (an SQL date) in the time zone `zone` (SQL). Where
 * clocks go back at midnight (the Azores in October, Cuba in November), midnight comes twice and
 * `AT TIME ZONE` takes the second, an hour into the day: an hour before midnight, plus an hour,
 * is the first. Where midnight does not exist, both are the day's first instant, and where the
 * hour before midnight comes twice or not at all, the later reading is the day's start.
 */
export const localDayStart = (day: string, zone: string) =>
  `least((${day}::timestamp AT TIME ZONE ${zone}), ${instantPlus(`(${day}::timestamp - interval '1 hour') AT TIME ZONE ${zone}`, "interval '1 hour'")})`;

/**
 * `instant + interval` (SQL: a timestamptz, and an interval of hours and smaller units only), as an immutable
 * expression: timestamptz arithmetic is stable (a day's length depends on the session's time
 * zone), and Citus refuses a stable function applied to a column in an UPDATE's SET or a write's
 * WHERE (docs/scaling.md). On UTC's wall clock, which never changes, the sum is the same.
 */
export const instantPlus = (instant: string, interval: string) => `(((${instant}) AT TIME ZONE 'UTC' + (${interval})) AT TIME ZONE 'UTC')`;
