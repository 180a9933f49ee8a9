import fs from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import type { Queryable } from '../db/index.js';

/** One CSV line (RFC 4180): cells holding a comma, quote or line break are quoted; lines end CRLF. */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell)).join(',')}\r\n`;
}

export interface CsvOutput {
  dir: string;
  /** File names are `<baseName>.csv`, or `<baseName>-1.csv`, `-2`, … when the rows need several. */
  baseName: string;
  header: readonly string[];
  /** The query's column of each header cell. */
  columns: readonly string[];
  rowsPerFile: number;
}

const BATCH = 1000;

/**
 * Streams the rows of `sql` into CSV files through a cursor, a batch at a time, so that memory
 * stays flat however many rows there are. Returns the files' names.
 */
export async function writeCsv(tx: Queryable, sql: string, params: readonly unknown[], output: CsvOutput, signal: AbortSignal) {
  await fs.promises.mkdir(output.dir, { recursive: true });
  const files: string[] = [];
  let file: fs.WriteStream | undefined;
  let rowsInFile = 0;
  const write = async (text: string) => {
    if (!file!.write(text)) await once(file!, 'drain');
  };
  const close = async () => {
    if (!file) return;
    file.end();
    await once(file, 'close');
    file = undefined;
  };
  const open = async (part: number | undefined) => {
    const name = `${output.baseName}${part === undefined ? '' : `-${part}`}.csv`;
    files.push(name);
    file = fs.createWriteStream(path.join(output.dir, name));
    rowsInFile = 0;
    await write(csvLine(output.header));
  };

  await tx.query(`DECLARE export_rows NO SCROLL CURSOR FOR ${sql}`, params);
  try {
    await open(undefined);
    for (;;) {
      signal.throwIfAborted();
      const rows = await tx.query<Record<string, unknown>>(`FETCH ${BATCH} FROM export_rows`);
      for (const row of rows) {
        if (rowsInFile === output.rowsPerFile) {
          await close();
          if (files.length === 1) {
            // A second file is needed: the first becomes part 1.
            const first = `${output.baseName}-1.csv`;
            await fs.promises.rename(path.join(output.dir, files[0]!), path.join(output.dir, first));
            files[0] = first;
          }
          await open(files.length + 1);
        }
        await write(csvLine(output.columns.map((column) => (row[column] === null ? '' : String(row[column])))));
        rowsInFile++;
      }
      if (rows.length < BATCH) break;
    }
  } finally {
    await close();
    await tx.query('CLOSE export_rows');
  }
  return files;
}
