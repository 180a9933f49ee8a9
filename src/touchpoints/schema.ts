import { Type, type Static } from 'typebox';
import { PageQuery, pageOf } from '../http/pagination.js';
import { DateTime, Identifier, MAX_TEXT_LENGTH, NonEmptyString } from '../http/schemas.js';
import { MAX_IDENTITIES_PER_REQUEST, MAX_TOUCHPOINTS_PER_REQUEST } from '../request-limits.js';
import { AD_FIELDS, CHANNELS, CLICK_ID_FIELDS, CLICK_ID_PLATFORMS, MAX_CLICK_ID_LENGTH, MAX_UTM_LENGTH, UTM_FIELDS } from './derive.js';


/** Spend's bound on a platform name, so that every platform a touchpoint names can be one of spend's. */
const MAX_PLATFORM_NAME_LENGTH = 64;
const OPTIONAL_ID_LENGTH = 255;

/** An optional field where "" means absent, as trackers send parameters they do not have. */
const OrEmpty = (description: string, maxLength: number) =>
  Type.Optional(Type.String({ maxLength, description: `${description} "" is the same as absent.` }));

const utmProperties = Object.fromEntries(
  UTM_FIELDS.map((field) => [field, OrEmpty(`Read from landing_url's query when absent.`, MAX_UTM_LENGTH)]),
);
const clickIdProperties = Object.fromEntries(
  CLICK_ID_FIELDS.map((field) => [field, OrEmpty(`Click id of ${CLICK_ID_PLATFORMS[field]}; read from landing_url's query when absent.`, MAX_CLICK_ID_LENGTH)]),
);
const adProperties = {
  platform_name: OrEmpty('Overrides utm_source and the click id.', MAX_PLATFORM_NAME_LENGTH),
  platform_account_id: OrEmpty('The ad platform account.', OPTIONAL_ID_LENGTH),
  campaign_id: OrEmpty('Overrides utm_campaign.', OPTIONAL_ID_LENGTH),
  adset_id: OrEmpty('Overrides utm_term.', OPTIONAL_ID_LENGTH),
  ad_id: OrEmpty('Overrides utm_content.', OPTIONAL_ID_LENGTH),
};

export const TouchpointType = Type.Union([Type.Literal('visit'), Type.Literal('view')]);

/**
 * The visits of the API reference's examples: a paid one of the Spring sale campaign, then one
 * from Google search, by the visitor who placed order 1001 (src/orders/schema.ts) on 2024-03-08.
 */
const PAID_VISIT = {
  touchpoint_id: 'tp-1',
  occurred_at: '2024-03-06T14:02:00Z',
  visitor_id: 'anon-42',
  landing_url: 'https://shop.example/?utm_source=meta&utm_medium=paid_social&utm_campaign=spring&fbclid=IwAR0',
};
const SEARCH_VISIT = {
  touchpoint_id: 'tp-2',
  occurred_at: '2024-03-08T10:12:00+01:00',
  visitor_id: 'anon-42',
  landing_url: 'https://shop.example/products/shirt',
  referrer: 'https://www.google.com/',
};

export const Touchpoint = Type.Object(
  {
    touchpoint_id: Identifier('Unique per client: sending it again replaces the touchpoint.'),
    occurred_at: DateTime('When the visit or view happened.'),
    type: Type.Optional(
      Type.Unsafe<'visit' | 'view'>({
        type: 'string',
        enum: ['visit', 'view'],
        default: 'visit',
        description: 'visit (the default): the person arrived on the shop; view: an ad impression a platform reported.',
      }),
    ),
    visitor_id: Type.Optional(Identifier('An anonymous browser or device id.')),
    customer_id: Type.Optional(NonEmptyString("The shop's own customer id, as in orders (and as long).")),
    landing_url: OrEmpty('The page the visit arrived on; its query holds UTMs and click ids.', MAX_TEXT_LENGTH),
    referrer: OrEmpty('The page the visit came from (an absolute URL).', MAX_TEXT_LENGTH),
    ...utmProperties,
    ...clickIdProperties,
    ...adProperties,
  },
  {
    additionalProperties: false,
    'x-required-any': ['visitor_id', 'customer_id'],
    'x-messages': { 'x-required-any': 'Give visitor_id or customer_id, or both' },
    examples: [PAID_VISIT],
  },
);

export const TouchpointBatch = Type.Object(
  {
    data: Type.Array(Touchpoint, {
      minItems: 1,
      maxItems: MAX_TOUCHPOINTS_PER_REQUEST,
      'x-unique-by': ['touchpoint_id'],
      'x-messages': { 'x-unique-by': 'Duplicate touchpoint_id in this request: each touchpoint may appear once' },
    }),
  },
  { additionalProperties: false, examples: [{ data: [PAID_VISIT, SEARCH_VISIT] }] },
);
export type TouchpointBatch = Static<typeof TouchpointBatch>;

