/**
 * The import: records read a batch at a time, batches sent `concurrency` at once through the
 * typed client, refused records written to the reject file, acknowledged batches to the checkpoint.
 * Reading waits for a free sender, so memory holds at most concurrency + 1 batches.
 */
import fs from 'node:fs';
import { EncodedJson, Tributary, TributaryError, type TributaryErrorItem } from '../client/index.js';
import { parsedOrText, textOf, type Item } from './read.js';
import type { Source, Target } from './sources.js';

export interface Summary {
  sent: number;
  inserted: number;
  updated: number;
  warnings: number;
  rejected: number;
  /** Records of batches an earlier run had acknowledged (with --resume): not sent again. */
  skipped: number;
}

export interface Checkpoint {
  file: string;
  size: number;
  target: Target;
  batch_size: number;
  /** Every batch below this one is acknowledged... */
  acknowledged_below: number;
  /** ...and these above it (batches finish out of order). */
  acknowledged: number[];
  /** What the acknowledged batches added up to, over every run. */
  totals: Summary;
}

export interface Progress {
  update(summary: Summary, bytesRead: number): void;
  stop(summary: Summary, bytesRead: number): void;
}

export interface ImportOptions {
  client: Tributary;
  source: Source;
  file: string;
  concurrency: number;
  batchSize: number;
  rejectFile: string;
  /** Omitted: no checkpoint (a dry run stores nothing to resume from). */
  checkpointFile?: string;
  resume: boolean;
  progress: Progress;
  signal?: AbortSignal;
}

/** How one target's batch is sent, where its problems point, and what a request may hold once. */
interface Sender {
  send(records: unknown[], signal?: AbortSignal): Promise<{ inserted: number; updated: number; warnings: number }>;
  /** The index in the batch of the record a problem's loc names. */
  recordPath: RegExp;
  /** The key a request may hold once (none when it cannot be read: the API refuses that record anyway). */
  keyOf(item: Item): string | undefined;
}

const fieldOf = (value: unknown, field: string) => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined);

/**
 * The key of orders and touchpoints: a string id. A JSON text is not parsed for it, which would
 * double the importer's CPU: its id is the value of the text's last `"field":` (the one JSON.parse
 * keeps; the objects inside orders and touchpoints have no such field). Only a text without one
 * (an id that is not a string, a field name written with escapes) is parsed.
 */
function idReader(field: 'order_id' | 'touchpoint_id'): Sender['keyOf'] {
  const pattern = new RegExp(`"${field}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`, 'g');
  return (item) => {
    const text = textOf(item);
    const literal = text === undefined ? undefined : [...text.matchAll(pattern)].at(-1)?.[1];
    const id = literal === undefined ? fieldOf(recordOf(item), field) : parsedOrText(literal);
    return typeof id === 'string' ? id : undefined;
  };
}

async function senderFor(client: Tributary, target: Target): Promise<Sender> {
  if (target === 'orders') {
    return {
      recordPath: /^body\/(\d+)/,
      keyOf: idReader('order_id'),
      send: async (records, signal) => {
        const result = await client.orders.upsert(records as never, { signal });
        return { inserted: result.inserted, updated: result.updated, warnings: result.warnings.length };
      },
    };
  }
  if (target === 'touchpoints') {
    return {
      recordPath: /^body\/data\/(\d+)/,
      keyOf: idReader('touchpoint_id'),
      send: async (records, signal) => {
        const { inserted, updated } = await client.touchpoints.upsert(records as never, { signal });
        return { inserted, updated, warnings: 0 };
      },
    };
  }
  if (target === 'rates') {
    return {
      recordPath: /^body\/data\/(\d+)/,
      // A request holds a pair's rate of a day once.
      keyOf: (item) => {
        const record = item.record;
        return record ? JSON.stringify([record.date, record.base, record.quote]) : undefined;
      },
      send: async (records, signal) => {
        const { inserted, updated } = await client.exchangeRates.upsert(records as never, { signal });
        return { inserted, updated, warnings: 0 };
      },
    };
  }
  // Loaded for spend only: the spend schemas bring TypeBox, some 20 MB an import of orders does without.
  const [{ daily, hourly }, { spendKey }] = await Promise.all([import('../spend/collection.js'), import('../spend/schema.js')]);
  const [collection, spend] = target === 'spend_hourly' ? [client.spend.hourly, hourly] : [client.spend.daily, daily];
  return {
    recordPath: /^body\/data\/(\d+)/,
    keyOf: (item) => {
      const record = recordOf(item);
      return typeof record === 'object' && record !== null ? spendKey(spend, record as Record<string, unknown>) : undefined;
    },
    send: async (records, signal) => {
      const { data, warnings } = await collection.upsert(records as never, { signal });
      // The API answers the records as stored: a key written for the first time has both stamps equal.
      const inserted = data.filter((record) => record.created_at === record.updated_at).length;
      return { inserted, updated: data.length - inserted, warnings: warnings.length };
    },
  };
}

