import type { Logger } from 'pino';
import type { ExportJob, ExportJobs } from './jobs.js';

export interface ExportWorkerOptions {
  jobs: ExportJobs;
  /** Produces the files of a job (their names); throws when it cannot. Stops early when `signal` aborts. */
  produce: (job: ExportJob, signal: AbortSignal) => Promise<string[]>;
  /** Jobs run at once by this worker. */
  concurrency: number;
  /** How long a claimed job stays this worker's without a renewal; a dead worker's job waits that long. */
  leaseSeconds: number;
  /** How often an idle worker looks for work. */
  pollMs: number;
  /** Attempts after which a job that keeps failing (or killing its worker) ends as ERROR. */
  maxAttempts: number;
  logger?: Logger;
}

export interface ExportWorker {
  /** Looks for work now rather than at the next poll (a job was just created). */
  wake(): void;
  /** Stops claiming, aborts the jobs in hand and hands their leases back. */
  stop(): Promise<void>;
}

/**
 * Runs export jobs from the database. Any number of workers, in any number of processes, can run
 * against one database: each job is claimed by one of them at a time (see ExportJobs.claim).
 */
export function startExportWorker(options: ExportWorkerOptions): ExportWorker {
  const { jobs, produce, concurrency, leaseSeconds, pollMs, maxAttempts, logger } = options;
  const stopping = new AbortController();
  let wakeUp: () => void = () => {};

  const idle = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, pollMs);
      stopping.signal.addEventListener('abort', done, { once: true });
      wakeUp = done;
      function done() {
        clearTimeout(timer);
        stopping.signal.removeEventListener('abort', done);
        resolve();
      }
    });

  async function run(job: ExportJob) {
    const log = logger?.child({ export_id: job.export_id, attempt: job.attempts });
    if (job.attempts > maxAttempts) {
      await jobs.finish(job, { status: 'ERROR', reason: `The export failed ${maxAttempts} times; it was not tried again.` });
      return;
    }
    const renewal = setInterval(() => void jobs.renew(job, leaseSeconds).catch(() => {}), (leaseSeconds * 1000) / 3);
    try {
      const files = await produce(job, stopping.signal);
      await jobs.finish(job, { status: 'SUCCESS', files });
      log?.info('export finished');
    } catch (error) {
      if (stopping.signal.aborted) {
        await jobs.release(job);
        return;
      }
      log?.warn({ err: error }, 'export attempt failed');
      // Left leased: the lease running out is the pause before the next attempt.
      if (job.attempts >= maxAttempts) await jobs.finish(job, { status: 'ERROR', reason: (error as Error).message });
    } finally {
      clearInterval(renewal);
    }
  }

  async function slot() {
    while (!stopping.signal.aborted) {
      try {
        const job = await jobs.claim(leaseSeconds);
        if (job) await run(job);
        else await idle();
      } catch (error) {
        // The database is unreachable, say: wait, then try again.
        logger?.error({ err: error }, 'export worker could not claim a job');
        await idle();
      }
    }
  }

  const slots = Array.from({ length: concurrency }, slot);
  return {
    wake: () => wakeUp(),
    async stop() {
      stopping.abort();
      await Promise.all(slots);
    },
  };
}
