import fs from 'node:fs/promises';
import path from 'node:path';
import { readThroughCursor, type Queryable } from '../db/index.js';
import { joinedBytes } from './text-bytes.js';

/** One CSV line (RFC 4180): cells holding a comma, quote or line break are quoted; lines end CRLF. */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell)).join(',')}\r\n`;
}

/** First characters that can make a spreadsheet take a cell for a formula (OWASP's list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A cell that spreadsheets show as text and never run: one starting like a formula gets a
 * leading `'` (OWASP's CSV injection defence). By the first character alone, so `-5` becomes
 * `'-5` too: a reader cannot tell `-5` from `-5+A1` without parsing formulas.
 */
const asSpreadsheetText = (cell: string) => (FORMULA_START.test(cell) ? `'${cell}` : cell);

export interface CsvOutput {
  dir: string;
  /** File names are `<baseName>.csv`, or `<baseName>-1.csv`, `-2`, … when the rows need several. */
  baseName: string;
  header: readonly string[];
  /** The query's column of each header cell. */
  columns: readonly string[];
  /** Columns of text the client chose, whose cells are written with `asSpreadsheetText`. */
  spreadsheetTextColumns: readonly string[];
  rowsPerFile: number;
  /** A column whose distinct values are counted (to say when an export holds several currencies). */
  distinctOf: string;
}

const BATCH = 1000;

/**
 * Streams the rows of `sql` into CSV files through a cursor, a batch at a time, so that memory
 * stays flat however many rows there are. Writes go through file handles: a failing disk is an
 * error like any other, never an unheard event. Returns the files' names and the distinct values.
 */
export async function writeCsv(tx: Queryable, sql: string, params: readonly unknown[], output: CsvOutput, signal: AbortSignal) {
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

  const asText = output.columns.map((column) => output.spreadsheetTextColumns.includes(column));
  try {
    await open(undefined);
    await readThroughCursor<Record<string, unknown>>(tx, { sql, params, batchSize: BATCH, hold: false }, async (rows) => {
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
        const cells = output.columns.map((column, index) => {
          const cell = row[column] === null ? '' : String(row[column]);
          return asText[index] ? asSpreadsheetText(cell) : cell;
        });
        distinct.add(String(row[output.distinctOf]));
        lines.push(csvLine(cells));
        rowsInFile++;
      }
      await file!.write(joinedBytes(lines));
    });
  } finally {
    await close().catch(() => {});
  }
  return { files, distinct: [...distinct] };
}
