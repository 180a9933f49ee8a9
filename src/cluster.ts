import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config.js';
import { openMigratedDatabase } from './db/index.js';
import { createLogger } from './logger.js';
import { SHUTDOWN_GRACE_MS, startServer } from './server.js';

const READY = 'tributary:ready';
/** What the primary sends a worker to stop it: the signal the primary was stopped with. */
interface StopMessage {
  stop: NodeJS.Signals;
}
const isStopMessage = (message: unknown): message is StopMessage => typeof (message as StopMessage | null)?.stop === 'string';

const RESTART_DELAY_MS = 1_000;
/** How long a worker may take to stop once told to: its own grace period, and a little more to exit. */
const STOP_LIMIT_MS = SHUTDOWN_GRACE_MS + 2_000;
/**
 * How long a worker still loading when the service stops may take to be ready, be told again and
 * stop, in all: it has nothing in flight, and the grace period of STOP_LIMIT_MS counts from when
 * it can act on the stop, within this.
 */
const LOADING_STOP_LIMIT_MS = 60_000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * `tributary serve`: the APIs in this process, or in `processes` cluster workers sharing its
 * ports (the primary accepts each connection and hands it to the next worker), supervised by
 * this process.
 */
export async function serve(config: Config, processes: number): Promise<void> {
  if (cluster.isWorker) return serveAsWorker(config);
  if (processes === 1) {
    await startServer(config);
    return;
  }
  if (!config.databaseUrl) {
    throw new ConfigError('several API processes need DATABASE_URL: the embedded store can be open in one process only');
  }
  await superviseApiProcesses(config, processes);
}

/**
 * A worker stops only when its primary says so, or is gone. Signals are for the primary: a
 * terminal's Ctrl-C and a service manager's SIGTERM reach the whole process group, and a second
 * signal (the primary's relay) would cut the worker's graceful stop short.
 */
async function serveAsWorker(config: Config): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => {});
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    process.on('message', (message) => isStopMessage(message) && resolve(message.stop));
    // The primary is gone. Node's cluster would exit the worker at once, requests in flight and
    // all, unless the disconnect is marked as expected.
    cluster.worker!.on('disconnect', () => {
      cluster.worker!.exitedAfterDisconnect = true;
      resolve('SIGTERM');
    });
  });
  const server = await startServer(config, { ignoreSignals: ['SIGINT', 'SIGTERM'] });
  if (process.connected) process.send!(READY);
  void stopRequested.then(server.stop);
}

/**
 * Applies the migrations once, then forks the API processes. Until every one has been ready, a
 * worker that dies stops them all (a port in use, a setting the database refuses: its
 * replacement would meet the same cause); after that, one that dies is replaced, a little later
 * each time replacements die before they are ready. SIGTERM or SIGINT stops every worker
 * gracefully, then this process; a worker still loading that dies of one was sent the process
 * group's, so it starts that stop too, exit code 0.
 */
async function superviseApiProcesses(config: Config, processes: number): Promise<void> {
  const logger = createLogger(config.logLevel).child({ role: 'primary' });
  const { db, applied } = await openMigratedDatabase({ ...config, databasePoolSize: 1 });
  await db.close();
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  if (!config.redisUrl) {
    logger.warn({ processes }, 'without REDIS_URL each API process counts rate limits alone: together they allow that many times each limit');
  }

  // Kept here rather than read from cluster.workers, which may still list a worker that has exited.
  const live = new Set<Worker>();
  const ready = new Set<Worker>();
  /** When each worker told to stop is killed, with every other, if it has not exited by then. */
  const stopDeadlines = new Map<Worker, { at: number; timer: NodeJS.Timeout }>();
  let serving = false;
  let stopping: NodeJS.Signals | undefined;
  // A signal that killed a worker still loading: the process group's, whose copy for this process
  // may arrive after the worker's exit is seen. That copy is not a second signal.
  let groupSignal: NodeJS.Signals | undefined;
  let restartDelayMs = RESTART_DELAY_MS;

  const fork = () => {
    const worker = cluster.fork();
    live.add(worker);
    worker.on('error', (error: Error) => logger.warn({ err: error, worker_pid: worker.process.pid }, 'the channel to an API process failed'));
    worker.on('message', (message) => {
      if (message !== READY) return;
      // A stop sent while the worker was still loading, before it listened, was lost: again.
      if (stopping) return tellToStop(worker, STOP_LIMIT_MS);
      ready.add(worker);
      restartDelayMs = RESTART_DELAY_MS;
      if (ready.size === processes) {
        serving = true;
        logger.info({ processes }, 'all API processes are ready');
      }
    });
  };

  const finish = (code: number) => {
    process.exitCode = Math.max(Number(process.exitCode ?? 0), code);
    if (live.size === 0) process.exit();
  };

  /** Sends `worker` the stop, and kills every worker if it has not exited `limitMs` from now, or by its earlier deadline. */
  const tellToStop = (worker: Worker, limitMs: number) => {
    if (worker.isConnected()) worker.send({ stop: stopping! } satisfies StopMessage);
    const deadline = Math.min(stopDeadlines.get(worker)?.at ?? Infinity, Date.now() + limitMs);
    clearTimeout(stopDeadlines.get(worker)?.timer);
    const timer = setTimeout(() => killAll(logger, live, 'API processes did not stop in time: killing them'), deadline - Date.now()).unref();
    stopDeadlines.set(worker, { at: deadline, timer });
  };

  const stop = (code: number, signal: NodeJS.Signals) => {
    if (stopping) return finish(code);
    stopping = signal;
    for (const worker of live) tellToStop(worker, ready.has(worker) ? STOP_LIMIT_MS : LOADING_STOP_LIMIT_MS);
    finish(code);
  };

  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker);
    clearTimeout(stopDeadlines.get(worker)?.timer);
    stopDeadlines.delete(worker);
    const wasReady = ready.delete(worker);
    // A worker still loading when the process group got the signal dies of it, with nothing in flight.
    const killedLoading = !wasReady && (signal === 'SIGTERM' || signal === 'SIGINT');
    if (stopping) return finish(code === 0 || killedLoading ? 0 : 1);
    if (killedLoading) {
      groupSignal = signal;
      logger.info({ signal }, 'shutting down');
      return stop(0, signal);
    }
    if (!serving) {
      logger.error({ worker_pid: worker.process.pid, code, signal }, 'an API process exited before the service was ready: stopping');
      return stop(1, 'SIGTERM');
    }
    logger.warn({ worker_pid: worker.process.pid, code, signal, restart_in_ms: restartDelayMs }, 'an API process exited: starting another');
    setTimeout(() => stopping || fork(), restartDelayMs);
    if (!wasReady) restartDelayMs = Math.min(restartDelayMs * 2, MAX_RESTART_DELAY_MS);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (signal === groupSignal) return void (groupSignal = undefined);
      if (stopping) return killAll(logger, live, `second ${signal}: killing the API processes`);
      logger.info({ signal }, 'shutting down');
      stop(0, signal);
    });
  }
  for (let n = 0; n < processes; n++) fork();
}

/** A second signal, or workers that outlive their grace period: no more waiting. */
function killAll(logger: Logger, workers: Set<Worker>, reason: string): never {
  logger.error(reason);
  for (const worker of workers) worker.process.kill('SIGKILL');
  process.exit(1);
}
