/** `key` as a segment of a JSON Pointer (RFC 6901): `~` and `/` escaped. */
export const pointerSegment = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * JSON Pointers of the values (and object keys) in `root` that `matches`. An explicit stack
 * walks it: the depth of a client's JSON must not decide the depth of ours.
 */
export function pointersWhere(root: unknown, matches: (value: unknown) => boolean): string[] {
  const found: string[] = [];
  const pending: [unknown, string][] = [[root, '']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, pointer] = next;
    if (matches(value)) found.push(pointer);
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      const childPointer = `${pointer}/${pointerSegment(key)}`;
      if (!Array.isArray(value) && matches(key)) found.push(childPointer);
      pending.push([child, childPointer]);
    }
  }
  return found;
}
