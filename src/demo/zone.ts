/**
 * Local times of one time zone, as a shop in that zone writes them: instants of local dates and
 * hours, and ISO-8601 text with the zone's offset of the moment (`2025-03-08T09:12:00-05:00`).
 */
const HOUR_MS = 3_600_000;

export interface Zone {
  /** The zone's offset from UTC at `instant` (ms), in minutes (-300 for New York in winter). */
  offsetMinutes(instant: number): number;
  /** The instant of a local wall-clock time (a time a clock change skips lands an hour off, as in Date). */
  instantOf(date: string, hour: number, minute?: number, second?: number): number;
  /** The local date (`YYYY-MM-DD`) and hour of an instant. */
  localOf(instant: number): { date: string; hour: number };
  /** `instant` as ISO-8601 local time with the zone's offset, to the second. */
  iso(instant: number): string;
}

export function createZone(timeZone: string): Zone {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  // Offsets change on whole hours (of every zone a shop is in): one look-up an hour.
  const offsets = new Map<number, number>();
  function offsetMinutes(instant: number): number {
    const hour = Math.floor(instant / HOUR_MS);
    let offset = offsets.get(hour);
    if (offset === undefined) {
      const parts = Object.fromEntries(format.formatToParts(new Date(hour * HOUR_MS)).map((part) => [part.type, part.value]));
      const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
      offset = Math.round((local - hour * HOUR_MS) / 60_000);
      offsets.set(hour, offset);
    }
    return offset;
  }
  return {
    offsetMinutes,
    instantOf(date, hour, minute = 0, second = 0) {
      const wall = Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)) - 1, Number(date.slice(8, 10)), hour, minute, second);
      const guess = wall - offsetMinutes(wall) * 60_000;
      return wall - offsetMinutes(guess) * 60_000;
    },
    localOf(instant) {
      const local = new Date(instant + offsetMinutes(instant) * 60_000).toISOString();
      return { date: local.slice(0, 10), hour: Number(local.slice(11, 13)) };
    },
    iso(instant) {
      const offset = offsetMinutes(instant);
      const local = new Date(instant + offset * 60_000).toISOString().slice(0, 19);
      const sign = offset < 0 ? '-' : '+';
      const minutes = Math.abs(offset);
      return `${local}${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
    },
  };
}
