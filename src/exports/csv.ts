import fs from 'node:fs/promises';
import path from 'node:path';
import type { Row } from '../db/database.js';
import { columnName } from '../attribution/index.js';
import { joinedBytes } from './text-bytes.js';

/** One CSV line (RFC 4180): cells holding a comma, quote or line break are quoted; lines end CRLF. */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell)).join(',')}\r\n`;
}

export interface CsvCells {
  /** Columns of text the client chose: quoted when they hold a comma, quote or line break. Other columns are ours, and never do. */
  clientTextColumns: readonly string[];
  /**
   * Whether the client's text is written so that spreadsheets show it as text and never run it:
   * a cell starting with one of the characters that can make a spreadsheet take it for a formula
   * (OWASP's list: = + - @ tab, carriage return; and line feed), or with spaces and line breaks
   * before = + - @ (which some spreadsheets skip), gets a leading `'` (OWASP's CSV injection
   * defence). By those characters alone, so `-5` becomes `'-5` too: a reader cannot tell `-5`
   * from `-5+A1` without parsing formulas.
   */
  escapeFormulas: boolean;
}

/**
 * What writeCsv reads of each row of a statement `r`: its CSV line (as csvLine writes one) built
 * by the database as the row is fetched, and its `distinctOf` as text. Rows arrive as one string
 * each: parsing two dozen cells of each of millions of rows was most of an export's time in Node.
 */
export function csvRowSelect(columns: readonly string[], { clientTextColumns, escapeFormulas }: CsvCells, distinctOf: string): string[] {
  const cells = columns.map((column) => {
    const text = `coalesce(r.${columnName(column)}::text, '')`;
    if (!clientTextColumns.includes(column)) return text;
    const safe = escapeFormulas ? `(CASE WHEN ${text} ~ '^([\\t\\r\\n]|[ \\t\\r\\n]*[=+@-])' THEN '''' || ${text} ELSE ${text} END)` : text;
    return `(CASE WHEN ${safe} ~ '[",\\r\\n]' THEN '"' || replace(${safe}, '"', '""') || '"' ELSE ${safe} END)`;
  });
  return [`${cells.join(" || ',' || ")} || E'\\r\\n' AS line`, `r.${columnName(distinctOf)}::text AS distinct_value`];
}

export interface CsvOutput {
  dir: string;
  /** File names are `<baseName>.csv`, or `<baseName>-1.csv`, `-2`, … when the rows need several. */
  baseName: string;
  header: readonly string[];
  rowsPerFile: number;
}

/**
 * Streams rows read as csvRowSelect says into CSV files as `readRows` hands them on, a batch at
 * a time, so that memory stays flat however many rows there are. Writes go through file handles:
 * a failing disk is an error like any other, never an unheard event. Returns the files' names and
 * the distinct values (a null is none).
 */
export async function writeCsv(readRows: (onBatch: (rows: Row[]) => Promise<void>) => Promise<void>, output: CsvOutput, signal: AbortSignal) {
  await fs.mkdir(output.dir, { recursive: true });
  const files: string[] = [];
  const distinct = new Set<string>();
  let file: fs.FileHandle | undefined;
  let rowsInFile = 0;

  const open = async (part: number | undefined) => {
    const name = `${output.baseName}${part === undefined ? '' : `-${part}`}.csv`;
    files.push(name);
    file = await fs.open(path.join(output.dir, name), 'w');
    rowsInFile = 0;
    await file.write(csvLine(output.header));
  };
  const close = async () => {
    await file?.close();
    file = undefined;
  };

  try {
    await open(undefined);
    await readRows(async (rows) => {
      signal.throwIfAborted();
      let lines: string[] = [];
      for (const row of rows) {
        if (rowsInFile === output.rowsPerFile) {
          await file!.write(joinedBytes(lines));
          lines = [];
          await close();
          if (files.length === 1) {
            // A second file is needed: the first becomes part 1.
            const first = `${output.baseName}-1.csv`;
            await fs.rename(path.join(output.dir, files[0]!), path.join(output.dir, first));
            files[0] = first;
          }
          await open(files.length + 1);
        }
        // A row of visits alone has no currency.
        if (row.distinct_value !== null) distinct.add(row.distinct_value as string);
        lines.push(row.line as string);
        rowsInFile++;
      }
      await file!.write(joinedBytes(lines));
    });
  } finally {
    await close().catch(() => {});
  }
  return { files, distinct: [...distinct] };
}
