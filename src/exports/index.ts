import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/index.js';
import { createExportJobs } from './jobs.js';
import { createExportProducer } from './produce.js';
import { startExportWorker } from './worker.js';

/** Rows after which an export continues in another file. */
const ROWS_PER_FILE = 1_000_000;
const POLL_MS = 1_000;
const MAX_ATTEMPTS = 3;

/** The export worker of a process, as the configuration says. */
export function startExports(config: Config, db: Database, logger?: Logger) {
  return startExportWorker({
    jobs: createExportJobs(db, { linkTtlSeconds: config.exportLinkTtlSeconds }),
    produce: createExportProducer({ db, exportsDir: config.exportsDir, rowsPerFile: ROWS_PER_FILE }),
    concurrency: config.exportConcurrency,
    leaseSeconds: config.exportLeaseSeconds,
    maxRunningPerClient: config.exportMaxRunningPerClient,
    pollMs: POLL_MS,
    maxAttempts: MAX_ATTEMPTS,
    logger: logger?.child({ component: 'exports' }),
  });
}
