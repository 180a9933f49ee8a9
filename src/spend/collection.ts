import { Type, type TSchema } from 'typebox';
import { instantOf } from '../date-time.js';

/**
 * Hourly and daily spend are one resource in two collections that differ only in their time
 * key. A collection says how: the field the API names it by, its SQL type and how a list
 * query names a range of it. Everything else (schemas, SQL, routes) is built from this.
 */
export interface SpendCollection {
  prefix: '/v1/spend_hourly' | '/v1/spend';
  table: 'spend_hourly' | 'spend_daily';
  noun: string;
  /** The record's time field. */
  timeField: 'hour_start_iso' | 'date';
  timeSchema: TSchema;
  /** SQL type of the `period` column. */
  sqlType: 'timestamptz' | 'date';
  /** SQL that writes a period column the way the API shows it. */
  periodText(column: string): string;
  /** The list query's parameters for an inclusive range, as an alternative to `date`. */
  rangeParams: readonly [string, string];
  rangeSchema: TSchema;
  /** A comparable value of a period as the API takes it. */
  periodValue(text: string): number | string;
  /** The inclusive range of periods within one UTC day. */
  periodsOfDay(date: string): [string, string];
  /**
   * Whether a list query must name its platform_account_id. The specification requires it; the
   * hosted API lists every account of the client when a daily list leaves it out, and its clients
   * rely on that.
   */
  listNeedsAccount: boolean;
  /** The API reference's examples: a period, and a range a list query names. */
  example: { period: string; range: readonly [string, string] };
}

export const hourly: SpendCollection = {
  prefix: '/v1/spend_hourly',
  table: 'spend_hourly',
  noun: 'hourly spend record',
  timeField: 'hour_start_iso',
  timeSchema: Type.String({
    format: 'whole-hour',
    description: 'Start of the hour: ISO-8601 with a time zone, at minute 0 in UTC. Shown back in UTC.',
  }),
  sqlType: 'timestamptz',
  periodText: (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
  rangeParams: ['hour_start_iso_begin', 'hour_start_iso_end'],
  rangeSchema: Type.String({ format: 'date-time', description: 'Inclusive bound of hour_start_iso.' }),
  periodValue: instantOf,
  periodsOfDay: (date) => [`${date}T00:00:00Z`, `${date}T23:00:00Z`],
  listNeedsAccount: true,
  example: { period: '2024-03-08T09:00:00Z', range: ['2024-03-08T00:00:00Z', '2024-03-08T23:00:00Z'] },
};

export const daily: SpendCollection = {
  prefix: '/v1/spend',
  table: 'spend_daily',
  noun: 'daily spend record',
  timeField: 'date',
  timeSchema: Type.String({ format: 'date', description: 'The day, YYYY-MM-DD.' }),
  sqlType: 'date',
  periodText: (column) => `to_char(${column}, 'YYYY-MM-DD')`,
  rangeParams: ['date_start', 'date_end'],
  rangeSchema: Type.String({ format: 'date', description: 'Inclusive bound of date, YYYY-MM-DD.' }),
  periodValue: (date) => date,
  periodsOfDay: (date) => [date, date],
  listNeedsAccount: false,
  example: { period: '2024-03-08', range: ['2024-03-01', '2024-03-31'] },
};
