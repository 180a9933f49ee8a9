/**
 * The service keeps its tables' statistics (src/db/statistics.ts): a table that grew past them,
 * as after a load, is ANALYZEd, on both stores (the embedded one has no autovacuum).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { analyzeGrownTables } from '../src/db/statistics.js';
import { citusUrl, makeOrder, postOrders, startService } from './helpers.js';

const service = await startService();
after(() => service.close());

const statisticsOf = async (table: string) =>
  (await service.db.query<{ pages: number; tuples: number }>('SELECT relpages AS pages, reltuples::int AS tuples FROM pg_class WHERE relname = $1', [table]))[0]!;

// On Citus the coordinator's tables hold no rows: the workers' autovacuum keeps the shards' statistics.
test('a table loaded past its statistics is analyzed once; a table that did not grow is left alone', { skip: citusUrl !== undefined }, async () => {
  // As right after a load, before PostgreSQL's autovacuum came by.
  if (service.db.kind === 'postgres') await service.db.exec('ALTER TABLE orders SET (autovacuum_enabled = false)');
  await analyzeGrownTables(service.db); // what migrations and client creation wrote
  const client = await service.createClient();
  for (let batch = 0; batch < 3; batch++) {
    const orders = Array.from({ length: 1000 }, (_, n) => makeOrder(`o-${batch}-${n}`, { time_of_purchase: '2024-03-05T12:00:00Z' }));
    assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
  }
  assert.ok((await statisticsOf('orders')).tuples <= 0, 'the load left orders without statistics');

  const analyzed = await analyzeGrownTables(service.db);
  assert.ok(analyzed.includes('orders'), analyzed.join());
  assert.ok(!analyzed.includes('spend_daily'), 'an empty table that did not grow');
  assert.equal((await statisticsOf('orders')).tuples, 3000);
  assert.deepEqual(await analyzeGrownTables(service.db), [], 'nothing grew since');
});
