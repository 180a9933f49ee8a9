import type { Tenant } from '../auth/tenant.js';
import type { Period } from './period.js';

export type Granularity = 'HOURLY' | 'DAILY' | 'WEEKLY' | 'MONTHLY';
export type Level = 'platform' | 'campaign' | 'adset' | 'ad';

export interface SpendRowsQuery {
  tenant: Tenant;
  timeZone: string;
  period: Period;
  granularity: Granularity;
  /** The ad objects rows are made of; null sums over all of them per bucket (export_aggregation DATE). */
  level: Level | null;
  includeIds: boolean;
  removeZeroSpend: boolean;
}

/** The dimension columns of each level, in order: [column, id column, name column]. */
const LEVELS: Record<Level, [string, string | null, string][]> = {
  platform: [['platform', null, 'platform_name']],
  campaign: [['platform', null, 'platform_name'], ['campaign', 'campaign_id', 'campaign_name']],
  adset: [['platform', null, 'platform_name'], ['campaign', 'campaign_id', 'campaign_name'], ['adset', 'adset_id', 'adset_name']],
  ad: [
    ['platform', null, 'platform_name'],
    ['campaign', 'campaign_id', 'campaign_name'],
    ['adset', 'adset_id', 'adset_name'],
    ['ad', 'ad_id', 'ad_name'],
  ],
};

/** Every column an export may have before its metrics. */
export const DIMENSION_COLUMNS = ['date', 'platform', 'campaign', 'campaign_id', 'adset', 'adset_id', 'ad', 'ad_id', 'currency'];

const KEY = 'platform_name, platform_account_id, campaign_id, adset_id, ad_id';
const COLUMNS = `${KEY}, campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks`;
const UNITS: Record<Exclude<Granularity, 'HOURLY'>, string> = { DAILY: 'day', WEEKLY: 'week', MONTHLY: 'month' };
/** Ratios are rounded to this many decimal places. */
const RATIO_SCALE = 6;

/**
 * Spend, impressions and clicks per time bucket, ad object and currency, with CTR, CPC and CPM;
 * as one SQL statement with its parameters. Money is never summed across currencies: the
 * currency is a column of every row.
 *
 * Hourly and daily records are never added together. HOURLY buckets read hourly records only.
 * Longer buckets read daily records, and roll up the hourly records of an ad object's day only
 * when that day has no daily record (a day is a day of the client's time zone).
 */
export function spendRowsSql(query: SpendRowsQuery): { sql: string; params: unknown[]; columns: string[] } {
  const { tenant, timeZone, period, granularity, level, includeIds, removeZeroSpend } = query;
  const params: unknown[] = [tenant.clientId, tenant.environment, timeZone, period.from, period.to];
  // $4 and $5 as instants, and as local days of the client's zone.
  const [fromInstant, toInstant] =
    period.kind === 'days'
      ? ['($4::date::timestamp AT TIME ZONE $3)', '($5::date::timestamp AT TIME ZONE $3)']
      : ['$4::timestamptz', '$5::timestamptz'];
  const [fromDay, toDay] =
    period.kind === 'days'
      ? ['$4::date', '$5::date']
      : ['($4::timestamptz AT TIME ZONE $3)::date', "(($5::timestamptz - interval '1 microsecond') AT TIME ZONE $3)::date + 1"];

  const hourly = `SELECT (period AT TIME ZONE $3) AS local_time, period AS instant, ${COLUMNS} FROM spend_hourly
    WHERE client_id = $1 AND environment = $2 AND period >= ${fromInstant} AND period < ${toInstant}`;
  const daily = `SELECT period::timestamp AS local_time, NULL::timestamptz AS instant, ${COLUMNS} FROM spend_daily
    WHERE client_id = $1 AND environment = $2 AND period >= ${fromDay} AND period < ${toDay}`;
  const records =
    granularity === 'HOURLY'
      ? hourly
      : `${daily} UNION ALL SELECT h.* FROM (${hourly}) h
          WHERE NOT EXISTS (SELECT 1 FROM spend_daily d
                             WHERE d.client_id = $1 AND d.environment = $2 AND d.period = h.local_time::date
                               AND (d.platform_name, d.platform_account_id, d.campaign_id, d.adset_id, d.ad_id)
                                 = (h.platform_name, h.platform_account_id, h.campaign_id, h.adset_id, h.ad_id))`;

  // An hour is bucketed by its instant (two 01:00s on the night clocks go back are two rows) and
  // labelled in local time with its offset; longer buckets by local date, weeks from Monday.
  const [bucket, label] =
    granularity === 'HOURLY'
      ? [
          'instant',
          `to_char(instant AT TIME ZONE $3, 'YYYY-MM-DD"T"HH24:MI:SS') || utc_offset(instant, $3)`,
        ]
      : [`date_trunc('${UNITS[granularity]}', local_time)`, `to_char(date_trunc('${UNITS[granularity]}', local_time), 'YYYY-MM-DD')`];

  const dimensions = level ? LEVELS[level] : [];
  const selected: string[] = [`${label} AS date`];
  const groups = [bucket];
  const columns = ['date'];
  // An object renamed within the period is one object, shown under the name of its latest
  // record (on the night clocks go back, the later of two equal local times). Objects are told
  // apart by platform and id, across accounts, as the rows are.
  const partition: string[] = ['platform_name'];
  const latestNames: string[] = [];
  for (const [column, id, name] of dimensions) {
    const key = id ?? name;
    groups.push(key);
    if (id) {
      partition.push(id);
      latestNames.push(
        `first_value(${name}) OVER (PARTITION BY ${partition.join(', ')} ORDER BY local_time DESC, instant DESC NULLS LAST) AS latest_${name}`,
      );
    }
    selected.push(id ? `max(latest_${name}) AS ${column}` : `${name} AS ${column}`);
    columns.push(column);
    if (id && includeIds) {
      selected.push(`${id} AS ${column}_id`);
      columns.push(`${column}_id`);
    }
  }
  groups.push('spend_currency');
  const ratio = (numerator: string, denominator: string) =>
    `round(${numerator} / nullif(${denominator}, 0), ${RATIO_SCALE})`;
  selected.push(
    'spend_currency AS currency',
    'sum(spend) AS spend',
    'sum(impressions) AS impressions',
    'sum(clicks) AS clicks',
    `${ratio('sum(clicks)', 'sum(impressions)')} AS ctr`,
    `${ratio('sum(spend)', 'sum(clicks)')} AS cpc`,
    `${ratio('sum(spend) * 1000', 'sum(impressions)')} AS cpm`,
  );
  columns.push('currency', 'spend', 'impressions', 'clicks', 'ctr', 'cpc', 'cpm');

  const sql = `SELECT ${selected.join(', ')}
    FROM (SELECT *${latestNames.map((expression) => `, ${expression}`).join('')} FROM (${records}) AS r) AS records
    GROUP BY ${groups.join(', ')}
    ${removeZeroSpend ? 'HAVING sum(spend) <> 0' : ''}
    ORDER BY ${groups.join(', ')}`;
  return { sql, params, columns };
}
