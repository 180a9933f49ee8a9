import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Queryable } from '../src/db/index.js';
import { planExport, type ExportPlan } from '../src/exports/plan.js';
import type { ExportRequest } from '../src/exports/schema.js';
import { readSlices, slicesOf } from '../src/exports/slices.js';
import { startService } from './helpers.js';

/*
 * Review of 8caa7c7: when one slice fails while another is still setting up, readSlices rejects
 * at once (Promise.all), readingTogether rolls back and releases the connections, and the other
 * slice's remaining statements are then sent on a connection that is no longer in its transaction
 * (and is back in the pool).
 */
const service = await startService();
after(() => service.close());

test('no statement of a slice is sent after its transaction ended', { skip: service.db.kind !== 'postgres' }, async () => {
  const client = await service.createClient('failing');
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  const planned = planExport({ period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-30' }, metrics: [{ id: 'spend' }] } as ExportRequest, 'UTC', new Date('2024-06-01T00:00:00Z'));
  if ('problems' in planned) throw new Error('plan');
  const plan: ExportPlan = planned.plan;
  let ended = false;
  const late: string[] = [];
  const failing = (tx: Queryable): Queryable => ({
    ...tx,
    query: async (sql, params) => {
      if (sql.startsWith('DECLARE')) throw new Error('slice 1 failed');
      return tx.query(sql, params);
    },
  });
  const slow = (tx: Queryable): Queryable => ({
    ...tx,
    query: async (sql, params) => {
      // The second slice is slower to set up (a busy server): its first setting takes a second.
      if (sql.includes('work_mem')) await tx.query('SELECT pg_sleep(1)');
      const settled = await tx.query(sql, params).then(
        (rows) => ({ ok: true as const, rows }),
        (error: Error) => ({ ok: false as const, error }),
      );
      if (ended) late.push(`${sql.slice(0, 40)} -> ${settled.ok ? 'ran' : settled.error.message}`);
      if (!settled.ok) throw settled.error;
      return settled.rows as never;
    },
  });
  await assert.rejects(
    service.db.readingTogether(2, (txs) => readSlices([failing(txs[0]!), slow(txs[1]!)], tenant, plan, slicesOf(plan, 2), { batchSize: 10, select: ['1 AS one'] }, async () => {})),
    /slice 1 failed/,
  );
  ended = true;
  await new Promise((resolve) => setTimeout(resolve, 2500));
  console.log(late);
  assert.deepEqual(late, []);
});
