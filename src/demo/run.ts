/**
 * `tributary demo`: a new client, "Demo shop" and a short suffix, filled with a sample shop
 * (shop.ts) through the production API's own routes, in this process (app.inject): every record
 * is validated and derived (channels, platforms) as the API does for any client. Other clients
 * are never touched.
 */
import { randomBytes } from 'node:crypto';
import { buildApp } from '../app.js';
import { keepAhead } from '../attribution/index.js';
import { createClientRepository } from '../clients/repository.js';
import type { Config } from '../config.js';
import type { Database } from '../db/index.js';
import { MAX_IDENTITIES_PER_REQUEST, MAX_ORDERS_PER_REQUEST, MAX_RECORDS_PER_REQUEST, MAX_TOUCHPOINTS_PER_REQUEST } from '../request-limits.js';
import { createSendProgress } from './progress.js';
import { DEMO_SOURCE_PLATFORMS, DEMO_TIME_ZONE, generateShop, type ApiRecord } from './shop.js';

/** Requests in flight at once: the API parses and checks one batch while the store writes another. */
const CONCURRENCY = 3;

export interface DemoOptions {
  days: number;
  seed: number;
  /** The shop's last moment (tests); now by default. */
  now?: Date;
  /** Where progress is shown. */
  progress?: NodeJS.WriteStream;
}

export interface DemoResult {
  client_id: string;
  api_key: string;
  read_api_key: string;
  dashboard_url: string;
}

/** What the demo sends: one request of the API a batch. */
interface Batch {
  url: string;
  kind: string;
  payload: unknown;
  records: number;
}

function* batchesOf(records: Iterable<ApiRecord>, size: number, url: string, kind: string, wrap: (batch: ApiRecord[]) => unknown): Generator<Batch> {
  let batch: ApiRecord[] = [];
  for (const record of records) {
    batch.push(record);
    if (batch.length === size) {
      yield { url, kind, payload: wrap(batch), records: batch.length };
      batch = [];
    }
  }
  if (batch.length > 0) yield { url, kind, payload: wrap(batch), records: batch.length };
}

export class DemoFailure extends Error {}

const grouped = (n: number) => n.toLocaleString('en-US');
const seconds = (since: number) => Math.round((performance.now() - since) / 1000);

export async function runDemo(db: Database, config: Config, { days, seed, now = new Date(), progress = process.stderr }: DemoOptions): Promise<DemoResult> {
  const started = performance.now();
  progress.write(`Making a sample shop of ${days} days…\n`);
  const shop = generateShop({ seed, now, days });
  const total = shop.orders.length + shop.spendRecords + shop.touchpoints.length + shop.identities.length;

  const clients = createClientRepository(db);
  const name = `Demo shop ${randomBytes(3).toString('hex')}`;
  const client = await clients.create(name);
  const settings = await clients.update(client.client_id, { time_zone: DEMO_TIME_ZONE, source_platforms: DEMO_SOURCE_PLATFORMS });
  if (typeof settings === 'string') throw new DemoFailure(`Could not set the demo client's time zone and source mapping: ${settings}`);
  const reader = await clients.createKey(client.client_id, 'read');
  if (!reader) throw new DemoFailure('Could not issue the demo client a read key');

  progress.write(
    `${name} (${client.client_id}): ${grouped(shop.orders.length)} orders of ${grouped(shop.customers)} customers, ` +
      `${grouped(shop.spendRecords)} hourly spend records, ${grouped(shop.touchpoints.length)} touchpoints, ` +
      `${grouped(shop.identities.length)} identity links over ${days} days, in ${DEMO_TIME_ZONE}\n`,
  );

  // The production API of this store, as the server runs it, but for the demo's own client: its
  // writes are not held to the per-key write budgets (a year of spend is more than a minute's),
  // counted by no Redis, and not shed when this busy process's event loop lags.
  const app = await buildApp({
    config: { ...config, redisUrl: undefined, orderWriteBytesPerMinute: 0, spendWriteBytesPerMinute: 0, touchpointWriteBytesPerMinute: 0, overloadEventLoopDelayMs: 0 },
    db,
    environment: 'production',
  });
  const headers = { authorization: client.api_key, 'data-client-id': client.client_id };
  const bar = createSendProgress(total, progress);
  let sent = 0;
  try {
    const batches = (function* () {
      yield* batchesOf(shop.orders, MAX_ORDERS_PER_REQUEST, '/v2/orders', 'orders', (batch) => batch);
      yield* batchesOf(shop.touchpoints, MAX_TOUCHPOINTS_PER_REQUEST, '/v1/touchpoints', 'touchpoints', (data) => ({ data }));
      yield* batchesOf(shop.identities, MAX_IDENTITIES_PER_REQUEST, '/v1/identities', 'identities', (data) => ({ data }));
      yield* batchesOf(shop.spend(), MAX_RECORDS_PER_REQUEST, '/v1/spend_hourly', 'spend', (data) => ({ data }));
    })();
    let failure: DemoFailure | undefined;
    const worker = async () => {
      // One generator shared by the workers: each takes the next batch when it is free.
      for (let next = batches.next(); !next.done && !failure; next = batches.next()) {
        const { url, kind, payload, records } = next.value;
        const response = await app.inject({ method: 'POST', url, headers, payload: payload as object });
        if (response.statusCode < 200 || response.statusCode >= 300) {
          failure ??= new DemoFailure(
            `POST ${url} answered ${response.statusCode}: ${answerOf(response.body)}. The demo client ${client.client_id} is left part-filled`,
          );
          return;
        }
        sent += records;
        bar.update(sent, kind);
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      bar.stop(sent);
    }
    if (failure) throw failure;
  } finally {
    await app.close();
  }
  progress.write(`${name}: ${grouped(sent)} records stored in ${seconds(started)} s\n`);
  if (config.keepAheadDays > 0) {
    // What the server's keeper would do in its first minutes: the dashboard then opens on kept days.
    const keeping = performance.now();
    progress.write(`Crediting the last ${config.keepAheadDays} days under every rule model, as the dashboard asks for them…\n`);
    await keepAhead(db, { clientId: client.client_id, environment: 'production', dryRun: false }, DEMO_TIME_ZONE, { days: config.keepAheadDays, now });
    progress.write(`${name}: days credited in ${seconds(keeping)} s\n`);
  }
  return {
    client_id: client.client_id,
    api_key: client.api_key,
    read_api_key: reader.api_key,
    dashboard_url: `http://localhost:${config.port}/`,
  };
}

/** An error answer's message and first error, for a person. */
function answerOf(body: string): string {
  try {
    const { message, errors } = JSON.parse(body) as { message?: string; errors?: { loc: string; msg: string }[] | null };
    const first = errors?.[0];
    return `${message ?? body}${first ? ` (${first.loc}: ${first.msg})` : ''}`;
  } catch {
    return body.slice(0, 500);
  }
}
