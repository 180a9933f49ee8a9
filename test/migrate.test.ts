import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import type { Database } from '../src/db/index.js';
import { TABLE_PLACEMENT, tablesWithoutPlacement } from '../src/db/citus.js';
import { migrate } from '../src/db/migrate.js';
import { openPostgres } from '../src/db/postgres.js';
import { splitStatements } from '../src/db/sql-script.js';
import { createTestDatabase, serverUrl, type TestDatabase } from './helpers.js';

/** Every migration file, by version, in the order they apply. */
const VERSIONS = fs
  .readdirSync(new URL('../migrations/', import.meta.url))
  .filter((name) => name.endsWith('.sql'))
  .map((name) => name.replace(/\.sql$/, ''))
  .sort();

async function recordedVersions(db: Database): Promise<string[]> {
  const rows = await db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
  return rows.map((row) => row.version);
}

async function withStore(options: { migrated: boolean }, work: (store: TestDatabase) => Promise<void>) {
  const store = await createTestDatabase(options);
  try {
    await work(store);
  } finally {
    await store.drop();
  }
}

test('there is at least one versioned migration file', () => {
  assert.ok(VERSIONS.length > 0);
  for (const version of VERSIONS) assert.match(version, /^\d{4}_[a-z0-9_]+$/);
});

test('a fresh store gets every migration, in order, once; migrating again applies nothing', async () => {
  await withStore({ migrated: false }, async ({ db }) => {
    assert.deepEqual(await migrate(db), { applied: VERSIONS });
    assert.deepEqual(await recordedVersions(db), VERSIONS);
    assert.deepEqual(await migrate(db), { applied: [] });
    assert.deepEqual(await migrate(db), { applied: [] });
    assert.deepEqual(await recordedVersions(db), VERSIONS);
    const [row] = await db.query<{ applied_at: Date }>('SELECT min(applied_at) AS applied_at FROM schema_migrations');
    assert.ok(row!.applied_at instanceof Date);
  });
});

test('migrating a migrated store keeps its data', async () => {
  await withStore({ migrated: true }, async ({ db }) => {
    await db.query("INSERT INTO clients (client_id, name) VALUES ('6b1f0c1e-2d3a-4e5b-8c6d-7e8f9a0b1c2d', 'kept')");
    assert.deepEqual(await migrate(db), { applied: [] });
    assert.deepEqual(await db.query('SELECT name FROM clients'), [{ name: 'kept' }]);
  });
});

test('every table of the schema has its placement for Citus, and every placement its table', async () => {
  await withStore({ migrated: true }, async ({ db }) => {
    assert.deepEqual(await tablesWithoutPlacement(db), []);
    const rows = await db.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    );
    assert.deepEqual(rows.map((row) => row.name).sort(), Object.keys(TABLE_PLACEMENT).sort());
  });
});

test("a store of text environments keeps each row's as the enum (migration 0026), which takes nothing else", async () => {
  await withStore({ migrated: false }, async ({ db }) => {
    const before = VERSIONS.filter((version) => version < '0026');
    // The store as migrate() left it before 0026: those migrations applied and recorded.
    await db.exec('CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    for (const version of before) {
      for (const statement of splitStatements(fs.readFileSync(new URL(`../migrations/${version}.sql`, import.meta.url), 'utf8'))) await db.exec(statement);
      await db.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
    }
    const client = '6b1f0c1e-2d3a-4e5b-8c6d-7e8f9a0b1c2d';
    await db.query("INSERT INTO clients (client_id, name) VALUES ($1, 'kept')", [client]);
    await db.query("INSERT INTO identities (client_id, environment, visitor_id, customer_id, linked_at) VALUES ($1, 'production', 'v1', 'c1', now()), ($1, 'uat', 'v2', 'c2', now())", [client]);

    assert.deepEqual(await migrate(db), { applied: VERSIONS.filter((version) => version >= '0026') });
    assert.deepEqual(await db.query('SELECT visitor_id, environment FROM identities ORDER BY visitor_id'), [
      { visitor_id: 'v1', environment: 'production' },
      { visitor_id: 'v2', environment: 'uat' },
    ]);
    assert.deepEqual(await db.query("SELECT visitor_id FROM identities WHERE client_id = $1 AND environment = $2", [client, 'uat']), [{ visitor_id: 'v2' }]);
    const textColumns = await db.query(
      "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'environment' AND udt_name <> 'environment'",
    );
    assert.deepEqual(textColumns, []);
    const environmentChecks = await db.query(
      "SELECT conname FROM pg_constraint WHERE contype = 'c' AND connamespace = current_schema()::regnamespace AND pg_get_constraintdef(oid) LIKE '%environment%'",
    );
    assert.deepEqual(environmentChecks, [], 'the type is the check');
    await assert.rejects(
      db.query("INSERT INTO identities (client_id, environment, visitor_id, customer_id, linked_at) VALUES ($1, 'staging', 'v3', 'c3', now())", [client]),
      (error: { code?: string }) => error.code === '22P02',
    );
  });
});

test(
  'processes migrating one PostgreSQL database at once all succeed and apply each migration once',
  { skip: !serverUrl },
  async () => {
    await withStore({ migrated: false }, async ({ url }) => {
      const handles = Array.from({ length: 4 }, () => openPostgres({ connectionString: url!, poolSize: 1 }));
      try {
        const results = await Promise.all(handles.map((db) => migrate(db)));
        assert.deepEqual(results.flatMap((result) => result.applied).sort(), VERSIONS);
        assert.equal(results.filter((result) => result.applied.length > 0).length, 1, JSON.stringify(results));
        assert.deepEqual(await recordedVersions(handles[0]!), VERSIONS);
      } finally {
        await Promise.all(handles.map((db) => db.close()));
      }
    });
  },
);
