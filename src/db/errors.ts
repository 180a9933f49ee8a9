/**
 * What an error of the database means to the service: the one place that reads PostgreSQL's
 * error codes (SQLSTATE) and the driver's ways of saying the connection is gone.
 */

/** SQLSTATE codes: five characters. Errors carrying one come from PostgreSQL. */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The SQLSTATE code of `error`, if it comes from PostgreSQL. */
export function sqlstateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SQLSTATE.test(code) ? code : undefined;
}

/** SQLSTATE codes PostgreSQL uses when a transaction lost a race and may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);

/** Whether `error` says that a transaction lost a race (serialization failure, deadlock). */
export function isRetryable(error: unknown): boolean {
  return RETRYABLE.has((error as { code?: string } | null)?.code ?? '');
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03']);
/** What the pg driver says, without a code, when it loses or cannot get a connection. */
const UNREACHABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;

/** Whether `error` says the database cannot be reached (as opposed to refusing a statement). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNREACHABLE.has(code) || code.startsWith('08'))) return true;
  return typeof message === 'string' && UNREACHABLE_MESSAGES.test(message);
}

/**
 * Why the database stopped a statement of ours on a limit, when that is what `error` says: it ran
 * past the statement time limit (statement_timeout), or waited past a lock time limit
 * (lock_timeout) for a lock another transaction held.
 */
export function stoppedOnLimit(error: unknown): 'statement_time' | 'lock_wait' | undefined {
  const code = sqlstateOf(error);
  const message = String((error as { message?: unknown } | null)?.message);
  if (code === '57014' && message.includes('statement timeout')) return 'statement_time';
  if (code === '55P03' && message.includes('lock timeout')) return 'lock_wait';
  return undefined;
}

/** A write that found its client deleted after the request naming it was authenticated. */
export class ClientGoneError extends Error {
  constructor() {
    super('The client was deleted while the request was handled');
  }
}

/**
 * The table and foreign key a foreign-key violation names: from the error's fields, else from
 * its message (Citus passes a worker's error on with its message alone). A shard's names carry
 * its number (`spend_hourly_102008`, `spend_hourly_client_id_fkey_102008`), left out here.
 */
function violatedForeignKey(error: { table?: unknown; constraint?: unknown; message?: unknown }): { table: string; constraint: string } | undefined {
  const named =
    typeof error.table === 'string' && typeof error.constraint === 'string'
      ? [error.table, error.constraint]
      : /^insert or update on table "(\w+)" violates foreign key constraint "(\w+)"/.exec(String(error.message))?.slice(1);
  const [table, constraint] = (named ?? []).map((name) => name.replace(/_\d+$/, ''));
  return table !== undefined && constraint !== undefined ? { table, constraint } : undefined;
}

/**
 * Whether `error` says that the client of a write no longer exists: a ClientGoneError, or a row
 * refused by its table's foreign key to clients, `<table>_client_id_fkey` as PostgreSQL names one
 * made without a name (the client was deleted after the request was authenticated, before its
 * write).
 */
export function isClientGone(error: unknown): boolean {
  if (error instanceof ClientGoneError) return true;
  if (sqlstateOf(error) !== '23503') return false;
  const violated = violatedForeignKey(error as object);
  return violated !== undefined && violated.constraint === `${violated.table}_client_id_fkey`;
}

/** Why the database refused a value of a statement, when that is what `error` says. */
export type RefusedValue = 'unstorable' | 'too_long' | 'out_of_range';

export function refusedValue(error: unknown): RefusedValue | undefined {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || code.length !== 5) return undefined;
  if (code.startsWith('22')) return 'unstorable'; // data exception
  if (code === '54000') return 'too_long'; // program limit exceeded
  if (code === '23514') return 'out_of_range'; // check violation
  return undefined;
}
