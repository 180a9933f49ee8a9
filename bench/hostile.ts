/**
 * What refusing hostile bodies costs: each batch route of the UAT port is sent, with the public
 * test credentials, bodies far past its limits, one after another (one of them six at once),
 * while production orders are posted from one connection. Prints each body's answer time, answer size and the server's peak
 * memory growth, beside two ceilings measured in the same run: parsing the same body in this
 * process (the least a JSON API does to look at a body), and production's latency without the
 * attack.
 *
 *   npm run bench:hostile
 */
import { generateOrder, random } from './generate.js';
import { percentile } from './load.js';
import { benchEachStore, startServer, type Store } from './server.js';

const MILLION = 1_000_000;
const rand = random(11);
const anOrder = (orderId: string) => generateOrder(rand, orderId, new Date('2026-11-01T12:00:00Z'));
const arrayOf = (count: number, item: string) => `[${`${item},`.repeat(count - 1)}${item}]`;
/** Items that are not mostly braces: a body of them is parsed and its lengths checked. */
const SPARSE = '{"unknown_field":1234567}';
/** Products with five problems each: validation lists 100, counts to 10,000 and stops. */
const manyProblems = JSON.stringify(
  Array.from({ length: 1000 }, (_, n) => ({ ...anOrder(`o${n}`), products: Array.from({ length: 1000 }, () => ({ unknown: 1 })) })),
);

const ATTACKS = [
  { name: 'orders: 1M × {}', path: '/v2/orders', body: arrayOf(MILLION, '{}') },
  { name: 'orders: 1M sparse', path: '/v2/orders', body: arrayOf(MILLION, SPARSE) },
  { name: 'orders: 1,000 × 1,000 bad products', path: '/v2/orders', body: manyProblems },
  { name: 'aliases: 1M × {}', path: '/v2/orders/aliases', body: `{"aliases":${arrayOf(MILLION, '{}')}}` },
  { name: 'spend: 1M sparse', path: '/v1/spend_hourly', body: `{"data":${arrayOf(MILLION, SPARSE)}}` },
  { name: 'orders: one object of 1M keys', path: '/v2/orders', body: `[{${Array.from({ length: MILLION }, (_, n) => `"k${n}":1`).join(',')}}]` },
  { name: 'orders: 6 at once × 15M numbers', path: '/v2/orders', body: arrayOf(15 * MILLION, '1'), atOnce: 6 },
];

async function benchStore(store: Store): Promise<string[][]> {
  const server = await startServer(store);
  try {
    let n = 0;
    const productionOrder = async () => {
      const started = performance.now();
      const answer = await fetch(`${server.url}/v2/orders`, { method: 'POST', headers: server.headers, body: JSON.stringify([anOrder(`p${n++}`)]) });
      if (answer.status !== 200) throw new Error(`production answered ${answer.status}: ${await answer.text()}`);
      return performance.now() - started;
    };
    const productionFor = async (until: () => boolean) => {
      const latencies: number[] = [];
      while (!until()) latencies.push(await productionOrder());
      return latencies.sort((a, b) => a - b);
    };
    const quietUntil = performance.now() + 3_000;
    const quiet = await productionFor(() => performance.now() > quietUntil);

    const rows: string[][] = [];
    let attacking = true;
    const during = productionFor(() => !attacking);
    const before = server.peakRssMb()!;
    for (const { name, path, body, atOnce = 1 } of ATTACKS) {
      const parseStarted = performance.now();
      JSON.parse(body);
      const parseMs = performance.now() - parseStarted;
      const started = performance.now();
      const send = async () => {
        const answer = await fetch(`${server.uatUrl}${path}`, {
          method: 'POST',
          headers: { authorization: 'None', 'data-client-id': 'test', 'content-type': 'application/json' },
          body,
        });
        return { answer, text: await answer.text() };
      };
      // Several at once: the answer time is the last one's.
      const { answer, text } = (await Promise.all(Array.from({ length: atOnce }, send)))[0]!;
      const ms = performance.now() - started;
      if (answer.status < 400 || answer.status >= 500) throw new Error(`${name}: ${answer.status} ${text.slice(0, 200)}`);
      rows.push([
        store.name,
        name,
        (body.length / 1e6).toFixed(1),
        String(answer.status),
        ms.toFixed(0),
        parseMs.toFixed(0),
        String(text.length),
        String(server.peakRssMb()! - before),
      ]);
      console.log(rows.at(-1)!.join('  '), '|', JSON.parse(text).message);
    }
    attacking = false;
    const attacked = await during;
    console.log(
      `${store.name}: production order p50/p99 ${percentile(quiet, 50).toFixed(1)}/${percentile(quiet, 99).toFixed(1)} ms alone, ` +
        `${percentile(attacked, 50).toFixed(1)}/${percentile(attacked, 99).toFixed(1)} ms during the attacks (${attacked.length} orders)`,
    );
    return rows;
  } finally {
    await server.stop();
    await store.drop();
  }
}

console.log('hostile bodies to the UAT port with the public test credentials, production orders posted meanwhile');
await benchEachStore(['store', 'body', 'MB', 'status', 'answer ms', 'JSON.parse ms (ceiling)', 'answer bytes', 'peak RSS +MB'], 2, benchStore);
