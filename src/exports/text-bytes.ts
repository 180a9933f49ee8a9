/**
 * `texts` joined by `separator` (and preceded by it, with `leading`) as UTF-8 bytes, written
 * straight into one buffer. Rows are written out a batch at a time, and a batch's joined text
 * would be a string of hundreds of KB, which V8 keeps until a full collection: a year's export
 * or a few reports piled them up by the hundred MB. A buffer is memory outside V8's heap that it
 * accounts for, and the rows' own small strings die young.
 */
export function joinedBytes(texts: readonly string[], separator = '', leading = false): Buffer {
  const separators = Math.max(texts.length - 1, 0) + (leading && texts.length > 0 ? 1 : 0);
  const separatorBytes = Buffer.byteLength(separator);
  const bytes = Buffer.allocUnsafe(texts.reduce((size, text) => size + Buffer.byteLength(text), separators * separatorBytes));
  let at = 0;
  texts.forEach((text, index) => {
    if (separatorBytes > 0 && (index > 0 || leading)) at += bytes.write(separator, at);
    at += bytes.write(text, at);
  });
  return bytes;
}
