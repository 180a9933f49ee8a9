import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import type { Tenant } from '../src/auth/tenant.js';
import { createClientRepository } from '../src/clients/repository.js';
import { createExportJobs, type ExportJob } from '../src/exports/jobs.js';
import { createExportProducer, exportDir } from '../src/exports/produce.js';
import { startExportWorker, type ExportWorkerOptions } from '../src/exports/worker.js';
import { createTestDatabase, tempDir } from './helpers.js';

const store = await createTestDatabase();
after(() => store.drop());
const jobs = createExportJobs(store.db, { linkTtlSeconds: 3600 });
/** Room for every job a test here has running at once: the per-client limit has tests of its own (export-fairness). */
const MAX_RUNNING = 10;
const claim = (leaseSeconds: number) => jobs.claim(leaseSeconds, MAX_RUNNING);

async function newTenant(): Promise<Tenant> {
  const client = await createClientRepository(store.db).create('exports');
  return { clientId: client.client_id, environment: 'production', dryRun: false };
}

async function createJobs(tenant: Tenant, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await jobs.create(tenant, randomUUID(), { n: i }, {})).export_id);
  return ids;
}

/** Waits (polling the store, bounded) until every job of `ids` has finished. */
async function finished(tenant: Tenant, ids: string[]): Promise<ExportJob[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await Promise.all(ids.map((id) => jobs.find(tenant, id)));
    if (found.every((job) => job && job.status !== 'PENDING')) return found as ExportJob[];
    if (Date.now() > deadline) throw new Error(`jobs still pending: ${JSON.stringify(found.map((job) => job?.status))}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Claims a job whose lease of 0 s was just taken: it has run out once the database clock has
 * moved past the first claim's instant, which on a fast store can take a few tries.
 */
async function claimAfterExpiry(): Promise<ExportJob | undefined> {
  let job = await claim(30);
  for (let tries = 0; !job && tries < 100; tries++) job = await claim(30);
  return job;
}

function worker(overrides: Partial<ExportWorkerOptions> & Pick<ExportWorkerOptions, 'produce'>) {
  return startExportWorker({ jobs, concurrency: 2, leaseSeconds: 30, maxRunningPerClient: MAX_RUNNING, pollMs: 10, maxAttempts: 3, ...overrides });
}

test('claims take the oldest free job, each job by one claimant only', async () => {
  const tenant = await newTenant();
  const ids = await createJobs(tenant, 3);
  const claims = await Promise.all([claim(30), claim(30), claim(30), claim(30)]);
  const claimed = claims.filter((job) => job && job.client_id === tenant.clientId).map((job) => job!.export_id);
  assert.deepEqual([...claimed].sort(), [...ids].sort(), 'every job claimed once, none twice');
  for (const job of claims.filter(Boolean)) await jobs.finish(job!, { status: 'SUCCESS', files: [] });
});

test('a job whose lease ran out (its worker died) is claimed again; a finished job is finished once', async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  const first = await claim(0); // a lease that is over at once: the worker "died"
  assert.equal(first?.export_id, id);
  const second = await claimAfterExpiry();
  assert.equal(second?.export_id, id);
  assert.equal(second?.attempts, 2);
  assert.equal(await claim(30), undefined, 'a live lease is not taken');
  assert.equal(await jobs.finish(second!, { status: 'SUCCESS', files: ['a.csv'] }), true);
  assert.equal(await jobs.finish(first!, { status: 'ERROR', reason: 'late' }), false, 'the dead worker cannot finish it again');
  const job = await jobs.find(tenant, id!);
  assert.equal(job?.status, 'SUCCESS');
  assert.deepEqual(job?.files, ['a.csv']);
  assert.match(String(job?.finished_at), /^\d{4}-\d{2}-\d{2}T/);
});

test('two workers run every job exactly once', async () => {
  const tenant = await newTenant();
  const ids = await createJobs(tenant, 20);
  const runs: string[] = [];
  const produce = async (job: ExportJob) => {
    runs.push(job.export_id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { files: [`${job.export_id}.csv`] };
  };
  const workers = [worker({ produce }), worker({ produce })];
  const done = await finished(tenant, ids);
  await Promise.all(workers.map((w) => w.stop()));
  assert.deepEqual(done.map((job) => job.status), ids.map(() => 'SUCCESS'));
  assert.deepEqual([...runs].sort(), [...ids].sort());
});

/** How long a worker in the tests below waits between polls: far longer than any of them may take. */
const LONG_POLL_MS = 600_000;
/** What "at once" allows a busy test machine: a small fraction of the poll interval. */
const AT_ONCE_MS = 10_000;

/** A worker that only looks for work when told of a job, and resolves `pickedUp(id)` when it runs job `id`. */
async function listeningWorker() {
  const seen = new Map<string, () => void>();
  const waiting = new Map<string, Promise<void>>();
  const pickedUp = (id: string) => {
    if (!waiting.has(id)) waiting.set(id, new Promise<void>((resolve) => seen.set(id, resolve)));
    return waiting.get(id)!;
  };
  const listening = worker({
    concurrency: 1,
    pollMs: LONG_POLL_MS,
    produce: async (job) => {
      void pickedUp(job.export_id);
      seen.get(job.export_id)!();
      return { files: [] };
    },
  });
  await listening.ready;
  return { pickedUp, stop: () => listening.stop() };
}

async function createdAndPickedUp(tenant: Tenant, pickedUp: (id: string) => Promise<void>) {
  const started = performance.now();
  const [id] = await createJobs(tenant, 1);
  await Promise.race([
    pickedUp(id!),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`not picked up in ${AT_ONCE_MS} ms`)), AT_ONCE_MS).unref()),
  ]);
  return performance.now() - started;
}

test('a job created is picked up at once by a worker listening for it, long before its next poll', async () => {
  const tenant = await newTenant();
  const { pickedUp, stop } = await listeningWorker();
  try {
    for (let n = 0; n < 3; n++) await createdAndPickedUp(tenant, pickedUp);
  } finally {
    await stop();
  }
});

test('a worker whose listening connection is cut listens again, and picks up a job created meanwhile at once (PostgreSQL)', { skip: !store.url && 'the embedded store has no connections' }, async () => {
  const tenant = await newTenant();
  const { pickedUp, stop } = await listeningWorker();
  const listeners = () =>
    store.db.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN export_created' AND pid <> pg_backend_pid()",
    );
  try {
    const [listener, ...others] = await listeners();
    assert.ok(listener && others.length === 0, 'one listening connection');
    // Typed: Citus adds pg_terminate_backend(bigint), for its cluster-wide process ids.
    await store.db.query('SELECT pg_terminate_backend($1::int)', [listener.pid]);
    await createdAndPickedUp(tenant, pickedUp);
    // Under load the new connection was seen to show in pg_stat_activity only after the job was picked up.
    const deadline = performance.now() + AT_ONCE_MS;
    let again = (await listeners())[0];
    while (!(again && again.pid !== listener.pid) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = (await listeners())[0];
    }
    assert.ok(again && again.pid !== listener.pid, 'listening on a new connection');
    await createdAndPickedUp(tenant, pickedUp);
  } finally {
    await stop();
  }
  assert.deepEqual(await listeners(), [], 'a stopped worker listens no more');
});

test('a job whose worker died mid-way is completed by another worker', async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  await claim(0); // claimed, then the worker vanished without finishing
  const survivor = worker({ produce: async () => ({ files: ['out.csv'] }) });
  const [job] = await finished(tenant, [id!]);
  await survivor.stop();
  assert.equal(job!.status, 'SUCCESS');
  assert.equal(job!.attempts, 2);
});

test('a job that keeps failing ends as ERROR with the reason in warn, after the last attempt', async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  let attempts = 0;
  const failing = worker({
    concurrency: 1,
    leaseSeconds: 0, // no pause between attempts
    produce: async () => {
      attempts++;
      throw new Error('the disk is full');
    },
  });
  const [job] = await finished(tenant, [id!]);
  await failing.stop();
  assert.equal(job!.status, 'ERROR');
  assert.deepEqual(job!.warn, { error: 'the disk is full' });
  assert.equal(attempts, 3);
  assert.deepEqual(job!.files, []);
});

/** Asserts a stopped worker handed the job back untouched, then finishes it: another worker can take it at once. */
async function assertHandedBack(tenant: Tenant, id: string) {
  const job = await jobs.find(tenant, id);
  assert.equal(job?.status, 'PENDING');
  assert.equal(job?.attempts, 0);
  const again = await claim(30);
  assert.equal(again?.export_id, id, 'another worker can take it at once');
  await jobs.finish(again!, { status: 'SUCCESS', files: [] });
}

test('stopping a worker hands the jobs in hand back, untouched', async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const stopped = worker({
    produce: (_job, signal) =>
      new Promise((_, reject) => {
        started();
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      }),
  });
  await running;
  await stopped.stop();
  await assertHandedBack(tenant, id!);
});

test('a job claimed while the worker was stopping is handed back, untouched, and the worker stops', { timeout: 20_000 }, async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  let claiming!: () => void;
  const inClaim = new Promise<void>((resolve) => (claiming = resolve));
  let finishClaim!: () => void;
  const claimMayFinish = new Promise<void>((resolve) => (finishClaim = resolve));
  const stopped = worker({
    jobs: {
      ...jobs,
      claim: async (...args) => {
        claiming();
        await claimMayFinish;
        return jobs.claim(...args);
      },
    },
    concurrency: 1,
    produce: (_job, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
  });
  await inClaim;
  const stopping = stopped.stop();
  finishClaim();
  await stopping;
  await assertHandedBack(tenant, id!);
});

test('a worker that lost its lease stops its run and cannot finish the job', async () => {
  const tenant = await newTenant();
  const [id] = await createJobs(tenant, 1);
  let aborted = false;
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const slow = worker({
    leaseSeconds: 0, // over at once: renewals find it taken
    produce: (_job, signal) =>
      new Promise((_, reject) => {
        started();
        signal.addEventListener('abort', () => {
          aborted = true;
          reject(new Error('lease lost'));
        });
      }),
  });
  await running;
  // Another worker takes the job whose lease ran out (polling: a renewal in flight locks the row,
  // and a claim skips locked rows).
  const deadline = Date.now() + 10_000;
  let taken = await claim(30);
  while (!taken && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    taken = await claim(30);
  }
  assert.equal(taken?.export_id, id);
  while (!aborted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  await slow.stop();
  assert.equal(aborted, true, 'the first run was stopped when its renewal found the lease taken');
  assert.equal(await jobs.finish(taken!, { status: 'SUCCESS', files: ['x.csv'] }), true, 'the new holder finishes it');
  assert.equal((await jobs.find(tenant, id!))?.status, 'SUCCESS');
});


test('an attempt that lost its lease never writes over the files of the attempt that finished', async () => {
  const tenant = await newTenant();
  const spendOf = (amount: number) =>
    store.db.query(
      `INSERT INTO spend_hourly (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id,
                                 campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks, created_at, updated_at)
       VALUES ($1, 'production', '', '2024-03-01T10:00:00Z', 'meta', 'c1', '', '', 'Campaign', '', '', $2, 'USD', 100, 4, now(), now())
       ON CONFLICT (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id) DO UPDATE SET spend = $2`,
      [tenant.clientId, amount],
    );
  await spendOf(12.5);
  const exportsDir = tempDir();
  try {
    const produce = createExportProducer({ db: store.db, exportsDir, rowsPerFile: 1000, connections: 2 });
    const exportId = randomUUID();
    const request = {
      level: 'platform',
      time_granularity: 'DAILY',
      period_type: 'FIXED',
      period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-02T00:00:00Z' },
      metrics: [{ id: 'spend' }],
      export_file_name: 'spend',
    };
    await jobs.create(tenant, exportId, request, {});
    const formerHolder = await claim(0); // its lease is over at once: it does not know yet
    const holder = await claimAfterExpiry();
    assert.equal(holder?.export_id, exportId);
    assert.equal(formerHolder?.export_id, exportId);

    // What a worker killed in the middle of an earlier attempt left behind.
    fs.mkdirSync(path.join(exportsDir, '.attempts', `${exportId}-crashed`), { recursive: true });
    const standing = await produce(holder!, new AbortController().signal);
    assert.equal(await jobs.finish(holder!, { status: 'SUCCESS', files: standing.files }, standing.publish), true);
    assert.deepEqual(fs.readdirSync(path.join(exportsDir, '.attempts')), [], 'publishing removes what earlier attempts left');
    const published = fs.readFileSync(path.join(exportDir(exportsDir, exportId), 'spend.csv'), 'utf8');
    assert.match(published, /12\.5/);

    // The former holder computes later, over other data, and tries to finish.
    await spendOf(99);
    const late = await produce(formerHolder!, new AbortController().signal);
    assert.equal(await jobs.finish(formerHolder!, { status: 'SUCCESS', files: late.files }, late.publish), false);
    await late.discard!();

    assert.equal(fs.readFileSync(path.join(exportDir(exportsDir, exportId), 'spend.csv'), 'utf8'), published);
    assert.deepEqual(fs.readdirSync(path.join(exportsDir, '.attempts')), [], 'no attempt left behind');
  } finally {
    fs.rmSync(exportsDir, { recursive: true, force: true });
  }
});
