/**
 * Memory over time: new orders over HTTP from several connections for BENCH_SOAK_MINUTES
 * (default 5) on each store, the server's resident memory sampled every 5 s. Prints, minute by
 * minute, the rate, the batches' p99 and the memory, then the last minute's mean memory against
 * the first's: flat means within 10%.
 *
 *   npm run bench:soak
 */
import { batchesWithIds, orderPoster, ordersPerSecond, runPhase } from './load.js';
import { benchEachStore, startServer, type Store } from './server.js';

const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 5);
const SAMPLE_MS = 5_000;

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

async function benchStore(store: Store): Promise<string[][]> {
  const server = await startServer(store);
  try {
    const post = orderPoster(server);
    const rows: string[][] = [];
    const means: number[] = [];
    for (let minute = 1; minute <= MINUTES; minute++) {
      const samples: number[] = [];
      const sampler = setInterval(() => samples.push(server.rssMb() ?? NaN), SAMPLE_MS);
      const result = await runPhase(post, batchesWithIds(`m${minute}-`), 60);
      clearInterval(sampler);
      const latencies = result.latencies.sort((a, b) => a - b);
      means.push(mean(samples));
      rows.push([
        store.name,
        String(minute),
        Math.round(ordersPerSecond(result)).toLocaleString('en-US'),
        latencies[Math.floor(latencies.length * 0.99)]!.toFixed(0),
        means.at(-1)!.toFixed(0),
        Math.max(...samples).toFixed(0),
      ]);
      console.log(rows.at(-1)!.join('  '));
    }
    const drift = (100 * (means.at(-1)! - means[0]!)) / means[0]!;
    console.log(
      `${store.name}: resident memory, minute ${MINUTES} against minute 1: ${drift >= 0 ? '+' : ''}${drift.toFixed(1)}% ` +
        `(mean ${means.at(-1)!.toFixed(0)} MB against ${means[0]!.toFixed(0)} MB); peak ${server.peakRssMb()} MB`,
    );
    return rows;
  } finally {
    await server.stop();
    await store.drop();
  }
}

console.log(`new orders over HTTP for ${MINUTES} minutes a store, resident memory sampled every ${SAMPLE_MS / 1000} s`);
await benchEachStore(['store', 'minute', 'orders/s', 'p99 ms', 'RSS mean MB', 'RSS max MB'], 2, benchStore);
