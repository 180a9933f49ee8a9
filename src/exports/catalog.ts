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

/** Every metric id an export takes, aliases included, as GET /v1/exports/metrics lists them. */
export const METRIC_CATALOG: readonly Metric[] = [
  ...METRICS,
  ...Object.entries(METRIC_ALIASES).map(([alias, id]): Metric => {
    const metric = METRICS.find((candidate) => candidate.id === id)!;
    return { ...metric, id: alias, definition: `${id}, under the hosted API's id. ${metric.definition}` };
  }),
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
