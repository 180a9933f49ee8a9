/**
 * What parsing a JSON body may cost, told from its bytes before it is parsed. Parsed, a JSON text
 * takes more memory than its bytes, most of all where it is objects and arrays (`{}` is 2 bytes
 * sent and some 64 bytes parsed) or a run of short values (`1,` is 2 bytes, 8 parsed, and each
 * is looked at by validation); one object of many keys is slow to build and reports one problem
 * a key. No request of this API is any of these, so a body that is one is refused unread: what a
 * body costs to read stays a small multiple of its size, and refusing it costs a scan.
 */

/** Objects and arrays: at most one per this many bytes (a large body's; see SHAPE_CHECKED_FROM_BYTES). */
export const MIN_BYTES_PER_CONTAINER = 10;
/** Values of any kind (objects and arrays too): at most one per this many bytes. Orders have one per 17 or so. */
export const MIN_BYTES_PER_VALUE = 8;
/** The ratios are checked past this size: a small body's parse is cheap whatever its shape. */
const SHAPE_CHECKED_FROM_BYTES = 64 * 1024;
/** Keys of one object: the API's widest objects (an order, Segment's free-form properties) hold far fewer. */
export const MAX_KEYS_PER_OBJECT = 1000;
/** Objects and arrays inside one another: the API's deepest requests nest six. */
export const MAX_NESTING = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
/** On the stack of open containers, where an object holds its count of keys. */
const ARRAY = -1;

/** The end of the string whose opening quote is at `start`: the index of its closing quote, or -1. */
function stringEnd(bytes: Buffer, start: number): number {
  for (let at = bytes.indexOf(QUOTE, start + 1); at !== -1; at = bytes.indexOf(QUOTE, at + 1)) {
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}

/**
 * Why the body `bytes` would cost too much to parse, as a sentence of an error message, or
 * undefined. Strings are skipped by the native indexOf; only the bytes between them are looked
 * at one by one. Malformed JSON is left to the parser to name.
 */
export function costlyShape(bytes: Buffer): string | undefined {
  const checkRatios = bytes.length >= SHAPE_CHECKED_FROM_BYTES;
  const allowedContainers = bytes.length / MIN_BYTES_PER_CONTAINER;
  const allowedValues = bytes.length / MIN_BYTES_PER_VALUE;
  const open: number[] = [];
  let containers = 0;
  // A value begins the body, and each comma begins another; an empty container counts as one too.
  let values = 1;
  for (let at = 0; at < bytes.length; at++) {
    const byte = bytes[at]!;
    if (byte === QUOTE) {
      const end = stringEnd(bytes, at);
      if (end === -1) return undefined;
      at = end;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (open.length === MAX_NESTING) return `nests objects and arrays more than ${MAX_NESTING} deep`;
      open.push(byte === OPEN_OBJECT ? 0 : ARRAY);
      if (checkRatios && ++containers > allowedContainers) return `is mostly objects and arrays (more than one in ${MIN_BYTES_PER_CONTAINER} bytes)`;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      open.pop();
    } else if (byte === COLON) {
      const keys = open.length > 0 ? open[open.length - 1]! : ARRAY;
      if (keys === ARRAY) continue;
      if (keys === MAX_KEYS_PER_OBJECT) return `has an object of more than ${MAX_KEYS_PER_OBJECT} keys`;
      open[open.length - 1] = keys + 1;
    } else if (byte === COMMA) {
      if (checkRatios && ++values > allowedValues) return `is mostly short values (more than one in ${MIN_BYTES_PER_VALUE} bytes)`;
    }
  }
  return undefined;
}
