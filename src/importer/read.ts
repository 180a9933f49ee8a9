/** Reading a file a record at a time, whatever its size: NDJSON, a JSON array, or CSV rows. */
import fs from 'node:fs';
import { parse } from 'csv-parse';

/**
 * A record of the file, with the line it starts on: as an object (CSV), or as the bytes of the
 * JSON text the file holds, sent as they are without being parsed and encoded again; or why it is
 * not one. Bytes, not strings: they stay out of the JavaScript heap (see encodeList).
 */
export interface Item {
  line: number;
  record?: Record<string, unknown>;
  json?: Buffer;
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

const OPEN_BRACE = 0x7b;
const NEWLINE = 0x0a;
const RETURN = 0x0d;
const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0b || byte === 0x0c || byte === RETURN || byte === NEWLINE;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The item of a JSON text; whether the text is JSON at all is found when it is sent. */
function jsonItem(json: Buffer, line: number): Item {
  const first = json.find((byte) => !isBlank(byte));
  return first === OPEN_BRACE ? { line, json } : { line, json, problem: 'Not a JSON object' };
}

/** The text of a JSON item. */
export const textOf = (item: Item) => item.json?.toString('utf8');

/** What a JSON text holds, or the text itself when it is not JSON (for the reject file). */
export function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The lines of a stream of bytes, as readline cuts them (at \n, \r\n or a lone \r), each a view
 * of the chunk it was read in, copied only when it spans two.
 */
async function* lines(stream: fs.ReadStream): AsyncGenerator<Buffer> {
  // A line's lone carriage returns end lines too.
  const cut = function* (line: Buffer) {
    let start = 0;
    for (let end = line.indexOf(RETURN); end >= 0; start = end + 1, end = line.indexOf(RETURN, start)) yield line.subarray(start, end);
    yield line.subarray(start);
  };
  let rest: Buffer | undefined;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end >= 0; start = end + 1, end = chunk.indexOf(NEWLINE, start)) {
      const line = rest ? Buffer.concat([rest, chunk.subarray(start, end)]) : chunk.subarray(start, end);
      rest = undefined;
      yield* cut(line.at(-1) === RETURN ? line.subarray(0, -1) : line);
    }
    rest = rest ? Buffer.concat([rest, chunk.subarray(start)]) : chunk.subarray(start);
  }
  if (rest && rest.length > 0) yield* cut(rest);
}

export async function* ndjsonItems(stream: fs.ReadStream): AsyncGenerator<Item> {
  let line = 0;
  for await (const read of lines(stream)) {
    line++;
    // A byte order mark (Windows tools write one) is no part of the first record.
    const json = line === 1 && read.subarray(0, 3).equals(UTF8_BOM) ? read.subarray(3) : read;
    if (!json.every(isBlank)) yield jsonItem(json, line);
  }
}

/** The items of a top-level JSON array, each cut out as its closing bracket arrives: memory holds one item, not the array. */
export async function* jsonArrayItems(stream: fs.ReadStream): AsyncGenerator<Item> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let item: Buffer[] = [];
  let line = 1;
  let itemLine = 1;
  // The structural characters are ASCII: no byte of a multi-byte UTF-8 character is mistaken for one.
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let itemStart = depth >= 2 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === NEWLINE) line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === 0x5c) escaped = true;
        else if (byte === 0x22) inString = false;
        continue;
      }
      if (byte === 0x22) inString = true;
      else if (byte === OPEN_BRACE || byte === 0x5b) {
        depth++;
        if (depth === 2) [itemStart, itemLine, item] = [i, line, []];
      } else if (byte === 0x7d || byte === 0x5d) {
        depth--;
        if (depth === 1) {
          item.push(chunk.subarray(itemStart, i + 1));
          yield jsonItem(item.length === 1 ? item[0]! : Buffer.concat(item), itemLine);
          item = [];
          itemStart = -1;
        }
      }
    }
    if (itemStart >= 0) item.push(chunk.subarray(itemStart));
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
