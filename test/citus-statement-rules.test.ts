import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { takeChangedKeys } from '../src/attribution/changes.js';
import { recordingStatements } from './citus-routing.js';
import { citusStatementRules } from './citus-statement-rules.js';
import { citusUrl, createTestDatabase, serverUrl } from './helpers.js';

/*
 * The rules of test/citus-statement-rules.ts, which every test file on a PostgreSQL server
 * applies to the statements the service sent (test/helpers.ts): each example below is refused or
 * allowed as Citus refuses or allows it. On a Citus coordinator (CITUS_URL), Citus itself is asked
 * too, so that the rules cannot drift from it unseen. They need a server: PGlite is skipped.
 */

const skip = serverUrl ? false : 'needs a PostgreSQL server (DATABASE_URL or CITUS_URL)';
const store = serverUrl ? await createTestDatabase() : undefined;
after(() => store?.drop());

interface Example {
  sql: string;
  params: unknown[];
  /** What the rules answer. */
  refusals: string[];
  /** Whether Citus refuses it: as the rules, except where they are stricter. */
  citusRefuses: boolean;
}

const at = '2024-03-08T01:00:00Z';
const keys = 'attribution_change_keys';
const insertKey = `INSERT INTO ${keys} AS k (client_id, environment, visitor_id, customer_id, earliest, latest, linked) VALUES ($1, 'production', 'v', '', $2, $2, 0)
  ON CONFLICT (client_id, environment, visitor_id, customer_id) DO UPDATE SET`;

const refused = (sql: string, params: unknown[], ...refusals: string[]): Example => ({ sql, params, refusals, citusRefuses: true });
const allowed = (sql: string, params: unknown[]): Example => ({ sql, params, refusals: [], citusRefuses: false });

const EXAMPLES: Example[] = [
  refused(`DELETE FROM ${keys} WHERE client_id = $1 RETURNING visitor_id, earliest::text`, [randomUUID()], 'DELETE: RETURNING calls timestamptz_out (stable)'),
  refused(`UPDATE ${keys} SET linked = 1 WHERE client_id = $1 RETURNING now()`, [randomUUID()], 'UPDATE: RETURNING calls now (stable)'),
  refused(`${insertKey} latest = now()`, [randomUUID(), at], 'INSERT: DO UPDATE SET latest calls now (stable)'),
  refused(`UPDATE ${keys} SET linked = (random() * 2)::int WHERE client_id = $1`, [randomUUID()], 'UPDATE: SET linked calls random (volatile)'),
  refused(
    `UPDATE ${keys} SET latest = earliest + interval '1 day' WHERE client_id = $1`,
    [randomUUID()],
    'UPDATE: SET latest calls timestamptz_pl_interval (stable) applied to a column',
  ),
  refused(
    `UPDATE ${keys} SET latest = coalesce($2::text::timestamptz, latest) WHERE client_id = $1`,
    [randomUUID(), at],
    'UPDATE: SET latest calls timestamptz_in (stable) inside COALESCE',
  ),
  refused(`DELETE FROM ${keys} WHERE client_id = $1 AND earliest::date = $2`, [randomUUID(), '2024-03-08'], 'DELETE: WHERE calls date (stable) applied to a column'),
  // The fix of takeChangedKeys: the cast made outside the DELETE (Citus sends the whole statement to the shard).
  allowed(`WITH d AS (DELETE FROM ${keys} WHERE client_id = $1 RETURNING visitor_id, earliest) SELECT visitor_id, earliest::text FROM d`, [randomUUID()]),
  // Stable functions of no column (computed on the coordinator), immutable ones of columns.
  allowed(`UPDATE ${keys} SET latest = now() + make_interval(secs => $2), linked = linked + 1 WHERE client_id = $1 AND earliest < $3 RETURNING linked * 2`, [
    randomUUID(),
    60,
    at,
  ]),
  allowed(`${insertKey} earliest = least(k.earliest, excluded.earliest), linked = k.linked RETURNING xmax = 0 AS inserted, earliest`, [randomUUID(), at]),
  // Casts read from a subquery's column and from an array's elements, names that are structure in a query tree.
  allowed(`UPDATE ${keys} SET visitor_id = (SELECT max(linked) FROM ${keys} WHERE client_id = $1)::text WHERE client_id = $1 RETURNING visitor_id AS "(", customer_id AS "<>"`, [
    randomUUID(),
  ]),
  allowed(`DELETE FROM ${keys} WHERE client_id = $1 AND visitor_id = ANY ($2::int[]::text[]) RETURNING linked AS "}{"`, [randomUUID(), [1, 2]]),
  refused(
    `MERGE INTO ${keys} k USING (SELECT $1::uuid AS client_id) s ON k.client_id = s.client_id WHEN MATCHED THEN UPDATE SET latest = now()`,
    [randomUUID()],
    'MERGE: its statement calls now (stable)',
  ),
  // Stricter than Citus: it plans an INSERT … SELECT apart, and would compute this RETURNING on a worker.
  {
    sql: `INSERT INTO ${keys} (client_id, environment, visitor_id, customer_id, earliest, latest, linked)
          SELECT $1, 'production', v, '', $2, $2, 0 FROM unnest(ARRAY['a', 'b']) AS v RETURNING earliest < $2::timestamptz - interval '1 day'`,
    params: [randomUUID(), at],
    refusals: ['INSERT: RETURNING calls timestamptz_mi_interval (stable)'],
    citusRefuses: false,
  },
];

test('the rules refuse what Citus refuses in a write: RETURNING, DO UPDATE SET, an UPDATE’s SET and a WHERE', { skip }, async () => {
  const rules = await citusStatementRules(store!.url!);
  try {
    for (const { sql, refusals } of EXAMPLES) assert.deepEqual(await rules.refusals(sql), refusals, sql);
  } finally {
    await rules.close();
  }
});

test('Citus refuses exactly the examples the rules refuse, but for the one where they are stricter', { skip: citusUrl ? false : 'needs CITUS_URL' }, async () => {
  for (const { sql, params, citusRefuses } of EXAMPLES) {
    const planned = store!.db.query(`EXPLAIN ${sql}`, params);
    // Each of Citus's refusals names the volatility it refuses.
    if (citusRefuses) await assert.rejects(planned, { message: /IMMUTABLE|STABLE|VOLATILE/ }, sql);
    else await planned;
  }
});

test('the keys a report takes are returned as text by a statement Citus runs, and the check over recorded statements finds it so', { skip }, async () => {
  const recorder = recordingStatements(store!.db, { url: store!.url!, citus: false });
  const tenant = { clientId: randomUUID(), environment: 'production' as const, dryRun: false };
  await store!.db.query('INSERT INTO clients (client_id, name) VALUES ($1, $2)', [tenant.clientId, 'rules']);
  await store!.db.query(`INSERT INTO ${keys} (client_id, environment, visitor_id, customer_id, earliest, latest, linked) VALUES ($1, 'production', 'v1', '', $2, $2, 1)`, [
    tenant.clientId,
    at,
  ]);
  const taken = await takeChangedKeys(recorder.db, tenant);
  assert.equal(taken.length, 1);
  assert.equal(new Date(taken[0]!.earliest!).toISOString(), new Date(at).toISOString());
  await recorder.check();
});
