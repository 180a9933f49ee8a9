/**
 * The export request the published data-pipeline scripts build for one day
 * (yugInd8/aws_northbeam_pipeline and yugInd8/northbeam_spend_autopull, ../shared/reference/REAL-CLIENTS.md),
 * as they send it: five platforms, two of the hosted API's platform metric ids.
 */
export const pipelineScriptsExport = (day: string) => ({
  level: 'platform',
  time_granularity: 'DAILY',
  period_type: 'FIXED',
  period_options: { period_starting_at: `${day}T00:00:00Z`, period_ending_at: `${day}T23:59:59Z` },
  breakdowns: [{ key: 'Platform (Northbeam)', values: ['Google Ads', 'Facebook Ads', 'TikTok', 'Amazon - Ads and Organic', 'YouTube Ads'] }],
  options: { export_aggregation: 'BREAKDOWN', remove_zero_spend: false, aggregate_data: true, include_ids: false, include_kind_and_platform: false },
  attribution_options: { attribution_models: ['last_touch'], accounting_modes: ['accrual'], attribution_windows: ['1'] },
  metrics: [
    { id: 'spend', label: 'spend_amount' },
    { id: 'aov', label: 'AOV' },
    { id: 'googleClicks', label: 'Google_Clicks' },
    { id: 'impressions', label: 'Imprs' },
    { id: 'metaLinkClicks', label: 'FB_Link_Clicks_Default' },
    { id: 'roas', label: 'ROAS' },
  ],
});
