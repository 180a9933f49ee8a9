/**
 * The metrics an export can hold. Spend metrics come from spend records, per ad object; order
 * metrics describe the whole store per time bucket; blended ones divide one by the other;
 * attribution metrics credit orders to ad objects, one set of rows per attribution model, window
 * and accounting mode (see rows.ts). A ratio whose denominator is zero is an empty cell.
 */
export interface Metric {
  id: string;
  label: string;
  source: 'spend' | 'orders' | 'blended' | 'attribution';
  definition: string;
}

/** The attribution metrics of first-time orders (Ft) and of the others (Rtn). */
const attributedOf = (suffix: 'Ft' | 'Rtn', orders: string): Metric[] => [
  { id: `rev${suffix}`, label: `Attributed revenue (${orders})`, source: 'attribution', definition: `rev of ${orders} orders.` },
  { id: `txns${suffix}`, label: `Attributed transactions (${orders})`, source: 'attribution', definition: `txns of ${orders} orders.` },
  { id: `roas${suffix}`, label: `ROAS (${orders})`, source: 'attribution', definition: `rev${suffix} ÷ spend.` },
  { id: `cac${suffix}`, label: `CAC (${orders})`, source: 'attribution', definition: `spend ÷ txns${suffix}.` },
];

export const METRICS: readonly Metric[] = [
  { id: 'spend', label: 'Spend', source: 'spend', definition: 'Sum of spend.' },
  { id: 'impressions', label: 'Impressions', source: 'spend', definition: 'Sum of impressions.' },
  { id: 'clicks', label: 'Clicks', source: 'spend', definition: 'Sum of clicks.' },
  { id: 'ctr', label: 'CTR', source: 'spend', definition: 'clicks ÷ impressions.' },
  { id: 'cpc', label: 'CPC', source: 'spend', definition: 'spend ÷ clicks.' },
  { id: 'cpm', label: 'CPM', source: 'spend', definition: 'spend ÷ impressions × 1000.' },
  { id: 'revenue', label: 'Revenue', source: 'orders', definition: 'Sum of purchase_total of the orders placed in the bucket.' },
  { id: 'transactions', label: 'Transactions', source: 'orders', definition: 'Number of orders placed in the bucket.' },
  {
    id: 'aov',
    label: 'Average order value',
    source: 'orders',
    definition: 'revenue ÷ transactions; in an export with attribution metrics, rev ÷ txns of the row.',
  },
  { id: 'refunds', label: 'Refunds', source: 'orders', definition: 'Sum of refund_amount of the refunds made in the bucket (by refund_made_at).' },
  { id: 'net_revenue', label: 'Net revenue', source: 'orders', definition: 'revenue − refunds.' },
  { id: 'new_customers', label: 'New customers', source: 'orders', definition: 'Customers whose first order was placed in the bucket.' },
  {
    id: 'returning_customers',
    label: 'Returning customers',
    source: 'orders',
    definition: 'Customers who placed an order in the bucket and their first order before it.',
  },
  { id: 'mer', label: 'MER (blended ROAS)', source: 'blended', definition: 'revenue ÷ spend.' },
  { id: 'blended_cac', label: 'Blended CAC', source: 'blended', definition: 'spend ÷ new customers.' },
  {
    id: 'rev',
    label: 'Attributed revenue',
    source: 'attribution',
    definition: 'Sum of credit × purchase_total of the orders credited to the row (to the unattributed row when an order\'s path is empty).',
  },
  { id: 'txns', label: 'Attributed transactions', source: 'attribution', definition: 'Sum of the credits of the orders credited to the row.' },
  { id: 'roas', label: 'ROAS', source: 'attribution', definition: 'rev ÷ spend.' },
  { id: 'cac', label: 'CAC', source: 'attribution', definition: 'spend ÷ txns.' },
  ...attributedOf('Ft', 'first-time'),
  ...attributedOf('Rtn', 'returning'),
  { id: 'visits', label: 'Visits', source: 'attribution', definition: 'Number of visit touchpoints of the row in the bucket (by occurred_at), whatever the model.' },
  { id: 'newVisits', label: 'New visits', source: 'attribution', definition: 'Visits that are their visitor\'s first visit ever.' },
  { id: 'newVisitsPercentage', label: 'New visits (%)', source: 'attribution', definition: 'newVisits ÷ visits × 100.' },
  { id: 'ecr', label: 'Conversion rate', source: 'attribution', definition: 'txns ÷ visits.' },
  { id: 'ecpc', label: 'Cost per visit', source: 'attribution', definition: 'spend ÷ visits.' },
];

/** Ids the hosted API's clients send for metrics of ours: each is its metric under another id. */
export const METRIC_ALIASES: Readonly<Record<string, string>> = { imprs: 'impressions', revAttributed: 'rev' };

/** The sums of spend records that the hosted API also offers per ad platform (googleClicks). */
export const PLATFORM_FIGURES = ['spend', 'impressions', 'clicks'] as const;
export type PlatformFigure = (typeof PLATFORM_FIGURES)[number];

/** An ad platform whose spend, impressions and clicks have ids of their own. */
export interface AdPlatform {
  /** The ids' prefix: `${prefix}Spend`, `${prefix}Impressions`, `${prefix}Clicks`. */
  prefix: string;
  /** The platform's name for people. */
  name: string;
  /** The platform_name values of its spend records, lower case: each also followed by " ads" (Google Ads). */
  platformNames: string[];
  /** Ids the hosted API spells otherwise than the prefix and the figure. */
  ids?: Partial<Record<PlatformFigure, string>>;
}

