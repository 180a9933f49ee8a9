import { randomUUID } from 'node:crypto';
import { EVERY_INSTANT, noteAttributionChangeSql, takeChangedKeys } from '../attribution/changes.js';
import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { PERSONAL_ORDER_FIELDS, emailForms, withoutPersonalQuery } from './redaction.js';

export interface ErasureRequest {
  customerIds: readonly string[];
  customerEmails: readonly string[];
}

export interface ErasureCounts {
  /** Customers found: those named by id, and those of the orders an e-mail matched. */
  customers: number;
  /** Orders that held personal fields and no longer do. */
  orders: number;
  /** Touchpoints whose URLs lost their personal query, that now carry their customer themselves, or whose visitor id was replaced. */
  touchpoints: number;
  /** Identity links deleted. */
  identities: number;
}

/** The start of the visitor ids erasure gives (docs/decisions.md, "Customer erasure"). */
export const ERASED_VISITOR_PREFIX = 'erased:';

const TENANT = (alias: string) => `${alias}.client_id = $1 AND ${alias}.environment = $2`;

export type CustomerErasure = ReturnType<typeof createCustomerErasure>;

/**
 * Erasure of customers' personal data (docs/decisions.md, "Customer erasure"): their orders
 * lose who the customer is, their touchpoints' URLs lose what may say it, and the links of
 * their visitors are deleted, while every figure an export or an explanation computes stays as
 * it was. One transaction: all of it is done, or none. Doing it again changes nothing.
 */