export const UpsertResult = Type.Object(
  {
    message: Type.String(),
    inserted: Type.Integer({ description: 'Touchpoints that were new.' }),
    updated: Type.Integer({ description: 'Touchpoints that existed and were replaced.' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Upserted 2 touchpoints', inserted: 2, updated: 0, request_id: '691555bb-7e97-4ff3-a36f-e4c1df93e677' }] },
);

export const TouchpointListQuery = Type.Object(
  {
    visitor_id: Type.Optional(Type.String({ ...Identifier("The visitor's touchpoints."), examples: [PAID_VISIT.visitor_id] })),
    customer_id: Type.Optional(NonEmptyString("The customer's touchpoints: its own, and those of the visitors linked to it.")),
    start: Type.Optional(Type.String({ ...DateTime('Earliest occurred_at, inclusive.'), examples: ['2024-03-01T00:00:00Z'] })),
    end: Type.Optional(Type.String({ ...DateTime('Latest occurred_at, inclusive.'), examples: ['2024-03-31T23:59:59Z'] })),
    ...PageQuery.properties,
  },
  { additionalProperties: false },
);
export type TouchpointListQuery = Static<typeof TouchpointListQuery>;

const NullableText = (description?: string) => Type.Union([Type.String(), Type.Null()], description ? { description } : {});

export const StoredTouchpoint = Type.Object({
  touchpoint_id: Type.String(),
  occurred_at: Type.String({ format: 'date-time', description: 'In UTC.' }),
  type: TouchpointType,
  visitor_id: NullableText(),
  customer_id: NullableText('As sent.'),
  linked_customer_id: NullableText("customer_id, else the customer of the visitor's identity link (directly, or through its order once that order exists)."),
  landing_url: NullableText(),
  referrer: NullableText(),
  ...Object.fromEntries(UTM_FIELDS.map((field) => [field, NullableText("As sent, else from landing_url's query.")])),
  click_ids: Type.Record(Type.String(), Type.String(), { description: "Click ids as sent, else from landing_url's query." }),
  ...Object.fromEntries(AD_FIELDS.map((field) => [field, Type.String({ description: 'Derived; "" when nothing names one.' })])),
  channel: Type.String({ enum: [...CHANNELS] }),
  created_at: Type.String({ format: 'date-time', description: 'First write of this touchpoint_id.' }),
  updated_at: Type.String({ format: 'date-time', description: 'Last write of this touchpoint_id.' }),
});

/** The visits of the examples as stored: UTMs read from the URL, fields derived, linked to the customer of order 1001. */
const STORED_VISIT = {
  type: 'visit',
  visitor_id: 'anon-42',
  customer_id: null,
  linked_customer_id: 'cust-9',
  platform_account_id: '',
  adset_id: '',
  ad_id: '',
  created_at: '2024-03-08T09:30:05.208Z',
  updated_at: '2024-03-08T09:30:05.208Z',
};
export const TouchpointPage = pageOf(StoredTouchpoint, {
  examples: [
    {
      data: [
        {
          ...STORED_VISIT,
          touchpoint_id: 'tp-1',
          occurred_at: '2024-03-06T14:02:00.000Z',
          landing_url: 'https://shop.example/?utm_source=meta&utm_medium=paid_social&utm_campaign=spring&fbclid=IwAR0',
          referrer: null,
          utm_source: 'meta',
          utm_medium: 'paid_social',
          utm_campaign: 'spring',
          utm_term: null,
          utm_content: null,
          click_ids: { fbclid: 'IwAR0' },
          platform_name: 'meta',
          campaign_id: 'spring',
          channel: 'paid',
        },
        {
          ...STORED_VISIT,
          touchpoint_id: 'tp-2',
          occurred_at: '2024-03-08T09:12:00.000Z',
          landing_url: 'https://shop.example/products/shirt',
          referrer: 'https://www.google.com/',
          utm_source: null,
          utm_medium: null,
          utm_campaign: null,
          utm_term: null,
          utm_content: null,
          click_ids: {},
          platform_name: '',
          campaign_id: '',
          channel: 'organic_search',
        },
      ],
      page: 1,
      page_size: 100,
      total_pages: 1,
      total_count: 2,
    },
  ],
});

/** The visitor of the examples placed order 1001; another browser of its customer logged in. */
const IDENTITY_EXAMPLES = [
  { visitor_id: PAID_VISIT.visitor_id, order_id: '1001' },
  { visitor_id: 'anon-7', customer_id: 'cust-9' },
];
export const Identity = Type.Object(
  {
    visitor_id: Identifier('The anonymous visitor.'),
    customer_id: Type.Optional(NonEmptyString('The customer the visitor is (a login, an identify call).')),
    order_id: Type.Optional(Identifier("An order the visitor placed: the visitor is that order's customer, once the order exists.")),
  },
  {
    additionalProperties: false,
    'x-required-any': ['customer_id', 'order_id'],
    'x-exclusive': [['customer_id', 'order_id']],
    'x-messages': { 'x-required-any': 'Give customer_id or order_id' },
    examples: [IDENTITY_EXAMPLES[0]],
  },
);

export const IdentityBatch = Type.Object(
  {
    data: Type.Array(Identity, {
      minItems: 1,
      maxItems: MAX_IDENTITIES_PER_REQUEST,
      'x-unique-by': ['visitor_id'],
      'x-messages': { 'x-unique-by': 'Duplicate visitor_id in this request: a visitor is linked to one customer' },
    }),
  },
  { additionalProperties: false, examples: [{ data: IDENTITY_EXAMPLES }] },
);
export type IdentityBatch = Static<typeof IdentityBatch>;

export const LinkResult = Type.Object(
  {
    message: Type.String(),
    linked: Type.Integer({ description: 'Visitors linked by this request (each replacing any earlier link of the visitor).' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Linked 2 visitors', linked: 2, request_id: '55785a0d-8c67-4168-a2ca-f10db2cfc52d' }] },
);
