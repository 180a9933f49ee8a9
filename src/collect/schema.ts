import { Type, type Static } from 'typebox';
import { DateTime, Identifier, MAX_ID_LENGTH, MAX_TEXT_LENGTH, NonEmptyString } from '../http/schemas.js';

/**
 * The collector's bounds. A beacon holds the few events of one page (a page view, an identify, a
 * purchase): 50 of them at the longest URLs still fit in the body limit only if most are short,
 * and no honest page sends more at once.
 */
export const COLLECT_BODY_LIMIT_BYTES = 16 * 1024;
export const MAX_COLLECT_EVENTS = 50;

/** Which event types need which field: the rest of an event is optional. */
export const COLLECT_REQUIRED_FIELDS = { page: null, identify: 'customer_id', purchase: 'order_id' } as const;

export const CollectEvent = Type.Object(
  {
    event_id: Identifier("Unique per event: a page view's is its touchpoint_id, so a retried beacon is stored once."),
    type: Type.Unsafe<'page' | 'identify' | 'purchase'>({
      type: 'string',
      enum: ['page', 'identify', 'purchase'],
      description: 'page: a visit (a touchpoint); identify: the visitor is customer_id; purchase: the visitor placed order_id.',
    }),
    occurred_at: DateTime('When it happened, by the browser\'s clock; more than 24 hours from the server\'s, the server\'s time is taken.'),
    visitor_id: Identifier('The first-party visitor id of the browser.'),
    url: Type.Optional(Type.String({ maxLength: MAX_TEXT_LENGTH, description: 'page: the page\'s URL, its query holding UTMs and click ids.' })),
    referrer: Type.Optional(Type.String({ maxLength: MAX_TEXT_LENGTH, description: 'page: document.referrer.' })),
    customer_id: Type.Optional(NonEmptyString('identify (required): the shop\'s customer id; page: the customer the visit is, when known.')),
    order_id: Type.Optional(Identifier('purchase (required): the order\'s order_id, as later sent to POST /v2/orders.')),
  },
  { additionalProperties: false },
);
export type CollectEvent = Static<typeof CollectEvent>;

export const CollectBody = Type.Object(
  {
    client_id: Type.String({ format: 'uuid', description: 'The client id of the script tag.' }),
    events: Type.Array(CollectEvent, { minItems: 1, maxItems: MAX_COLLECT_EVENTS }),
  },
  {
    additionalProperties: false,
    // A visit from an ad, a login and a purchase, as /pixel.js sends them: the visitor's id and the events' are made in the browser.
    examples: [
      {
        client_id: '5f0c2a3e-8d1b-4c7a-9e2f-1a2b3c4d5e6f',
        events: [
          {
            event_id: '8d3f5a2e-0b7c-4e61-9f14-3a6d2c8b7e01',
            type: 'page',
            occurred_at: '2024-03-08T09:12:00.000Z',
            visitor_id: 'b5c2e0d4-7a61-4f0e-9d3b-2c8e1f6a4b90',
            url: 'https://shop.example/?utm_source=meta&utm_medium=cpc&utm_campaign=spring&fbclid=IwAR0',
            referrer: 'https://www.facebook.com/',
          },
          { event_id: '91aa6c3d-5e2f-4b8a-8c07-1d4e9f2a6b35', type: 'identify', occurred_at: '2024-03-08T09:14:00.000Z', visitor_id: 'b5c2e0d4-7a61-4f0e-9d3b-2c8e1f6a4b90', customer_id: 'cust-9' },
          { event_id: 'a07e2b9c-3d41-4f6e-b5a8-7c0d1e2f3a4b', type: 'purchase', occurred_at: '2024-03-08T09:23:45.000Z', visitor_id: 'b5c2e0d4-7a61-4f0e-9d3b-2c8e1f6a4b90', order_id: '1001' },
        ],
      },
    ],
  },
);
export type CollectBody = Static<typeof CollectBody>;

/**
 * A Segment-spec event, as far as it is read: what page, identify and the track of Order Completed
 * carry. Everything else a pipeline sends (traits, integrations, other context) is let through
 * unread. https://segment.com/docs/connections/spec/common/
 */
const Loose = <T extends Record<string, ReturnType<typeof Type.Optional>>>(properties: T) => Type.Object(properties, { additionalProperties: true });
const OptionalText = Type.Optional(Type.String({ maxLength: MAX_TEXT_LENGTH }));
const Campaign = Type.Optional(
  Loose({
    source: OptionalText,
    medium: OptionalText,
    name: OptionalText,
    term: OptionalText,
    content: OptionalText,
  }),
);

