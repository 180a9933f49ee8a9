import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import type { SpendCollection } from './collection.js';

/** An inclusive range of periods, written as the API writes them (date-times or dates). */
export interface PeriodRange {
  from: string;
  to: string;
}

export interface SpendFilter {
  /** Absent: every account. */
  platform_account_id?: string;
  campaign_id?: string;
  adset_id?: string;
  ad_id?: string;
}

/** What a delete matches: every platform's record of this period and these ids. */
export interface SpendMatch {
  period: string;
  platform_account_id: string;
  campaign_id: string;
  adset_id: string;
  ad_id: string;
}

const KEY = 'platform_account_id, period, platform_name, campaign_id, adset_id, ad_id';
const VALUES = 'campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks';
// The account sorts records of one platform apart; a list of one account is in the index's order.
const ORDER = 'period, platform_name, platform_account_id, campaign_id, adset_id, ad_id';

export type SpendRepository = ReturnType<typeof createSpendRepository>;

/**
 * Spend records of one collection. Records leave as JSON text built by PostgreSQL (several of
 * them joined by commas), so amounts keep their exact decimals all the way to the caller.
 */
export function createSpendRepository(db: Database, collection: SpendCollection) {
  const { table, timeField, sqlType } = collection;

  /** The JSON texts of the rows `row`, in `order`, joined by commas. */
  const recordsJson = (row: string, order: string) => `coalesce(string_agg(json_build_object(
      '${timeField}', ${collection.periodText(`${row}.period`)},
      'platform_account_id', ${row}.platform_account_id, 'platform_name', ${row}.platform_name,
      'campaign_id', ${row}.campaign_id, 'campaign_name', ${row}.campaign_name,
      'adset_id', ${row}.adset_id, 'adset_name', ${row}.adset_name,
      'ad_id', ${row}.ad_id, 'ad_name', ${row}.ad_name,
      'spend', ${row}.spend, 'spend_currency', ${row}.spend_currency,
      'impressions', ${row}.impressions, 'clicks', ${row}.clicks,
      'created_at', utc_iso(${row}.created_at), 'updated_at', utc_iso(${row}.updated_at))::text, ',' ORDER BY ${order}), '') AS items`;

  // The records of a request body ($1), with the specification's defaults: "" for the optional
  // ids and names, 0 for missing or empty measures.
  const measure = (field: string) => `coalesce(nullif(r->>'${field}', ''), '0')::numeric AS ${field}`;
  const orEmpty = (field: string) => `coalesce(r->>'${field}', '') AS ${field}`;
  // Ids compare byte by byte, as in the table's key: rows are then sorted (and locked) in the
  // order a DELETE walks the index, whatever the database's default collation.
  const id = (field: string, fallback?: string) =>
    `${fallback ? `coalesce(r->>'${field}', ${fallback})` : `r->>'${field}'`} COLLATE "C" AS ${field}`;
  const input = `input AS (
    SELECT t.n, (r->>'${timeField}')::${sqlType} AS period,
           ${id('platform_account_id', "''")}, ${id('platform_name')}, ${id('campaign_id')}, r->>'campaign_name' AS campaign_name,
           ${id('adset_id', "''")}, ${orEmpty('adset_name')}, ${id('ad_id', "''")}, ${orEmpty('ad_name')},
           ${measure('spend')}, r->>'spend_currency' AS spend_currency, ${measure('impressions')}, ${measure('clicks')},
           now() AS created_at, now() AS updated_at
      FROM jsonb_array_elements($1::jsonb -> 'data') WITH ORDINALITY AS t(r, n))`;

  // Sorted by key, so that concurrent requests lock rows in the same order as each other and as
  // a DELETE; updated_at never goes back, should a transaction that started earlier write the row
  // later (and no volatile function stands in SET, which Citus refuses there). The accounts are recorded too (for the export breakdowns), also sorted; PostgreSQL
  // completes that unread CTE after the main query, so every upsert locks in the same order.
  const upsertSql = `WITH ${input},
    accounts AS (
      INSERT INTO ad_accounts (client_id, environment, platform_name, platform_account_id)
      SELECT DISTINCT $2::uuid, $3::environment, platform_name, platform_account_id FROM input
       ORDER BY 3, 4
      ON CONFLICT DO NOTHING),
    upserted AS (
      INSERT INTO ${table} AS s (client_id, environment, ${KEY}, ${VALUES}, created_at, updated_at)
      SELECT $2, $3, ${KEY}, ${VALUES}, created_at, updated_at FROM input
       ORDER BY ${KEY}
      ON CONFLICT (client_id, environment, ${KEY}) DO UPDATE SET
        ${VALUES.split(', ').map((column) => `${column} = excluded.${column}`).join(', ')},
        updated_at = greatest(s.updated_at, excluded.updated_at)
      RETURNING s.*)
    SELECT ${recordsJson('u', 'i.n')} FROM upserted u JOIN input i USING (${KEY})`;

  // The keys of a list query's records: those of one account ($10), or of every account the
  // client has sent spend for (ad_accounts), each read from the primary key's index as one
  // account's list is (OFFSET 0 keeps the lookup per account: a join planned without statistics
  // could scan the table instead).
  const ofAccount = (account: string) => `SELECT ${KEY} FROM ${table}
     WHERE client_id = $1 AND environment = $2 AND platform_account_id = ${account}
       AND period BETWEEN $3::${sqlType} AND $4::${sqlType}
       AND ($5::text IS NULL OR campaign_id = $5) AND ($6::text IS NULL OR adset_id = $6) AND ($7::text IS NULL OR ad_id = $7)`;
  const everyAccount = `SELECT k.* FROM (SELECT DISTINCT platform_account_id FROM ad_accounts WHERE client_id = $1 AND environment = $2) a
     CROSS JOIN LATERAL (${ofAccount('a.platform_account_id')} OFFSET 0) k`;

  // One page of `keys` and their count, in one statement so that the two agree. The page is
  // found on the key columns alone, which the primary key index holds (for one account OFFSET
  // walks the index in its order; across accounts their keys are sorted), without reading table
  // rows; then only the page's rows are read, one index lookup each (OFFSET 0 as above).
  const listSql = (keys: string) => `SELECT (SELECT count(*)::int FROM (${keys}) k) AS total,
      (SELECT ${recordsJson('s', ORDER.split(', ').map((column) => `k.${column}`).join(', '))}
         FROM (SELECT * FROM (${keys}) k ORDER BY ${ORDER} LIMIT $8 OFFSET $9) k
        CROSS JOIN LATERAL (
          SELECT * FROM ${table} s
           WHERE s.client_id = $1 AND s.environment = $2
             AND ${KEY.split(', ').map((column) => `s.${column} = k.${column}`).join(' AND ')}
          OFFSET 0) s) AS items`;
  const listOneAccount = listSql(ofAccount('$10'));
  const listEveryAccount = listSql(everyAccount);

  const one = async (sql: string, params: unknown[]) => (await db.query<{ items: string }>(sql, params))[0]!.items;

  return {
    /**
     * Inserts or overwrites the records of `bodyJson` (`{"data": [...]}`, as received with its
     * measures rounded to their scale by exactNumbers); answers them in request order.
     */
    upsert: (tenant: Tenant, bodyJson: string) => one(upsertSql, [bodyJson, tenant.clientId, tenant.environment]),

    /** The records of `bodyJson` as an upsert would store them new, without storing anything. */
    preview: (bodyJson: string) => one(`WITH ${input} SELECT ${recordsJson('i', 'i.n')} FROM input i`, [bodyJson]),

    /**
     * One page of the records of one account, or of every account when `by` names none, in a
     * range, by period, platform, account, campaign, adset, ad, and how many there are.
     */
    async list(tenant: Tenant, by: SpendFilter, range: PeriodRange, page: number, pageSize: number) {
      const account = by.platform_account_id;
      const [row] = await db.query<{ items: string; total: number }>(account === undefined ? listEveryAccount : listOneAccount, [
        tenant.clientId,
        tenant.environment,
        range.from,
        range.to,
        by.campaign_id ?? null,
        by.adset_id ?? null,
        by.ad_id ?? null,
        pageSize,
        (page - 1) * pageSize,
        ...(account === undefined ? [] : [account]),
      ]);
      return row!;
    },

    /** Deletes the records of every platform that match; answers them, by platform. */
    delete: (tenant: Tenant, match: SpendMatch) =>
      one(
        `WITH deleted AS (
           DELETE FROM ${table}
            WHERE client_id = $1 AND environment = $2 AND platform_account_id = $3 AND period = $4::${sqlType}
              AND campaign_id = $5 AND adset_id = $6 AND ad_id = $7
           RETURNING *)
         SELECT ${recordsJson('d', 'd.platform_name')} FROM deleted d`,
        [tenant.clientId, tenant.environment, match.platform_account_id, match.period, match.campaign_id, match.adset_id, match.ad_id],
      ),
  };
}

/**
 * The spend of the UAT test credentials: an upsert answers the records as they would be stored
 * (the database computes them, writing nothing), lists are empty and deletes find nothing.
 */
export function standInSpend(real: SpendRepository): SpendRepository {
  return {
    upsert: (_tenant, bodyJson) => real.preview(bodyJson),
    preview: real.preview,
    list: async () => ({ items: '', total: 0 }),
    delete: async () => '',
  };
}
