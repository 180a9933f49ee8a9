import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { createExportJobs } from '../src/exports/jobs.js';
import { createExportProducer } from '../src/exports/produce.js';
import { startExportWorker } from '../src/exports/worker.js';
import {
  ADMIN_TOKEN,
  citusUrl,
  cliError,
  cliJson,
  createTestDatabase,
  embeddedStoreOnly,
  finishedExport,
  hourlySpend,
  listOrders,
  makeOrder,
  pgliteEnv,
  tempDir,
  type TestClient,
} from './helpers.js';

/*
 * Backup and restore: a restored store answers the same reads and exports as the one backed up.
 * The embedded store through `tributary backup` / `restore`; PostgreSQL through pg_dump and
 * pg_restore, run as docs/operations.md says.
 */

const dirs: string[] = [];
const newDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};
after(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** An app over `db`, with an export worker writing into a directory of its own, for `work`. */
async function withApp<T>(db: Database, work: (app: Awaited<ReturnType<typeof buildApp>>) => Promise<T>): Promise<T> {
  const exportsDir = newDir();
  const config = loadConfig({ ADMIN_TOKEN, EXPORTS_DIR: exportsDir, OVERLOAD_EVENT_LOOP_DELAY_MS: '0' });
  const app = await buildApp({ config, db, environment: 'production' });
  const worker = startExportWorker({
    jobs: createExportJobs(db, { linkTtlSeconds: 3600 }),
    produce: createExportProducer({ db, exportsDir, rowsPerFile: 1000, connections: 2 }),
    concurrency: 1,
    leaseSeconds: 30,
    maxRunningPerClient: 2,
    pollMs: 10,
    maxAttempts: 1,
  });
  try {
    return await work(app);
  } finally {
    await worker.stop();
    await app.close();
  }
}

/** A client with orders, touchpoints, links and spend. */
async function populate(db: Database): Promise<TestClient> {
  return withApp(db, async (app) => {
    const created = await app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'backed up' } });
    const { client_id, api_key, key_id } = created.json();
    const client = { client_id, api_key, key_id, headers: { authorization: api_key, 'data-client-id': client_id } };
    const send = async (url: string, payload: object) => {
      const response = await app.inject({ method: 'POST', url, headers: client.headers, payload });
      assert.ok(response.statusCode < 300, response.body);
    };
    await send('/v2/orders', [makeOrder('o-1', { customer_id: 'c-1', time_of_purchase: '2024-03-08T12:00:00Z' }), makeOrder('o-2', { time_of_purchase: '2024-03-08T14:00:00Z' })]);
    await send('/v1/touchpoints', { data: [{ touchpoint_id: 't-1', occurred_at: '2024-03-08T09:00:00Z', visitor_id: 'v-1', landing_url: 'https://shop.example/?utm_source=meta&utm_campaign=spring' }] });
    await send('/v1/identities', { data: [{ visitor_id: 'v-1', order_id: 'o-1' }] });
    await send('/v1/spend_hourly', { data: [hourlySpend('spring')] });
    return client;
  });
}

/** What the store answers: the reads of every kind, and an attributed export's CSV. */
async function reads(db: Database, client: TestClient): Promise<Record<string, string>> {
  return withApp(db, async (app) => {
    const get = async (url: string) => (await app.inject({ method: 'GET', url, headers: client.headers })).body;
    const created = await app.inject({
      method: 'POST',
      url: '/v1/exports/data-export',
      headers: client.headers,
      payload: {
        period_type: 'FIXED',
        period_options: { period_starting_at: '2024-03-08T00:00:00Z', period_ending_at: '2024-03-09T00:00:00Z' },
        level: 'campaign',
        metrics: ['spend', 'rev', 'txns', 'visits', 'newVisits'].map((id) => ({ id })),
      },
    });
    const result = await finishedExport(app, client, created.json().id);
    assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
    const files = await Promise.all(result.result.map(async (link) => (await app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search })).body));
    return {
      orders: (await listOrders(app, client, { start_date: '2024-03-01', end_date: '2024-03-31' })).body,
      touchpoints: await get('/v1/touchpoints?customer_id=c-1'),
      spend: await get('/v1/spend_hourly?platform_account_id=act_1&date=2024-03-08'),
      explanation: await get('/v2/orders/o-1/attribution'),
      export: files.join(''),
    };
  });
}

