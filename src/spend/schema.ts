import { Type, type Static, type TSchema } from 'typebox';
import type { NumberBounds } from '../http/exact-numbers.js';
import { PageQuery, pageOf } from '../http/pagination.js';
import { MAX_TEXT_LENGTH } from '../http/schemas.js';
import { CURRENCY_CODES } from '../reference-codes.js';
import { MAX_RECORDS_PER_REQUEST } from '../request-limits.js';
import type { SpendCollection } from './collection.js';

/** Bounds of spend, impressions and clicks: order amounts' maximum, and a dozen decimal places stored. */
export const MEASURE_BOUNDS: NumberBounds = { minimum: 0, maximum: 100_000_000_000_000, scale: 12 };

const Text = (description: string, maxLength = MAX_TEXT_LENGTH) => Type.String({ description, maxLength });
const TextOrEmpty = (description: string, maxLength = MAX_TEXT_LENGTH) =>
  Type.Optional(Type.String({ default: '', description: `${description} Default "".`, maxLength }));

const NOT_A_MEASURE = { msg: 'Must be a number of at least 0, or empty for 0', type: 'type' };

/** A count or amount ≥ 0; the specification lets it be empty, which means 0. */
const Measure = (description: string, options: object = {}) =>
  Type.Unsafe<number | '' | null>({
    // JSON Schema keywords apply to their own types only: minimum to numbers, maxLength to strings.
    type: ['number', 'string', 'null'],
    minimum: MEASURE_BOUNDS.minimum,
    maximum: MEASURE_BOUNDS.maximum,
    maxLength: 0,
    description: `${description} From 0 to ${MEASURE_BOUNDS.maximum}, any number of decimal places (stored rounded to ${MEASURE_BOUNDS.scale}, half away from zero, with a warning when that changes it); null or "" mean 0.`,
    'x-messages': { type: NOT_A_MEASURE, maxLength: NOT_A_MEASURE },
    ...options,
  });

/**
 * The key's five ids share one index entry (at most 2,704 bytes): their lengths are chosen so
 * that the longest key fits even at four bytes a character.
 */
const ID_LENGTHS = { platform_name: 64, platform_account_id: 128, campaign_id: 140, adset_id: 140, ad_id: 140 };

/** The identity of a record, less its period: with the period, its key. */
const identity = {
  platform_account_id: TextOrEmpty('Ad platform account id.', ID_LENGTHS.platform_account_id),
  platform_name: Text('Ad platform name.', ID_LENGTHS.platform_name),
  campaign_id: Text('Campaign id (utm_campaign, when known).', ID_LENGTHS.campaign_id),
  adset_id: TextOrEmpty('Adset id (utm_term, when known).', ID_LENGTHS.adset_id),
  ad_id: TextOrEmpty('Ad id (utm_content, when known).', ID_LENGTHS.ad_id),
};

export const KEY_FIELDS = ['platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id'] as const;

/**
 * A record's key, as one string: its period as a comparable value (one hour written in two
 * offsets is one period) and its ids, one left out counting as its default "". A request may
 * hold a key once.
 */
export function spendKey(collection: SpendCollection, record: Readonly<Record<string, unknown>>): string {
  // NUL cannot occur in a field (the body parser refuses it), so it separates them unambiguously.
  return [collection.periodValue(String(record[collection.timeField])), ...KEY_FIELDS.map((field) => record[field])].join('\u0000');
}

