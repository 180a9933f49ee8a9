import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from '../src/db/migrate.js';
import { openPglite, type EmbeddedDatabase } from '../src/db/pglite.js';

/*
 * Test stores on the embedded store start from a copy of a new one (PGlite's dump of its data
 * directory) instead of creating their own cluster: PGlite's initdb takes 5–9 s of CPU, loading a
 * copy under 2, and the suite opens about 150 stores. The copies are kept where build tools keep
 * caches, node_modules/.cache, named by PGlite's version and, for the migrated one, by the text of
 * every migration and of the code that applies them, so that a change of either makes a new copy.
 * Test processes running side by side each write a copy under a name of their own and rename it:
 * a reader finds a whole copy or none, and a copy that does not open is made again.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE_DIR = path.join(ROOT, 'node_modules', '.cache', 'tributary');
const MIGRATIONS_DIR = path.join(ROOT, 'migrations');
const MIGRATING_CODE = ['src/db/migrate.ts', 'src/db/sql-script.ts'].map((file) => path.join(ROOT, file));
const PGLITE_VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;

function templateName(migrated: boolean): string {
  const hash = createHash('sha256').update(PGLITE_VERSION);
  if (migrated) {
    const files = [...fs.readdirSync(MIGRATIONS_DIR).sort().map((file) => path.join(MIGRATIONS_DIR, file)), ...MIGRATING_CODE];
    for (const file of files) hash.update(path.basename(file)).update(fs.readFileSync(file));
  }
  return `pglite-${migrated ? 'migrated' : 'empty'}-${hash.digest('hex').slice(0, 16)}.tar`;
}

async function makeTemplate(migrated: boolean, file: string): Promise<Uint8Array> {
  const db = await openPglite(undefined);
  let dump: Uint8Array;
  try {
    if (migrated) await migrate(db);
    // A checkpoint first, so that a store opened from the copy has no log to replay.
    await db.exec('CHECKPOINT');
    dump = await db.dump();
  } finally {
    await db.close();
  }
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  fs.writeFileSync(partial, dump);
  fs.renameSync(partial, file);
  // Copies of the same kind made for other migrations or versions are not opened again.
  const kind = path.basename(file).replace(/-[0-9a-f]+\.tar$/, '-');
  for (const other of fs.readdirSync(CACHE_DIR)) {
    if (other.startsWith(kind) && !other.startsWith(path.basename(file))) fs.rmSync(path.join(CACHE_DIR, other), { force: true });
  }
  return dump;
}

const templates = new Map<boolean, Promise<Uint8Array>>();

function template(migrated: boolean, { remake = false } = {}): Promise<Uint8Array> {
  let made = remake ? undefined : templates.get(migrated);
  if (!made) {
    const file = path.join(CACHE_DIR, templateName(migrated));
    made = !remake && fs.existsSync(file) ? fs.promises.readFile(file).then((buffer) => new Uint8Array(buffer)) : makeTemplate(migrated, file);
    templates.set(migrated, made);
  }
  return made;
}

/** A new in-memory embedded store, empty or migrated, started from the kept copy of one. */
export async function openTemplatePglite({ migrated }: { migrated: boolean }): Promise<EmbeddedDatabase> {
  try {
    return await openPglite(undefined, { startingFrom: await template(migrated) });
  } catch {
    return openPglite(undefined, { startingFrom: await template(migrated, { remake: true }) });
  }
}
