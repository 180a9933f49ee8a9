import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { BREAKDOWN_ALIASES, BREAKDOWN_KEYS, type BreakdownKey } from '../attribution/index.js';

export type BreakdownCatalog = ReturnType<typeof catalogOf>;

/** The breakdown keys, each with the values `valuesOf` finds for a tenant, then their aliases with the values of the key they name. */
function catalogOf(valuesOf: (tenant: Tenant) => Promise<Record<BreakdownKey, string[]>>) {
  return {
    async list(tenant: Tenant): Promise<{ key: string; values: string[] }[]> {
      const found = await valuesOf(tenant);
      return [
        ...BREAKDOWN_KEYS.map((key) => ({ key, values: found[key] })),
        ...Object.entries(BREAKDOWN_ALIASES).map(([alias, key]) => ({ key: alias, values: found[key] })),
      ];
    },
  };
}

/**
 * The breakdowns with the values found in a client's spend (kept in ad_accounts as spend
 * arrives). Spend sent without an account has none: its rows show an empty account.
 */
export function createBreakdownCatalog(db: Database) {
  return catalogOf(async (tenant) => {
    const [found] = await db.query<Record<BreakdownKey, string[]>>(
      `SELECT coalesce(array_agg(DISTINCT platform_name ORDER BY platform_name), '{}') AS platform,
              coalesce(array_agg(DISTINCT platform_account_id ORDER BY platform_account_id) FILTER (WHERE platform_account_id <> ''), '{}') AS account
         FROM ad_accounts WHERE client_id = $1 AND environment = $2`,
      [tenant.clientId, tenant.environment],
    );
    return found!;
  });
}

/** The UAT test credentials keep no spend: every key, with no values. */
export const standInBreakdowns = catalogOf(async () => ({ platform: [], account: [] }));
