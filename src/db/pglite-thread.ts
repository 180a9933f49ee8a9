import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { ThreadAnswer, ThreadData, ThreadRequest } from './pglite.js';

/*
 * The embedded store's thread (src/db/pglite.ts): PGlite, which runs each statement to its end on
 * the thread that calls it, opened here so that a long statement holds this thread and not the
 * process's event loop. Requests are answered in the order PGlite runs them: a statement outside
 * an open transaction waits for it, as on one connection.
 */

const port = parentPort!;
const { dataDir, startingFrom } = workerData as ThreadData;
const pglite = await PGlite.create(dataDir ?? 'memory://', startingFrom ? { loadDataDir: new Blob([startingFrom]) } : {});
const transactions = new Map<number, OpenTransaction>();
const listening = new Map<string, () => Promise<void>>();
/** The last LISTEN or UNLISTEN asked of each channel: each waits for the one before, so that they end in the order asked. */
const channelTurns = new Map<string, Promise<unknown>>();

function inTurn(channel: string, work: () => Promise<void>): Promise<void> {
  const done = (channelTurns.get(channel) ?? Promise.resolve()).catch(() => {}).then(work);
  channelTurns.set(channel, done);
  return done;
}
let transactionsBegun = 0;

interface OpenTransaction {
  tx: Transaction;
  /** Ends the callback PGlite runs the transaction in: it then commits, or rolls back. */
  end(commit: boolean): void;
  /** Settles once PGlite has committed or rolled back. */
  finished: Promise<void>;
}

class RolledBack extends Error {}

/** Opens a transaction that stays open, holding the store, until its commit or rollback request. */
function begin(): Promise<number> {
  const id = ++transactionsBegun;
  return new Promise((begun, failed) => {
    const finished = pglite.transaction(
      (tx) =>
        new Promise<void>((commit, rollback) => {
          transactions.set(id, { tx, end: (committed) => (committed ? commit() : rollback(new RolledBack())), finished });
          begun(id);
        }),
    );
    // Before it began: BEGIN failed. After: the rollback asked for, or a failed COMMIT, which end() reports.
    finished.catch(failed);
  });
}

async function end(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (!open) {
    if (commit) throw new Error('The transaction has ended');
    return;
  }
  transactions.delete(id);
  open.end(commit);
  await open.finished.catch((error: unknown) => {
    if (!(error instanceof RolledBack)) throw error;
  });
}

const answer = (message: ThreadAnswer) => port.postMessage(message);

/** An error as it crosses threads: its message and every field drivers give (code, detail…), which a structured clone drops. */
function plainError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  return { ...Object.fromEntries(Object.entries(error)), name: error.name, message: error.message };
}

function on(tx: number | undefined): PGlite | Transaction {
  if (tx === undefined) return pglite;
  const open = transactions.get(tx);
  if (!open) throw new Error('The transaction has ended');
  return open.tx;
}

async function handle(request: ThreadRequest): Promise<unknown> {
  switch (request.op) {
    case 'query':
      return (await on(request.tx).query(request.sql, request.params as unknown[])).rows;
    case 'exec':
      await on(request.tx).exec(request.script);
      return undefined;
    case 'begin':
      return begin();
    case 'commit':
    case 'rollback':
      return end(request.tx, request.op === 'commit');
    case 'listen':
      return inTurn(request.channel, async () => {
        if (!listening.has(request.channel)) listening.set(request.channel, await pglite.listen(request.channel, () => answer({ notification: request.channel })));
      });
    case 'unlisten':
      return inTurn(request.channel, async () => {
        await listening.get(request.channel)?.();
        listening.delete(request.channel);
      });
    case 'dump':
      return new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
    case 'close':
      await pglite.close();
      return undefined;
  }
}

port.on('message', (request: ThreadRequest) => {
  handle(request)
    .then((result) => answer({ id: request.id, result }))
    // A failure of the statement, or of sending its result (a value no structured clone takes).
    .catch((error: unknown) => answer({ id: request.id, error: plainError(error) }));
});
answer({ ready: true });
