/**
 * Exchange rates from CSV, as rates of `POST /v1/exchange-rates` (1 base = rate quote): the
 * European Central Bank's reference rates (eurofxref-hist.csv and the daily eurofxref.csv: a
 * column a currency, each cell the price of 1 EUR), or rates as the API names their fields
 * (date, base, quote, rate). Both are described in docs/importing.md.
 */
import type { ExchangeRate } from '../client/index.js';
import { CURRENCY_CODES } from '../reference-codes.js';
import type { Item } from './read.js';

type Rows = AsyncGenerator<{ line: number; cells: string[] }>;

export interface RateSource {
  /** ecb (the ECB's reference rates) or csv (date, base, quote, rate). */
  format: 'ecb' | 'csv';
  items: AsyncGenerator<Item>;
  /** What the import leaves out of the file, said on stderr: the ECB's currencies the API does not know. */
  notices: string[];
}

const FIELDS = ['date', 'base', 'quote', 'rate'];
const KNOWN_CURRENCIES = new Set(CURRENCY_CODES);
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** A row's cells trimmed (the ECB's daily file puts a space after each comma), the empty ones at its end (its trailing comma) left out. */
function trimmed(cells: readonly string[]): string[] {
  const result = cells.map((cell) => cell.trim());
  while (result.length > 0 && result.at(-1) === '') result.pop();
  return result;
}

/** A day as YYYY-MM-DD, from YYYY-MM-DD or as the ECB's daily file writes it (29 November 2024); undefined when it is no day. */
export function rateDay(text: string): string | undefined {
  const iso = /^(\d{4})-(\d\d)-(\d\d)$/.exec(text);
  const written = iso ? undefined : /^(\d{1,2}) ([A-Za-z]+) (\d{4})$/.exec(text);
  const [year, month, day] = iso
    ? [Number(iso[1]), Number(iso[2]), Number(iso[3])]
    : written
      ? [Number(written[3]), MONTHS.indexOf(written[2]!.toLowerCase()) + 1, Number(written[1])]
      : [0, 0, 0];
  if (year < 1000 || month < 1) return undefined;
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? date.toISOString().slice(0, 10) : undefined;
}

const DECIMAL = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A decimal's significant digits and the place of its point: one text for every way of writing one number (1.0834, 1.08340, 10.834e-1). */
function canonical(text: string): string {
  const [mantissa = '', exponent = '0'] = text.toLowerCase().split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  let digits = whole + fraction;
  let point = whole.length + Number(exponent);
  const leading = /^0*/.exec(digits)![0].length;
  digits = digits.slice(leading).replace(/0+$/, '');
  point -= leading;
  return digits === '' ? '0' : `${digits}e${point}`;
}

/**
 * A rate's number, sent as a JSON number with the digits the file has (the API stores what it
 * gets); or why there is none: not a positive number, or more significant digits than a JSON
 * number keeps (some 15), which would be sent rounded.
 */
export function rateNumber(text: string): number | string {
  const value = DECIMAL.test(text) ? Number(text) : NaN;
  if (!(value > 0) || !Number.isFinite(value)) return `The rate "${text}" is not a positive number`;
  if (canonical(String(value)) !== canonical(text)) return `The rate "${text}" has more significant digits than a JSON number keeps: it would be sent rounded (${value})`;
  return value;
}

const dayProblem = (text: string) => `The date "${text}" is not a day: YYYY-MM-DD (or as the ECB's daily file writes it, 29 November 2024)`;

/** The ECB's header: Date, then a column a currency (3-letter codes). */
const isEcbHeader = (header: readonly string[]) => header[0] === 'Date' && header.length > 1 && header.slice(1).every((column) => /^[A-Z]{3}$/.test(column));

/**
 * The ECB's rows: a rate of each cell, 1 EUR in the column's currency on the row's day; N/A
 * (and an empty cell) is no rate that day. Columns of currencies the API does not know (the
 * euro's forerunners in the history: CYP, EEK, ...) are left out, and said so.
 */
function ecbSource(header: readonly string[], rows: Rows): RateSource {
  const currencies = header.slice(1);
  const skipped = currencies.filter((code) => !KNOWN_CURRENCIES.has(code) || code === 'EUR');
  const columns = currencies.flatMap((code, index) => (skipped.includes(code) ? [] : [{ code, index: index + 1 }]));
  return {
    format: 'ecb',
    notices: skipped.length > 0 ? [`Skipped the columns of currencies the API does not know: ${skipped.join(', ')}`] : [],
    items: (async function* () {
      for await (const { line, cells: raw } of rows) {
        const cells = trimmed(raw);
        const record = () => Object.fromEntries(header.map((column, index) => [column, cells[index] ?? '']));
        if (cells.length > header.length) {
          yield { line, problem: `The row has ${cells.length} cells, the header ${header.length} columns`, record: record() };
          continue;
        }
        const date = rateDay(cells[0] ?? '');
        if (!date) {
          yield { line, problem: dayProblem(cells[0] ?? ''), record: record() };
          continue;
        }
        for (const { code, index } of columns) {
          const text = cells[index] ?? '';
          if (text === '' || text === 'N/A') continue;
          const rate = rateNumber(text);
          const sent = { date, base: 'EUR', quote: code };
          yield typeof rate === 'number' ? { line, record: { ...sent, rate } satisfies ExchangeRate } : { line, problem: rate, record: { ...sent, rate: text } };
        }
      }
    })(),
  };
}

/** Rates as the API names their fields, a rate a row, in any order of the columns. */
function fieldSource(header: readonly string[], rows: Rows): RateSource {
  return {
    format: 'csv',
    notices: [],
    items: (async function* () {
      for await (const { line, cells: raw } of rows) {
        const cells = raw.map((cell) => cell.trim());
        const row = Object.fromEntries(header.map((column, index) => [column, cells[index] ?? '']));
        const date = rateDay(row.date!);
        const rate = rateNumber(row.rate!);
        if (!date) yield { line, problem: dayProblem(row.date!), record: row };
        else if (typeof rate === 'string') yield { line, problem: rate, record: row };
        else yield { line, record: { date, base: row.base!, quote: row.quote!, rate } satisfies ExchangeRate };
      }
    })(),
  };
}

/** The rates of a CSV file's rows, told by its first row (its header): the ECB's, or the API's fields. */
export async function rateSource(rows: Rows): Promise<RateSource> {
  const { value, done } = await rows.next();
  const header = done ? [] : trimmed(value.cells);
  if (isEcbHeader(header)) return ecbSource(header, rows);
  if (header.some((column) => FIELDS.includes(column))) {
    const missing = FIELDS.filter((field) => !header.includes(field));
    const extra = header.filter((column) => !FIELDS.includes(column));
    const twice = FIELDS.filter((field) => header.indexOf(field) !== header.lastIndexOf(field));
    const problems = [
      ...(missing.length > 0 ? [`no column ${missing.join(', ')}`] : []),
      ...(extra.length > 0 ? [`columns that are no field of a rate: ${extra.map((column) => JSON.stringify(column)).join(', ')}`] : []),
      ...(twice.length > 0 ? [`columns given twice: ${twice.join(', ')}`] : []),
    ];
    if (problems.length > 0) throw new Error(`A CSV of rates has the columns date, base, quote and rate, no others: this one has ${problems.join('; ')}`);
    return fieldSource(header, rows);
  }
  throw new Error("Unrecognised CSV for rates: expected the ECB's reference rates (a header Date,USD,JPY,…) or a header row of date, base, quote and rate");
}