/**
 * The ad platforms of the hosted API's platform metric ids: those touchpoints name from click ids
 * (touchpoints/derive.ts), under the platform_name values spend records name them by, ours
 * (`meta`, `google`: the importer's) and the hosted API's (`Facebook Ads`, `Google Ads`, `TikTok`).
 * Meta's clicks have the hosted API's id, metaLinkClicks: the clicks of Meta's records, which the
 * importer takes from Ads Manager's link clicks.
 */
export const AD_PLATFORMS: readonly AdPlatform[] = [
  { prefix: 'google', name: 'Google', platformNames: ['google'] },
  { prefix: 'meta', name: 'Meta', platformNames: ['meta', 'facebook', 'instagram'], ids: { clicks: 'metaLinkClicks' } },
  { prefix: 'tiktok', name: 'TikTok', platformNames: ['tiktok'] },
  { prefix: 'snapchat', name: 'Snapchat', platformNames: ['snapchat'] },
  { prefix: 'pinterest', name: 'Pinterest', platformNames: ['pinterest'] },
  { prefix: 'microsoft', name: 'Microsoft Advertising', platformNames: ['microsoft', 'bing'] },
  { prefix: 'linkedin', name: 'LinkedIn', platformNames: ['linkedin'] },
  { prefix: 'x', name: 'X', platformNames: ['x', 'twitter'] },
];

/** The platform_name values, lower case, whose records are a platform's. */
export const platformNamesOf = (platform: AdPlatform) => platform.platformNames.flatMap((name) => [name, `${name} ads`]);

/** A platform metric: a figure summed over one platform's spend records only. */
export interface PlatformMetric {
  id: string;
  figure: PlatformFigure;
  platform: AdPlatform;
}

const capitalized = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}`;

/** Every platform metric: each platform's spend, impressions and clicks. */
export const PLATFORM_METRICS: readonly PlatformMetric[] = AD_PLATFORMS.flatMap((platform) =>
  PLATFORM_FIGURES.map((figure) => ({ id: platform.ids?.[figure] ?? `${platform.prefix}${capitalized(figure)}`, figure, platform })),
);

/** The platform metric of an id, if it is one. */
export const platformMetricOf = (id: string): PlatformMetric | undefined => PLATFORM_METRICS.find((metric) => metric.id === id);

/** A platform metric as the catalog lists it: its figure's definition, filtered to the platform. */
const platformCatalogEntry = ({ id, figure, platform }: PlatformMetric): Metric => {
  const names = platformNamesOf(platform).map((name) => `"${name}"`);
  return {
    id,
    label: `${platform.name} ${figure}`,
    source: 'spend',
    definition:
      `Sum of ${figure} of ${platform.name}'s spend records only, those whose platform_name is ${names.slice(0, -1).join(', ')} or ${names.at(-1)} in any letter case: ` +
      `the row's ${figure} on a row of ${platform.name}, 0 on a row of another platform, and ${platform.name}'s part of a row summing every platform.`,
  };
};

/** Every metric id an export takes, aliases included, as GET /v1/exports/metrics lists them. */
export const METRIC_CATALOG: readonly Metric[] = [
  ...METRICS,
  ...Object.entries(METRIC_ALIASES).map(([alias, id]): Metric => {
    const metric = METRICS.find((candidate) => candidate.id === id)!;
    return { ...metric, id: alias, definition: `${id}, under the hosted API's id. ${metric.definition}` };
  }),
  ...PLATFORM_METRICS.map(platformCatalogEntry),
];

export const METRIC_IDS = METRIC_CATALOG.map((metric) => metric.id);

const sourceOf = (id: string) => METRIC_CATALOG.find((metric) => metric.id === id)?.source;

/** Whether a metric needs the orders: it describes the whole store, not an ad object. */
export const isOrderMetric = (id: string) => sourceOf(id) === 'orders' || sourceOf(id) === 'blended';

/** Whether a metric makes an export attributed: rows per attribution model, window and accounting mode. */
export const isAttributionMetric = (id: string) => sourceOf(id) === 'attribution';

/** Labels of the client's spend that can split an export's rows; their values come from the client's data. */
export const BREAKDOWN_KEYS = ['platform', 'account'] as const;
export type BreakdownKey = (typeof BREAKDOWN_KEYS)[number];
/** The hosted API's breakdown keys that name one of ours: clients hard-code them. */
export const BREAKDOWN_ALIASES = { 'Platform (Northbeam)': 'platform' } as const satisfies Record<string, BreakdownKey>;
/** The keys an export may name: ours and their aliases. */
export const REQUEST_BREAKDOWN_KEYS = [...BREAKDOWN_KEYS, ...(Object.keys(BREAKDOWN_ALIASES) as (keyof typeof BREAKDOWN_ALIASES)[])];
export type RequestBreakdownKey = (typeof REQUEST_BREAKDOWN_KEYS)[number];
/** The key a request's breakdown key names. */
export const breakdownNamed = (key: RequestBreakdownKey): BreakdownKey =>
  key in BREAKDOWN_ALIASES ? BREAKDOWN_ALIASES[key as keyof typeof BREAKDOWN_ALIASES] : (key as BreakdownKey);