export function createCustomerErasure(db: Database) {
  return {
    erase(tenant: Tenant, request: ErasureRequest, erasedAt: Date): Promise<ErasureCounts> {
      const forms = request.customerEmails.map(emailForms);
      return db.transaction(async (tx) => {
        const tenantParams = [tenant.clientId, tenant.environment];
        // An e-mail names the customers of the orders that hold it, plain or hashed (its hash
        // compared in lower case: shops send hexadecimal in either). Every order of the client is
        // read: no index holds e-mails, and erasures are rare.
        const [{ customers } = { customers: [] }] = await tx.query<{ customers: string[] }>(
          `SELECT ARRAY(SELECT unnest($3::text[])
                        UNION
                        SELECT o.customer_id FROM orders o
                         WHERE ${TENANT('o')} AND cardinality($4::text[]) > 0 AND o.customer_id IS NOT NULL
                           AND (lower(o.body->>'customer_email') = ANY ($4::text[])
                                OR lower(o.body->>'hashed_customer_email') = ANY ($5::text[]))) AS customers`,
          [...tenantParams, request.customerIds, forms.map((form) => form.plain), forms.map((form) => form.hashed)],
        );
        const scope = [...tenantParams, customers];
        const params = [...scope, erasedAt.toISOString()];

        // The links of the customers' visitors decide which touchpoints are theirs. Before they
        // go, each of those touchpoints is given its customer, so that its attribution is kept
        // (a touchpoint's own customer_id is read before its visitor's link).
        const linked = `SELECT i.visitor_id, coalesce(i.customer_id, o.customer_id) AS customer_id
                          FROM identities i
                          LEFT JOIN orders o ON ${TENANT('o')} AND o.order_id = i.order_id
                         WHERE ${TENANT('i')} AND (i.customer_id = ANY ($3::text[]) OR o.customer_id = ANY ($3::text[]))`;
        const kept = await tx.query<{ touchpoint_id: string }>(
          `UPDATE touchpoints t SET customer_id = l.customer_id, updated_at = greatest(t.updated_at, $4::timestamptz)
             FROM (${linked}) l
            WHERE ${TENANT('t')} AND t.visitor_id = l.visitor_id AND t.customer_id IS NULL
            RETURNING t.touchpoint_id`,
          params,
        );
        const links = await tx.query(
          `DELETE FROM identities d USING (${linked}) l
            WHERE ${TENANT('d')} AND d.visitor_id = l.visitor_id
            RETURNING d.visitor_id`,
          scope,
        );

        // Every touchpoint of the customers now carries its customer: their URLs are found by it.
        const withQueries = await tx.query<{ touchpoint_id: string; landing_url: string | null; referrer: string | null }>(
          `SELECT touchpoint_id, landing_url, referrer FROM touchpoints t
            WHERE ${TENANT('t')} AND t.customer_id = ANY ($3::text[])
              AND (t.landing_url ~ '[?#]' OR t.referrer ~ '[?#]')`,
          scope,
        );
        const redacted = withQueries
          .map((row) => ({
            touchpoint_id: row.touchpoint_id,
            landing_url: row.landing_url === null ? null : withoutPersonalQuery(row.landing_url),
            referrer: row.referrer === null ? null : withoutPersonalQuery(row.referrer),
          }))
          .filter((row, n) => row.landing_url !== withQueries[n]!.landing_url || row.referrer !== withQueries[n]!.referrer);
        if (redacted.length > 0) {
          await tx.query(
            `UPDATE touchpoints t SET landing_url = r.landing_url, referrer = r.referrer, updated_at = greatest(t.updated_at, $4::timestamptz)
               FROM json_to_recordset($5::json) AS r(touchpoint_id text, landing_url text, referrer text)
              WHERE ${TENANT('t')} AND t.touchpoint_id = r.touchpoint_id AND t.customer_id = ANY ($3::text[])`,
            [...params, JSON.stringify(redacted)],
          );
        }

        // A visitor id is a cookie's: read beside the customer_id its touchpoints now carry, it
        // would tell the link that was deleted. Each visitor of the customers gets a new id of no
        // meaning on all of its touchpoints (whoever's they are, so that visits still group as
        // they did) and on its link to another customer, if it has one.
        const visitors = await tx.query<{ visitor_id: string }>(
          `SELECT DISTINCT t.visitor_id FROM touchpoints t
            WHERE ${TENANT('t')} AND t.customer_id = ANY ($3::text[]) AND t.visitor_id IS NOT NULL
              AND t.visitor_id NOT LIKE '${ERASED_VISITOR_PREFIX}%'`,
          scope,
        );
        const renames = JSON.stringify(visitors.map(({ visitor_id }) => ({ visitor_id, pseudonym: `${ERASED_VISITOR_PREFIX}${randomUUID()}` })));
        const renamed = await tx.query<{ touchpoint_id: string }>(
          `UPDATE touchpoints t SET visitor_id = r.pseudonym, updated_at = greatest(t.updated_at, $3::timestamptz)
             FROM json_to_recordset($4::json) AS r(visitor_id text, pseudonym text)
            WHERE ${TENANT('t')} AND t.visitor_id = r.visitor_id
            RETURNING t.touchpoint_id`,
          [...tenantParams, erasedAt.toISOString(), renames],
        );
        await tx.query(
          `UPDATE identities i SET visitor_id = r.pseudonym
             FROM json_to_recordset($3::json) AS r(visitor_id text, pseudonym text)
            WHERE ${TENANT('i')} AND i.visitor_id = r.visitor_id`,
          [...tenantParams, renames],
        );
        const touchpointIds = new Set([...kept, ...redacted, ...renamed].map((row) => row.touchpoint_id));

        const orders = await tx.query(
          `UPDATE orders o SET body = o.body - $5::text[], updated_at = greatest(o.updated_at, $4::timestamptz)
            WHERE ${TENANT('o')} AND o.customer_id = ANY ($3::text[]) AND o.body ?| $5::text[]
            RETURNING o.order_id`,
          [...params, PERSONAL_ORDER_FIELDS],
        );
        // Attribution is meant to come out the same, but erasures are rare: every kept total is
        // made stale rather than reasoned about. The keys noted (visitor ids among them) go.
        await takeChangedKeys(tx, tenant);
        await tx.query(noteAttributionChangeSql(EVERY_INSTANT), tenantParams);
        return { customers: customers.length, orders: orders.length, touchpoints: touchpointIds.size, identities: links.length };
      });
    },
  };
}

/** The UAT test credentials keep no customers: an erasure finds none. */
export const standInErasure: CustomerErasure = {
  erase: async () => ({ customers: 0, orders: 0, touchpoints: 0, identities: 0 }),
};
