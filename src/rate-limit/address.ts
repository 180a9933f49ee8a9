import net from 'node:net';

/** An IPv6 address as its eight 16-bit groups (a trailing dotted IPv4 part is two groups). */
function ipv6Groups(address: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const hex = dotted
    ? `${address.slice(0, dotted.index)}${((+dotted[1]! << 8) | +dotted[2]!).toString(16)}:${((+dotted[3]! << 8) | +dotted[4]!).toString(16)}`
    : address;
  const groups = (part: string) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const [head = '', tail] = hex.split('::');
  if (tail === undefined) return groups(head);
  const [before, after] = [groups(head), groups(tail)];
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/**
 * What per-address budgets count: an IPv4 address, or the /64 of an IPv6 one. One IPv6
 * subscriber usually holds a whole /64 and can change addresses within it at will, so counting
 * single IPv6 addresses would let one caller have billions of budgets. An IPv4-mapped IPv6
 * address (`::ffff:192.0.2.1`, what a dual-stack socket reports) is its IPv4 address.
 */
export function addressBucket(ip: string): string {
  const address = ip.replace(/%.*$/, ''); // a zone index (fe80::1%eth0) names the interface, not the caller
  if (!net.isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`;
}
