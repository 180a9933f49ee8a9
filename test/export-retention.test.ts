import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { createExportJobs } from '../src/exports/jobs.js';
import { startRetention, sweepExpiredFiles } from '../src/exports/retention.js';
import { assertErrorEnvelope, finishedExport, hourlySpend, startExportingService, type TestClient } from './helpers.js';

/*
 * Export files are deleted once their links have expired plus EXPORT_FILE_GRACE_SECONDS, by a
 * leased sweep; the result then says so in warn, with no links.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;
const jobs = createExportJobs(service.db, { linkTtlSeconds: service.config.exportLinkTtlSeconds });
const GRACE = 3600;
const sweep = () => sweepExpiredFiles({ jobs, exportsDir: service.exportsDir, graceSeconds: GRACE, leaseSeconds: 30 });

async function finishedSpendExport(client: TestClient): Promise<string> {
  await app.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: { data: [hourlySpend('spring')] } });
  const created = await app.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: client.headers,
    payload: { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-08T00:00:00Z', period_ending_at: '2024-03-09T00:00:00Z' }, metrics: [{ id: 'spend' }] },
  });
  const id = created.json().id as string;
  assert.equal((await finishedExport(app, client, id)).status, 'SUCCESS');
  return id;
}

/** Moves an export's links' expiry `secondsAgo` into the past, as time passing would. */
const expireLinks = (id: string, secondsAgo: number) =>
  service.db.query(`UPDATE exports SET links_expire_at = now() - make_interval(secs => $2) WHERE export_id = $1`, [id, secondsAgo]);

const result = async (client: TestClient, id: string) => {
  const response = await app.inject({ method: 'GET', url: `/v1/exports/data-export/result/${id}`, headers: client.headers });
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
};

test('files are kept through the grace period after their links expire, then deleted; the result says they expired', async () => {
  const client = await service.createClient();
  const [fresh, inGrace, past] = [await finishedSpendExport(client), await finishedSpendExport(client), await finishedSpendExport(client)];
  const link = (await result(client, past)).result[0] as string;
  await expireLinks(inGrace, GRACE - 60);
  await expireLinks(past, GRACE + 60);

  assert.equal(await sweep(), 1);
  assert.equal(fs.existsSync(path.join(service.exportsDir, past)), false);
  for (const id of [fresh, inGrace]) assert.equal(fs.readdirSync(path.join(service.exportsDir, id)).length, 1);

  const expired = await result(client, past);
  assert.equal(expired.status, 'SUCCESS');
  assert.deepEqual(expired.result, []);
  assert.match(expired.warn.files_expired, /^The files of this export were deleted at .+, after their links expired at .+: create the export again$/);
  assert.equal((await result(client, fresh)).result.length, 1);
  // A link handed out before (its expiry moved here by hand, so its signature still holds) finds no file: a 404, not a 500.
  assertErrorEnvelope(await app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search }), 404);

  assert.equal(await sweep(), 0, 'a second sweep finds nothing');
});

test('an export leased by another sweep is passed over until its lease runs out; a sweep that died is taken up again', async () => {
  const client = await service.createClient();
  const id = await finishedSpendExport(client);
  await expireLinks(id, GRACE + 60);
  // Another process's sweep holds it, and died before deleting anything.
  const [held] = await jobs.leaseExpiredFiles(GRACE, 30, 100);
  assert.equal(held!.export_id, id);
  assert.equal(await sweep(), 0);
  assert.equal(fs.existsSync(path.join(service.exportsDir, id)), true);

  await service.db.query(`UPDATE exports SET lease_expires_at = now() - interval '1 second' WHERE export_id = $1`, [id]);
  assert.equal(await sweep(), 1);
  assert.equal(fs.existsSync(path.join(service.exportsDir, id)), false);
  assert.equal(await jobs.filesDeleted(held!), false, "the dead sweep's lease is gone");
  assert.ok((await result(client, id)).warn.files_expired);
});

test('the processes that run exports sweep on their own, every interval, until stopped', async () => {
  const client = await service.createClient();
  const id = await finishedSpendExport(client);
  await expireLinks(id, GRACE + 60);
  const retention = startRetention({ jobs, exportsDir: service.exportsDir, graceSeconds: GRACE, leaseSeconds: 30, intervalMs: 10 });
  try {
    for (const deadline = Date.now() + 10_000; !(await result(client, id)).warn.files_expired; await new Promise((resolve) => setTimeout(resolve, 20))) {
      assert.ok(Date.now() < deadline, 'the files were never swept');
    }
  } finally {
    await retention.stop();
  }
  assert.equal(fs.existsSync(path.join(service.exportsDir, id)), false);
});
