import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { DataDirInUseError, lockDataDir } from './pglite.js';

export class BackupError extends Error {}

/** Whether `dir` holds a PostgreSQL data directory. */
const holdsStore = (dir: string) => fs.existsSync(path.join(dir, 'PG_VERSION'));

/** Runs `work` holding the store's lock; a store open in another process is refused with `busy`. */
async function withLock<T>(dir: string, busy: string, work: () => Promise<T>): Promise<T> {
  let release: () => void;
  try {
    release = lockDataDir(dir);
  } catch (error) {
    if (error instanceof DataDirInUseError) throw new BackupError(`${error.message.split('. ')[0]}. ${busy}`);
    throw error;
  }
  try {
    return await work();
  } finally {
    release();
  }
}

/**
 * Copies the embedded store in `dir` into `file`, a gzipped tarball of its data directory, taken
 * after a checkpoint. The store must not be open elsewhere: its files are one process's, and a
 * copy taken while that process writes is not consistent (docs/decisions.md, "Backup and
 * restore"). The file is written beside its name, then renamed: a failed backup leaves none.
 */
export async function backupEmbeddedStore(dir: string, file: string): Promise<{ file: string; bytes: number }> {
  if (!holdsStore(dir)) throw new BackupError(`There is no embedded store in ${dir} (DATA_DIR) to back up`);
  return withLock(dir, 'Stop the server and workers using it (tributary serve, tributary worker), back up, then start them again', async () => {
    const pglite = await PGlite.create(dir);
    try {
      await pglite.exec('CHECKPOINT');
      const tarball = Buffer.from(await (await pglite.dumpDataDir('gzip')).arrayBuffer());
      const partial = `${file}.partial`;
      fs.writeFileSync(partial, tarball);
      fs.renameSync(partial, file);
      return { file: path.resolve(file), bytes: tarball.length };
    } finally {
      await pglite.close();
    }
  });
}

/**
 * Makes the embedded store in `dir` the one backed up in `file`. The backup is loaded and checked
 * in memory first, so a file that is not a Tributary backup changes nothing. A store already in
 * `dir` is replaced only when `replace` says so.
 */
export async function restoreEmbeddedStore(dir: string, file: string, { replace }: { replace: boolean }): Promise<{ file: string; clients: number }> {
  if (!fs.existsSync(file)) throw new BackupError(`No backup file ${file}`);
  const tarball = () => new Blob([fs.readFileSync(file)]);
  const clients = await checkedBackup(file, tarball());
  if (holdsStore(dir) && !replace) {
    throw new BackupError(`${dir} (DATA_DIR) already holds an embedded store: pass --replace to replace it (its data is lost), or restore into another DATA_DIR`);
  }
  fs.mkdirSync(dir, { recursive: true });
  return withLock(dir, 'Stop the server and workers using it before restoring', async () => {
    for (const entry of fs.readdirSync(dir)) {
      if (entry !== 'tributary.pid') fs.rmSync(path.join(dir, entry), { recursive: true, force: true });
    }
    const pglite = await PGlite.create(dir, { loadDataDir: tarball() });
    await pglite.close();
    return { file: path.resolve(file), clients };
  });
}

/** The number of clients of the backup in `file`, or why it is not a backup of this service. */
async function checkedBackup(file: string, tarball: Blob): Promise<number> {
  let pglite: PGlite;
  try {
    pglite = await PGlite.create('memory://', { loadDataDir: tarball });
  } catch {
    throw new BackupError(`${file} is not a backup of an embedded store (tributary backup writes them)`);
  }
  try {
    const [row] = (await pglite.query<{ clients: number }>('SELECT count(*)::int AS clients FROM clients')).rows;
    return row!.clients;
  } catch {
    throw new BackupError(`${file} holds a PostgreSQL data directory, but not a Tributary store`);
  } finally {
    await pglite.close();
  }
}
