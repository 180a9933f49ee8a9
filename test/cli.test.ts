import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/index.js';
import { UUID, cliError, cliJson, createChildStore, embeddedStoreOnly, listOrders, pgliteEnv, tempDir, type ChildStore } from './helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSIONS = fs
  .readdirSync(path.join(ROOT, 'migrations'))
  .filter((name) => name.endsWith('.sql'))
  .map((name) => name.replace(/\.sql$/, ''))
  .sort();

describe('CLI on the configured store', () => {
  let store: ChildStore;
  let env: NodeJS.ProcessEnv;
  const withStore = (work: (db: Database) => Promise<void>) => store.withStore(work);

  before(async () => {
    store = await createChildStore();
    env = store.env;
  });
  after(() => store.cleanup());

  /** The status of GET /v2/orders with these credentials, on an app over the CLI's store. */
  async function apiStatus(db: Database, credentials: { client_id: string; api_key: string }): Promise<number> {
    const app = await buildApp({ config: loadConfig({}), db, environment: 'production' });
    try {
      const headers = { authorization: credentials.api_key, 'data-client-id': credentials.client_id };
      return (await listOrders(app, { headers }, { start_date: '2024-01-01', end_date: '2024-12-31' })).statusCode;
    } finally {
      await app.close();
    }
  }

  test('migrate applies every migration once and prints what it applied', async () => {
    assert.deepEqual(await cliJson(env, ['migrate']), { applied: VERSIONS });
    assert.deepEqual(await cliJson(env, ['migrate']), { applied: [] });
  });

  test('clients, keys: create, list, issue, revoke; the keys work on the API as they should', async () => {
    const client = await cliJson<Record<string, string>>(env, ['clients', 'create', '--name', 'Acme']);
    assert.match(client.client_id!, UUID);
    assert.match(client.key_id!, UUID);
    assert.equal(client.name, 'Acme');
    assert.equal(typeof client.api_key, 'string');

    const listed = await cliJson<{ client_id: string; name: string }[]>(env, ['clients', 'list']);
    assert.ok(Array.isArray(listed));
    assert.deepEqual(
      listed.filter((row) => row.client_id === client.client_id).map((row) => row.name),
      ['Acme'],
    );
    for (const row of listed) assert.equal('api_key' in row, false, 'listing shows no key');

    const key = await cliJson<Record<string, string>>(env, ['keys', 'create', '--client', client.client_id!]);
    assert.equal(key.client_id, client.client_id);
    assert.match(key.key_id!, UUID);
    assert.notEqual(key.api_key, client.api_key);
    assert.equal(key.scope, 'write');
    const reader = await cliJson<Record<string, string>>(env, ['keys', 'create', '--client', client.client_id!, '--scope', 'read']);
    assert.equal(reader.scope, 'read');

    const revoked = await cliJson(env, ['keys', 'revoke', '--client', client.client_id!, '--key', client.key_id!]);
    assert.equal(revoked.revoked, true);

    await withStore(async (db) => {
      assert.equal(await apiStatus(db, { client_id: client.client_id!, api_key: key.api_key! }), 200);
      assert.equal(await apiStatus(db, client as { client_id: string; api_key: string }), 401, 'the revoked key is refused');
    });
  });

  test('keys of unknown clients, unknown keys and bad ids fail with a JSON error and a non-zero exit', async () => {
    const unknown = '5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c';
    const { client_id: clientId } = await cliJson<{ client_id: string }>(env, ['clients', 'create', '--name', 'Other']);
    assert.match(await cliError(env, ['keys', 'revoke', '--client', clientId, '--key', unknown]), new RegExp(unknown));
    assert.match(await cliError(env, ['keys', 'revoke', '--client', unknown, '--key', unknown]), new RegExp(unknown));
    assert.match(await cliError(env, ['keys', 'create', '--client', unknown]), new RegExp(unknown));
    assert.match(await cliError(env, ['keys', 'create', '--client', 'not-a-uuid']), /--client must be a UUID/);
    assert.match(await cliError(env, ['keys', 'create', '--client', clientId, '--scope', 'admin']), /read, write/);
    assert.match(await cliError(env, ['keys', 'revoke', '--client', clientId, '--key', 'nope']), /--key must be a UUID/);
  });

  test('clients create refuses the names the admin API refuses (empty, over 200 characters)', async () => {
    for (const name of ['', 'x'.repeat(201)]) await cliError(env, ['clients', 'create', '--name', name]);
    const names = (await cliJson<{ name: string }[]>(env, ['clients', 'list'])).map((row) => row.name);
    assert.deepEqual(names.filter((name) => name === '' || name.length > 200), []);
  });
});

describe('CLI on an embedded store that another process holds', { skip: embeddedStoreOnly }, () => {
  const dataDir = tempDir();
  let db: Database;
  before(async () => {
    db = await openDatabase({ dataDir, databaseUrl: undefined, databasePoolSize: 1 });
  });
  after(async () => {
    await db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('fails with an error naming the other process, and leaves the store working', async () => {
    for (const args of [['migrate'], ['clients', 'create', '--name', 'Blocked']]) {
      const error = await cliError(pgliteEnv(dataDir), args);
      assert.match(error, new RegExp(`process ${process.pid}\\b`));
    }
    assert.deepEqual(await db.query('SELECT 1 AS ok'), [{ ok: 1 }]);
  });
});
