import { randomUUID } from 'node:crypto';
import { EVERY_INSTANT, noteAttributionChangeSql } from '../attribution/index.js';
import type { Tenant } from '../auth/tenant.js';
import type { Database, Queryable } from '../db/index.js';
import { AD_FIELDS, UTM_FIELDS } from '../touchpoints/derive.js';
import { PERSONAL_ORDER_FIELDS, emailForms, identifierFinder, redactedText, redactedUrl, type HoldsIdentifier } from './redaction.js';

export interface ErasureRequest {
  customerIds: readonly string[];
  customerEmails: readonly string[];
}

export interface ErasureCounts {
  /** Customers found: those named by id, and those of the orders an e-mail matched. */
  customers: number;
  /** Orders changed: every order of the customers found. */
  orders: number;
  /** Touchpoints changed: those of the customers, and those of their visitors. */
  touchpoints: number;
  /** Identity links deleted. */
  identities: number;
}

/** The start of the customer and visitor ids erasure gives (docs/decisions.md, "Customer erasure"). */
export const ERASED_PREFIX = 'erased:';

const TENANT = (alias: string) => `${alias}.client_id = $1 AND ${alias}.environment = $2`;

/** The top-level order fields an erasure does not look into: keys, times and codes the service reads. */
const ORDER_FIELDS_KEPT = ['order_id', 'customer_id', 'time_of_purchase', 'currency'];

const TOUCHPOINT_URLS = ['landing_url', 'referrer'] as const;
/** A touchpoint's texts other than URLs: UTMs as sent, and the ad object derived from them (its platform a name of ours). */
const TOUCHPOINT_TEXTS = [...UTM_FIELDS, ...AD_FIELDS.filter((field) => field !== 'platform_name')];

type TouchpointTexts = { touchpoint_id: string; click_ids: Record<string, string> } & Record<(typeof TOUCHPOINT_URLS)[number], string | null> &
  Record<(typeof TOUCHPOINT_TEXTS)[number], string | null>;

export type CustomerErasure = ReturnType<typeof createCustomerErasure>;

/**
 * Erasure of customers' personal data (docs/decisions.md, "Customer erasure"): their orders and
 * touchpoints lose who the customer is, wherever it is written, and the links of their visitors
 * are deleted, while every figure an export or an explanation computes stays as it was. One
 * transaction: all of it is done, or none. Doing it again changes nothing.
 */
