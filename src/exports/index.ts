import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/index.js';
import { startStatisticsKeeper } from '../db/statistics.js';
import { createExportJobs } from './jobs.js';
import { startKeptTotalsKeeper } from '../attribution/index.js';
import { createExportProducer } from './produce.js';
import { startRetention } from './retention.js';
import { startExportWorker, type ExportWorker } from './worker.js';

/** Rows after which an export continues in another file. */
const ROWS_PER_FILE = 1_000_000;
const POLL_MS = 1_000;
const MAX_ATTEMPTS = 3;
/** How often expired export files are looked for. */
const RETENTION_INTERVAL_MS = 60_000;
/** How often kept daily totals made stale by writes are computed again, and those kept ahead looked at (keeper.ts). */
const KEEPER_INTERVAL_MS = 30_000;
/** How often the tables' statistics are looked at: before the keeper's first pass, which plans on them. */
const STATISTICS_INTERVAL_MS = 15_000;

/**
 * The export worker of a process, as the configuration says, and the background work that the
 * processes that run exports take on: deleting expired export files, computing the kept daily
 * totals that writes made stale and those kept ahead for the dashboard, and keeping the tables'
 * statistics.
 */
export function startExports(config: Config, db: Database, logger?: Logger): ExportWorker {
  const jobs = createExportJobs(db, { linkTtlSeconds: config.exportLinkTtlSeconds });
  const exportsLogger = logger?.child({ component: 'exports' });
  const worker = startExportWorker({
    jobs,
    produce: createExportProducer({ db, exportsDir: config.exportsDir, rowsPerFile: ROWS_PER_FILE, connections: config.exportConnections }),
    concurrency: config.exportConcurrency,
    leaseSeconds: config.exportLeaseSeconds,
    maxRunningPerClient: config.exportMaxRunningPerClient,
    pollMs: POLL_MS,
    maxAttempts: MAX_ATTEMPTS,
    logger: exportsLogger,
  });
  if (config.exportConcurrency === 0) return worker;
  const retention = startRetention({
    jobs,
    exportsDir: config.exportsDir,
    graceSeconds: config.exportFileGraceSeconds,
    leaseSeconds: config.exportLeaseSeconds,
    intervalMs: RETENTION_INTERVAL_MS,
    logger: exportsLogger,
  });
  const keeper = config.keepAheadDays > 0 ? startKeptTotalsKeeper({ db, intervalMs: KEEPER_INTERVAL_MS, keepersDays: config.keepAheadDays, logger: exportsLogger }) : undefined;
  const statistics = startStatisticsKeeper({ db, intervalMs: STATISTICS_INTERVAL_MS, logger });
  return {
    ready: worker.ready,
    stop: async () => {
      await Promise.all([worker.stop(), retention.stop(), keeper?.stop(), statistics.stop()]);
    },
  };
}
