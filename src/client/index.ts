/**
 * The typed client of the Tributary API: `import { Tributary } from 'tributary/client'`.
 * Its types are those of the server's schemas; large inputs are split at the API's limits.
 */
import type { Static } from 'typebox';
import type { AttributionModel as AttributionModelSchema, AttributionModelQuery, Explanation, ExplanationQuery } from '../attribution/routes.js';
import type { ErasureBody, ErasureResult } from '../customers/routes.js';
import type { AttributionModelList, BreakdownList, ExportResult, MetricList } from '../exports/routes.js';
import type { ExportRequest } from '../exports/schema.js';
import type { FeedHealthReport } from '../feeds/health.js';
import type { ClientAnswer } from '../clients/routes.js';
import type { ExchangeRate as ExchangeRateSchema, RateList, RateListQuery, RatesStored } from '../rates/schema.js';
import type { AliasRequest, AliasResult, OrderListQuery, OrderPage, OrderPatch, OrderAsSent, PatchResult, UpsertResult, Warning } from '../orders/schema.js';
import type { PerformanceQuery as PerformanceQuerySchema, PerformanceReport as PerformanceReportSchema } from '../reports/routes.js';
import type { KEY_FIELDS, spendSchemas } from '../spend/schema.js';
import type {
  IdentityBatch,
  LinkResult,
  TouchpointBatch,
  TouchpointListQuery,
  TouchpointPage,
  UpsertResult as TouchpointUpsertResult,
} from '../touchpoints/schema.js';
import type { AD_FIELDS, UTM_FIELDS } from '../touchpoints/derive.js';
import {
  MAX_ALIASES_PER_REQUEST,
  MAX_IDENTITIES_PER_REQUEST,
  MAX_ORDERS_PER_REQUEST,
  MAX_RATES_PER_REQUEST,
  MAX_RECORDS_PER_REQUEST,
  MAX_TOUCHPOINTS_PER_REQUEST,
} from '../request-limits.js';
import { createTransport, EncodedJson, encodeList, sleep, TributaryError, type RetryOptions, type Transport, type TributaryErrorItem } from './http.js';

export { EncodedJson, TributaryError, type RetryOptions, type TributaryErrorItem };

/** An item, or its JSON text already encoded. */
export type Sendable<T> = T | EncodedJson<T>;

type SpendSchemas = ReturnType<typeof spendSchemas>;
type SpendFields = Omit<Static<SpendSchemas['UpsertBody']>['data'][number], 'hour_start_iso' | 'date'>;

export type Order = OrderAsSent;
export type { OrderPatch, Warning };
export type OrderQuery = Static<typeof OrderListQuery>;
export type StoredOrderPage = Static<typeof OrderPage>;
export type OrderUpsertResult = Static<typeof UpsertResult>;
export type OrderPatchResult = Static<typeof PatchResult>;
export type OrderAlias = Static<typeof AliasRequest>['aliases'][number];
export type AliasAddResult = Static<typeof AliasResult>;
export type AttributionQuery = Static<typeof ExplanationQuery>;
export type AttributionExplanation = Static<typeof Explanation>;
export type AttributionModel = Static<typeof AttributionModelSchema>;
export type LearntModelQuery = Static<typeof AttributionModelQuery>;
export type HourlySpend = SpendFields & { hour_start_iso: string };
export type DailySpend = SpendFields & { date: string };
// The spend schemas are built for either collection, so their time fields are untyped: named here.
type SpendQuery = Static<SpendSchemas['ListQuery']>;
export type HourlySpendQuery = SpendQuery & { hour_start_iso_begin?: string; hour_start_iso_end?: string };
export type DailySpendQuery = SpendQuery & { date_start?: string; date_end?: string };
type StoredSpend = Static<SpendSchemas['RecordPage']>['data'][number] & Record<(typeof KEY_FIELDS)[number] | 'campaign_name' | 'adset_name' | 'ad_name', string>;
export type StoredHourlySpend = StoredSpend & { hour_start_iso: string };
export type StoredDailySpend = StoredSpend & { date: string };
type SpendMatchFields = Omit<Static<SpendSchemas['DeleteBody']>['data'], 'hour_start_iso' | 'date'>;
export type HourlySpendMatch = SpendMatchFields & { hour_start_iso: string };
export type DailySpendMatch = SpendMatchFields & { date: string };
type PageInfo = Omit<Static<SpendSchemas['RecordPage']>, 'data'>;
/** A measure of a spend upsert stored rounded to 12 decimal places. */
export type SpendWarning = NonNullable<Static<SpendSchemas['UpsertResult']>['warnings']>[number];
export type Touchpoint = TouchpointBatch['data'][number];
export type TouchpointQuery = TouchpointListQuery;
// Built from field lists, so untyped in the schema: named here from the same lists.
export type StoredTouchpoint = Static<typeof TouchpointPage>['data'][number] &
  Record<(typeof AD_FIELDS)[number], string> &
  Record<(typeof UTM_FIELDS)[number], string | null>;
