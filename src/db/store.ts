import type { Tenant } from '../auth/tenant.js';
import { createAttributionExplainer, standInExplainer, type AttributionExplainer } from '../attribution/index.js';
import { createClientRepository, standInClientSettings, type ClientSettings } from '../clients/repository.js';
import { ingestInto, standInIngest, type EventIngest } from '../collect/ingest.js';
import { createCustomerErasure, standInErasure, type CustomerErasure } from '../customers/erasure.js';
import { createBreakdownCatalog, standInBreakdowns, type BreakdownCatalog } from '../exports/breakdowns.js';
import { createExportJobs, standInExportRequests, type ExportRequests } from '../exports/jobs.js';
import { createFeedRepository, standInFeeds, type FeedRepository } from '../feeds/repository.js';
import { createOrderRepository, standInOrders, type OrderRepository } from '../orders/repository.js';
import { createRateRepository, standInRates, type RateRepository } from '../rates/repository.js';
import { createReportRepository, standInReports, type ReportRepository } from '../reports/repository.js';
import { daily, hourly, type SpendCollection } from '../spend/collection.js';
import { createSpendRepository, standInSpend, type SpendRepository } from '../spend/repository.js';
import { createTouchpointRepository, standInTouchpoints, type TouchpointRepository } from '../touchpoints/repository.js';
import type { Database } from './database.js';
import { createTenantShare, type TenantShare } from './tenant-share.js';

/**
 * Everything a client-API request reads and writes. Each request is given one once its tenant
 * is known (app.ts): the repositories over the database, or for the UAT test credentials their
 * stand-ins, which answer as the real ones would for a client that keeps nothing
 * (docs/decisions.md, "The stand-in store").
 */
export interface Store {
  clients: ClientSettings;
  orders: OrderRepository;
  explainer: AttributionExplainer;
  spend: Record<SpendCollection['table'], SpendRepository>;
  touchpoints: TouchpointRepository;
  events: EventIngest;
  erasure: CustomerErasure;
  exports: ExportRequests;
  breakdowns: BreakdownCatalog;
  reports: ReportRepository;
  feeds: FeedRepository;
  rates: RateRepository;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The store of the request's tenant, set once it is authenticated. */
    store: Store;
  }
}

export interface StoreOptions {
  /** How long the download links of a finished export work. */
  linkTtlSeconds: number;
  /** Longest wait of a report for its client's kept attribution, held by other work, or for its client's share of the database. */
  reportLockWaitMs: number;
  /** Reports and explanations of one client that may run at once (createTenantShare). */
  tenantReadConnections: number;
}

/** The share of each pool: the production and UAT apps of a process share theirs, as they share the pool. */
const sharesOfPools = new WeakMap<Database, TenantShare>();

function databaseStore(db: Database, { linkTtlSeconds, reportLockWaitMs, tenantReadConnections }: StoreOptions): Store {
  const share = sharesOfPools.get(db) ?? createTenantShare({ connections: tenantReadConnections, waitMs: reportLockWaitMs });
  sharesOfPools.set(db, share);
  return {
    clients: createClientRepository(db),
    orders: createOrderRepository(db),
    explainer: createAttributionExplainer(db, share),
    spend: { spend_hourly: createSpendRepository(db, hourly), spend_daily: createSpendRepository(db, daily) },
    touchpoints: createTouchpointRepository(db),
    events: ingestInto(db),
    erasure: createCustomerErasure(db),
    exports: createExportJobs(db, { linkTtlSeconds }),
    breakdowns: createBreakdownCatalog(db),
    reports: createReportRepository(db, { lockWaitMs: reportLockWaitMs, share }),
    feeds: createFeedRepository(db),
    rates: createRateRepository(db),
  };
}

/** The stand-ins keep nothing; the checks that read no stored data (spend as it would be stored) are the real store's. */
function standInStore(real: Store): Store {
  return {
    clients: standInClientSettings,
    orders: standInOrders,
    explainer: standInExplainer,
    spend: { spend_hourly: standInSpend(real.spend.spend_hourly), spend_daily: standInSpend(real.spend.spend_daily) },
    touchpoints: standInTouchpoints,
    events: standInIngest,
    erasure: standInErasure,
    exports: standInExportRequests,
    breakdowns: standInBreakdowns,
    reports: standInReports,
    feeds: standInFeeds,
    rates: standInRates,
  };
}

/** The store of a tenant: the database's, or the stand-ins for the UAT test credentials. */
export function createStoreChooser(db: Database, options: StoreOptions): (tenant: Tenant) => Store {
  const real = databaseStore(db, options);
  const standIn = standInStore(real);
  return (tenant) => (tenant.dryRun ? standIn : real);
}
