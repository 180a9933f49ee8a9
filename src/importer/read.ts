/** Reading a file a record at a time, whatever its size: NDJSON, a JSON array, or CSV rows. */
import fs from 'node:fs';
import readline from 'node:readline';
import { parse } from 'csv-parse';

/**
 * A record of the file, with the line it starts on: as an object (CSV), or as the JSON text the
 * file holds, sent as it is without being parsed and encoded again; or why it is not one.
 */
export interface Item {
  line: number;
  record?: Record<string, unknown>;
  text?: string;
  problem?: string;
}

export type FileShape = 'ndjson' | 'json-array' | 'csv' | 'utf16-tsv';

/**
 * What the file's first bytes say it is: `[` a JSON array, `{` NDJSON, a UTF-16 byte order mark
 * the tab-separated UTF-16 that spreadsheets take ("Excel CSV", Google Ads' default download),
 * anything else CSV.
 */
export async function fileShape(file: string): Promise<FileShape> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    if (buffer[0] === 0xff && buffer[1] === 0xfe) return 'utf16-tsv';
    const start = buffer.subarray(0, bytesRead).toString('utf8').replace(/^\uFEFF/, '').trimStart();
    return start.startsWith('[') ? 'json-array' : start.startsWith('{') ? 'ndjson' : 'csv';
  } finally {
    await handle.close();
  }
}

/** The item of a JSON text; whether the text is JSON at all is found when it is sent. */
const jsonItem = (text: string, line: number): Item => (text.trimStart().startsWith('{') ? { line, text } : { line, text, problem: 'Not a JSON object' });

/** What a JSON text holds, or the text itself when it is not JSON (for the reject file). */
export function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export async function* ndjsonItems(stream: fs.ReadStream): AsyncGenerator<Item> {
  let line = 0;
  for await (const read of readline.createInterface({ input: stream, crlfDelay: Infinity })) {
    line++;
    // A byte order mark (Windows tools write one) is no part of the first record.
    const text = line === 1 ? read.replace(/^\uFEFF/, '') : read;
    if (text.trim() !== '') yield jsonItem(text, line);
  }
}

/** The items of a top-level JSON array, each cut out as its closing bracket arrives: memory holds one item, not the array. */
export async function* jsonArrayItems(stream: fs.ReadStream): AsyncGenerator<Item> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let item = '';
  let line = 1;
  let itemLine = 1;
  for await (const chunk of stream.setEncoding('utf8') as AsyncIterable<string>) {
    let itemStart = depth >= 2 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const char = chunk[i]!;
      if (char === '\n') line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (char === '\\') escaped = true;
        else if (char === '"') inString = false;
        continue;
      }
      if (char === '"') inString = true;
      else if (char === '{' || char === '[') {
        depth++;
        if (depth === 2) [itemStart, itemLine, item] = [i, line, ''];
      } else if (char === '}' || char === ']') {
        depth--;
        if (depth === 1) {
          yield jsonItem(item + chunk.slice(itemStart, i + 1), itemLine);
          item = '';
          itemStart = -1;
        }
      }
    }
    if (itemStart >= 0) item += chunk.slice(itemStart);
  }
}

/**
 * The rows of a CSV file as arrays of cells, with their line numbers; blank lines are skipped,
 * and a byte order mark sets the encoding (UTF-8 or UTF-16).
 */
export async function* csvRows(stream: fs.ReadStream, delimiter: ',' | '\t'): AsyncGenerator<{ line: number; cells: string[] }> {
  const parser = stream.pipe(parse({ bom: true, delimiter, relax_column_count: true, skip_empty_lines: true, info: true }));
  for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    yield { line: info.lines, cells: record };
  }
}