export type StoredTouchpointPage = Omit<Static<typeof TouchpointPage>, 'data'> & { data: StoredTouchpoint[] };
export type TouchpointUpsertResult = Static<typeof TouchpointUpsertResult>;
export type Identity = IdentityBatch['data'][number];
export type IdentityLinkResult = Static<typeof LinkResult>;
export type DataExportRequest = ExportRequest;
export type DataExportResult = Static<typeof ExportResult>;
export type Metrics = Static<typeof MetricList>;
export type Breakdowns = Static<typeof BreakdownList>;
export type AttributionModels = Static<typeof AttributionModelList>;
export type PerformanceQuery = Static<typeof PerformanceQuerySchema>;
export type PerformanceReport = Static<typeof PerformanceReportSchema>;
export type FeedHealth = Static<typeof FeedHealthReport>;
export type ClientOfCredentials = Static<typeof ClientAnswer>;
export type ExchangeRate = Static<typeof ExchangeRateSchema>;
export type ExchangeRateQuery = Static<typeof RateListQuery>;
export type ExchangeRates = Static<typeof RateList>;
export type RatesUpserted = Pick<Static<typeof RatesStored>, 'inserted' | 'updated'> & { warnings: NonNullable<Static<typeof RatesStored>['warnings']> } & BatchedResult;
export type CustomerErasureRequest = Static<typeof ErasureBody>;
export type CustomerErasureResult = Static<typeof ErasureResult>;

export interface TributaryOptions extends RetryOptions {
  /** The API's address, such as https://tributary.example.com or http://localhost:8081 for UAT. */
  url: string;
  apiKey: string;
  clientId: string;
  /** A fetch of your own (a proxy agent, a test double); the global one by default. */
  fetch?: typeof fetch;
}

/** Every call takes a signal: aborting it stops the call, waits between retries included. */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {
  /** First wait between polls (default 1 s), doubled each time up to `maxIntervalMs` (default 15 s). */
  intervalMs?: number;
  maxIntervalMs?: number;
}

/** The results of the batches of one call, added up; `request_ids` has one id a batch. */
export interface BatchedResult {
  request_ids: string[];
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < items.length; start += size) batches.push(items.slice(start, start + size));
  return batches;
}

/** `loc` of a batch's problem, as a place in the whole input the batch was cut from. */
export function locInInput(loc: string, offset: number): string {
  return loc.replace(/^body\/(data\/|aliases\/)?(\d+)/, (_whole, container: string | undefined, index: string) => `body/${container ?? ''}${offset + Number(index)}`);
}

/**
 * Sends `items` in batches of `size`, one after the other, adding up their results. A failing
 * batch stops the call: the error's `errors` point into the whole input, and its message says
 * how many items the earlier batches stored.
 */
async function inBatches<T, R>(items: readonly T[], size: number, send: (batch: T[]) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let offset = 0;
  for (const batch of chunks(items, size)) {
    try {
      results.push(await send(batch));
    } catch (error) {
      if (!(error instanceof TributaryError) || offset === 0) throw error;
      const errors = error.errors?.map((item) => ({ ...item, loc: locInInput(item.loc, offset) })) ?? null;
      throw new TributaryError(error.status, `${error.message} (items from ${offset} on; the ${offset} before were stored)`, errors, error.request_id, { cause: error });
    }
    offset += batch.length;
  }
  return results;
}

