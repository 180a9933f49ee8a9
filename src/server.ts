import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadConfig, type Config } from './config.js';
import { openDatabase } from './db/index.js';
import { migrate } from './db/migrate.js';
import { createLogger } from './logger.js';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Starts the production API on PORT and the UAT API on UAT_PORT, one process, one database.
 * SIGTERM/SIGINT stop accepting connections, let in-flight requests finish, then close the store.
 */
export async function startServer(config: Config = loadConfig()) {
  const logger = createLogger(config.logLevel);
  const db = await openDatabase(config);
  const { applied } = await migrate(db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const production = await buildApp({ config, db, environment: 'production', logger });
  const uat = await buildApp({ config, db, environment: 'uat', logger });

  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    await Promise.all([production.close(), uat.close()]);
    await db.close();
  });

  await production.listen({ host: config.host, port: config.port });
  await uat.listen({ host: config.host, port: config.uatPort });
  logger.info(
    { production: `http://${config.host}:${config.port}`, uat: `http://${config.host}:${config.uatPort}`, store: db.kind },
    'tributary is ready',
  );
}