export function spendSchemas(collection: SpendCollection) {
  const time = { [collection.timeField]: collection.timeSchema } as Record<string, TSchema>;

  // The examples of the API reference: one record of the Spring sale campaign, in either collection.
  const exampleKey = { [collection.timeField]: collection.example.period, platform_account_id: 'act_1', campaign_id: 'spring' };
  const exampleRecord = { ...exampleKey, platform_name: 'meta', campaign_name: 'Spring sale', spend: 12.5, spend_currency: 'USD', impressions: 1200, clicks: 31 };
  const exampleStored = { ...exampleRecord, adset_id: '', adset_name: '', ad_id: '', ad_name: '', created_at: '2024-03-09T06:00:02.000Z', updated_at: '2024-03-09T06:00:02.000Z' };
  const SpendRecord = Type.Object(
    {
      ...time,
      ...identity,
      campaign_name: Text('Campaign name; may equal campaign_id.'),
      adset_name: TextOrEmpty('Adset name.'),
      ad_name: TextOrEmpty('Ad name.'),
      spend: Measure('Amount spent, in spend_currency.'),
      spend_currency: Type.String({
        enum: CURRENCY_CODES,
        description: 'ISO 4217 code.',
        'x-messages': { enum: 'Currency does not match any known currencies' },
      }),
      impressions: Type.Optional(Measure('Impressions.', { default: 0 })),
      clicks: Type.Optional(Measure('Clicks.', { default: 0 })),
    },
    { additionalProperties: false, examples: [exampleRecord] },
  );

  const number = Type.Number({ minimum: 0 });
  const StoredRecord = Type.Object({
    [collection.timeField]: Type.String(),
    ...Object.fromEntries(['platform_account_id', 'platform_name', 'campaign_id', 'campaign_name', 'adset_id', 'adset_name', 'ad_id', 'ad_name'].map((field) => [field, Type.String()])),
    spend: number,
    spend_currency: Type.String(),
    impressions: number,
    clicks: number,
    created_at: Type.String({ format: 'date-time', description: 'First write of this key.' }),
    updated_at: Type.String({ format: 'date-time', description: 'Last write of this key.' }),
  });

  const UpsertBody = Type.Object(
    { data: Type.Array(SpendRecord, { minItems: 1, maxItems: MAX_RECORDS_PER_REQUEST }) },
    { additionalProperties: false, examples: [{ data: [exampleRecord] }] },
  );

  const { platform_name: _matchesEveryPlatform, ...deleteIdentity } = identity;
  const DeleteBody = Type.Object(
    { data: Type.Object({ ...time, ...deleteIdentity }, { additionalProperties: false }) },
    { additionalProperties: false, examples: [{ data: { ...exampleKey, adset_id: '', ad_id: '' } }] },
  );

  const [rangeStart, rangeEnd] = collection.rangeParams;
  const account = Type.String({
    examples: ['act_1'],
    description: `The ad platform account ("" for records sent without one)${collection.listNeedsAccount ? '' : '; left out, every account of the client'}.`,
  });
  const ListQuery = Type.Object(
    {
      platform_account_id: collection.listNeedsAccount ? account : Type.Optional(account),
      date: Type.Optional(Type.String({ format: 'date', description: `One UTC day, instead of ${rangeStart} and ${rangeEnd}.` })),
      [rangeStart]: Type.Optional({ ...collection.rangeSchema, examples: [collection.example.range[0]] }),
      [rangeEnd]: Type.Optional({ ...collection.rangeSchema, examples: [collection.example.range[1]] }),
      campaign_id: Type.Optional(Type.String({ examples: [exampleKey.campaign_id] })),
      adset_id: Type.Optional(Type.String()),
      ad_id: Type.Optional(Type.String()),
      ...PageQuery.properties,
    },
    { additionalProperties: false },
  );

  const Warning = Type.Object({ loc: Type.String({ description: 'body/data/<n>/<measure>.' }), msg: Type.String() });

  return {
    UpsertBody,
    DeleteBody,
    ListQuery,
    RecordList: Type.Object({ data: Type.Array(StoredRecord) }, { examples: [{ data: [exampleStored] }] }),
    UpsertResult: Type.Object(
      {
        data: Type.Array(StoredRecord, { description: 'The records as stored, in request order.' }),
        warnings: Type.Optional(
          Type.Array(Warning, { description: 'Only when there are any: measures with more decimal places than are stored, each stored rounded; the records were stored.' }),
        ),
      },
      { examples: [{ data: [exampleStored] }] },
    ),
    RecordPage: pageOf(StoredRecord, { examples: [{ data: [exampleStored], page: 1, page_size: 100, total_pages: 1, total_count: 1 }] }),
  };
}

export type SpendInput = Record<string, string | number | null> & Record<(typeof KEY_FIELDS)[number], string>;
export type SpendListQuery = Static<ReturnType<typeof spendSchemas>['ListQuery']> & Record<string, string | number | undefined>;
