/**
 * What one request may hold: the API's limits, by which the typed client and the importer batch.
 * A module of their own, so that the client loads without TypeBox and the schemas (some 20 MB of
 * the importer's memory).
 */
export const MAX_ORDERS_PER_REQUEST = 1000;
export const MAX_ALIASES_PER_REQUEST = 2500;
export const MAX_RECORDS_PER_REQUEST = 1000;
export const MAX_TOUCHPOINTS_PER_REQUEST = 1000;
export const MAX_IDENTITIES_PER_REQUEST = 1000;
export const MAX_RATES_PER_REQUEST = 1000;
