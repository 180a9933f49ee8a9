import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { createLogger } from '../src/logger.js';
import { openPostgres } from '../src/db/postgres.js';
import { createExportJobs } from '../src/exports/jobs.js';
import { recordingStatements } from './citus-routing.js';
import { createScratchDatabase } from './databases.js';
import { openTemplatePglite } from './pglite-templates.js';
import { createExportProducer } from '../src/exports/produce.js';
import { startExportWorker, type ExportWorkerOptions } from '../src/exports/worker.js';
import type { ErrorEnvelope } from '../src/http/error-envelope.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestDatabase {
  db: Database;
  /** The connection string of the test's own database (PostgreSQL only). */
  url: string | undefined;
  drop(): Promise<void>;
}

/** The Citus coordinator the suite runs against when CITUS_URL is set (see docs/scaling.md). */
export const citusUrl = process.env.CITUS_URL || undefined;
/** The PostgreSQL server test databases are created on: the Citus coordinator, or DATABASE_URL. */
export const serverUrl = citusUrl ?? (process.env.DATABASE_URL || undefined);

/**
 * The `skip` of a test of the embedded store itself (its thread, its data directory, its backups)
 * when the suite runs on a PostgreSQL server: CI runs the suite on both stores, and the embedded
 * run has it.
 */
export const embeddedStoreOnly = serverUrl ? 'a test of the embedded store itself: the suite runs it on that store' : false;

/**
 * A fresh, empty store for one test file: a new database on the server named by CITUS_URL (a
 * Citus coordinator, the database then made on every node) or DATABASE_URL, dropped afterwards;
 * or an in-memory PGlite when neither is set. It is migrated unless `migrated: false` is given;
 * on PostgreSQL its statements are limited to `queryTimeoutMs`, as the service's are.
 */
export async function createTestDatabase({ migrated = true, queryTimeoutMs }: { migrated?: boolean; queryTimeoutMs?: number } = {}): Promise<TestDatabase> {
  if (!serverUrl) {
    const db = await openTemplatePglite({ migrated });
    return { db, url: undefined, drop: () => db.close() };
  }
  const scratch = await createScratchDatabase({ url: serverUrl, citus: Boolean(citusUrl) }, 'tributary_test');
  const postgres = openPostgres({ connectionString: scratch.url, poolSize: 10, queryTimeoutMs });
  // Every statement of the service that writes is checked to call only what Citus allows there,
  // and on Citus, every statement to stay on one shard when it is about one client.
  const routes = recordingStatements(postgres, { url: scratch.url, citus: Boolean(citusUrl) });
  const db = routes.db;
  if (migrated) await migrate(db);
  return {
    db,
    url: scratch.url,
    async drop() {
      try {
        await routes.check();
      } finally {
        await db.close();
        await scratch.drop();
      }
    },
  };
}

/** A store for a child process (the CLI, a server) and a way to open it in the test process. */
export interface ChildStore {
  /** The child's whole environment: this process's, with the store's DATA_DIR or DATABASE_URL. */
  env: NodeJS.ProcessEnv;
  /** Runs `work` on the store; the embedded one only opens once the child has let it go. */
  withStore<T>(work: (db: Database) => Promise<T>): Promise<T>;
  cleanup(): Promise<void>;
}

export const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-test-'));

/**
 * The child's environment for an embedded store in `dataDir`, whatever this process was given.
 * A busy test machine is not an overloaded server: load shedding is off, as in startService.
 */
export function pgliteEnv(dataDir: string): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...env } = process.env;
  return { ...env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', OVERLOAD_EVENT_LOOP_DELAY_MS: '0' };
}

/** `tributary <command>` run from the sources in a child process, once it has logged `ready`. */
export async function startCli(command: 'serve' | 'worker', env: NodeJS.ProcessEnv, ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', command], {
    cwd: new URL('..', import.meta.url),
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  while (!output.includes(ready)) {
    await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')]);
    if (child.exitCode !== null) throw new Error(`tributary ${command} exited with ${child.exitCode}: ${output}`);
  }
  return child;
}

