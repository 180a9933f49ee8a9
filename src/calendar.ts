/** Calendar arithmetic on plain dates (`YYYY-MM-DD`), done in UTC where no day is 23 or 25 hours long. */

export const DAY_MS = 86_400_000;

export const utcMidnight = (date: string) => new Date(`${date}T00:00:00Z`);
export const dateOf = (instant: Date) => instant.toISOString().slice(0, 10);
export const addDays = (date: string, days: number) => dateOf(new Date(utcMidnight(date).getTime() + days * DAY_MS));
/** The days from `first` to `last`, both counted: 0 or less when `last` comes before `first`. */
export const daysSpanned = (first: string, last: string) => (utcMidnight(last).getTime() - utcMidnight(first).getTime()) / DAY_MS + 1;
/** The first day of the month `months` after that of `date`. */
export const addMonths = (date: string, months: number) => {
  const d = utcMidnight(date);
  return dateOf(new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1)));
};
export const monday = (date: string) => addDays(date, -((utcMidnight(date).getUTCDay() + 6) % 7));
export const firstOfMonth = (date: string) => `${date.slice(0, 7)}-01`;
export const firstOfYear = (date: string) => `${date.slice(0, 4)}-01-01`;
export const addYears = (date: string, years: number) => `${String(Number(date.slice(0, 4)) + years).padStart(4, '0')}${date.slice(4)}`;

/** Today's date in `timeZone`. */
export function localToday(timeZone: string, now: Date): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}