export class Tributary {
  readonly #http: Transport;

  constructor({ url, apiKey, clientId, fetch, ...retry }: TributaryOptions) {
    this.#http = createTransport({ url, fetch, headers: { authorization: apiKey, 'data-client-id': clientId }, ...retry });
  }

  /** Orders: upsert (any number, in batches of 1,000), patch, list, aliases, attribution. */
  readonly orders = {
    upsert: async (orders: readonly Sendable<Order>[], { signal }: CallOptions = {}): Promise<Omit<OrderUpsertResult, 'message' | 'request_id'> & BatchedResult> => {
      let offset = 0;
      const results = await inBatches(orders, MAX_ORDERS_PER_REQUEST, async (batch) => {
        const result = await this.#http.json<OrderUpsertResult>('POST', '/v2/orders', { json: encodeList(batch), idempotent: true, signal });
        const warnings = result.warnings.map((warning) => ({ ...warning, loc: locInInput(warning.loc, offset) }));
        offset += batch.length;
        return { ...result, warnings };
      });
      return {
        inserted: results.reduce((sum, result) => sum + result.inserted, 0),
        updated: results.reduce((sum, result) => sum + result.updated, 0),
        warnings: results.flatMap((result) => result.warnings),
        request_ids: results.map((result) => result.request_id),
      };
    },
    patch: async (patches: readonly OrderPatch[], { signal }: CallOptions = {}): Promise<Omit<OrderPatchResult, 'message' | 'request_id'> & BatchedResult> => {
      const results = await inBatches(patches, MAX_ORDERS_PER_REQUEST, (batch) =>
        this.#http.json<OrderPatchResult>('PATCH', '/v2/orders', { body: batch, idempotent: true, signal }),
      );
      return {
        updated: results.reduce((sum, result) => sum + result.updated, 0),
        warnings: results.flatMap((result) => result.warnings),
        request_ids: results.map((result) => result.request_id),
      };
    },
    /** A page (with `page` or `page_size`), or every order of the range in one answer. */
    list: (query: OrderQuery, { signal }: CallOptions = {}) =>
      this.#http.json<StoredOrderPage>('GET', '/v2/orders', { query, idempotent: true, signal }),
    addAliases: async (aliases: readonly OrderAlias[], { signal }: CallOptions = {}): Promise<Omit<AliasAddResult, 'message' | 'request_id'> & BatchedResult> => {
      const results = await inBatches(aliases, MAX_ALIASES_PER_REQUEST, (batch) =>
        this.#http.json<AliasAddResult>('POST', '/v2/orders/aliases', { body: { aliases: batch }, idempotent: true, signal }),
      );
      return {
        added: results.reduce((sum, result) => sum + result.added, 0),
        ignored: results.reduce((sum, result) => sum + result.ignored, 0),
        request_ids: results.map((result) => result.request_id),
      };
    },
    explain: (orderId: string, query: AttributionQuery = {}, { signal }: CallOptions = {}) =>
      this.#http.json<AttributionExplanation>('GET', `/v2/orders/${encodeURIComponent(orderId)}/attribution`, { query, idempotent: true, signal }),
  };

  /** Ad spend, hourly (`/v1/spend_hourly`) and daily (`/v1/spend`). */
  readonly spend = {
    hourly: this.#spendCollection<HourlySpend, HourlySpendQuery, StoredHourlySpend, HourlySpendMatch>('/v1/spend_hourly'),
    daily: this.#spendCollection<DailySpend, DailySpendQuery, StoredDailySpend, DailySpendMatch>('/v1/spend'),
  };

