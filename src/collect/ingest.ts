import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { invalidRequest, type ErrorItem } from '../http/errors.js';
import { deriveTouchpoint, type DerivedTouchpoint, type SourcePlatforms, type TouchpointInput } from '../touchpoints/derive.js';
import { AUTHENTICATED, createTouchpointRepository } from '../touchpoints/repository.js';

/** A visit read from an event, with where its URL was in the request (for the errors of its query). */
export interface Visit {
  input: TouchpointInput;
  urlLoc: string;
}

/** A visitor's identity link, to a customer or to an order, as POST /v1/identities takes it. */
export type Link = { visitor_id: string } & ({ customer_id: string } | { order_id: string });

/**
 * The visits as stored, derived as POST /v1/touchpoints derives them (the client's source mapping
 * included), or a 422 naming each UTM or click id of a URL that cannot be stored.
 */
export function deriveVisits(visits: readonly Visit[], sourcePlatforms: SourcePlatforms): DerivedTouchpoint[] {
  const derived: DerivedTouchpoint[] = [];
  const problems: ErrorItem[] = [];
  for (const { input, urlLoc } of visits) {
    const touchpoint = deriveTouchpoint(input, sourcePlatforms);
    if (Array.isArray(touchpoint)) problems.push(...touchpoint.map(({ param, msg }) => ({ loc: urlLoc, msg, type: 'query_parameter', param })));
    else derived.push(touchpoint);
  }
  if (problems.length > 0) throw invalidRequest(problems, 422);
  return derived;
}

/**
 * Visits derived without a source mapping (`deriveVisits(visits, {})`), as `sourcePlatforms`
 * derives them: a mapping changes only the visits whose utm_source it names, derived again.
 */
export function withSourceMapping(visits: readonly Visit[], derived: readonly DerivedTouchpoint[], sourcePlatforms: SourcePlatforms): DerivedTouchpoint[] {
  return derived.map((touchpoint, index) =>
    touchpoint.utm_source !== null && Object.hasOwn(sourcePlatforms, touchpoint.utm_source) ? deriveVisits([visits[index]!], sourcePlatforms)[0]! : touchpoint,
  );
}

/**
 * The last item of each key, in the order first seen: one statement may write a row once, and an
 * event sent twice in one request (a touchpoint, a visitor's link) counts as its later copy.
 */
function lastOf<T>(items: readonly T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(key(item), item);
  return [...byKey.values()];
}

/**
 * Stores the touchpoints (upserted by touchpoint_id, as `writtenBy` may replace them) and links
 * (replacing each visitor's) of a request received `at`: both or neither, as a request that fails
 * stores nothing.
 */
export async function ingest(
  db: Database,
  tenant: Tenant,
  visits: readonly DerivedTouchpoint[],
  links: readonly Link[],
  at: Date,
  writtenBy = AUTHENTICATED,
): Promise<{ touchpoints: number; links: number }> {
  const rows = lastOf(visits, (visit) => visit.touchpoint_id);
  const linked = lastOf(links, (link) => link.visitor_id);
  const touchpoints = createTouchpointRepository(db);
  const linksJson = JSON.stringify({ data: linked });
  if (rows.length > 0 && linked.length > 0) await touchpoints.upsertAndLink(tenant, rows, linksJson, at, writtenBy);
  else if (rows.length > 0) await touchpoints.upsert(tenant, rows, at, writtenBy);
  else if (linked.length > 0) await touchpoints.link(tenant, linksJson, at);
  return { touchpoints: rows.length, links: linked.length };
}

/** Where the events of a request (POST /v1/events/segment) are stored. */
export interface EventIngest {
  ingest(tenant: Tenant, visits: readonly DerivedTouchpoint[], links: readonly Link[], at: Date): Promise<{ touchpoints: number; links: number }>;
}

export const ingestInto = (db: Database): EventIngest => ({
  ingest: (tenant, visits, links, at) => ingest(db, tenant, visits, links, at),
});

/**
 * The events of the UAT test credentials: nothing kept. They are counted as sent (an event
 * sent twice counts twice, where ingest counts it once), as these credentials have always been answered.
 */
export const standInIngest: EventIngest = {
  ingest: async (_tenant, visits, links) => ({ touchpoints: visits.length, links: links.length }),
};
