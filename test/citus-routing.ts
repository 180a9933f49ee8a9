import fs from 'node:fs';
import type { Database, Queryable } from '../src/db/index.js';
import { citusStatementRules } from './citus-statement-rules.js';

/**
 * On Citus, where each statement of the service runs: `one shard` (every task of its plan is one
 * shard's, or rows computed on the coordinator all go to one client's shard), `shards` (a task
 * per shard), or `coordinator` (no distributed table). Learnt from EXPLAIN, as docs/scaling.md
 * reports it.
 */
export type Routing = 'one shard' | 'shards' | 'coordinator' | 'unexplained';

/**
 * Statements of the service that read every shard, each by design (docs/scaling.md, "Which
 * statements stay on one shard"): a claim's and a file sweep's search across clients, and the
 * list of every client. Anything else that does is a statement about one client sent everywhere.
 */
const ACROSS_CLIENTS = [
  /GROUP BY client_id\) AS queued/, // exports: the claim's ranking of clients
  /SELECT client_id, environment, export_id FROM exports\s+WHERE status = 'SUCCESS' AND files_deleted_at IS NULL/, // file sweep
  /FROM clients\s+ORDER BY/, // clients list
  /FROM attribution_totals_kept k JOIN clients c/, // the kept totals' keeper: the clients with stale ones
  /FROM clients c\s+LEFT JOIN attribution_totals_kept k/, // and those due to be kept ahead
];

interface Recorded {
  params: readonly unknown[];
  /** Where in the sources it was sent from (the service's statements only). */
  from: string;
}

const CURSOR = /^\s*DECLARE \w+ NO SCROLL CURSOR (WITH HOLD )?FOR /;
const EXPLAINABLE = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i;

/**
 * The function of the service's code that sent a statement (`src/…/file.ts:function`), or
 * undefined for the tests' own statements. Read from the call sites, not a formatted stack:
 * formatting one applies the source maps, which blocked the event loop long enough to trip the
 * overload protection.
 */
function serviceCaller(): string | undefined {
  const original = Error.prepareStackTrace;
  Error.prepareStackTrace = (_error, sites) => sites;
  const holder: { stack?: unknown } = {};
  Error.captureStackTrace(holder, serviceCaller);
  const sites = holder.stack as NodeJS.CallSite[];
  Error.prepareStackTrace = original;
  const site = sites.find((callSite) => {
    const file = callSite.getFileName() ?? '';
    return !file.includes('/src/db/') && !file.endsWith('/test/citus-routing.ts') && /\/(src|test)\//.test(file);
  });
  const file = site?.getFileName() ?? '';
  return file.includes('/src/') ? `${file.replace(/^.*\/src\//, 'src/')}:${site!.getFunctionName() ?? '(anonymous)'}` : undefined;
}

/**
 * `db` (a database of the PostgreSQL server or Citus coordinator at `url`) with every statement
 * the service sends through it recorded, and `check`, which throws when one would fail on Citus:
 * on any server, when one that writes calls a function Citus refuses there
 * (citus-statement-rules.ts); on Citus, also when one about a client reaches every shard (each
 * text EXPLAINed once). With CITUS_ROUTING_REPORT naming a file, each statement's routing is
 * appended to it (JSON lines).
 */
export function recordingStatements(db: Database, { url, citus }: { url: string; citus: boolean }): { db: Database; check(): Promise<void> } {
  const seen = new Map<string, Recorded>();
  const record = (text: string, params: readonly unknown[] = []) => {
    const sql = text.replace(CURSOR, '');
    if (seen.has(sql) || !EXPLAINABLE.test(sql)) return;
    const from = serviceCaller();
    if (from) seen.set(sql, { params, from });
  };
  const recorded = (q: Queryable): Queryable => ({
    query: (text, params) => (record(text, params), q.query(text, params)),
    exec: (script) => q.exec(script),
  });
  const wrapped: Database = {
    ...db,
    ...recorded(db),
    transaction: (work, options) => db.transaction((tx) => work(recorded(tx)), options),
    readingTogether: (count, work, options) => db.readingTogether(count, (txs) => work(txs.map(recorded)), options),
    eachBatch: (sql, params, batchSize, onBatch) => (record(sql, params), db.eachBatch(sql, params, batchSize, onBatch)),
  };
  return {
    db: wrapped,
    async check() {
      await checkStatementRules(url, seen);
      if (citus) await checkRouting(db, seen);
    },
  };
}

const WRITES = /\b(INSERT|UPDATE|DELETE)\b/i;

async function checkStatementRules(url: string, seen: Map<string, Recorded>): Promise<void> {
  const rules = await citusStatementRules(url);
  const refused: string[] = [];
  try {
    for (const [sql, { from }] of seen) {
      if (!WRITES.test(sql)) continue;
      const refusals = await rules.refusals(sql);
      if (refusals.length > 0) refused.push(`${from}: ${refusals.join('; ')}\n${sql}`);
    }
  } finally {
    await rules.close();
  }
  if (refused.length > 0) throw new Error(`Statements Citus refuses:\n${refused.join('\n\n')}`);
}

async function checkRouting(db: Database, seen: Map<string, Recorded>): Promise<void> {
  const routed = [];
  for (const [sql, { params, from }] of seen) routed.push({ sql, from, routing: await routingOf(db, sql, params) });
  const report = process.env.CITUS_ROUTING_REPORT;
  if (report) fs.appendFileSync(report, routed.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
  const wide = routed.filter(({ sql, routing }) => routing === 'shards' && !ACROSS_CLIENTS.some((pattern) => pattern.test(sql)));
  if (wide.length > 0) throw new Error(`Statements sent to every shard:\n${wide.map(({ from, sql }) => `${from}: ${sql}`).join('\n\n')}`);
}

interface PlanNode {
  'Custom Plan Provider'?: string;
  'Distributed Query'?: { Job?: { 'Task Count'?: number } };
  [key: string]: unknown;
}

async function routingOf(db: Database, sql: string, params: readonly unknown[]): Promise<Routing> {
  let plan: unknown;
  try {
    [{ 'QUERY PLAN': plan }] = (await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON, COSTS OFF) ${sql}`, params)) as [{ 'QUERY PLAN': unknown }];
  } catch {
    return 'unexplained';
  }
  const taskCounts: number[] = [];
  let distributed = false;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    const { 'Custom Plan Provider': provider, 'Distributed Query': query } = node as PlanNode;
    if (provider?.startsWith('Citus')) distributed = true;
    const count = query?.Job?.['Task Count'];
    if (count !== undefined) taskCounts.push(count);
    Object.values(node).forEach(walk);
  };
  walk(plan);
  if (!distributed) return 'coordinator';
  return taskCounts.some((count) => count > 1) ? 'shards' : 'one shard';
}
