import fs from 'node:fs';
import path from 'node:path';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { readThroughCursor, type Database, type Queryable } from './database.js';

/**
 * Opens the embedded store. `dataDir` undefined keeps everything in memory (tests). A data
 * directory can be open in one process only, so a lock file names the process holding it.
 * PGlite runs one statement at a time, so its transactions never race and need no retry.
 */
export async function openPglite(dataDir: string | undefined): Promise<Database> {
  const release = dataDir ? lockDataDir(dataDir) : () => {};
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(dataDir ?? 'memory://');
  } catch (error) {
    release();
    throw error;
  }

  return {
    kind: 'pglite',
    ...queryable(pglite),
    transaction: (work) => pglite.transaction((tx) => work(queryable(tx))),
    // Not in a transaction, which would hold the store for the whole read: a held cursor runs its
    // statement once (the result kept by PostgreSQL, on disk past work_mem) and each FETCH is a
    // statement of its own, so other requests' statements run between batches.
    eachBatch: (sql, params, batchSize, onBatch) =>
      readThroughCursor(queryable(pglite), { sql, params, batchSize, hold: true }, onBatch),
    readingTogether: (_count, work) => pglite.transaction((tx) => work([queryable(tx)])),
    async listen(channel, onNotification) {
      const unlisten = await pglite.listen(channel, () => onNotification());
      return { close: () => unlisten() };
    },
    async close() {
      await pglite.close();
      release();
    },
  };
}

function queryable(client: PGlite | Transaction): Queryable {
  return {
    query: async <R,>(text: string, params?: readonly unknown[]) =>
      (await client.query<R>(text, params as unknown[])).rows,
    async exec(script) {
      await client.exec(script);
    },
  };
}

export class DataDirInUseError extends Error {}

export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockFile = path.join(dataDir, 'tributary.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      // 'wx' creates the file only if it does not exist: of two processes, one wins.
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(fs.readFileSync(lockFile, 'utf8'));
    if (attempt > 0 || isAlive(holder)) {
      throw new DataDirInUseError(
        `The embedded store in ${dataDir} is open in process ${holder || '(unknown)'}. Stop that process first, ` +
          'or use the admin API of the running server.',
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