/** An empty, unmigrated store of the kind the suite runs on, for a child process. */
export async function createChildStore(): Promise<ChildStore> {
  const dataDir = tempDir();
  const removeDataDir = async () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (serverUrl) {
    const postgres = await createTestDatabase({ migrated: false });
    return {
      env: { ...pgliteEnv(dataDir), DATABASE_URL: postgres.url },
      withStore: (work) => work(postgres.db),
      cleanup: async () => {
        await postgres.drop();
        await removeDataDir();
      },
    };
  }
  return {
    env: pgliteEnv(dataDir),
    async withStore(work) {
      const db = await openDatabase({ dataDir, databaseUrl: undefined, databasePoolSize: 1 });
      try {
        return await work(db);
      } finally {
        await db.close();
      }
    },
    cleanup: removeDataDir,
  };
}

export type TestApp = Awaited<ReturnType<typeof buildApp>>;

export interface TestClient {
  client_id: string;
  api_key: string;
  key_id: string;
  /** The two credential headers of this client. */
  headers: Record<string, string>;
}

export interface TestService {
  db: Database;
  production: TestApp;
  uat: TestApp;
  config: Config;
  /** Creates a client through the admin API. */
  createClient(name?: string): Promise<TestClient>;
  close(): Promise<void>;
}

/** The production and UAT apps over one fresh store, spoken to with `app.inject`. */
export async function startService(env: NodeJS.ProcessEnv = {}): Promise<TestService> {
  // Tests send many wrong credentials on purpose, and a busy test machine (the embedded store
  // runs on the event loop) is not an overloaded server: the tests of these two limits set them.
  const config = loadConfig({ ADMIN_TOKEN, AUTH_FAILURES_PER_MINUTE: '0', OVERLOAD_EVENT_LOOP_DELAY_MS: '0', ...env });
  const store = await createTestDatabase({ queryTimeoutMs: config.databaseQueryTimeoutMs });
  const production = await buildApp({ config, db: store.db, environment: 'production' });
  const uat = await buildApp({ config, db: store.db, environment: 'uat' });
  let clients = 0;
  return {
    db: store.db,
    production,
    uat,
    config,
    async createClient(name = `client ${++clients}`) {
      const response = await production.inject({
        method: 'POST',
        url: '/admin/v1/clients',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { name },
      });
      if (response.statusCode !== 201) throw new Error(`client creation failed: ${response.body}`);
      const client = response.json() as Omit<TestClient, 'headers'>;
      return { ...client, headers: { authorization: client.api_key, 'data-client-id': client.client_id } };
    },
    async close() {
      await Promise.all([production.close(), uat.close()]);
      await store.drop();
    },
  };
}

/** A service whose exports are run by a worker of its own, writing files into a temporary directory. */
export async function startExportingService(worker: Partial<ExportWorkerOptions> = {}): Promise<TestService & { exportsDir: string }> {
  const exportsDir = tempDir();
  const service = await startService({ EXPORTS_DIR: exportsDir });
  const exports = startExportWorker({
    jobs: createExportJobs(service.db, { linkTtlSeconds: service.config.exportLinkTtlSeconds }),
    produce: createExportProducer({ db: service.db, exportsDir, rowsPerFile: 1000, connections: 2 }),
    concurrency: 1,
    leaseSeconds: 30,
    maxRunningPerClient: service.config.exportMaxRunningPerClient,
    pollMs: 10,
    maxAttempts: 3,
    ...worker,
  });
  return {
    ...service,
    exportsDir,
    async close() {
      await exports.stop();
      await service.close();
      fs.rmSync(exportsDir, { recursive: true, force: true });
    },
  };
}

