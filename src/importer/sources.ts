/** A file to import as the records of one endpoint: its format found, its rows mapped. */
import fs from 'node:fs';
import { AD_REPORTS } from './ad-reports.js';
import { rateSource } from './rates.js';
import { csvRows, fileShape, jsonArrayItems, ndjsonItems, parsedOrText, textOf, type Item } from './read.js';
import { isShopifyOrders, shopifyOrder, shopifyOrderKey } from './shopify.js';

export const KINDS = ['orders', 'spend', 'touchpoints', 'rates'] as const;
export type Kind = (typeof KINDS)[number];
export type Target = 'orders' | 'spend_hourly' | 'spend_daily' | 'touchpoints' | 'rates';

export interface Source {
  target: Target;
  /** How the file was read: ndjson, json-array, shopify, meta, google, ecb or csv. */
  format: string;
  items: AsyncGenerator<Item>;
  /** What the import leaves out of the file (not records: columns), said on stderr before it starts. */
  notices?: string[];
  /** Bytes of the file read so far, and in all: the progress. */
  bytesRead(): number;
  size: number;
}

export interface SourceOptions {
  /** The currency of ad reports that do not name one. */
  currency?: string;
}

/** Header rows are looked for in the first rows: Google Ads puts the report's title and dates above it. */
const HEADER_SEARCH_ROWS = 20;
const MEASURES = ['spend', 'impressions', 'clicks'];

/** The API's target of a record of `kind`, told by its fields (a spend record's time field). */
function targetOf(kind: Kind, fields: readonly string[]): Target | undefined {
  if (kind !== 'spend') return kind;
  if (fields.includes('hour_start_iso')) return 'spend_hourly';
  if (fields.includes('date')) return 'spend_daily';
  return undefined;
}

/** Records that cannot be read before the first one that can: past this many, the file is not what it says. */
const MAX_LEADING_PROBLEMS = 1000;

/** The fields of a JSON item, or undefined when it is not a JSON object. */
function fieldsOf(item: Item): string[] | undefined {
  const text = textOf(item);
  if (item.problem || text === undefined) return undefined;
  const value = parsedOrText(text);
  return typeof value === 'object' && value !== null ? Object.keys(value) : undefined;
}

/** JSON records: a spend file's target is told by its first record's fields. */
async function jsonSource(kind: Kind, items: AsyncGenerator<Item>): Promise<Pick<Source, 'target' | 'items'>> {
  if (kind !== 'spend') return { target: kind, items };
  const leading: Item[] = [];
  for (;;) {
    const { value: first, done } = await items.next();
    const fields = done ? ['date'] : fieldsOf(first);
    if (!fields) {
      if (leading.push(first!) > MAX_LEADING_PROBLEMS) throw new Error(`The first ${MAX_LEADING_PROBLEMS} records hold no JSON object`);
      continue;
    }
    const target = targetOf(kind, fields);
    if (!target) throw new Error('A spend record has hour_start_iso (hourly) or date (daily): the first record has neither');
    return {
      target,
      items: (async function* () {
        yield* leading;
        if (!done) yield first;
        yield* items;
      })(),
    };
  }
}

/** A CSV row as an object of its header's columns, empty cells left out (a measure's kept: "" is 0). */
function csvRecord(header: readonly string[], cells: readonly string[], target: Target): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  header.forEach((column, i) => {
    const cell = cells[i] ?? '';
    const measure = target.startsWith('spend') && MEASURES.includes(column);
    if (measure) record[column] = cell.trim() === '' ? '' : Number(cell);
    else if (cell !== '') record[column] = cell;
  });
  return record;
}

const rowObject = (header: readonly string[], cells: readonly string[]) => Object.fromEntries(header.map((column, i) => [column, cells[i] ?? '']));

async function csvSource(kind: Kind, stream: fs.ReadStream, delimiter: ',' | '\t', { currency }: SourceOptions): Promise<Pick<Source, 'target' | 'items' | 'format' | 'notices'>> {
  const rows = csvRows(stream, delimiter);
  // Rates have their header on the first row, and a CSV of their own each (src/importer/rates.ts).
  if (kind === 'rates') return { target: 'rates', ...(await rateSource(rows)) };
  for (let searched = 0; searched < HEADER_SEARCH_ROWS; searched++) {
    const { value, done } = await rows.next();
    if (done) break;
    const header = value.cells.map((cell) => cell.trim());
    if (kind === 'orders' && isShopifyOrders(header)) return { target: 'orders', format: 'shopify', items: shopifyItems(header, rows) };
    const report = kind === 'spend' ? AD_REPORTS.find((candidate) => candidate.isHeader(header)) : undefined;
    if (report) {
      return {
        target: 'spend_daily',
        format: report.name,
        items: (async function* () {
          for await (const { line, cells } of rows) {
            const row = rowObject(header, cells);
            if (report.isTotal(row)) continue;
            const record = report.record(row, header, currency);
            yield typeof record === 'string' ? { line, problem: record, record: row } : { line, record };
          }
        })(),
      };
    }
    const target = kind === 'orders' ? undefined : kind === 'touchpoints' ? (header.includes('touchpoint_id') ? 'touchpoints' : undefined) : targetOf(kind, header);
    if (target) {
      return {
        target,
        format: 'csv',
        items: (async function* () {
          for await (const { line, cells } of rows) yield { line, record: csvRecord(header, cells, target) };
        })(),
      };
    }
  }
  const expected = {
    orders: "Shopify's orders export",
    spend: 'a header row with hour_start_iso or date, or a Meta Ads Manager or Google Ads daily campaign report',
    touchpoints: 'a header row with touchpoint_id',
  };
  throw new Error(`Unrecognised CSV for ${kind}: expected ${expected[kind]}`);
}

/** Shopify's rows grouped into orders: an order's rows are consecutive and share its Name. */
async function* shopifyItems(header: readonly string[], rows: AsyncGenerator<{ line: number; cells: string[] }>): AsyncGenerator<Item> {
  let group: Record<string, string>[] = [];
  let groupLine = 0;
  const order = (): Item => {
    try {
      return { line: groupLine, record: shopifyOrder(group) };
    } catch (error) {
      return { line: groupLine, problem: (error as Error).message, record: group[0] };
    }
  };
  for await (const { line, cells } of rows) {
    const row = rowObject(header, cells);
    if (group.length > 0 && shopifyOrderKey(row) !== shopifyOrderKey(group[0]!)) {
      yield order();
      group = [];
    }
    if (group.length === 0) groupLine = line;
    group.push(row);
  }
  if (group.length > 0) yield order();
}

/** Opens `file` as records of `kind`; its shape is found from its first bytes (and a CSV's from its header). */
export async function openSource(kind: Kind, file: string, options: SourceOptions = {}): Promise<Source> {
  const shape = await fileShape(file);
  if (kind === 'rates' && shape !== 'csv' && shape !== 'utf16-tsv') {
    throw new Error("Rates are read from CSV (the ECB's reference rates, or columns date, base, quote and rate): this file is JSON");
  }
  const { size } = await fs.promises.stat(file);
  const stream = fs.createReadStream(file, { highWaterMark: 256 * 1024 });
  const bytesRead = () => stream.bytesRead;
  if (shape === 'csv' || shape === 'utf16-tsv') return { ...(await csvSource(kind, stream, shape === 'csv' ? ',' : '\t', options)), bytesRead, size };
  const items = shape === 'ndjson' ? ndjsonItems(stream) : jsonArrayItems(stream);
  return { ...(await jsonSource(kind, items)), format: shape, bytesRead, size };
}
