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
  { additionalProperties: false },
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
    examples: [
      {
        type: 'page',
        messageId: 'ajs-next-1699891200000-4c2a',
        anonymousId: '507f191e810c19729de860ea',
        timestamp: '2026-11-22T14:03:11.000Z',
        context: { campaign: { source: 'meta', medium: 'cpc', name: 'spring' }, page: { url: 'https://shop.example/?utm_source=meta', referrer: '' } },
      },
    ],
  },
);
export type SegmentPayload = Static<typeof SegmentPayload>;

export const SegmentResult = Type.Object({
  message: Type.String(),
  touchpoints: Type.Integer({ description: 'Page events stored as visit touchpoints (inserted or replaced).' }),
  links: Type.Integer({ description: 'Visitors linked to a customer (identify) or an order (Order Completed).' }),
  ignored: Type.Integer({ description: 'Events of other types or names, or without the ids they need, accepted and not stored.' }),
  request_id: Type.String({ format: 'uuid' }),
});