/** A valid order with every optional part filled in; `overrides` replaces top-level fields. */
export function makeOrder(orderId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    order_id: orderId,
    customer_id: `customer-of-${orderId}`,
    time_of_purchase: '2024-03-08T01:23:45-08:00',
    customer_email: 'jane@example.com',
    customer_phone_number: '+15555550100',
    customer_name: 'Jane Doe',
    customer_ip_address: '203.0.113.7',
    discount_codes: ['SPRING10'],
    discount_amount: 5.5,
    order_tags: ['web'],
    tax: 3.2,
    is_recurring_order: false,
    currency: 'USD',
    purchase_total: 49.99,
    products: [
      { id: 'shirt', name: 'Shirt', quantity: 2, price: 19.99, variant_id: 'blue', variant_name: 'Blue' },
      { id: 'shirt', name: 'Shirt', quantity: 1, price: 19.99, variant_id: 'red', variant_name: 'Red' },
    ],
    refunds: [
      {
        product_id: 'shirt',
        variant_id: 'blue',
        quantity: 1,
        refund_amount: 19.99,
        refund_cost: 2.5,
        refund_made_at: '2024-03-10T12:00:00Z',
      },
    ],
    customer_shipping_address: {
      address1: '1 Main St',
      address2: 'Apt 2',
      city: 'Springfield',
      state: 'OR',
      zip: '97477',
      country_code: 'USA',
    },
    shipping_cost: 4.99,
    ...overrides,
  };
}

/** A valid order with only the required fields. */
export function minimalOrder(orderId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    order_id: orderId,
    customer_id: `customer-of-${orderId}`,
    time_of_purchase: '2024-03-08T09:23:45Z',
    tax: 0,
    currency: 'EUR',
    purchase_total: 10,
    products: [{ id: 'p', name: 'Product', quantity: 1, price: 10 }],
    shipping_cost: 0,
    ...overrides,
  };
}

/** A valid hourly spend record of `campaignId`. */
export function hourlySpend(campaignId: string): Record<string, unknown> {
  return {
    hour_start_iso: '2024-03-08T09:00:00Z',
    platform_name: 'meta',
    platform_account_id: 'act_1',
    campaign_id: campaignId,
    campaign_name: 'Spring sale',
    spend: 12.5,
    spend_currency: 'USD',
    impressions: 1200,
    clicks: 31,
  };
}

export function postOrders(app: TestApp, client: Pick<TestClient, 'headers'>, orders: unknown) {
  return app.inject({ method: 'POST', url: '/v2/orders', headers: client.headers, payload: orders as object });
}

export function listOrders(app: TestApp, client: Pick<TestClient, 'headers'>, query: Record<string, string | number>) {
  const search = new URLSearchParams(Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]));
  return app.inject({ method: 'GET', url: `/v2/orders?${search}`, headers: client.headers });
}

export function postAliases(app: TestApp, client: Pick<TestClient, 'headers'>, aliases: unknown) {
  return app.inject({ method: 'POST', url: '/v2/orders/aliases', headers: client.headers, payload: { aliases } as object });
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Asserts that `response` has `status` and the API's error envelope, nothing else in it (no
 * stack, no SQL), with the request id of its X-Request-Id header. Returns the envelope.
 */
export function assertErrorEnvelope(response: LightMyRequestResponse, status: number, extraFields: string[] = []): ErrorEnvelope {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  const body = response.json() as ErrorEnvelope;
  assert.deepEqual(Object.keys(body).sort(), ['errors', 'message', 'request_id', ...extraFields].sort(), response.body);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0, 'message is empty');
  assert.match(body.request_id, UUID);
  assert.equal(body.request_id, response.headers['x-request-id']);
  if (body.errors !== null) {
    assert.ok(Array.isArray(body.errors), response.body);
    for (const item of body.errors) {
      for (const field of ['loc', 'msg', 'type'] as const) assert.equal(typeof item[field], 'string', response.body);
      assert.match(item.loc, /^(body|query|path|header)(\/|$)/);
    }
  }
  return body;
}