export function createCustomerErasure(db: Database) {
  return {
    erase(tenant: Tenant, request: ErasureRequest, erasedAt: Date): Promise<ErasureCounts> {
      const asked = request.customerEmails.map(emailForms);
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
          [...tenantParams, request.customerIds, asked.map((form) => form.plain), asked.map((form) => form.hashed)],
        );
        const scope = [...tenantParams, customers];

        // Each customer gets an id of no meaning in place of its own, the same on all its orders and
        // touchpoints, so that the numbers group as they did.
        const renamedCustomers = customers.map((customer_id) => ({ customer_id, pseudonym: `${ERASED_PREFIX}${randomUUID()}` }));
        const pseudonyms = renamedCustomers.map((customer) => customer.pseudonym);
        const identifiers = await identifiersOf(tx, scope, renamedCustomers, asked);
        const renamings = [...scope, erasedAt.toISOString(), JSON.stringify(renamedCustomers)];
        const RENAMED = 'json_to_recordset($5::json) AS r(customer_id text, pseudonym text)';

        // The links of the customers' visitors decide which touchpoints are theirs. Before they go,
        // each of those touchpoints is given its customer (as its new id), so that its attribution
        // is kept (a touchpoint's own customer_id is read before its visitor's link).
        const linked = `SELECT i.visitor_id, coalesce(i.customer_id, o.customer_id) AS customer_id
                          FROM identities i
                          LEFT JOIN orders o ON ${TENANT('o')} AND o.order_id = i.order_id
                         WHERE ${TENANT('i')} AND (i.customer_id = ANY ($3::text[]) OR o.customer_id = ANY ($3::text[]))`;
        const throughLinks = await tx.query<{ touchpoint_id: string }>(
          `UPDATE touchpoints t SET customer_id = r.pseudonym, updated_at = greatest(t.updated_at, $4::timestamptz)
             FROM (${linked}) l JOIN ${RENAMED} ON r.customer_id = l.customer_id
            WHERE ${TENANT('t')} AND t.visitor_id = l.visitor_id AND t.customer_id IS NULL
            RETURNING t.touchpoint_id`,
          renamings,
        );
        const links = await tx.query(
          `DELETE FROM identities d USING (${linked}) l
            WHERE ${TENANT('d')} AND d.visitor_id = l.visitor_id
            RETURNING d.visitor_id`,
          scope,
        );
        const ownIds = await tx.query<{ touchpoint_id: string }>(
          `UPDATE touchpoints t SET customer_id = r.pseudonym, updated_at = greatest(t.updated_at, $4::timestamptz)
             FROM ${RENAMED}
            WHERE ${TENANT('t')} AND t.customer_id = r.customer_id AND t.customer_id = ANY ($3::text[])
            RETURNING t.touchpoint_id`,
          renamings,
        );
        const renamedVisitors = await renameVisitors(tx, tenantParams, pseudonyms, erasedAt);
        const redacted = await redactTouchpoints(tx, tenantParams, erasedAt, identifiers, renamedVisitors.customersOf);
        const touchpointIds = new Set([...throughLinks, ...ownIds, ...renamedVisitors.touchpoints, ...redacted].map((row) => row.touchpoint_id));

        const customerOfOrder = await redactOrders(tx, scope, renamedCustomers, erasedAt, identifiers);
        const orderIds = [...customerOfOrder.keys()];
        await dropIdentifyingAliases(tx, tenantParams, customerOfOrder, identifiers);
        // Kept paths hold the touchpoints' ids as they were (ad_id among them): they go, and their
        // days are computed again (every kept day is made stale below).
        await tx.query(`DELETE FROM attribution_paths k WHERE ${TENANT('k')} AND k.order_id = ANY ($3::text[])`, [...tenantParams, orderIds]);
        // What the data-driven models learnt names states by campaign ids, which may have held an
        // identifier: it is learnt again from the redacted data when next asked.
        if (redacted.length > 0) await tx.query(`DELETE FROM attribution_learnt_models k WHERE ${TENANT('k')}`, tenantParams);
        await forgetChangedKeys(tx, tenantParams);
        // Attribution is meant to come out the same, but erasures are rare: every kept total is
        // made stale rather than reasoned about.
        await tx.query(noteAttributionChangeSql(EVERY_INSTANT), tenantParams);
        return { customers: customers.length, orders: orderIds.length, touchpoints: touchpointIds.size, identities: links.length };
      });
    },
  };
}

/** The test of texts for the identifiers of each erased customer, by its new id. */
type IdentifiersByCustomer = Map<string, HoldsIdentifier>;

/**
 * What names each of the customers `scope` ($3) holds, as a test of texts, by its new id: its
 * id, the e-mails asked about that its orders hold (plain or hashed), and the e-mails, phone
 * numbers, names and hashes of its orders. One test a customer: a row is one customer's, and a
 * test of a thousand customers' identifiers at once cost a thousand times as much a text.
 */
