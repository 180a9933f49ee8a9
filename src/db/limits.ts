import type { Queryable } from './database.js';

/**
 * Sets the lock time limit of the transaction `tx` runs: a statement that waits longer than
 * `ms` for a lock is stopped with lock_not_available (stoppedOnLimit, src/db/errors.ts). On
 * Citus the setting reaches the workers the transaction's statements run on, where row locks
 * are waited for.
 */
export const lockWaitAtMost = (ms: number) => async (tx: Queryable) => {
  await tx.query("SET LOCAL citus.propagate_set_commands = 'local'");
  await tx.query(`SET LOCAL lock_timeout = ${Math.round(ms)}`);
};