  #spendCollection<Record, Query extends SpendQuery, Stored, Match>(path: string) {
    return {
      /**
       * Upserts any number of records, in batches of 1,000; answers the records stored, and the
       * measures stored rounded (`loc` into the whole input).
       */
      upsert: async (records: readonly Sendable<Record>[], { signal }: CallOptions = {}): Promise<{ data: Stored[]; warnings: SpendWarning[] }> => {
        let offset = 0;
        const results = await inBatches(records, MAX_RECORDS_PER_REQUEST, async (batch) => {
          const result = await this.#http.json<{ data: Stored[]; warnings?: SpendWarning[] }>('POST', path, {
            json: encodeList(batch, '{"data":', '}'),
            idempotent: true,
            signal,
          });
          const warnings = (result.warnings ?? []).map((warning) => ({ ...warning, loc: locInInput(warning.loc, offset) }));
          offset += batch.length;
          return { data: result.data, warnings };
        });
        return { data: results.flatMap((result) => result.data), warnings: results.flatMap((result) => result.warnings) };
      },
      list: (query: Query, { signal }: CallOptions = {}) => this.#http.json<PageInfo & { data: Stored[] }>('GET', path, { query, idempotent: true, signal }),
      delete: (match: Match, { signal }: CallOptions = {}) =>
        this.#http.json<{ data: Stored[] }>('DELETE', path, { body: { data: match }, idempotent: true, signal }),
    };
  }

  readonly touchpoints = {
    upsert: async (touchpoints: readonly Sendable<Touchpoint>[], { signal }: CallOptions = {}): Promise<Omit<TouchpointUpsertResult, 'message' | 'request_id'> & BatchedResult> => {
      const results = await inBatches(touchpoints, MAX_TOUCHPOINTS_PER_REQUEST, (batch) =>
        this.#http.json<TouchpointUpsertResult>('POST', '/v1/touchpoints', { json: encodeList(batch, '{"data":', '}'), idempotent: true, signal }),
      );
      return {
        inserted: results.reduce((sum, result) => sum + result.inserted, 0),
        updated: results.reduce((sum, result) => sum + result.updated, 0),
        request_ids: results.map((result) => result.request_id),
      };
    },
    list: (query: TouchpointQuery, { signal }: CallOptions = {}) =>
      this.#http.json<StoredTouchpointPage>('GET', '/v1/touchpoints', { query, idempotent: true, signal }),
  };

  readonly identities = {
    link: async (identities: readonly Identity[], { signal }: CallOptions = {}): Promise<Omit<IdentityLinkResult, 'message' | 'request_id'> & BatchedResult> => {
      const results = await inBatches(identities, MAX_IDENTITIES_PER_REQUEST, (batch) =>
        this.#http.json<IdentityLinkResult>('POST', '/v1/identities', { body: { data: batch }, idempotent: true, signal }),
      );
      return { linked: results.reduce((sum, result) => sum + result.linked, 0), request_ids: results.map((result) => result.request_id) };
    },
  };

  /** Data exports (the reports) and the catalogs of what they can hold. */
  readonly exports = {
    /** Not sent again after a connection failure: a second export would be created. */
    create: (request: DataExportRequest, { signal }: CallOptions = {}) =>
      this.#http.json<{ id: string }>('POST', '/v1/exports/data-export', { body: request, idempotent: false, signal }),
    result: (id: string, { signal }: CallOptions = {}) =>
      this.#http.json<DataExportResult>('GET', `/v1/exports/data-export/result/${encodeURIComponent(id)}`, { idempotent: true, signal }),
    /** A file of a finished export, by one of its links: the answer, its body a CSV stream. */
    download: (link: string, { signal }: CallOptions = {}) => this.#http.response('GET', link, { idempotent: true, signal, authenticated: false }),
    metrics: ({ signal }: CallOptions = {}) => this.#http.json<Metrics>('GET', '/v1/exports/metrics', { idempotent: true, signal }),
    breakdowns: ({ signal }: CallOptions = {}) => this.#http.json<Breakdowns>('GET', '/v1/exports/breakdowns', { idempotent: true, signal }),
    attributionModels: ({ signal }: CallOptions = {}) =>
      this.#http.json<AttributionModels>('GET', '/v1/exports/attribution-models', { idempotent: true, signal }),
  };

  /** The attribution models, and what the data-driven ones (markov, shapley) learnt from the client's paths. */
  readonly attribution = {
    models: ({ signal }: CallOptions = {}) => this.#http.json<{ models: AttributionModel[] }>('GET', '/v1/attribution/models', { idempotent: true, signal }),
    model: (modelId: string, query: LearntModelQuery = {}, { signal }: CallOptions = {}) =>
      this.#http.json<AttributionModel>('GET', `/v1/attribution/models/${encodeURIComponent(modelId)}`, { query, idempotent: true, signal }),
  };

  /** An export's rows at once, as JSON, for periods a request can wait for (the API says how long); longer ones are exports' work. */
  readonly reports = {
    performance: (query: PerformanceQuery, { signal }: CallOptions = {}) =>
      this.#http.json<PerformanceReport>('GET', '/v1/reports/performance', { query, idempotent: true, signal }),
  };

  /** The client of these credentials: its name, its time zone (whose days reports count) and the environment of the port. */
  client({ signal }: CallOptions = {}): Promise<ClientOfCredentials> {
    return this.#http.json<ClientOfCredentials>('GET', '/v1/client', { idempotent: true, signal });
  }

  /** Whether orders, spend and touchpoints are arriving: records received a day, and each feed's last. */
  readonly health = {
    feeds: ({ signal }: CallOptions = {}) => this.#http.json<FeedHealth>('GET', '/v1/health/feeds', { idempotent: true, signal }),
  };

  /** The client's own exchange rates, one a pair a day (1 base = rate quote); a pair's read with inverse and cross rates derived. */
  readonly exchangeRates = {
    /** Upserts any number of rates, in batches of 1,000; answers what they stored, and the rates stored rounded (`loc` into the whole input). */
    upsert: async (rates: readonly ExchangeRate[], { signal }: CallOptions = {}): Promise<RatesUpserted> => {
      let offset = 0;
      const results = await inBatches(rates, MAX_RATES_PER_REQUEST, async (batch) => {
        const result = await this.#http.json<Static<typeof RatesStored>>('POST', '/v1/exchange-rates', { body: { data: batch }, idempotent: true, signal });
        const warnings = (result.warnings ?? []).map((warning) => ({ ...warning, loc: locInInput(warning.loc, offset) }));
        offset += batch.length;
        return { ...result, warnings };
      });
      const sum = (field: 'inserted' | 'updated') => results.reduce((total, result) => total + result[field], 0);
      return {
        inserted: sum('inserted'),
        updated: sum('updated'),
        warnings: results.flatMap((result) => result.warnings),
        request_ids: results.map((result) => result.request_id),
      };
    },
    list: (query: ExchangeRateQuery, { signal }: CallOptions = {}) =>
      this.#http.json<ExchangeRates>('GET', '/v1/exchange-rates', { query, idempotent: true, signal }),
  };

  readonly customers = {
    /** Erases customers' personal data (at most 1,000 ids and 1,000 e-mails a call); sent again, it changes nothing. */
    erase: (request: CustomerErasureRequest, { signal }: CallOptions = {}) =>
      this.#http.json<CustomerErasureResult>('POST', '/v1/customers/erase', { body: request, idempotent: true, signal }),
  };

  /** Polls an export, waiting longer each time, until it is done: its download links, or a TributaryError (status 0) on ERROR. */
  async waitForExport(id: string, { signal, intervalMs = 1000, maxIntervalMs = 15_000 }: WaitOptions = {}): Promise<string[]> {
    for (let wait = intervalMs; ; wait = Math.min(maxIntervalMs, wait * 2)) {
      const result = await this.exports.result(id, { signal });
      if (result.status === 'SUCCESS') return result.result;
      if (result.status === 'ERROR') {
        const why = typeof result.warn.error === 'string' ? `: ${result.warn.error}` : '';
        throw new TributaryError(0, `Export ${id} failed${why}`);
      }
      await sleep(wait, signal);
    }
  }
}