const openEmbedded = (dataDir: string) => openDatabase({ dataDir, databaseUrl: undefined, databasePoolSize: 1 });

test('embedded store: backed up with the server stopped, restored elsewhere, it answers the same reads and exports', { timeout: 120_000, skip: embeddedStoreOnly }, async () => {
  const [source, target, other] = [newDir(), newDir(), newDir()];
  const file = path.join(newDir(), 'tributary.backup.tgz');
  const db = await openEmbedded(source);
  await migrate(db);
  const client = await populate(db);
  const before = await reads(db, client);

  // The store is open (in this process, as it would be in a server's): refused, nothing written.
  const busy = await cliError(pgliteEnv(source), ['backup', file]);
  assert.match(busy, /is open in process \d+\. Stop the server and workers using it/);
  assert.equal(fs.existsSync(file), false);
  await db.close();

  const written = await cliJson<{ file: string; bytes: number }>(pgliteEnv(source), ['backup', file]);
  assert.equal(written.file, file);
  assert.equal(written.bytes, fs.statSync(file).size);
  assert.deepEqual(await cliJson(pgliteEnv(target), ['restore', file]), { file, clients: 1 });

  const restored = await openEmbedded(target);
  try {
    assert.deepEqual(await reads(restored, client), before);
  } finally {
    await restored.close();
  }

  // A store is never replaced unasked, nor by a file that is not a backup.
  assert.match(await cliError(pgliteEnv(target), ['restore', file]), /already holds an embedded store: pass --replace/);
  const notBackup = path.join(newDir(), 'notes.txt');
  fs.writeFileSync(notBackup, 'not a backup');
  assert.match(await cliError(pgliteEnv(target), ['restore', '--replace', notBackup]), /is not a backup of an embedded store/);
  assert.match(await cliError(pgliteEnv(other), ['backup', file]), /There is no embedded store in/);
  assert.deepEqual(await cliJson(pgliteEnv(target), ['restore', '--replace', file]), { file, clients: 1 });
  const replaced = await openEmbedded(target);
  try {
    assert.deepEqual(await reads(replaced, client), before);
  } finally {
    await replaced.close();
  }
});

test('PostgreSQL: tributary backup points at pg_dump', async () => {
  const error = await cliError({ ...pgliteEnv(newDir()), DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, ['backup', 'x.tgz']);
  assert.match(error, /with PostgreSQL \(DATABASE_URL\) use pg_dump and pg_restore/);
});

const run = promisify(execFile);
const hasPgTools = await run('pg_dump', ['--version']).then(() => true, () => false);

test(
  'PostgreSQL: a store dumped with pg_dump and restored with pg_restore, as docs/operations.md says, answers the same reads and exports',
  {
    skip: citusUrl
      ? 'not on Citus: a coordinator is backed up with its nodes, as Citus documents'
      : !process.env.DATABASE_URL
        ? 'PostgreSQL only: set DATABASE_URL'
        : !hasPgTools && 'pg_dump and pg_restore are not installed',
    timeout: 120_000,
  },
  async () => {
    const source = await createTestDatabase();
    const target = await createTestDatabase({ migrated: false });
    try {
      const client = await populate(source.db);
      const before = await reads(source.db, client);
      const file = path.join(newDir(), 'tributary.dump');
      // The commands of docs/operations.md and docs/reliability.md, "Backup and restore".
      await run('pg_dump', ['--format=custom', '--no-owner', `--file=${file}`, source.url!]);
      await run('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${target.url!}`, file]);
      assert.deepEqual(await reads(target.db, client), before);
    } finally {
      await Promise.all([source.drop(), target.drop()]);
    }
  },
);