async function identifiersOf(
  tx: Queryable,
  scope: unknown[],
  renamedCustomers: { customer_id: string; pseudonym: string }[],
  asked: { plain: string; hashed: string }[],
): Promise<IdentifiersByCustomer> {
  const values = (field: string) => `coalesce(array_remove(array_agg(DISTINCT o.body->>'${field}'), NULL), '{}')`;
  const found = await tx.query<{ customer_id: string; emails: string[]; phones: string[]; names: string[]; hashes: string[] }>(
    `SELECT o.customer_id, ${values('customer_email')} AS emails, ${values('customer_phone_number')} AS phones, ${values('customer_name')} AS names,
            ${values('hashed_customer_email')} || ${values('hashed_customer_phone_number')} AS hashes
       FROM orders o WHERE ${TENANT('o')} AND o.customer_id = ANY ($3::text[])
      GROUP BY o.customer_id`,
    scope,
  );
  const ofCustomer = new Map(found.map((row) => [row.customer_id, row]));
  return new Map(
    renamedCustomers.map(({ customer_id, pseudonym }) => {
      const { emails = [], phones = [], names = [], hashes = [] } = ofCustomer.get(customer_id) ?? {};
      const lower = (texts: string[]) => new Set(texts.map((text) => text.trim().toLowerCase()));
      const [ownEmails, ownHashes] = [lower(emails), lower(hashes)];
      const askedOfCustomer = asked.filter((form) => ownEmails.has(form.plain) || ownHashes.has(form.hashed));
      const finder = identifierFinder({
        customerIds: [customer_id],
        emails: [...askedOfCustomer.map((form) => form.plain), ...emails],
        phones,
        names,
        hashes: [...askedOfCustomer.map((form) => form.hashed), ...hashes],
      });
      return [pseudonym, finder];
    }),
  );
}

/** A text holds an identifier of one of `customers` (new ids). */
const holdsIdentifierOf =
  (identifiers: IdentifiersByCustomer, customers: Iterable<string>): HoldsIdentifier =>
  (text) => {
    for (const customer of customers) if (identifiers.get(customer)?.(text)) return true;
    return false;
  };

/**
 * A visitor id is a cookie's: read beside the customer its touchpoints carry, it would tell the
 * link that was deleted. Each visitor of the erased customers (those of `pseudonyms`) gets a new
 * id of no meaning on all of its touchpoints (whoever's they are, so that visits still group as
 * they did) and on its link to another customer, if it has one. Answers the touchpoints changed,
 * and the customers each new visitor id was seen with.
 */
async function renameVisitors(
  tx: Queryable,
  tenantParams: unknown[],
  pseudonyms: string[],
  erasedAt: Date,
): Promise<{ touchpoints: { touchpoint_id: string }[]; customersOf: Map<string, string[]> }> {
  const visitors = await tx.query<{ visitor_id: string; customers: string[] }>(
    `SELECT t.visitor_id, array_agg(DISTINCT t.customer_id) AS customers FROM touchpoints t
      WHERE ${TENANT('t')} AND t.customer_id = ANY ($3::text[]) AND t.visitor_id IS NOT NULL
        AND t.visitor_id NOT LIKE '${ERASED_PREFIX}%'
      GROUP BY t.visitor_id`,
    [...tenantParams, pseudonyms],
  );
  const renames = visitors.map(({ visitor_id, customers }) => ({ visitor_id, customers, pseudonym: `${ERASED_PREFIX}${randomUUID()}` }));
  const asRecords = JSON.stringify(renames.map(({ visitor_id, pseudonym }) => ({ visitor_id, pseudonym })));
  const touchpoints = await tx.query<{ touchpoint_id: string }>(
    `UPDATE touchpoints t SET visitor_id = r.pseudonym, updated_at = greatest(t.updated_at, $3::timestamptz)
       FROM json_to_recordset($4::json) AS r(visitor_id text, pseudonym text)
      WHERE ${TENANT('t')} AND t.visitor_id = r.visitor_id
      RETURNING t.touchpoint_id`,
    [...tenantParams, erasedAt.toISOString(), asRecords],
  );
  await tx.query(
    `UPDATE identities i SET visitor_id = r.pseudonym
       FROM json_to_recordset($3::json) AS r(visitor_id text, pseudonym text)
      WHERE ${TENANT('i')} AND i.visitor_id = r.visitor_id`,
    [...tenantParams, asRecords],
  );
  return { touchpoints, customersOf: new Map(renames.map(({ pseudonym, customers }) => [pseudonym, customers])) };
}

