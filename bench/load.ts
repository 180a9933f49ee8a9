/** The order load both the order benchmark and the soak run send: batches, senders, timing. */
import http from 'node:http';
import { generateOrders } from './generate.js';
import type { RunningServer } from './server.js';

export const BATCH_SIZE = 1000;
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const TEMPLATES = 8;

// Distinct batches whose order ids carry a placeholder, so that each batch sent can get new ids
// by a string replacement instead of being generated and encoded during the measurement.
const PLACEHOLDER = '__RUN__';
export const templates = Array.from({ length: TEMPLATES }, (_, t) => JSON.stringify(generateOrders(42 + t, `${PLACEHOLDER}-${t}`, BATCH_SIZE)));

/** Batch `sequence` with ids of its own, under `prefix`; for the templates of other shapes too. */
export const batchesWithIds =
  (prefix: string, from: readonly string[] = templates) =>
  (sequence: number) =>
    from[sequence % from.length]!.replaceAll(PLACEHOLDER, `${prefix}${sequence}`);

/**
 * The batches of batchesWithIds as the UTF-8 bytes an HTTP client sends, joined from bytes encoded
 * once: this process shares the machine's cores with the server it measures, and encoding a
 * megabyte of text a batch was more than half of its CPU time.
 */
export function encodedBatchesWithIds(prefix: string, from: readonly string[] = templates): (sequence: number) => Buffer {
  const pieces = from.map((template) => template.split(PLACEHOLDER).map((piece) => Buffer.from(piece)));
  return (sequence) => {
    const [first, ...rest] = pieces[sequence % pieces.length]!;
    const id = Buffer.from(`${prefix}${sequence}`);
    return Buffer.concat([first!, ...rest.flatMap((piece) => [id, piece])]);
  };
}

export interface PhaseResult {
  batches: number;
  seconds: number;
  bytes: number;
  latencies: number[];
}

/** Sends batches with `send` from `connections` concurrent callers for `seconds`. */
export async function runPhase<Body extends string | Buffer>(
  send: (body: Body) => Promise<void>,
  bodyFor: (sequence: number) => Body,
  seconds: number,
  connections = CONNECTIONS,
): Promise<PhaseResult> {
  let next = 0;
  let bytes = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const connection = async () => {
    while (performance.now() < deadline) {
      const body = bodyFor(next++);
      const sent = performance.now();
      await send(body);
      latencies.push(performance.now() - sent);
      bytes += Buffer.byteLength(body);
    }
  };
  await Promise.all(Array.from({ length: connections }, connection));
  return { batches: latencies.length, seconds: (performance.now() - started) / 1000, bytes, latencies };
}

const keepAlive = new http.Agent({ keepAlive: true });

/**
 * A sender of bodies to `url` by POST over kept-alive connections, failing on any status but
 * `expected`: node:http, whose client costs this process less CPU a request than fetch's, CPU the
 * server under measurement shares on one machine.
 */
export const poster = (url: string, headers: Record<string, string>, expected: number) => (body: string | Buffer) =>
  new Promise<void>((resolve, reject) => {
    const request = http.request(url, { method: 'POST', agent: keepAlive, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        response.statusCode === expected ? resolve() : reject(new Error(`${url}: ${response.statusCode} ${Buffer.concat(chunks).toString().slice(0, 500)}`)),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });

/** POST /v2/orders to `server`, failing on anything but a 200. */
export const orderPoster = (server: RunningServer) => poster(`${server.url}/v2/orders`, server.headers, 200);

export const ordersPerSecond = (result: PhaseResult) => (result.batches * BATCH_SIZE) / result.seconds;

/** The `p`th percentile of values sorted in ascending order. */
export const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

