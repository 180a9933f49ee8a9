import type { Queryable } from './database.js';

/**
 * Where each table lives on a distributed PostgreSQL (Citus), docs/scaling.md "Placement":
 * `distributed`, by client_id and co-located with clients, so that a client's rows of every
 * table are on one node and a statement about one client runs on one shard; `reference`, a copy
 * on every node; `coordinator`, a plain table that only the coordinator has. Every table of the
 * schema must be named here: the migrations refuse to finish on Citus otherwise.
 */
export const TABLE_PLACEMENT = {
  clients: 'distributed',
  api_keys: 'distributed',
  orders: 'distributed',
  order_aliases: 'distributed',
  spend_hourly: 'distributed',
  spend_daily: 'distributed',
  ad_accounts: 'distributed',
  exports: 'distributed',
  touchpoints: 'distributed',
  identities: 'distributed',
  attribution_changes: 'distributed',
  attribution_change_keys: 'distributed',
  attribution_totals_kept: 'distributed',
  attribution_days: 'distributed',
  attribution_credit_days: 'distributed',
  attribution_visit_days: 'distributed',
  attribution_paths: 'distributed',
  attribution_learnt_models: 'distributed',
  exchange_rates: 'distributed',
  service_settings: 'reference',
  schema_migrations: 'coordinator',
} as const satisfies Record<string, 'distributed' | 'reference' | 'coordinator'>;

/** The table every distributed table is co-located with. */
const ANCHOR = 'clients';

/** Functions that statements call on the shards' rows, so every node must have them. */
const SHARD_FUNCTIONS = ['utc_iso(timestamptz)', 'utc_offset(timestamptz, text)', 'latest_refund_at(jsonb)'];

export async function hasCitus(q: Queryable): Promise<boolean> {
  const [row] = await q.query<{ citus: boolean }>(`SELECT exists(SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`);
  return row!.citus;
}

/** Tables of the schema that TABLE_PLACEMENT does not name. */
export async function tablesWithoutPlacement(q: Queryable): Promise<string[]> {
  const rows = await q.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  return rows.map((row) => row.name).filter((name) => !Object.hasOwn(TABLE_PLACEMENT, name));
}

/**
 * Places every table that is not placed yet as TABLE_PLACEMENT says (the anchor first, which the
 * others are co-located with), and makes the shards' functions exist on every node. Does nothing
 * to what is already placed, so it runs at every migration; a table created by a later migration
 * is placed in that migration's transaction.
 */
export async function placeTables(q: Queryable): Promise<void> {
  const unplaced = await tablesWithoutPlacement(q);
  if (unplaced.length > 0) throw new Error(`Tables without a placement for Citus (src/db/citus.ts): ${unplaced.join(', ')}`);
  const placed = new Set(
    (await q.query<{ name: string }>('SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition')).map((row) => row.name),
  );
  const tables = Object.entries(TABLE_PLACEMENT).sort(([a], [b]) => Number(b === ANCHOR) - Number(a === ANCHOR));
  for (const [table, placement] of tables) {
    if (placed.has(table)) continue;
    if (placement === 'distributed') {
      await q.query(`SELECT create_distributed_table($1, 'client_id', colocate_with => $2)`, [table, table === ANCHOR ? 'default' : ANCHOR]);
    } else if (placement === 'reference') {
      await q.query('SELECT create_reference_table($1)', [table]);
    }
  }
  for (const signature of SHARD_FUNCTIONS) {
    const [known] = await q.query('SELECT 1 FROM pg_dist_object WHERE classid = $1::regclass AND objid = $2::regprocedure', [
      'pg_proc',
      signature,
    ]);
    if (!known) await q.query('SELECT create_distributed_function($1)', [signature]);
  }
}