/**
 * The texts of the erased customers' touchpoints, and of their visitors' (`customersOf`, by new
 * visitor id), through the erasure: URLs lose their personal query and every part that holds an
 * identifier of those customers, other texts and click ids that hold one become ERASED_TEXT.
 * Answers the touchpoints changed.
 */
async function redactTouchpoints(tx: Queryable, tenantParams: unknown[], erasedAt: Date, identifiers: IdentifiersByCustomer, customersOf: Map<string, string[]>) {
  const columns = [...TOUCHPOINT_URLS, ...TOUCHPOINT_TEXTS];
  const stored = await tx.query<TouchpointTexts & { customer_id: string | null; visitor_id: string | null }>(
    `SELECT touchpoint_id, customer_id, visitor_id, click_ids, ${columns.join(', ')} FROM touchpoints t
      WHERE ${TENANT('t')} AND (t.customer_id = ANY ($3::text[]) OR t.visitor_id = ANY ($4::text[]))`,
    [...tenantParams, [...identifiers.keys()], [...customersOf.keys()]],
  );
  const redacted = stored.flatMap((touchpoint) => {
    const customers = [...(touchpoint.customer_id === null ? [] : [touchpoint.customer_id]), ...(customersOf.get(touchpoint.visitor_id ?? '') ?? [])];
    const holdsIdentifier = holdsIdentifierOf(identifiers, customers);
    const redactedColumns = Object.fromEntries([
      ...TOUCHPOINT_URLS.map((column) => [column, touchpoint[column] === null ? null : redactedUrl(touchpoint[column], holdsIdentifier)]),
      ...TOUCHPOINT_TEXTS.map((column) => [column, touchpoint[column] === null ? null : redactedText(touchpoint[column], holdsIdentifier)]),
    ]) as Record<(typeof columns)[number], string | null>;
    const clickIds = Object.fromEntries(Object.entries(touchpoint.click_ids).map(([name, id]) => [name, redactedText(id, holdsIdentifier)]));
    const changed = columns.some((column) => redactedColumns[column] !== touchpoint[column]) || JSON.stringify(clickIds) !== JSON.stringify(touchpoint.click_ids);
    return changed ? [{ touchpoint_id: touchpoint.touchpoint_id, click_ids: clickIds, ...redactedColumns }] : [];
  });
  if (redacted.length === 0) return [];
  await tx.query(
    `UPDATE touchpoints t SET click_ids = r.click_ids, ${columns.map((column) => `${column} = r.${column}`).join(', ')},
            updated_at = greatest(t.updated_at, $3::timestamptz)
       FROM json_to_recordset($4::json) AS r(touchpoint_id text, click_ids jsonb, ${columns.map((column) => `${column} text`).join(', ')})
      WHERE ${TENANT('t')} AND t.touchpoint_id = r.touchpoint_id`,
    [...tenantParams, erasedAt.toISOString(), JSON.stringify(redacted)],
  );
  return redacted;
}

/**
 * Every order of the erased customers through the erasure: the personal fields go, the customer's
 * id is its new one, and each top-level text (codes, tags) that holds an identifier becomes
 * ERASED_TEXT (a list keeps one of each). Products and refunds say what was sold, not to whom:
 * they are kept. `scope`: the tenant and the customers. Answers each order's customer (new id).
 */
