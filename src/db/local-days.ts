/**
 * The first instant of the local day `day` (an SQL date) in the time zone `zone` (SQL). Where
 * clocks go back at midnight (the Azores in October, Cuba in November), midnight comes twice and
 * `AT TIME ZONE` takes the second, an hour into the day: an hour before midnight, plus an hour,
 * is the first. Where midnight does not exist, both are the day's first instant, and where the
 * hour before midnight comes twice or not at all, the later reading is the day's start.
 */
export const localDayStart = (day: string, zone: string) =>
  `least((${day}::timestamp AT TIME ZONE ${zone}), ((${day}::timestamp - interval '1 hour') AT TIME ZONE ${zone}) + interval '1 hour')`;
