import type { Logger } from 'pino';
import { sqlstateOf } from '../db/errors.js';
import type { ExportJob, ExportJobs } from './jobs.js';

/** What an attempt produced: file names and warnings, and files to publish if it wins, or discard. */
export interface ExportOutput {
  files: string[];
  warn?: object;
  publish?: () => Promise<void>;
  discard?: () => Promise<void>;
}

export interface ExportWorkerOptions {
  jobs: ExportJobs;
  /** Produces the files of a job; throws when it cannot. Stops early when `signal` aborts. */
  produce: (job: ExportJob, signal: AbortSignal) => Promise<ExportOutput>;
  /** Jobs run at once by this worker. */
  concurrency: number;
  /** How long a claimed job stays this worker's without a renewal; a dead worker's job waits that long. */
  leaseSeconds: number;
  /** Jobs of one client running at once across every worker: no claim takes one more. */
  maxRunningPerClient: number;
  /** How often an idle worker looks for work, besides when a job is created (see ExportJobs.onCreated). */
  pollMs: number;
  /** Attempts after which a job that keeps failing (or killing its worker) ends as ERROR. */
  maxAttempts: number;
  logger?: Logger;
}

export interface ExportWorker {
  /** Resolves once the worker listens for new jobs (or, the database unreachable, keeps trying in the background). */
  ready: Promise<void>;
  /** Stops claiming, aborts the jobs in hand and hands their leases back. */
  stop(): Promise<void>;
}

/**
 * What a client is told of a failed attempt. Errors of the database or the file system can
 * quote rows and paths, so they are told by code; errors of our own by their message.
 */
function publicReason(error: unknown): string {
  const sqlstate = sqlstateOf(error);
  if (sqlstate) return `The database could not compute the export (error ${sqlstate})`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return `The export file could not be written (${code})`;
  return error instanceof Error ? error.message : 'The export could not be computed';
}

const MIN_RENEWAL_MS = 1000;

/**
 * Runs export jobs from the database. Any number of workers, in any number of processes, can run
 * against one database: each job is claimed by one of them at a time (see ExportJobs.claim), and
 * only the holder of its current lease can finish it.
 */
export function startExportWorker(options: ExportWorkerOptions): ExportWorker {
  const { jobs, produce, concurrency, leaseSeconds, maxRunningPerClient, pollMs, maxAttempts, logger } = options;
  const stopping = new AbortController();
  const wakers = new Set<() => void>();
  // Jobs this process is running. Never claimed again here, even when a lease could not be
  // renewed in time (the embedded store runs one statement at a time, an export's among them).
  const running = new Set<string>();

  // Looks for work now rather than at the next poll: a job was just created. A wake while every
  // slot is busy (claiming, say, before the new job was committed) is kept for the next slot to
  // go idle, so that the job does not wait for the poll.
  let wokenWhileBusy = false;
  const wake = () => {
    const [waker] = wakers;
    if (waker) waker();
    else wokenWhileBusy = true;
  };

  const idle = () =>
    new Promise<void>((resolve) => {
      if (wokenWhileBusy) {
        wokenWhileBusy = false;
        return resolve();
      }
      const timer = setTimeout(done, pollMs);
      stopping.signal.addEventListener('abort', done, { once: true });
      wakers.add(done);
      function done() {
        clearTimeout(timer);
        stopping.signal.removeEventListener('abort', done);
        wakers.delete(done);
        resolve();
      }
    });

  async function run(job: ExportJob) {
    const log = logger?.child({ export_id: job.export_id, attempt: job.attempts });
    if (job.attempts > maxAttempts) {
      await jobs.finish(job, { status: 'ERROR', reason: `The export failed ${maxAttempts} times; it was not tried again.` });
      return;
    }
    const abort = new AbortController();
    const stop = () => abort.abort();
    stopping.signal.addEventListener('abort', stop, { once: true });
    const renewal = setInterval(async () => {
      const held = await jobs.renew(job, leaseSeconds).catch((error: unknown) => {
        log?.warn({ err: error }, 'export lease could not be renewed');
        return true; // not known to be lost: keep going
      });
      if (!held) abort.abort();
    }, Math.max(MIN_RENEWAL_MS, (leaseSeconds * 1000) / 3));
    running.add(job.export_id);
    try {
      const { files, warn, publish, discard } = await produce(job, abort.signal);
      const won = await jobs.finish(job, { status: 'SUCCESS', files, warn }, publish).catch(async (error: unknown) => {
        await discard?.().catch(() => {});
        throw error;
      });
      if (won) log?.info('export finished');
      else {
        await discard?.();
        log?.warn('export finished after its lease was lost; the result of the lease holder stands');
      }
    } catch (error) {
      if (stopping.signal.aborted) {
        await jobs.release(job);
        return;
      }
      log?.warn({ err: error }, 'export attempt failed');
      // Left leased: the lease running out is the pause before the next attempt.
      if (job.attempts >= maxAttempts) await jobs.finish(job, { status: 'ERROR', reason: publicReason(error) });
    } finally {
      clearInterval(renewal);
      stopping.signal.removeEventListener('abort', stop);
      running.delete(job.export_id);
    }
  }

  async function slot() {
    while (!stopping.signal.aborted) {
      try {
        const job = await jobs.claim(leaseSeconds, maxRunningPerClient, [...running]);
        // A claim that was under way when the worker stopped: its job goes back untouched, as
        // the run's abort listener would never be called on a signal already aborted.
        if (job && stopping.signal.aborted) await jobs.release(job);
        else if (job) await run(job);
        else await idle();
      } catch (error) {
        // The database is unreachable, say: wait, then try again.
        logger?.error({ err: error }, 'export worker could not claim a job');
        await idle();
      }
    }
  }

  const slots = Array.from({ length: concurrency }, slot);
  const listening = concurrency > 0 ? jobs.onCreated(wake) : undefined;
  return {
    ready: listening?.then(() => {}) ?? Promise.resolve(),
    async stop() {
      stopping.abort();
      await Promise.all([...slots, listening?.then((listener) => listener.close())]);
    },
  };
}
