import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { readThroughCursor, stoppingOn, type Database, type Queryable, type TransactionOptions } from './database.js';

/** What the main thread asks the store's thread (src/db/pglite-thread.ts), each request with an id its answer has. */
type Ask =
  | { op: 'query'; sql: string; params: readonly unknown[] | undefined; tx?: number }
  | { op: 'exec'; script: string; tx?: number }
  | { op: 'begin' }
  | { op: 'commit' | 'rollback'; tx: number }
  | { op: 'listen' | 'unlisten'; channel: string }
  | { op: 'dump' }
  | { op: 'close' };
export type ThreadRequest = { id: number } & Ask;

/** What the store's thread answers: a request's result or error, a notification, or that it is open. */
export type ThreadAnswer = { id: number; result?: unknown; error?: Record<string, unknown> } | { notification: string } | { ready: true };

/** The store's thread stopped, a request unanswered: the database is unreachable (src/db/errors.ts). */
class StoreThreadStopped extends Error {
  readonly code = '57P01';
}

/** The module of the store's thread, beside this one (TypeScript when run from the sources). */
const THREAD_MODULE = new URL(`./pglite-thread${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

/**
 * Starts the store's thread. Run from the sources (tests, benchmarks, through tsx), the thread
 * registers tsx before it loads its module: Node 20 does not pass the main thread's `--import`
 * loaders to a worker.
 */
function startThread(workerData: unknown): Worker {
  if (!THREAD_MODULE.pathname.endsWith('.ts')) return new Worker(THREAD_MODULE, { workerData });
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(THREAD_MODULE.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** What the store's thread is started with: its data directory (none: in memory), and a store to start from. */
export interface ThreadData {
  dataDir: string | undefined;
  startingFrom: Uint8Array | undefined;
}

/** The embedded store, which can also be copied whole. */
export interface EmbeddedDatabase extends Database {
  /** A copy of the store's data directory, as a tarball that `openPglite`'s `startingFrom` opens. */
  dump(): Promise<Uint8Array>;
}

/**
 * Opens the embedded store. `dataDir` undefined keeps everything in memory (tests). A store opened
 * `startingFrom` a dump (EmbeddedDatabase.dump) starts as that one was, without creating a new
 * cluster (initdb: seconds; tests start each store from one migrated copy). A data
 * directory can be open in one process only, so a lock file names the process holding it.
 * PGlite runs on a thread of its own (pglite-thread.ts): a statement runs to its end on the
 * thread that calls it, and on the main thread a long one stopped every request, health checks
 * and signals included. It runs one statement at a time, so its transactions never race and need
 * no retry; a transaction holds the store until it ends.
 */
export async function openPglite(dataDir: string | undefined, { startingFrom }: { startingFrom?: Uint8Array } = {}): Promise<EmbeddedDatabase> {
  const release = dataDir ? lockDataDir(dataDir) : () => {};
  const thread = startThread({ dataDir, startingFrom } satisfies ThreadData);
  const pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  const listeners = new Map<string, Set<() => void>>();
  let asked = 0;
  let stopped: Error | undefined;

  const opened = new Promise<void>((resolve, reject) => {
    thread.on('message', (message: ThreadAnswer) => {
      if ('ready' in message) return resolve();
      if ('notification' in message) return listeners.get(message.notification)?.forEach((listener) => listener());
      const answered = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) answered?.reject(Object.assign(new Error(String(message.error.message)), message.error));
      else answered?.resolve(message.result);
    });
    const stop = (error: Error) => {
      stopped = new StoreThreadStopped(`The embedded store stopped: ${error.message}`);
      for (const { reject: fail } of pending.values()) fail(stopped);
      pending.clear();
      reject(error);
    };
    thread.on('error', stop);
    thread.on('exit', (code) => stop(new Error(`its thread exited (${code})`)));
  });
  try {
    await opened;
  } catch (error) {
    release();
    throw error;
  }

  const ask = <R,>(request: Ask): Promise<R> => {
    if (stopped) return Promise.reject(stopped);
    const id = ++asked;
    return new Promise<R>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      try {
        thread.postMessage({ ...request, id });
      } catch (error) {
        pending.delete(id);
        reject(error as Error);
      }
    });
  };
  const queryable = (tx?: number): Queryable => ({
    query: <R,>(sql: string, params?: readonly unknown[]) => ask<R[]>({ op: 'query', sql, params, tx }),
    exec: (script) => ask<void>({ op: 'exec', script, tx }),
  });
  async function transaction<T>(work: (tx: Queryable) => Promise<T>, { signal }: TransactionOptions = {}): Promise<T> {
    signal?.throwIfAborted();
    const tx = await ask<number>({ op: 'begin' });
    let result: T;
    try {
      result = await work(stoppingOn(queryable(tx), signal));
    } catch (error) {
      await ask({ op: 'rollback', tx }).catch(() => {});
      throw error;
    }
    await ask({ op: 'commit', tx });
    return result;
  }

  return {
    kind: 'pglite',
    ...queryable(),
    transaction,
    // Not in a transaction, which would hold the store for the whole read: a held cursor runs its
    // statement once (the result kept by PostgreSQL, on disk past work_mem) and each FETCH is a
    // statement of its own, so other requests' statements run between batches.
    eachBatch: (sql, params, batchSize, onBatch) => readThroughCursor(queryable(), { sql, params, batchSize, hold: true }, onBatch),
    readingTogether: (_count, work, options) => transaction((tx) => work([tx]), options),
    async listen(channel, onNotification) {
      const channelListeners = listeners.get(channel) ?? new Set();
      listeners.set(channel, channelListeners);
      const listener = () => onNotification();
      if (channelListeners.size === 0) await ask({ op: 'listen', channel });
      channelListeners.add(listener);
      return {
        async close() {
          channelListeners.delete(listener);
          if (channelListeners.size === 0 && !stopped) await ask({ op: 'unlisten', channel });
        },
      };
    },
    dump: () => ask<Uint8Array>({ op: 'dump' }),
    async close() {
      try {
        if (!stopped) await ask({ op: 'close' });
      } finally {
        await thread.terminate();
        release();
      }
    },
  };
}

export class DataDirInUseError extends Error {
  constructor(
    message: string,
    /** The process that holds the store (0: unknown). */
    readonly holder: number,
  ) {
    super(message);
  }
}

export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockFile = path.join(dataDir, 'tributary.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      // 'wx' creates the file only if it does not exist: of two processes, one wins.
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      // Also when the process exits without closing the store (a stop past its grace period).
      const release = () => {
        process.off('exit', release);
        fs.rmSync(lockFile, { force: true });
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(fs.readFileSync(lockFile, 'utf8'));
    // A file naming this process was left by an earlier one of the same pid (PID 1 in a container).
    if (attempt > 0 || (holder !== process.pid && isAlive(holder))) {
      throw new DataDirInUseError(
        `The embedded store in ${dataDir} is open in process ${holder || '(unknown)'}. Stop that process first, ` +
          'or use the admin API of the running server.',
        holder || 0,
      );
    }
    // Left by a process that died: remove it and race for it once more.
    fs.rmSync(lockFile, { force: true });
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
