import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { createClientRepository } from '../src/clients/repository.js';
import { createExportJobs, type ExportJob } from '../src/exports/jobs.js';
import { createChildStore, serverUrl, startCli } from './helpers.js';

// Worker processes share a store only on PostgreSQL: the embedded one belongs to one process.
const postgres = Boolean(serverUrl);
const store = await createChildStore();
after(() => store.cleanup());

/** A `tributary worker` process over the test store, with a lease of 2 s. */
const startWorker = () => startCli('worker', { ...store.env, EXPORT_LEASE_SECONDS: '2', LOG_LEVEL: 'info' }, 'export worker is ready');

async function until(what: string, check: () => Promise<ExportJob | undefined>): Promise<ExportJob> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const job = await check();
    if (job) return job;
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a worker process killed in the middle of an export leaves it to another, which completes it', { skip: !postgres && 'PostgreSQL only' }, async () => {
  const first = await startWorker(); // it also creates the schema
  const { tenant, exportId } = await store.withStore(async (db) => {
    const client = await createClientRepository(db).create('crash');
    await db.query(
      `INSERT INTO spend_hourly (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id,
                                 campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks, created_at, updated_at)
       VALUES ($1, 'production', '', '2024-03-01T10:00:00Z', 'meta', 'c1', '', '', 'Campaign', '', '', 12.5, 'USD', 100, 4, now(), now())`,
      [client.client_id],
    );
    return { tenant: { clientId: client.client_id, environment: 'production' as const, dryRun: false }, exportId: randomUUID() };
  });

  // The spend stays locked, so the first worker's export waits in the middle of its query.
  const locker = new pg.Client({ connectionString: store.env.DATABASE_URL });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE spend_hourly IN ACCESS EXCLUSIVE MODE');
    await store.withStore((db) =>
      createExportJobs(db, { linkTtlSeconds: 3600 }).create(
        tenant,
        exportId,
        {
          level: 'platform',
          time_granularity: 'DAILY',
          period_type: 'FIXED',
          period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-02T00:00:00Z' },
          metrics: [{ id: 'spend' }, { id: 'cpc' }],
        },
        {},
      ),
    );
    const find = () => store.withStore((db) => createExportJobs(db, { linkTtlSeconds: 3600 }).find(tenant, exportId));
    await until('the first worker to claim the export', async () => {
      const found = await find();
      return found?.attempts === 1 ? found : undefined;
    });
    first.kill('SIGKILL');
    await once(first, 'exit');
    await locker.query('ROLLBACK');

    const second = await startWorker();
    try {
      const job = await until('the export to finish', async () => {
        const found = await find();
        return found?.status === 'PENDING' ? undefined : found;
      });
      assert.equal(job.status, 'SUCCESS', JSON.stringify(job.warn));
      assert.equal(job.attempts, 2, 'claimed again once the dead worker\'s lease ran out');
      const csv = fs.readFileSync(path.join(store.env.DATA_DIR!, 'exports', exportId, job.files[0]!), 'utf8');
      assert.equal(csv, 'date,platform,currency,spend,cpc\r\n2024-03-01,meta,USD,12.5,3.125000\r\n');
    } finally {
      second.kill('SIGTERM');
      await once(second, 'exit');
    }
  } finally {
    await locker.end();
  }
});