/** Rows of an RFC 4180 CSV text (CRLF line ends; quoted cells may hold commas, quotes and line breaks). */
export function parseCsv(csv: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const char = csv[i]!;
    if (quoted && char === '"') {
      if (csv[i + 1] === '"') cell += csv[++i];
      else quoted = false;
    } else if (quoted) cell += char;
    else if (char === '"') quoted = true;
    else if (char === ',') [row, cell] = [[...row, cell], ''];
    else if (char === '\r' && csv[i + 1] === '\n') {
      rows.push([...row, cell]);
      [row, cell, i] = [[], '', i + 1];
    } else cell += char;
  }
  assert.equal(cell + row.join(''), '', 'the CSV ends with a line break');
  return rows;
}

/** The result of an export once it is no longer PENDING (within 30 s). */
export async function finishedExport(app: TestApp, client: Pick<TestClient, 'headers'>, id: string): Promise<{ status: string; result: string[]; finished_at: string; warn: object }> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const response = await app.inject({ method: 'GET', url: `/v1/exports/data-export/result/${id}`, headers: client.headers });
    assert.equal(response.statusCode, 200, response.body);
    if (response.json().status !== 'PENDING') return response.json();
  }
  assert.fail('the export stayed PENDING');
}

/** Creates an export and waits for its SUCCESS: its result, and the CSV rows of its files (the header once, first). */
export async function exportedCsv(app: TestApp, client: Pick<TestClient, 'headers'>, request: object): Promise<{ warn: object; rows: string[][] }> {
  const created = await app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: request });
  assert.equal(created.statusCode, 201, created.body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  const files = await Promise.all(result.result.map((link) => app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search })));
  return { warn: result.warn, rows: files.flatMap((file, index) => parseCsv(file.body).slice(index === 0 ? 0 : 1)) };
}

/** An app on a test database of its own whose log lines are kept in `lines`, for tests of what it logs. */
export async function startLoggedApp(): Promise<{ app: TestApp; db: Database; lines: string[]; close: () => Promise<void> }> {
  const store = await createTestDatabase();
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  // A busy test machine is not an overloaded server: no load shedding, as in startService.
  const config = loadConfig({ ADMIN_TOKEN, OVERLOAD_EVENT_LOOP_DELAY_MS: '0' });
  const app = await buildApp({ config, db: store.db, environment: 'production', logger: createLogger('trace', sink) });
  return {
    app,
    db: store.db,
    lines,
    close: async () => {
      await app.close();
      await store.drop();
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `tributary <args>` from the sources, with `env` as its whole environment. */
export function runCli(env: NodeJS.ProcessEnv, args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: fileURLToPath(new URL('..', import.meta.url)), env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs a command that must succeed, and returns the JSON it printed. */
export async function cliJson<T = Record<string, unknown>>(env: NodeJS.ProcessEnv, args: string[]): Promise<T> {
  const result = await runCli(env, args);
  assert.equal(result.code, 0, `tributary ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** Runs a command that must fail, and returns the `error` of the JSON it wrote to stderr. */
export async function cliError(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  const result = await runCli(env, args);
  assert.notEqual(result.code, 0, `tributary ${args.join(' ')} succeeded: ${result.stdout}`);
  assert.equal(result.stdout, '');
  const { error } = JSON.parse(result.stderr) as { error: unknown };
  assert.equal(typeof error, 'string');
  return error as string;
}

/**
 * `schema` (JSON Schema) with every object that does not say otherwise closed to properties it
 * does not list: an answer, or an example of one, naming a field the schema lacks then fails.
 */
export function closedSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closedSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, closedSchema(value)])) as { type?: unknown; properties?: unknown; additionalProperties?: unknown };
  if (copy.type === 'object' && copy.properties && copy.additionalProperties === undefined) copy.additionalProperties = false;
  return copy;
}
