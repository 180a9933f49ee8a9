import fs from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/index.js';
import { exportDir } from '../exports/produce.js';

/** Rows deleted per statement: each batch is a short transaction of its own, so other clients' work goes on between them. */
export const CLIENT_DELETION_BATCH_ROWS = 5_000;

/**
 * The tables holding a client's rows, children of `clients`, each with its key (which starts with
 * client_id, so a batch is found by an index scan of the client's key range). Exports come
 * first: their files go with them, and no export of the client can finish afterwards.
 */
const CLIENT_TABLES = {
  exports: ['environment', 'export_id'],
  order_aliases: ['environment', 'alias_type', 'alias_id'],
  orders: ['environment', 'order_id'],
  identities: ['environment', 'visitor_id'],
  touchpoints: ['environment', 'touchpoint_id'],
  spend_hourly: ['environment', 'platform_account_id', 'period', 'platform_name', 'campaign_id', 'adset_id', 'ad_id'],
  spend_daily: ['environment', 'platform_account_id', 'period', 'platform_name', 'campaign_id', 'adset_id', 'ad_id'],
  ad_accounts: ['environment', 'platform_name', 'platform_account_id'],
  attribution_credit_days: ['environment', 'totals', 'day', 'n'],
  attribution_visit_days: ['environment', 'day', 'n'],
  attribution_paths: ['environment', 'day', 'reach_days', 'n'],
  attribution_days: ['environment', 'totals', 'day'],
  attribution_totals_kept: ['environment'],
  attribution_changes: ['environment', 'slot'],
  attribution_change_keys: ['environment', 'visitor_id', 'customer_id'],
  attribution_learnt_models: ['environment', 'model', 'attribution_window', 'channel_grouping', 'markov_order', 'trained_from', 'trained_before'],
  exchange_rates: ['environment', 'base', 'quote', 'day'],
  api_keys: ['key_id'],
} as const;

/**
 * The tables written most, whose rows have no foreign key to `clients` (migrations 0025, 0028):
 * each write takes the lock the key's check took, once a statement, and writes nothing without
 * the client row. Their rows that arrived while the client was deleted go in its transaction.
 */
const UNKEYED_TABLES = ['touchpoints', 'orders'] as const;

export type ClientTable = keyof typeof CLIENT_TABLES | 'clients';
export type DeletedRows = Record<ClientTable, number>;

/**
 * Deletes a client: every row of it in both environments, and every export file. Its API keys
 * go first (its requests are refused from then on), then each table in batches of `batchRows`,
 * then the client itself, whose foreign keys cascade to whatever arrived meanwhile (events of
 * the public collector): a few rows, not the client's whole history in one transaction. Touchpoints
 * and orders have no such key (UNKEYED_TABLES): those that arrived meanwhile go in the client's
 * transaction, after its row, whose deletion waited for every write of them holding the row's lock.
 * Interrupted, it is simply run again. Undefined when there is no such client.
 */
export function createClientDeletion(db: Database, { exportsDir, batchRows = CLIENT_DELETION_BATCH_ROWS }: { exportsDir: string; batchRows?: number }) {
  async function deleteInBatches(table: keyof typeof CLIENT_TABLES, clientId: string, onBatch?: (exportIds: string[]) => Promise<void>) {
    const key = CLIENT_TABLES[table].join(', ');
    let deleted = 0;
    for (;;) {
      const rows = await db.query<{ export_id: string | null }>(
        `DELETE FROM ${table}
          WHERE client_id = $1 AND (${key}) IN (SELECT ${key} FROM ${table} WHERE client_id = $1 LIMIT $2)
          RETURNING ${table === 'exports' ? 'export_id' : 'NULL AS export_id'}`,
        [clientId, batchRows],
      );
      await onBatch?.(rows.map((row) => row.export_id!));
      deleted += rows.length;
      if (rows.length < batchRows) return deleted;
    }
  }

  /** An export's published files, and what its attempts left. */
  async function removeExportFiles(exportIds: string[]): Promise<void> {
    if (exportIds.length === 0) return;
    const attemptsDir = path.join(exportsDir, '.attempts');
    const attempts = await fs.readdir(attemptsDir).catch(() => [] as string[]);
    const ids = new Set(exportIds);
    const leftovers = attempts.filter((name) => ids.has(name.slice(0, 36))).map((name) => path.join(attemptsDir, name));
    const dirs = [...exportIds.map((id) => exportDir(exportsDir, id)), ...leftovers];
    await Promise.all(dirs.map((dir) => fs.rm(dir, { recursive: true, force: true })));
  }

  return {
    async delete(clientId: string): Promise<DeletedRows | undefined> {
      const found = await db.query('SELECT 1 FROM clients WHERE client_id = $1', [clientId]);
      if (found.length === 0) return undefined;
      const counts = { api_keys: await deleteInBatches('api_keys', clientId) } as DeletedRows;
      for (const table of Object.keys(CLIENT_TABLES) as (keyof typeof CLIENT_TABLES)[]) {
        if (table === 'api_keys') continue;
        counts[table] = await deleteInBatches(table, clientId, table === 'exports' ? removeExportFiles : undefined);
      }
      counts.clients = await db.transaction(async (tx) => {
        // Its second statement must see what the writes the first waited for committed: a snapshot of its own.
        await tx.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
        const client = await tx.query('DELETE FROM clients WHERE client_id = $1 RETURNING 1', [clientId]);
        for (const table of UNKEYED_TABLES) await tx.query(`DELETE FROM ${table} WHERE client_id = $1`, [clientId]);
        return client.length;
      });
      return counts;
    },
  };
}

export type ClientDeletion = ReturnType<typeof createClientDeletion>;
