/**
 * The state of a touchpoint in the data-driven models: its channel grouping, set per client
 * (admin API, `channel_grouping`). `platform`: its platform_name when it has one, else its
 * channel (direct, organic_search, ...); `platform_campaign`: a platform's touchpoints apart by
 * campaign as well, `meta:1234` (`meta:` when it names none).
 */
export const CHANNEL_GROUPINGS = ['platform', 'platform_campaign'] as const;
export type ChannelGrouping = (typeof CHANNEL_GROUPINGS)[number];
export const DEFAULT_CHANNEL_GROUPING: ChannelGrouping = 'platform';

/** The state of a touchpoint of a relation with the columns platform_name, campaign_id and channel, in SQL. */
export const stateSql = (grouping: ChannelGrouping, alias = '') =>
  `CASE WHEN ${alias}platform_name <> '' THEN ${alias}platform_name${grouping === 'platform_campaign' ? ` || ':' || ${alias}campaign_id` : ''} ELSE ${alias}channel END`;
