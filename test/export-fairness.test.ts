import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, test, type TestContext } from 'node:test';
import type { Environment, Tenant } from '../src/auth/tenant.js';
import { createExportJobs, type ExportJob } from '../src/exports/jobs.js';
import { createExportProducer, exportDir } from '../src/exports/produce.js';
import { startExportWorker } from '../src/exports/worker.js';
import { startService, tempDir, type TestClient } from './helpers.js';

// One client's exports cannot hold up another's: claims are fair across clients, and no client
// has more than EXPORT_MAX_RUNNING_PER_CLIENT exports running (src/exports/jobs.ts, claim).

const exportsDir = tempDir();
const service = await startService({ EXPORTS_DIR: exportsDir });
after(async () => {
  await service.close();
  fs.rmSync(exportsDir, { recursive: true, force: true });
});
const jobs = createExportJobs(service.db, { linkTtlSeconds: service.config.exportLinkTtlSeconds });
/** The default setting. */
const MAX_RUNNING = service.config.exportMaxRunningPerClient;

/** A new client, deleted with its exports when the test ends: every claim looks at every client's jobs. */
async function newClient(t: TestContext): Promise<TestClient> {
  const client = await service.createClient();
  t.after(() => service.db.query('DELETE FROM clients WHERE client_id = $1', [client.client_id]));
  return client;
}

const tenantOf = (client: TestClient, environment: Environment = 'production'): Tenant => ({ clientId: client.client_id, environment, dryRun: false });

async function createJobs(tenant: Tenant, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await jobs.create(tenant, randomUUID(), { n: i }, {})).export_id);
  return ids;
}

/** Jobs of these clients whose lease has not run out, per client. */
async function runningPerClient(clients: TestClient[]): Promise<Record<string, number>> {
  const rows = await service.db.query<{ client_id: string; running: number }>(
    `SELECT client_id, count(*)::int AS running FROM exports
      WHERE client_id = ANY ($1::uuid[]) AND status = 'PENDING' AND lease_expires_at >= now()
      GROUP BY client_id`,
    [clients.map((client) => client.client_id)],
  );
  return Object.fromEntries(clients.map((client) => [client.client_id, rows.find((row) => row.client_id === client.client_id)?.running ?? 0]));
}

/** Waits until the database clock is past the client's last finished export. */
async function clockPast(client: TestClient) {
  const moved = async () => {
    const [row] = await service.db.query<{ past: boolean }>(
      'SELECT now() > max(finished_at) AS past FROM exports WHERE client_id = $1',
      [client.client_id],
    );
    return row!.past;
  };
  await until('the database clock to move', moved);
}

const countBy = (claimed: ExportJob[], client: TestClient) => claimed.filter((job) => job.client_id === client.client_id).length;

const hour = (n: number) => new Date(Date.UTC(2024, 2, 1) + n * 3_600_000).toISOString();
const spendRecord = (at: string, campaign: string) => ({
  hour_start_iso: at,
  platform_name: 'meta',
  campaign_id: campaign,
  campaign_name: `Campaign ${campaign}`,
  spend: 1.5,
  spend_currency: 'USD',
  impressions: 100,
  clicks: 2,
});

async function postSpend(client: TestClient, data: object[]) {
  const response = await service.production.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: { data } });
  assert.equal(response.statusCode, 201, response.body);
}

