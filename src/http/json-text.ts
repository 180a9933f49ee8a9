/**
 * `{"data": [items], ...extra}` as JSON text, `items` being JSON texts joined by commas as the
 * database wrote them: amounts keep their exact decimals, and nothing is parsed to be written again.
 */
export function dataJson(items: string, extra: object = {}): string {
  const rest = JSON.stringify(extra).slice(1, -1);
  return `{"data":[${items}]${rest ? `,${rest}` : ''}}`;
}
