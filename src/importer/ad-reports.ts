/**
 * The daily campaign reports Meta Ads Manager and Google Ads export as CSV, as daily spend
 * records, read by their (English) column headers. Every mapping is in docs/importing.md's table.
 */
import type { DailySpend } from '../client/index.js';

export interface AdReport {
  name: 'meta' | 'google';
  /** Whether a row of cells is this report's header row. */
  isHeader(header: readonly string[]): boolean;
  /** A row that is not a record: a total. */
  isTotal(row: Record<string, string>): boolean;
  /** The record of a row, or why there is none. */
  record(row: Record<string, string>, header: readonly string[], currency: string | undefined): DailySpend | string;
}

/** A count or amount as the reports write them: "1,234.50", "--" or empty for none. */
export function reportNumber(text: string | undefined): number {
  const cleaned = (text ?? '').replaceAll(',', '').trim();
  return cleaned === '' || cleaned === '--' ? 0 : Number(cleaned);
}

const first = (row: Record<string, string>, ...columns: string[]) => columns.map((column) => row[column]?.trim()).find((value) => value) ?? '';

/** "Amount spent (EUR)": the currency Meta names in the header of its spend column. */
const metaSpendColumn = (header: readonly string[]) => header.find((column) => /^Amount spent \([A-Z]{3}\)$/.test(column));

export const meta: AdReport = {
  name: 'meta',
  isHeader: (header) => header.includes('Campaign name') && metaSpendColumn(header) !== undefined,
  isTotal: () => false,
  record(row, header, currency) {
    const spendColumn = metaSpendColumn(header)!;
    const start = row['Reporting starts'];
    const date = row.Day || (start && start === row['Reporting ends'] ? start : '');
    if (!date) return 'Not a daily row: export the report broken down by Day';
    return {
      date,
      platform_name: 'meta',
      platform_account_id: first(row, 'Account ID'),
      campaign_id: first(row, 'Campaign ID', 'Campaign name'),
      campaign_name: first(row, 'Campaign name'),
      adset_id: first(row, 'Ad set ID'),
      adset_name: first(row, 'Ad set name'),
      ad_id: first(row, 'Ad ID'),
      ad_name: first(row, 'Ad name'),
      spend: reportNumber(row[spendColumn]),
      spend_currency: first(row, 'Currency') || (currency ?? /\(([A-Z]{3})\)$/.exec(spendColumn)![1]!),
      impressions: reportNumber(row.Impressions),
      clicks: reportNumber(first(row, 'Link clicks', 'Clicks (all)')),
    };
  },
};

export const google: AdReport = {
  name: 'google',
  isHeader: (header) => header.includes('Campaign') && header.includes('Cost') && header.includes('Day'),
  // The report ends with total rows: "Total: Account", "Total: Campaigns", ...
  isTotal: (row) => Object.values(row).some((cell) => cell.startsWith('Total:')),
  record(row, _header, currency) {
    const spendCurrency = first(row, 'Currency code', 'Currency') || currency;
    if (!spendCurrency) return 'No currency: add the Currency code column to the report, or give --currency';
    return {
      date: row.Day ?? '',
      platform_name: 'google',
      platform_account_id: first(row, 'Customer ID'),
      campaign_id: first(row, 'Campaign ID', 'Campaign'),
      campaign_name: first(row, 'Campaign'),
      adset_id: first(row, 'Ad group ID'),
      adset_name: first(row, 'Ad group'),
      spend: reportNumber(row.Cost),
      spend_currency: spendCurrency,
      impressions: reportNumber(first(row, 'Impr.', 'Impressions')),
      clicks: reportNumber(row.Clicks),
    };
  },
};

export const AD_REPORTS: readonly AdReport[] = [meta, google];
