import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadConfig, type Config } from './config.js';
import { openMigratedDatabase } from './db/index.js';
import { analyzeGrownTables } from './db/statistics.js';
import { startExports } from './exports/index.js';
import { createLogger } from './logger.js';
import { createRateLimits } from './rate-limit/limits.js';

export const SHUTDOWN_GRACE_MS = 10_000;

/** Runs export jobs only, with no HTTP: for export capacity apart from the API processes. */
export async function startWorker(config: Config = loadConfig()) {
  const logger = createLogger(config.logLevel);
  const { db } = await openMigratedDatabase(config);
  const exports = startExports({ ...config, exportConcurrency: Math.max(config.exportConcurrency, 1) }, db, logger);
  await exports.ready;
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'stopping after an error');
    else logger.info({ signal }, 'stopping');
    await exports.stop();
    await db.close();
  });
  logger.info({ store: db.kind }, 'export worker is ready');
}

/**
 * Starts the production API on PORT and the UAT API on UAT_PORT, one process, one database.
 * SIGTERM/SIGINT stop accepting connections, let in-flight requests finish, then close the store.
 * `ignoreSignals` lists signals that should not start that stop: a cluster worker stops when its
 * primary calls `stop`.
 */
export async function startServer(config: Config = loadConfig(), { ignoreSignals = [] }: { ignoreSignals?: ('SIGINT' | 'SIGTERM')[] } = {}) {
  const logger = createLogger(config.logLevel);
  const { db, applied } = await openMigratedDatabase(config);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  // Tables another process loaded meanwhile (an import, the demo) are planned on their data from the first request.
  await analyzeGrownTables(db);

  const exports = startExports(config, db, logger);
  const rateLimits = createRateLimits(config, logger);
  await rateLimits.ready();
  const production = await buildApp({ config, db, environment: 'production', logger, rateLimits });
  const uat = await buildApp({ config, db, environment: 'uat', logger, rateLimits });

  let relayedSignal: NodeJS.Signals | undefined;
  const grace = closeWithGrace({ delay: SHUTDOWN_GRACE_MS, skip: ignoreSignals }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal: signal ?? relayedSignal }, 'shutting down');
    await Promise.all([production.close(), uat.close(), exports.stop()]);
    await Promise.all([rateLimits.close(), db.close()]);
  });

  if (['0.0.0.0', '[::]'].includes(new URL(config.publicUrl).hostname)) {
    logger.warn({ publicUrl: config.publicUrl }, 'export download links name a wildcard address: set PUBLIC_URL to the address clients reach');
  }
  await production.listen({ host: config.host, port: config.port });
  await uat.listen({ host: config.host, port: config.uatPort });
  logger.info(
    { production: `http://${config.host}:${config.port}`, uat: `http://${config.host}:${config.uatPort}`, store: db.kind },
    'tributary is ready',
  );
  return {
    /** Stops gracefully, as `signal` would have. */
    stop(signal: NodeJS.Signals) {
      relayedSignal = signal;
      grace.close();
    },
  };
}
