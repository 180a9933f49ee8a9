/**
 * The metrics an export can hold. Spend metrics come from spend records, per ad object; order
 * metrics describe the whole store per time bucket; blended ones divide one by the other.
 * A ratio whose denominator is zero is an empty cell.
 */
export interface Metric {
  id: string;
  label: string;
  source: 'spend' | 'orders' | 'blended';
  definition: string;
}

export const METRICS: readonly Metric[] = [
  { id: 'spend', label: 'Spend', source: 'spend', definition: 'Sum of spend.' },
  { id: 'impressions', label: 'Impressions', source: 'spend', definition: 'Sum of impressions.' },
  { id: 'clicks', label: 'Clicks', source: 'spend', definition: 'Sum of clicks.' },
  { id: 'ctr', label: 'CTR', source: 'spend', definition: 'clicks ÷ impressions.' },
  { id: 'cpc', label: 'CPC', source: 'spend', definition: 'spend ÷ clicks.' },
  { id: 'cpm', label: 'CPM', source: 'spend', definition: 'spend ÷ impressions × 1000.' },
  { id: 'revenue', label: 'Revenue', source: 'orders', definition: 'Sum of purchase_total of the orders placed in the bucket.' },
  { id: 'transactions', label: 'Transactions', source: 'orders', definition: 'Number of orders placed in the bucket.' },
  { id: 'aov', label: 'Average order value', source: 'orders', definition: 'revenue ÷ transactions.' },
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
];

export const METRIC_IDS = METRICS.map((metric) => metric.id);

/** Whether a metric needs the orders: it describes the whole store, not an ad object. */
export const isOrderMetric = (id: string) => METRICS.find((metric) => metric.id === id)?.source !== 'spend';

/** Labels of the client's spend that can split an export's rows; their values come from the client's data. */
export const BREAKDOWN_KEYS = ['platform', 'account'] as const;
export type BreakdownKey = (typeof BREAKDOWN_KEYS)[number];
