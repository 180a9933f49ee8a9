import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { Database } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { openPostgres } from '../src/db/postgres.js';
import { hourly } from '../src/spend/collection.js';
import { createSpendRepository } from '../src/spend/repository.js';

/**
 * Production PostgreSQL servers are often created with a linguistic default collation (en-US),
 * in which "google" sorts before "Meta"; the tables' keys sort byte-wise, where "Meta" comes
 * first. Writers must lock rows in the key's order, or an upsert and a delete can deadlock.
 */
const serverUrl = process.env.DATABASE_URL;
const name = `tributary_test_icu_${randomBytes(6).toString('hex')}`;
let admin: pg.Client;
let db: Database;
let url: string;

async function query(sql: string, params: unknown[] = []) {
  return (await admin.query(sql, params)).rows;
}

before(async () => {
  if (!serverUrl) return;
  admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
  const address = new URL(serverUrl);
  address.pathname = `/${name}`;
  url = address.toString();
  db = openPostgres({ connectionString: url, poolSize: 4 });
  await migrate(db);
});
after(async () => {
  if (!serverUrl) return;
  await db.close();
  await query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

/** Waits until `count` sessions of the test database wait for a lock. */
async function waitingSessions(count: number) {
  for (;;) {
    const [row] = await query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [name]);
    if (row.n >= count) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('an upsert and a delete of the same spend rows do not deadlock under an en-US default collation', { skip: !serverUrl }, async () => {
  const clientId = randomUUID();
  await db.query("INSERT INTO clients (client_id, name) VALUES ($1, 'icu')", [clientId]);
  const tenant = { clientId, environment: 'production' as const, dryRun: false };
  const spend = createSpendRepository(db, hourly);
  const record = (platform_name: string) => ({
    hour_start_iso: '2024-03-08T09:00:00Z',
    platform_name,
    campaign_id: 'c',
    campaign_name: 'c',
    spend: 1,
    spend_currency: 'USD',
  });
  const body = JSON.stringify({ data: [record('google'), record('Meta')] });
  await spend.upsert(tenant, body);

  // A third session holds the first row in key order, so that the delete and the upsert both
  // queue behind it with locks of their own taken (or not) in their own order.
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query("SELECT 1 FROM spend_hourly WHERE platform_name = 'Meta' FOR UPDATE");
  const deleted = spend.delete(tenant, { period: '2024-03-08T09:00:00Z', platform_account_id: '', campaign_id: 'c', adset_id: '', ad_id: '' });
  await waitingSessions(1);
  const upserted = spend.upsert(tenant, body);
  await waitingSessions(2);
  await holder.query('COMMIT');
  await holder.end();

  const [deletedRecords, upsertedRecords] = await Promise.all([deleted, upserted]);
  assert.equal(JSON.parse(`[${deletedRecords}]`).length, 2);
  assert.equal(JSON.parse(`[${upsertedRecords}]`).length, 2);
});