/**
 * An order id, as text or as a JSON number. A number is taken as its decimal digits, so only a
 * whole number that a double holds exactly: past 2^53 the parser has already lost digits (a
 * shop's 1e21 would be stored as "1e+21", an id no order has), so it is refused, asking for the
 * id as a string. One schema of two types, not a union, so that a refusal says which rule broke.
 */
const OrderIdTextOrNumber = Type.Unsafe<string | number>({
  type: ['string', 'integer'],
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: "Order Completed: the order's order_id, a string or a whole number.",
  'x-messages': { maximum: `Must be at most ${Number.MAX_SAFE_INTEGER} when sent as a number (a larger one loses digits): send the order id as a string` },
});

const SEGMENT_TYPE = Type.String({ minLength: 1, maxLength: 64, description: 'page, identify and track are read; any other is counted as ignored.' });
const segmentFields = {
  messageId: Type.Optional(Identifier("A page's touchpoint_id: a redelivered event is stored once.")),
  anonymousId: Type.Optional(Identifier('The visitor.')),
  userId: Type.Optional(NonEmptyString('The customer.')),
  timestamp: Type.Optional(DateTime("When it happened (Segment's corrected time).")),
  event: Type.Optional(Type.String({ maxLength: MAX_TEXT_LENGTH, description: "A track's name: Order Completed links the visitor to properties.order_id." })),
  properties: Type.Optional(
    Loose({
      url: OptionalText,
      referrer: OptionalText,
      order_id: Type.Optional(OrderIdTextOrNumber),
    }),
  ),
  context: Type.Optional(
    Loose({
      campaign: Campaign,
      page: Type.Optional(Loose({ url: OptionalText, referrer: OptionalText })),
    }),
  ),
};

export const SegmentEvent = Type.Object({ type: SEGMENT_TYPE, ...segmentFields }, { additionalProperties: true });
export type SegmentEvent = Static<typeof SegmentEvent>;

/** A batch's bound: Segment's and RudderStack's batches are at most 500 KB, a few hundred events. */
export const MAX_SEGMENT_EVENTS = 2500;

/** One event, or `{"batch": [...]}` (whose other top-level fields are not read). */
export const SegmentPayload = Type.Object(
  {
    batch: Type.Optional(Type.Array(SegmentEvent, { minItems: 1, maxItems: MAX_SEGMENT_EVENTS })),
    type: Type.Optional(SEGMENT_TYPE),
    ...segmentFields,
  },
  {
    additionalProperties: true,
    'x-required-any': ['type', 'batch'],
    'x-messages': { 'x-required-any': 'Send one event (with its type) or {"batch": [events]}' },
    description: 'One Segment-spec event, or {"batch": [...]} of them, as the Segment and RudderStack HTTP APIs and webhook destinations send them.',
    // A page, an identify and the purchase of order 1001 (src/orders/schema.ts), and an event that is not read.
    examples: [
      {
        batch: [
          {
            type: 'page',
            messageId: 'ajs-next-1709889120000-4c2a',
            anonymousId: 'anon-42',
            timestamp: '2024-03-08T09:12:00.000Z',
            context: {
              page: { url: 'https://shop.example/?utm_source=meta&utm_medium=cpc&utm_campaign=spring&fbclid=IwAR0', referrer: 'https://l.facebook.com/' },
              campaign: { source: 'meta', medium: 'cpc', name: 'spring' },
            },
          },
          { type: 'identify', messageId: 'ajs-next-1709889240000-7d1e', anonymousId: 'anon-42', userId: 'cust-9', traits: { plan: 'pro' } },
          { type: 'track', event: 'Order Completed', messageId: 'ajs-next-1709889825000-1f9b', anonymousId: 'anon-42', properties: { order_id: '1001', revenue: 99.99, currency: 'USD' } },
          { type: 'track', event: 'Product Viewed', messageId: 'ajs-next-1709889060000-0a3c', anonymousId: 'anon-42', properties: { product_id: 'shirt' } },
        ],
      },
    ],
  },
);
export type SegmentPayload = Static<typeof SegmentPayload>;

export const SegmentResult = Type.Object(
  {
    message: Type.String(),
    touchpoints: Type.Integer({ description: 'Page events stored as visit touchpoints (inserted or replaced).' }),
    links: Type.Integer({ description: 'Visitors linked to a customer (identify) or an order (Order Completed).' }),
    ignored: Type.Integer({ description: 'Events of other types or names, or without the ids they need, accepted and not stored.' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  {
    // One link: the identify and the Order Completed link the same visitor, and the later one holds.
    examples: [{ message: 'Stored 1 touchpoint and 1 link; ignored 1 event', touchpoints: 1, links: 1, ignored: 1, request_id: '6ac39e97-93a4-4f34-925c-335ce3845e0e' }],
  },
);