/** Every hour of March 2024 for each campaign: a large export, one row each. */
const CAMPAIGNS = 4;
const LARGE_ROWS = 31 * 24 * CAMPAIGNS;
const MARCH = { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-04-01T00:00:00Z' } };
const LARGE = { ...MARCH, level: 'campaign', time_granularity: 'HOURLY', metrics: [{ id: 'spend' }, { id: 'impressions' }], export_file_name: 'large' };
const SMALL = { ...MARCH, level: 'platform', time_granularity: 'DAILY', metrics: [{ id: 'spend' }], export_file_name: 'small' };

async function createExport(client: TestClient, body: object): Promise<string> {
  const response = await service.production.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id;
}

/** Polls (bounded) until `check` holds. */
async function until(what: string, check: () => Promise<boolean>) {
  for (const deadline = Date.now() + 60_000; !(await check()); await new Promise((resolve) => setTimeout(resolve, 10))) {
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
  }
}

for (const concurrency of [1, 2]) {
  test(`with one client's five large exports queued, another's small export waits only for those already running (a worker of ${concurrency})`, async (t) => {
    const a = await newClient(t);
    const b = await newClient(t);
    const large = Array.from({ length: 31 * 24 }, (_, n) => Array.from({ length: CAMPAIGNS }, (_, c) => spendRecord(hour(n), `c${c}`))).flat();
    for (let i = 0; i < large.length; i += 1000) await postSpend(a, large.slice(i, i + 1000));
    await postSpend(b, [spendRecord(hour(30), 'b')]);

    // A's exports are large, so those the worker takes first are still running when B's
    // arrives: they wait for it to be queued, then run for real.
    let bQueued!: () => void;
    const bArrived = new Promise<void>((resolve) => (bQueued = resolve));
    const produce = createExportProducer({ db: service.db, exportsDir, rowsPerFile: 1_000_000, connections: 2 });
    // What fairness decides is the order of claims. The order exports finish in also depends on
    // the store: the embedded one has a single connection, so B's transaction may wait for that
    // of an A claimed after it.
    const claimed: string[] = [];
    let finished = 0;
    const worker = startExportWorker({
      jobs: {
        ...jobs,
        claim: async (...args) => {
          const job = await jobs.claim(...args);
          if (job) claimed.push(job.export_id);
          return job;
        },
        finish: async (...args) => {
          const won = await jobs.finish(...args);
          if (won) finished++;
          return won;
        },
      },
      produce: async (job, signal) => {
        await bArrived;
        return produce(job, signal);
      },
      concurrency,
      leaseSeconds: 30,
      maxRunningPerClient: MAX_RUNNING,
      pollMs: 10,
      maxAttempts: 1,
    });
    t.after(() => {
      bQueued(); // should the test fail first: the worker's jobs must not wait for ever
      return worker.stop();
    });

    const aIds: string[] = [];
    for (let n = 0; n < 5; n++) aIds.push(await createExport(a, LARGE));
    const running = Math.min(concurrency, MAX_RUNNING);
    await until(`the worker to run ${running} of A's exports`, async () => (await runningPerClient([a]))[a.client_id] === running);
    const bId = await createExport(b, SMALL);
    bQueued();

    await until('every export to finish', async () => finished === aIds.length + 1);
    for (const id of [...aIds, bId]) {
      const job = await jobs.find(tenantOf(id === bId ? b : a), id);
      assert.equal(job?.status, 'SUCCESS', JSON.stringify(job?.warn));
    }
    assert.equal(claimed.length, aIds.length + 1, 'each export claimed once');
    assert.equal(claimed.indexOf(bId), running, `B's export was claimed after ${claimed.indexOf(bId)} of A's (running when it arrived: ${running})`);

    const rowsOf = (id: string, file: string) => fs.readFileSync(path.join(exportDir(exportsDir, id), file), 'utf8').split('\r\n').length - 2;
    assert.equal(rowsOf(bId, 'small.csv'), 1);
    for (const id of aIds) assert.equal(rowsOf(id, 'large.csv'), LARGE_ROWS);
  });
}

test('a claim prefers the client with fewer running exports, then the one whose last export finished longest ago, then the oldest job', async (t) => {
  const a = await newClient(t);
  const b = await newClient(t);
  const [a1, a2] = await createJobs(tenantOf(a), 2);
  const [b1, b2] = await createJobs(tenantOf(b), 2);
  const claim = () => jobs.claim(30, MAX_RUNNING);

  const first = await claim();
  assert.equal(first?.export_id, a1, 'neither has any running or finished: the oldest job');
  const second = await claim();
  assert.equal(second?.export_id, b1, 'B has fewer running, though A has an older job');
  await jobs.finish(second!, { status: 'SUCCESS', files: [] });
  await clockPast(b); // two finishes an instant apart
  await jobs.finish(first!, { status: 'SUCCESS', files: [] });
  const third = await claim();
  assert.equal(third?.export_id, b2, "B's last export finished before A's, though A has an older job");
  const fourth = await claim();
  assert.equal(fourth?.export_id, a2);
  assert.equal(await claim(), undefined);
});

test('many claims at once never give one client more than EXPORT_MAX_RUNNING_PER_CLIENT running exports', async (t) => {
  const clients = [await newClient(t), await newClient(t), await newClient(t)];
  for (const client of clients) await createJobs(tenantOf(client), 6);
  const held: ExportJob[] = [];
  for (let round = 0; round < 3; round++) {
    const claims = (await Promise.all(Array.from({ length: 16 }, () => jobs.claim(30, MAX_RUNNING)))).filter((job) => job !== undefined);
    held.push(...claims);
    assert.equal(new Set(held.map((job) => job.export_id)).size, held.length, 'no job claimed twice');
    assert.deepEqual(
      await runningPerClient(clients),
      Object.fromEntries(clients.map((client) => [client.client_id, MAX_RUNNING])),
      `round ${round}: each client has the maximum running, no more (claimed: ${JSON.stringify(clients.map((client) => countBy(claims, client)))})`,
    );
    // One export of each client finishes: the next round's claims may take one more of each.
    for (const client of clients) {
      const done = held.find((job) => job.client_id === client.client_id)!;
      held.splice(held.indexOf(done), 1);
      assert.equal(await jobs.finish(done, { status: 'SUCCESS', files: [] }), true);
    }
  }
});

test("a client's production and UAT exports share its allowance", async (t) => {
  const client = await newClient(t);
  await createJobs(tenantOf(client, 'production'), 1);
  await createJobs(tenantOf(client, 'uat'), 1);
  await createJobs(tenantOf(client, 'production'), 1);
  const claimed = [];
  for (let i = 0; i < 3; i++) claimed.push(await jobs.claim(30, 2));
  assert.deepEqual(claimed.map((job) => job?.environment), ['production', 'uat', undefined]);
});

test('an expired lease no longer counts as running', async (t) => {
  const client = await newClient(t);
  const [, second] = await createJobs(tenantOf(client), 3);
  assert.ok(await jobs.claim(30, 2));
  const lapsed = await jobs.claim(0, 2); // its worker died: the lease is over at once
  assert.equal(lapsed?.export_id, second);
  // Claims are refused while both leases count; once the database clock has moved past the
  // lapsed one, the client has one running, and its oldest free job is the lapsed one.
  let again = await jobs.claim(30, 2);
  for (let tries = 0; !again && tries < 100; tries++) again = await jobs.claim(30, 2);
  assert.equal(again?.export_id, second, 'claimed again: only the live lease counted');
  assert.equal(again?.attempts, 2);
  assert.equal(await jobs.claim(30, 2), undefined, 'two live leases: the third job waits');
});