async function redactOrders(
  tx: Queryable,
  scope: unknown[],
  renamedCustomers: { customer_id: string; pseudonym: string }[],
  erasedAt: Date,
  identifiers: IdentifiersByCustomer,
): Promise<Map<string, string>> {
  const stored = await tx.query<{ order_id: string; pseudonym: string; texts: Record<string, unknown> | null }>(
    `SELECT o.order_id, r.pseudonym,
            (SELECT jsonb_object_agg(f.key, f.value) FROM jsonb_each(o.body) f
              WHERE f.key <> ALL ($5::text[]) AND jsonb_typeof(f.value) IN ('string', 'array')) AS texts
       FROM orders o JOIN json_to_recordset($4::json) AS r(customer_id text, pseudonym text) ON r.customer_id = o.customer_id
      WHERE ${TENANT('o')} AND o.customer_id = ANY ($3::text[])`,
    [...scope, JSON.stringify(renamedCustomers), [...ORDER_FIELDS_KEPT, ...PERSONAL_ORDER_FIELDS]],
  );
  const edits = stored.map(({ order_id, pseudonym, texts }) => {
    const holdsIdentifier = identifiers.get(pseudonym)!;
    const redacted = Object.entries(texts ?? {}).flatMap(([field, value]): [string, unknown][] => {
      if (typeof value === 'string') {
        const text = redactedText(value, holdsIdentifier);
        return text === value ? [] : [[field, text]];
      }
      const items = value as unknown[];
      if (!items.every((item) => typeof item === 'string')) return [];
      const redactedItems = items.map((item) => redactedText(item, holdsIdentifier));
      return redactedItems.every((text, n) => text === items[n]) ? [] : [[field, [...new Set(redactedItems)]]];
    });
    return { order_id, edits: { customer_id: pseudonym, ...Object.fromEntries(redacted) } };
  });
  if (edits.length === 0) return new Map();
  await tx.query(
    `UPDATE orders o SET body = (o.body - $6::text[]) || r.edits, updated_at = greatest(o.updated_at, $4::timestamptz)
       FROM json_to_recordset($5::json) AS r(order_id text, edits jsonb)
      WHERE ${TENANT('o')} AND o.order_id = r.order_id AND o.customer_id = ANY ($3::text[])`,
    [...scope, erasedAt.toISOString(), JSON.stringify(edits), PERSONAL_ORDER_FIELDS],
  );
  return new Map(edits.map(({ order_id, edits: { customer_id } }) => [order_id, customer_id]));
}

/** Aliases of the orders (`customerOfOrder`: each order's customer, new id) that hold an identifier are deleted: they would find the order by it. */
async function dropIdentifyingAliases(tx: Queryable, tenantParams: unknown[], customerOfOrder: Map<string, string>, identifiers: IdentifiersByCustomer): Promise<void> {
  const aliases = await tx.query<{ alias_type: string; alias_id: string; order_id: string }>(
    `SELECT alias_type, alias_id, order_id FROM order_aliases a WHERE ${TENANT('a')} AND a.order_id = ANY ($3::text[])`,
    [...tenantParams, [...customerOfOrder.keys()]],
  );
  const identifying = aliases
    .filter((alias) => identifiers.get(customerOfOrder.get(alias.order_id)!)?.(alias.alias_id))
    .map(({ alias_type, alias_id }) => ({ alias_type, alias_id }));
  if (identifying.length === 0) return;
  await tx.query(
    `DELETE FROM order_aliases a USING json_to_recordset($3::json) AS r(alias_type text, alias_id text)
      WHERE ${TENANT('a')} AND a.alias_type = r.alias_type AND a.alias_id = r.alias_id`,
    [...tenantParams, JSON.stringify(identifying)],
  );
}

/**
 * Deletes the keys the client's writes noted (visitor and customer ids among them) without
 * waiting: a key locked is being taken by a report, which deletes it, or noted by a write not
 * committed yet, which the next report (the keeper's, within minutes) takes.
 */
async function forgetChangedKeys(tx: Queryable, tenantParams: unknown[]): Promise<void> {
  await tx.query(
    `DELETE FROM attribution_change_keys k
      USING (SELECT visitor_id, customer_id FROM attribution_change_keys WHERE client_id = $1 AND environment = $2 FOR UPDATE SKIP LOCKED) free
      WHERE k.client_id = $1 AND k.environment = $2 AND k.visitor_id = free.visitor_id AND k.customer_id = free.customer_id`,
    tenantParams,
  );
}

/** The UAT test credentials keep no customers: an erasure finds none. */
export const standInErasure: CustomerErasure = {
  erase: async () => ({ customers: 0, orders: 0, touchpoints: 0, identities: 0 }),
};
