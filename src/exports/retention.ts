import fs from 'node:fs/promises';
import type { Logger } from 'pino';
import { startPeriodic } from '../periodic.js';
import type { ExportJobs } from './jobs.js';
import { exportDir } from './produce.js';

export interface RetentionOptions {
  jobs: ExportJobs;
  exportsDir: string;
  /** How long after its links expire an export's files are kept. */
  graceSeconds: number;
  /** How long a sweep holds the exports it leased: how long one that died holds them up. */
  leaseSeconds: number;
  logger?: Logger;
}

/** Exports a sweep leases at once. */
const SWEEP_BATCH = 100;

/**
 * Deletes the files of every export whose links expired more than the grace period ago, a
 * leased batch at a time, and records it (the result endpoint then says the files expired).
 * The files are deleted before the record: a sweep that dies in between leaves the export to
 * the next, which finds nothing left to delete. Returns how many exports it cleared.
 */
export async function sweepExpiredFiles({ jobs, exportsDir, graceSeconds, leaseSeconds, logger }: RetentionOptions): Promise<number> {
  let cleared = 0;
  for (;;) {
    const expired = await jobs.leaseExpiredFiles(graceSeconds, leaseSeconds, SWEEP_BATCH);
    for (const job of expired) {
      await fs.rm(exportDir(exportsDir, job.export_id), { recursive: true, force: true });
      if (await jobs.filesDeleted(job)) cleared++;
    }
    if (expired.length < SWEEP_BATCH) break;
  }
  if (cleared > 0) logger?.info({ exports: cleared }, 'expired export files deleted');
  return cleared;
}

/** Runs the sweep every `intervalMs` until stopped; a sweep that fails is logged and tried at the next. */
export function startRetention(options: RetentionOptions & { intervalMs: number }): { stop(): Promise<void> } {
  return startPeriodic(
    options.intervalMs,
    () => sweepExpiredFiles(options),
    (error) => options.logger?.error({ err: error }, 'expired export files could not be deleted'),
  );
}