interface Reject {
  line: number;
  record: unknown;
  errors: TributaryErrorItem[] | { msg: string }[];
}

const emptySummary = (): Summary => ({ sent: 0, inserted: 0, updated: 0, warnings: 0, rejected: 0, skipped: 0 });

function add(total: Summary, part: Partial<Summary>) {
  for (const key of Object.keys(part) as (keyof Summary)[]) total[key] += part[key] ?? 0;
}

const recordOf = (item: Item) => item.record ?? parsedOrText(textOf(item)!);
const payloadOf = (item: Item) => item.record ?? new EncodedJson(item.json!);

/** Items whose JSON text does not parse: the cause of an answer that the body is not JSON. */
function unparsable(items: readonly Item[]): Map<number, { msg: string }[]> {
  const problems = new Map<number, { msg: string }[]>();
  items.forEach((item, index) => {
    const text = textOf(item);
    if (text === undefined) return;
    try {
      JSON.parse(text);
    } catch (error) {
      problems.set(index, [{ msg: `Not JSON: ${(error as Error).message}` }]);
    }
  });
  return problems;
}

/**
 * Sends the readable records of a batch; records the API refuses are set aside with its reasons
 * and the rest sent again, until the API takes what is left. A batch too large for the server
 * (413) is sent in halves.
 */
async function sendBatch(sender: Sender, items: Item[], signal: AbortSignal | undefined): Promise<{ result: Partial<Summary>; rejects: Reject[] }> {
  const rejects: Reject[] = items.filter((item) => item.problem).map((item) => ({ line: item.line, record: recordOf(item), errors: [{ msg: item.problem! }] }));
  let pending = items.filter((item) => !item.problem);
  const result: Partial<Summary> = { sent: 0, inserted: 0, updated: 0, warnings: 0 };
  while (pending.length > 0) {
    try {
      const stored = await sender.send(pending.map(payloadOf), signal);
      add(result as Summary, { ...stored, sent: pending.length });
      break;
    } catch (error) {
      if (!(error instanceof TributaryError)) throw error;
      if (error.status === 413 && pending.length > 1) {
        const half = Math.ceil(pending.length / 2);
        for (const part of [pending.slice(0, half), pending.slice(half)]) {
          const sent = await sendBatch(sender, part, signal);
          add(result as Summary, sent.result);
          rejects.push(...sent.rejects);
        }
        break;
      }
      if (error.status !== 400 && error.status !== 422) throw error;
      const byRecord = new Map<number, TributaryErrorItem[] | { msg: string }[]>();
      const placed = (error.errors ?? []).every((problem) => {
        const index = sender.recordPath.exec(problem.loc)?.[1];
        if (index === undefined || Number(index) >= pending.length) return false;
        byRecord.set(Number(index), [...((byRecord.get(Number(index)) ?? []) as TributaryErrorItem[]), problem]);
        return true;
      });
      // A problem of the whole request (not of a record): the lines that are not JSON, when
      // there are; else every record goes to the reject file with it.
      const refused = placed && byRecord.size > 0 ? byRecord : unparsable(pending);
      if (refused.size === 0) pending.forEach((_, index) => refused.set(index, error.errors ?? [{ loc: 'body', msg: error.message, type: 'request' }]));
      rejects.push(...[...refused].map(([index, errors]) => ({ line: pending[index]!.line, record: recordOf(pending[index]!), errors })));
      pending = pending.filter((_, index) => !refused.has(index));
    }
  }
  return { result: { ...result, rejected: rejects.length }, rejects };
}

/**
 * A batch's records in rounds that hold each key once, as a request must: the first record of
 * each key in the first round, its second in the next, and so on. The rounds are sent one after
 * the other, so of two records of one key, the one later in the file is stored last.
 */
