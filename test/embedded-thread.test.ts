/**
 * The embedded store runs on a thread of its own (src/db/pglite.ts): a statement of seconds
 * leaves the process's event loop free, and the seam behaves as it did on the main thread.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openPglite } from '../src/db/pglite.js';
import { embeddedStoreOnly } from './helpers.js';

/** A statement that keeps PGlite busy for a few seconds. */
const LONG_STATEMENT = 'SELECT count(*)::int AS n FROM generate_series(1, 20000000)';

test('a long statement of the embedded store leaves the event loop free: timers fire, other work goes on', { skip: embeddedStoreOnly }, async () => {
  const db = await openPglite(undefined);
  try {
    let longestGap = 0;
    let last = performance.now();
    const ticks = setInterval(() => {
      const now = performance.now();
      longestGap = Math.max(longestGap, now - last);
      last = now;
    }, 10);
    const started = performance.now();
    const [{ n } = { n: 0 }] = await db.query<{ n: number }>(LONG_STATEMENT);
    const took = performance.now() - started;
    clearInterval(ticks);
    assert.equal(n, 20_000_000);
    assert.ok(took > 1_000, `the statement took ${Math.round(took)} ms: too short to tell`);
    assert.ok(longestGap < 500, `the event loop stood still for ${Math.round(longestGap)} ms of the statement's ${Math.round(took)} ms`);
  } finally {
    await db.close();
  }
});

test('across the thread: errors keep their SQLSTATE, a transaction holds the store until it ends, a rollback undoes, notifications arrive', { skip: embeddedStoreOnly }, async () => {
  const db = await openPglite(undefined);
  try {
    const failed = await db.query('SELECT 1 / 0').catch((error: unknown) => error);
    assert.equal((failed as { code?: string }).code, '22012');

    await db.exec('CREATE TABLE t (n int PRIMARY KEY)');
    const order: string[] = [];
    let outside: Promise<unknown> = Promise.resolve();
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES (1)');
      // A statement outside the transaction waits for it, as on one connection.
      outside = db.query<{ count: number }>('SELECT count(*)::int AS count FROM t').then(([row]) => order.push(`outside saw ${row!.count}`));
      await new Promise((resolve) => setTimeout(resolve, 50));
      order.push('committing');
      await tx.query('INSERT INTO t VALUES (2)');
    });
    await outside;
    assert.deepEqual(order, ['committing', 'outside saw 2']);

    const rolledBack = await db.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES (3)');
      throw new Error('undo');
    }).catch((error: Error) => error.message);
    assert.equal(rolledBack, 'undo');
    const duplicate = await db.transaction((tx) => tx.query('INSERT INTO t VALUES (1)')).catch((error: unknown) => error);
    assert.equal((duplicate as { code?: string }).code, '23505');
    assert.deepEqual(await db.query('SELECT n FROM t ORDER BY n'), [{ n: 1 }, { n: 2 }]);

    let notified = 0;
    const listening = await db.listen('things', () => notified++);
    await db.query('NOTIFY things');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(notified, 1);
    await listening.close();
    await db.query('NOTIFY things');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(notified, 1);

    // Listening again while the last listener closes, and twice at once: one notification each time.
    const first = await db.listen('things', () => notified++);
    const [closed, again, twice] = await Promise.all([first.close(), db.listen('things', () => notified++), db.listen('things', () => notified++)]);
    assert.equal(closed, undefined);
    await db.query('NOTIFY things');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(notified, 3, 'each of the two listeners once');
    await Promise.all([again.close(), twice.close()]);
  } finally {
    await db.close();
  }
});
