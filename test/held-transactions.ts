import type { Database, Queryable } from '../src/db/index.js';
import { citusUrl } from './helpers.js';

/*
 * Transactions held open on connections of their own, for the tests of concurrent writes
 * (PostgreSQL: PGlite has one connection). A write's change note goes to the slot of its
 * connection (backend pid modulo 8, src/attribution/changes.ts): two open transactions whose
 * notes share a slot wait for each other on its row, so a test that commits one while the other
 * is open holds them on connections of distinct slots.
 */

/** A transaction held open until `commit` is called; `db` runs in it. */
export interface Held {
  db: Database;
  pid: number;
  commit(): Promise<void>;
}

async function hold(db: Database): Promise<Held> {
  let opened!: (held: { tx: Queryable; pid: number }) => void;
  let release!: () => void;
  const open = new Promise<{ tx: Queryable; pid: number }>((resolve) => (opened = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const done = db.transaction(async (tx) => {
    const [{ pid }] = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
    opened({ tx, pid });
    await released;
  });
  const { tx, pid } = await open;
  const inTransaction = { ...db, kind: db.kind, query: tx.query.bind(tx), exec: tx.exec.bind(tx), transaction: (work: (q: Queryable) => Promise<unknown>) => work(tx) } as unknown as Database;
  return {
    db: inTransaction,
    pid,
    commit: async () => {
      release();
      await done;
    },
  };
}

/**
 * `count` held transactions whose connections' change slots differ from each other and from
 * `taken`; the spare ones opened to get them are committed.
 */
export async function holdOnDistinctSlots(db: Database, count: number, taken: number[] = []): Promise<Held[]> {
  const chosen: Held[] = [];
  const spare: Held[] = [];
  while (chosen.length < count) {
    const held = await hold(db);
    (chosen.some((other) => other.pid % 8 === held.pid % 8) || taken.includes(held.pid % 8) ? spare : chosen).push(held);
  }
  for (const held of spare) await held.commit();
  return chosen;
}

/*
 * On Citus a statement about a client waits on the worker that holds the client's shard, where the
 * coordinator's pg_stat_activity does not see it: Citus's views of every node are asked instead,
 * its backends named by global pid (the node's id and the backend's pid).
 */
const onCitus = citusUrl !== undefined;
const gpidOf = (pid: string) => `citus_calculate_gpid(citus_coordinator_nodeid(), ${pid})`;

/** Backends (on any node) that wait for a lock the backend `pid` holds. */
export function waitingFor(db: Queryable, pid: number): Promise<unknown[]> {
  return db.query(
    onCitus
      ? `SELECT waiting_gpid FROM citus_lock_waits WHERE blocking_gpid = ${gpidOf('$1')}`
      : 'SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))',
    [pid],
  );
}

/** Resolves once another backend waits for a lock the backend `pid` holds. */
export async function waitingForALock(db: Queryable, pid: number): Promise<void> {
  while ((await waitingFor(db, pid)).length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The statements running (waiting included) in the database of `db`, on every node, but those of
 * this connection and of the backends `besides`; `onWorker` for those Citus sent to a worker.
 */
export function runningStatements(db: Queryable, besides: number[]): Promise<{ query: string; onWorker: boolean }[]> {
  return db.query<{ query: string; onWorker: boolean }>(
    onCitus
      ? `SELECT query, is_worker_query AS "onWorker" FROM citus_stat_activity
          WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend'
            AND NOT (global_pid = ANY (SELECT ${gpidOf('p')} FROM unnest($1::int[] || pg_backend_pid()) AS p))`
      : `SELECT query, false AS "onWorker" FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND NOT (pid = ANY ($1::int[]))`,
    [besides],
  );
}

/** Resolves once the backend `pid` waits for a lock. */
export async function waitsForALock(db: Database, pid: number): Promise<void> {
  while ((await db.query("SELECT FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [pid])).length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
