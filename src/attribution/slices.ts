import type { Tenant } from '../auth/tenant.js';
import { declareCursor, type Database, type Queryable } from '../db/index.js';
import type { Row } from '../db/database.js';
import { addDays, localToday } from '../calendar.js';
import { analyzeGrownTables } from '../db/statistics.js';
import { exportRowsSql, ROWS_TRANSACTION_SETTINGS, type RowsPlan } from './rows.js';

/*
 * A long export's statement runs on one core of the database for minutes (a year of three models
 * in both modes: 156 s). Its buckets are computed independently of one another, so its period is
 * cut into slices, each computed by a statement of its own on a connection of its own, side by
 * side, in one snapshot; the rows are read back in the statement's order.
 */

export type Slice = NonNullable<RowsPlan['slice']>;

/** The local days a period covers: [first, end). */
function localDays(plan: RowsPlan): [string, string] {
  const { period, timeZone } = plan;
  if (period.kind === 'days') return [period.from, period.to];
  const lastInstant = new Date(new Date(period.to).getTime() - 1);
  return [localToday(timeZone, new Date(period.from)), addDays(localToday(timeZone, lastInstant), 1)];
}

/** Whether a local day starts a bucket of `granularity`. */
const startsBucket: Record<'DAILY' | 'WEEKLY' | 'MONTHLY', (day: string) => boolean> = {
  DAILY: () => true,
  WEEKLY: (day) => new Date(`${day}T00:00:00Z`).getUTCDay() === 1,
  MONTHLY: (day) => day.endsWith('-01'),
};

/**
 * The plan's period cut into at most `count` slices of about as many buckets, each starting on the
 * first day of a bucket. Rows of HOURLY or PERIOD buckets, or read from kept totals, are one slice,
 * as is a period of one bucket.
 */
export function slicesOf(plan: RowsPlan, count: number): Slice[] {
  const { granularity } = plan;
  if (count < 2 || plan.fromKeptTotals || granularity === 'HOURLY' || granularity === 'PERIOD') return [{}];
  const [first, end] = localDays(plan);
  const starts: string[] = [];
  for (let day = addDays(first, 1); day < end; day = addDays(day, 1)) if (startsBucket[granularity](day)) starts.push(day);
  const bounds: string[] = [];
  for (let part = 1; part < count; part++) {
    const start = starts[Math.floor((part * (starts.length + 1)) / count) - 1];
    if (start !== undefined && start !== bounds.at(-1)) bounds.push(start);
  }
  return [undefined, ...bounds].map((fromDay, index) => ({ ...(fromDay && { fromDay }), ...(bounds[index] && { toDay: bounds[index] }) }));
}

/**
 * Rows of one slice's cursor, handed on a run at a time. The next batch is fetched while the
 * last is being used, so that the database sends rows while they are written.
 */
class SliceRows {
  private rows: Row[] = [];
  private next = 0;
  private ended = false;
  private fetching: Promise<Row[]> | undefined;

  constructor(
    private readonly fetch: () => Promise<Row[]>,
    private readonly batchSize: number,
  ) {}

  async fill() {
    this.rows = await (this.fetching ?? this.fetch());
    this.next = 0;
    this.ended = this.rows.length < this.batchSize;
    this.fetching = this.ended ? undefined : this.fetch();
    // Its failure is met when it is awaited; until then it must not count as unhandled.
    this.fetching?.catch(() => {});
  }

  /** Hands on the rows for which `belongs` holds, up to the first for which it does not, or the end. */
  async readWhile(belongs: (row: Row) => boolean, onBatch: (rows: Row[]) => Promise<void>) {
    for (;;) {
      if (this.next === this.rows.length) {
        if (this.ended) return;
        await this.fill();
        continue;
      }
      let end = this.next;
      while (end < this.rows.length && belongs(this.rows[end]!)) end++;
      if (end > this.next) await onBatch(this.rows.slice(this.next, end));
      const stopped = end < this.rows.length;
      this.next = end;
      if (stopped) return;
    }
  }
}

export interface SlicedRowsOptions {
  /** Connections the slices are computed on, side by side (PGlite: one, whatever is asked). */
  connections: number;
  /** Rows fetched at a time: a batch handed on holds at most as many. */
  batchSize: number;
  /** What is read of each of the statement's rows `r`: SQL expressions, evaluated as the rows are fetched. */
  select: string[];
}

/**
 * Reads what `select` says of a plan's rows, in its statement's order, a batch at a time, from
 * slices computed side by side, in one snapshot, once the tables' statistics are up to date;
 * given up, its statements cancelled, when `signal` aborts.
 */
export async function readSlicedRows(
  db: Database,
  tenant: Tenant,
  plan: RowsPlan,
  options: SlicedRowsOptions & { signal?: AbortSignal },
  onBatch: (rows: Row[]) => Promise<void>,
) {
  await analyzeGrownTables(db);
  await db.readingTogether(
    slicesOf(plan, options.connections).length,
    (txs) => readSlices(txs, tenant, plan, slicesOf(plan, txs.length), options, onBatch),
    { signal: options.signal },
  );
}

/**
 * Reads the rows of `slices` as readSlicedRows does, slice i on `txs[i]`, or in turn on the one
 * transaction given (a connection's cursors are read one FETCH at a time). A statement sorts its
 * rows by combination, then bucket: each combination's rows are read slice after slice.
 */
export async function readSlices(
  txs: Queryable[],
  tenant: Tenant,
  plan: RowsPlan,
  slices: Slice[],
  { batchSize, select }: Pick<SlicedRowsOptions, 'batchSize' | 'select'>,
  onBatch: (rows: Row[]) => Promise<void>,
): Promise<void> {
  const combinations = plan.attribution?.length ?? 0;
  // Every slice's statements are settled before the first failure is thrown: thrown at once, it
  // would end the transactions (and release their connections to the pool) while the other
  // slices still send theirs on them.
  const settled = await Promise.allSettled(
    slices.map(async (slice, index) => {
      const tx = txs[index % txs.length]!;
      for (const setting of ROWS_TRANSACTION_SETTINGS) await tx.query(setting);
      const { sql: rowsSql, params } = exportRowsSql({ tenant, ...plan, slice });
      // Above the statement's sort, so computed as each row is fetched, not for every row before the first.
      const sql = `SELECT ${[...select, ...(combinations > 0 ? ['r.combination'] : [])].join(', ')} FROM (${rowsSql}) AS r`;
      const cursor = await declareCursor<Row>(tx, { sql, params, hold: false });
      const reader = new SliceRows(() => cursor.fetch(batchSize), batchSize);
      // The first FETCH computes the slice's sorted rows: the slices' statements run side by side.
      await reader.fill();
      return reader;
    }),
  );
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  const readers = settled.map((outcome) => (outcome as PromiseFulfilledResult<SliceRows>).value);
  if (combinations === 0) {
    for (const reader of readers) await reader.readWhile(() => true, onBatch);
    return;
  }
  // `combination` counts the plan's combinations from 1 (bigint: text from the driver).
  for (let combination = 1; combination <= combinations; combination++) {
    for (const reader of readers) await reader.readWhile((row) => Number(row.combination) === combination, onBatch);
  }
}
