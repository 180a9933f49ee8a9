import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config.js';
import { openDatabase } from './db/index.js';
import { migrate } from './db/migrate.js';
import { createLogger } from './logger.js';
import { SHUTDOWN_GRACE_MS, startServer } from './server.js';

const READY = 'tributary:ready';
const RESTART_DELAY_MS = 1_000;

/**
 * `tributary serve`: the APIs in this process, or in `processes` cluster workers sharing its
 * ports (node:cluster hands each new connection to one of them), supervised by this process.
 */
export async function serve(config: Config, processes: number): Promise<void> {
  if (cluster.isWorker) {
    // A worker stops when its primary tells it to (SIGTERM). A terminal's Ctrl-C reaches the whole
    // process group, and a second signal would cut the worker's graceful stop short.
    process.on('SIGINT', () => {});
    await startServer(config, { ignoreSignals: ['SIGINT'] });
    process.send!(READY);
    return;
  }
  if (processes === 1) return startServer(config);
  if (!config.databaseUrl) {
    throw new ConfigError('several API processes need DATABASE_URL: the embedded store can be open in one process only');
  }
  await superviseApiProcesses(config, processes);
}

/**
 * Applies the migrations once, then forks the API processes. One that dies after it was ready
 * is replaced; one that dies before (a port in use, a setting the database refuses) stops them
 * all, since its replacement would meet the same cause. SIGTERM or SIGINT stops each worker
 * gracefully, then this process.
 */
async function superviseApiProcesses(config: Config, processes: number): Promise<void> {
  const logger = createLogger(config.logLevel).child({ role: 'primary' });
  const db = await openDatabase({ ...config, databasePoolSize: 1 });
  try {
    const { applied } = await migrate(db);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  } finally {
    await db.close();
  }
  if (!config.redisUrl) {
    logger.warn({ processes }, 'without REDIS_URL each API process counts rate limits alone: together they allow that many times each limit');
  }

  const ready = new Set<Worker>();
  let stopping = false;
  let exitCode = 0;

  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message) => {
      if (message !== READY) return;
      ready.add(worker);
      if (ready.size === processes) logger.info({ processes }, 'all API processes are ready');
    });
  };

  const stop = (code: number) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(exitCode);
    for (const worker of workers) worker?.process.kill('SIGTERM');
    // The workers' own grace period, and a little more for them to exit.
    setTimeout(() => killAll(logger, 'API processes did not stop in time: killing them'), SHUTDOWN_GRACE_MS + 2_000).unref();
  };

  cluster.on('exit', (worker, code, signal) => {
    const wasReady = ready.delete(worker);
    if (stopping) {
      if (code !== 0) exitCode = Math.max(exitCode, 1);
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
      return;
    }
    if (!wasReady) {
      logger.error({ worker_pid: worker.process.pid, code, signal }, 'an API process exited before it was ready: stopping');
      stop(1);
      return;
    }
    logger.warn({ worker_pid: worker.process.pid, code, signal }, 'an API process exited: starting another');
    setTimeout(() => stopping || fork(), RESTART_DELAY_MS);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return killAll(logger, `second ${signal}: killing the API processes`);
      logger.info({ signal }, 'shutting down');
      stop(0);
    });
  }
  for (let n = 0; n < processes; n++) fork();
}

/** A second signal, or workers that outlive their grace period: no more waiting. */
function killAll(logger: Logger, reason: string): never {
  logger.error(reason);
  for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
  process.exit(1);
}
