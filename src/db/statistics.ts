import type { Logger } from 'pino';
import { startPeriodic } from '../periodic.js';
import type { Database } from './database.js';
import { stoppedOnLimit } from './errors.js';
import { lockWaitAtMost } from './limits.js';

/**
 * The service's tables whose files grew past what their statistics say by a fifth (and 8 pages),
 * or that never had any: after a bulk load. The planner estimates such a table as empty, and a
 * join planned on that estimate ran for minutes (test/one-customer.test.ts). The embedded store
 * has no autovacuum to keep statistics, and PostgreSQL's may not have run yet after a load. Sizes
 * are read from the files, not from the cumulative statistics, which PGlite reports late.
 */
const GROWN_TABLES = `
  SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = current_schema() AND c.relkind = 'r'
     AND pg_relation_size(c.oid) / current_setting('block_size')::int > 1.2 * greatest(c.relpages, 0) + 8
   ORDER BY c.relname`;

/** The run under way of each store, which callers meanwhile share: ANALYZEs of one table wait for each other. */
const running = new WeakMap<Database, Promise<string[]>>();

/**
 * How long the check and each ANALYZE wait for a table's lock: a table held by a migration or a
 * backup's exclusive lock is left for the next run rather than holding up the read that asked.
 */
const LOCK_WAIT_MS = 200;

/**
 * ANALYZEs the tables that grew past their statistics (GROWN_TABLES); answers their names. Reads
 * that plan statements over the service's tables (reports, exports, the keeper) call it first, so
 * that the first report after a load is planned on its data, not on empty tables (35 s against
 * 1 s on the embedded store for a first load of 2,615 orders and 16,914 touchpoints): finding none
 * grown costs a catalogue read. Callers while a run is under way share it. A table whose lock is
 * held longer than LOCK_WAIT_MS is skipped until the next run.
 */
export function analyzeGrownTables(db: Database): Promise<string[]> {
  const waitingAtMost = lockWaitAtMost(LOCK_WAIT_MS);
  const lockedMeanwhile = (error: unknown) => {
    if (stoppedOnLimit(error) !== 'lock_wait') throw error;
  };
  const run =
    running.get(db) ??
    (async () => {
      try {
        const grown = await db
          .transaction(async (tx) => {
            await waitingAtMost(tx);
            return tx.query<{ name: string }>(GROWN_TABLES);
          })
          .catch((error: unknown) => (lockedMeanwhile(error), []));
        const analyzed: string[] = [];
        for (const { name } of grown) {
          // Names from the catalogue, not input; quoted as identifiers all the same.
          const done = await db
            .transaction(async (tx) => {
              await waitingAtMost(tx);
              await tx.exec(`ANALYZE "${name.replaceAll('"', '""')}"`);
              return true;
            })
            .catch((error: unknown) => (lockedMeanwhile(error), false));
          if (done) analyzed.push(name);
        }
        return analyzed;
      } finally {
        running.delete(db);
      }
    })();
  running.set(db, run);
  return run;
}

/**
 * The service's tables of which more than a fifth of the pages (and 8) were not all-visible when
 * their statistics were last taken: rows written since the last VACUUM. Until a VACUUM marks their
 * pages all-visible, an index-only scan reads the table too (bench:engine's year export: 28.2 s
 * right after a load, 25.1 s after VACUUM), and on the embedded store, which has no autovacuum,
 * the space of updated and deleted rows is never used again. Statistics are taken first
 * (analyzeGrownTables), so a table that grew is measured.
 */
const TABLES_TO_VACUUM = `
  SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = current_schema() AND c.relkind = 'r'
     AND c.relpages - c.relallvisible > 0.2 * c.relpages + 8
   ORDER BY c.relname`;

/**
 * VACUUMs the tables written since their last VACUUM (TABLES_TO_VACUUM); answers those that are
 * no longer. A table another VACUUM or a lock holds (autovacuum's, a migration's) is skipped, not
 * waited for; one whose VACUUM outran the statement time limit keeps the pages it marked and is
 * taken up again by the next run. Background work only: a VACUUM reads every page not yet
 * all-visible, seconds for a large table, and on the embedded store holds the store meanwhile;
 * `signal` stops the run before its next table.
 */
export async function vacuumWrittenTables(db: Database, signal?: AbortSignal): Promise<string[]> {
  const asked = (await db.query<{ name: string }>(TABLES_TO_VACUUM)).map(({ name }) => name);
  if (asked.length === 0) return [];
  for (const name of asked) {
    if (signal?.aborted) break;
    // VACUUM cannot run in a transaction: SKIP_LOCKED, not a lock timeout, keeps it from waiting.
    await db.exec(`VACUUM (SKIP_LOCKED) "${name.replaceAll('"', '""')}"`).catch((error: unknown) => {
      if (stoppedOnLimit(error) !== 'statement_time') throw error;
    });
  }
  const left = new Set((await db.query<{ name: string }>(TABLES_TO_VACUUM)).map(({ name }) => name));
  return asked.filter((name) => !left.has(name));
}

/**
 * Every `intervalMs`, keeps the statistics of the tables that grew (analyzeGrownTables), then
 * VACUUMs those written since their last VACUUM (vacuumWrittenTables).
 */
export function startStatisticsKeeper({ db, intervalMs, logger }: { db: Database; intervalMs: number; logger?: Logger }): { stop(): Promise<void> } {
  return startPeriodic(
    intervalMs,
    async (signal) => {
      const analyzed = await analyzeGrownTables(db);
      if (analyzed.length > 0) logger?.info({ tables: analyzed }, 'table statistics brought up to date');
      const vacuumed = await vacuumWrittenTables(db, signal);
      if (vacuumed.length > 0) logger?.info({ tables: vacuumed }, 'tables vacuumed');
    },
    (error) => logger?.error({ err: error }, 'table statistics could not be brought up to date'),
  );
}