async function sendRounds(sender: Sender, items: Item[], keys: (string | undefined)[], signal: AbortSignal | undefined): Promise<{ result: Partial<Summary>; rejects: Reject[] }> {
  const rounds: Item[][] = [];
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const key = keys[index];
    const round = key === undefined ? 0 : (seen.get(key) ?? 0);
    if (key !== undefined) seen.set(key, round + 1);
    (rounds[round] ??= []).push(item);
  });
  const result = emptySummary();
  const rejects: Reject[] = [];
  for (const round of rounds) {
    const sent = await sendBatch(sender, round, signal);
    add(result, sent.result);
    rejects.push(...sent.rejects);
  }
  return { result, rejects };
}

function readCheckpoint(file: string): Checkpoint | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Checkpoint;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export async function runImport(options: ImportOptions): Promise<Summary> {
  const { client, source, file, concurrency, batchSize, rejectFile, checkpointFile, progress, signal } = options;
  const sender = await senderFor(client, source.target);
  const earlier = options.resume && checkpointFile ? readCheckpoint(checkpointFile) : undefined;
  if (earlier && (earlier.size !== source.size || earlier.target !== source.target || earlier.batch_size !== batchSize)) {
    throw new Error(`${checkpointFile} is the checkpoint of another import (another file size, kind or batch size): remove it, or leave out --resume`);
  }
  const checkpoint: Checkpoint = earlier ?? {
    file,
    size: source.size,
    target: source.target,
    batch_size: batchSize,
    acknowledged_below: 0,
    acknowledged: [],
    totals: emptySummary(),
  };
  const acknowledged = new Set(checkpoint.acknowledged);
  const isAcknowledged = (batch: number) => batch < checkpoint.acknowledged_below || acknowledged.has(batch);
  const summary = emptySummary();
  const rejects = fs.createWriteStream(rejectFile, { flags: earlier ? 'a' : 'w' });

  // Saves are chained, each replacing the file whole (written aside, then renamed), so that a
  // kill leaves the last checkpoint or the one before it, never half of one.
  let saving = Promise.resolve();
  const save = () => {
    if (!checkpointFile) return saving;
    const text = JSON.stringify({ ...checkpoint, acknowledged: [...acknowledged].sort((a, b) => a - b) });
    saving = saving.then(async () => {
      await fs.promises.writeFile(`${checkpointFile}.tmp`, text);
      await fs.promises.rename(`${checkpointFile}.tmp`, checkpointFile);
    });
    return saving;
  };

  const inFlight = new Set<Promise<void>>();
  // The batch in flight that holds each key: a later record of the key waits for its answer.
  const keyHolders = new Map<string, Promise<void>>();
  let failure: unknown;
  const dispatch = async (batch: number, items: Item[]) => {
    if (isAcknowledged(batch)) {
      summary.skipped += items.length;
      return;
    }
    const keys = items.map((item) => (item.problem ? undefined : sender.keyOf(item)));
    await Promise.all(keys.map((key) => key !== undefined && keyHolders.get(key)));
    while (inFlight.size >= concurrency) await Promise.race(inFlight);
    if (failure) return;
    const sending = sendRounds(sender, items, keys, signal).then(
      async ({ result, rejects: refused }) => {
        // The rejects reach the file (the system's, which a killed process cannot lose) before the
        // batch counts as acknowledged: a resume never loses one.
        if (refused.length > 0) {
          const lines = refused.map((reject) => `${JSON.stringify(reject)}\n`).join('');
          await new Promise<void>((resolve, reject) => rejects.write(lines, (error) => (error ? reject(error) : resolve())));
        }
        add(summary, result);
        add(checkpoint.totals, result);
        acknowledged.add(batch);
        while (acknowledged.delete(checkpoint.acknowledged_below)) checkpoint.acknowledged_below++;
        await save();
        progress.update(summary, source.bytesRead());
      },
      (error: unknown) => void (failure ??= error),
    );
    const tracked = sending.finally(() => {
      inFlight.delete(tracked);
      for (const key of keys) if (key !== undefined && keyHolders.get(key) === tracked) keyHolders.delete(key);
    });
    inFlight.add(tracked);
    for (const key of keys) if (key !== undefined) keyHolders.set(key, tracked);
  };

  try {
    let batch = 0;
    let items: Item[] = [];
    for await (const item of source.items) {
      items.push(item);
      if (items.length === batchSize) {
        await dispatch(batch++, items);
        items = [];
      }
      if (failure) break;
    }
    if (items.length > 0 && !failure) await dispatch(batch, items);
    await Promise.all(inFlight);
  } finally {
    await Promise.all(inFlight);
    await new Promise((resolve) => rejects.end(resolve));
    await saving;
    progress.stop(summary, source.bytesRead());
  }
  if (failure) throw failure;
  return summary;
}
