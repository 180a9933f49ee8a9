import { Type, type Static, type TSchema } from 'typebox';
import { COUNTRY_CODES, CURRENCY_CODES } from '../reference-codes.js';
import { OptionalPageQuery, pageOf } from '../http/pagination.js';
import type { NumberBounds } from '../http/exact-numbers.js';
import { DateTime, Identifier, NonEmptyString, Text } from '../http/schemas.js';
import { MAX_ALIASES_PER_REQUEST, MAX_ORDERS_PER_REQUEST } from '../request-limits.js';


/**
 * The specification's maximum, its mirror as the minimum (discounts may be sent negative), and a
 * dozen decimal places stored, as spend has: an amount then reads back in at most 29 characters.
 */
export const AMOUNT_BOUNDS: NumberBounds = { minimum: -100_000_000_000_000, maximum: 100_000_000_000_000, scale: 12 };

/** Bounds on what one order may list: far past real orders, and a bound on what one costs to check, store and read. */
export const ORDER_LIST_LIMITS = { products: 1000, refunds: 1000, codesOrTags: 250, aliases: 100 };

const Amount = (description: string) =>
  Type.Number({
    minimum: AMOUNT_BOUNDS.minimum,
    maximum: AMOUNT_BOUNDS.maximum,
    description: `${description} Any number of decimal places: stored rounded to ${AMOUNT_BOUNDS.scale} (half away from zero), with a warning when that changes it.`,
  });
const TextList = (maxItems: number) => Type.Array(Text(), { uniqueItems: true, maxItems });
const DUPLICATE_PRODUCTS = 'Cannot include duplicate product IDs';

export const Product = Type.Object(
  {
    id: NonEmptyString('Identifies the product in the order.'),
    name: NonEmptyString('Product name.'),
    quantity: Amount('Units ordered.'),
    price: Amount('Price of one unit, in the order currency.'),
    variant_id: Type.Optional(NonEmptyString('Variant of the product.')),
    variant_name: Type.Optional(NonEmptyString('Name of the variant.')),
  },
  { additionalProperties: false },
);

export const Refund = Type.Object(
  {
    product_id: NonEmptyString('The refunded product; should be one of the order products.'),
    quantity: Amount('Units refunded; should be at most the units ordered.'),
    refund_amount: Amount('Total refunded to the customer, in the order currency.'),
    refund_cost: Amount('Estimated total cost of the refund, overheads such as shipping and fees included.'),
    refund_made_at: DateTime('When the refund was made.'),
    variant_id: Type.Optional(NonEmptyString('The refunded variant; should be one of the order products.')),
  },
  { additionalProperties: false },
);

export const ShippingAddress = Type.Object(
  {
    address1: Type.Optional(NonEmptyString('Street address.')),
    address2: Type.Optional(Text('Additional street address line.')),
    city: Type.Optional(NonEmptyString('City.')),
    state: Type.Optional(Text('State or region.')),
    zip: Text('Postal code.'),
    country_code: Type.String({
      enum: COUNTRY_CODES,
      description: 'Three-letter ISO 3166-1 alpha-3 country code.',
      'x-messages': { enum: 'Country code should use three-letter ISO 3166 country codes' },
    }),
  },
  { additionalProperties: false },
);

export const Alias = Type.Object(
  {
    type: Identifier('Kind of identifier, free-form; custom kinds are written custom:<name>.'),
    id: Identifier('The alternate order id.'),
  },
  { additionalProperties: false },
);

const orderProperties = {
  order_id: Identifier('Unique per client: sending it again updates the order.'),
  customer_id: NonEmptyString("The shop's internal customer id (not an e-mail, not the order id)."),
  time_of_purchase: DateTime('When the customer placed the order.'),
  customer_email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
  customer_phone_number: Type.Optional(Text()),
  hashed_customer_email: Type.Optional(Text('SHA-256 of the normalised e-mail.')),
  hashed_customer_phone_number: Type.Optional(Text('SHA-256 of the E.164 phone number.')),
  customer_name: Type.Optional(Text()),
  customer_ip_address: Type.Optional(Type.String({ format: 'ip-or-empty', maxLength: 64, description: 'IPv4 or IPv6 address; empty when unknown.' })),
  discount_codes: Type.Optional(TextList(ORDER_LIST_LIMITS.codesOrTags)),
  discount_amount: Type.Optional(Amount('Total discount, in the order currency.')),
  order_tags: Type.Optional(TextList(ORDER_LIST_LIMITS.codesOrTags)),
  tax: Amount('Tax, in the order currency.'),
  is_recurring_order: Type.Optional(Type.Boolean()),
  currency: Type.String({
    enum: CURRENCY_CODES,
    description: 'ISO 4217 code; every amount of the order is in this currency.',
    'x-messages': { enum: 'Currency does not match any known currencies' },
  }),
  purchase_total: Amount('Amount collected from the customer, taxes, shipping and fees included.'),
  products: Type.Array(Product, {
    minItems: 1,
    maxItems: ORDER_LIST_LIMITS.products,
    'x-unique-by': ['id', 'variant_id'],
    'x-messages': { minItems: 'Must have at least one product', 'x-unique-by': DUPLICATE_PRODUCTS },
  }),
  refunds: Type.Optional(
    Type.Array(Refund, {
      maxItems: ORDER_LIST_LIMITS.refunds,
      'x-unique-by': ['product_id', 'variant_id'],
      'x-messages': { 'x-unique-by': DUPLICATE_PRODUCTS },
    }),
  ),
  customer_shipping_address: Type.Optional(ShippingAddress),
  shipping_cost: Amount('Amount paid for shipping.'),
  alternate_order_ids: Type.Optional(Type.Array(Alias, { maxItems: ORDER_LIST_LIMITS.aliases, description: 'Aliases to add to the order.' })),
};

const orderOptions = {
  additionalProperties: false,
  'x-exclusive': [
    ['customer_email', 'hashed_customer_email'],
    ['customer_phone_number', 'hashed_customer_phone_number'],
  ],
  'x-distinct': ['order_id', 'customer_id'],
};

/**
 * The order of the API reference's examples: its upsert, patch, aliases and listing here, its
 * explanation in src/attribution/routes.ts (2 × 49.99 − 10 discount + 5.01 tax + 5 shipping).
 */
const ORDER_EXAMPLE = {
  order_id: '1001',
  customer_id: 'cust-9',
  time_of_purchase: '2024-03-08T09:23:45Z',
  customer_email: 'jane@example.com',
  customer_name: 'Jane Doe',
  discount_codes: ['SPRING10'],
  discount_amount: 10,
  tax: 5.01,
  currency: 'USD',
  purchase_total: 99.99,
  products: [{ id: 'shirt', name: 'Shirt', quantity: 2, price: 49.99, variant_id: 'blue-m', variant_name: 'Blue, M' }],
  customer_shipping_address: { address1: '1 Main St', city: 'Springfield', state: 'OR', zip: '97477', country_code: 'USA' },
  shipping_cost: 5,
  alternate_order_ids: [{ type: 'shopify_id', id: '5550001001' }],
};
/** What the vendor's Magento module posts to the old path: no shipping_cost (2 × 36 − 10 discount + 5.52 tax). */
const LEGACY_ORDER_EXAMPLE = {
  order_id: '000000123',
  customer_id: 'magento_user_42',
  time_of_purchase: '2024-02-22T14:03:11+00:00',
  customer_email: 'roni_cost@example.com',
  customer_name: 'Veronica Costello',
  discount_amount: 10,
  tax: 5.52,
  currency: 'USD',
  purchase_total: 67.52,
  products: [{ id: '2041', name: 'Driven Backpack', quantity: 2, price: 36 }],
  order_tags: ['MAGENTO'],
};
export const Order = Type.Object(orderProperties, { ...orderOptions, examples: [ORDER_EXAMPLE] });
export type Order = Static<typeof Order>;

/** An order on the old path (`POST /v1/orders`), whose clients leave shipping_cost out: it is then 0. */
export const LegacyOrder = Type.Object(
  { ...orderProperties, shipping_cost: Type.Optional(orderProperties.shipping_cost) },
  { ...orderOptions, examples: [LEGACY_ORDER_EXAMPLE] },
);
/** An order as either path takes it. */
export type OrderAsSent = Static<typeof LegacyOrder>;

const batchOf = <T extends TSchema>(order: T, example: object) =>
  Type.Array(order, {
    minItems: 1,
    maxItems: MAX_ORDERS_PER_REQUEST,
    'x-unique-by': ['order_id'],
    'x-messages': {
      maxItems: `At most ${MAX_ORDERS_PER_REQUEST} orders per request: split the batch`,
      'x-unique-by': 'Duplicate order_id in this batch: each order may appear once',
    },
    examples: [[example]],
  });

export const OrderBatch = batchOf(Order, ORDER_EXAMPLE);
export const LegacyOrderBatch = batchOf(LegacyOrder, LEGACY_ORDER_EXAMPLE);

/** Fields a patch cannot change: an order's lines are changed by sending the whole order again. */
const UNPATCHABLE_FIELDS = ['products', 'refunds'] as const;
type UnpatchableField = (typeof UNPATCHABLE_FIELDS)[number];

/** An order patch: its order_id, and the fields to change; null clears an optional field. */
export type OrderPatch = Pick<Order, 'order_id'> & {
  [Field in Exclude<keyof Order, 'order_id' | UnpatchableField>]?: Order[Field] | null;
};

/** `field`'s schema in a patch: null is refused with `nullMessage`. */
const notNullable = (field: TSchema & { 'x-messages'?: object }, nullMessage: { msg: string; type: string }) =>
  Type.Optional(Type.Unsafe({ ...field, 'x-messages': { ...field['x-messages'], null: nullMessage } }));

/**
 * A field in a patch: each is optional and validated as the upsert validates it; null clears
 * what an order may leave out, and is refused where every order has a value. The lines cannot
 * be patched, and aliases are only ever added, as an upsert adds them.
 */
function patchField(name: string, field: TSchema & { type?: string }): TSchema {
  if (name === 'order_id') return field;
  if ((UNPATCHABLE_FIELDS as readonly string[]).includes(name)) {
    return Type.Optional(
      Type.Never({
        description: 'Cannot be patched: send the whole order to POST /v2/orders to change it.',
        'x-messages': { not: { msg: `${name} cannot be patched; send the whole order to POST /v2/orders to change it`, type: 'not_patchable' } },
      }),
    );
  }
  if (name === 'alternate_order_ids') {
    return notNullable(field, { msg: 'Aliases cannot be removed; leave alternate_order_ids out, or list aliases to add', type: 'type' });
  }
  if ((Order.required as readonly string[]).includes(name)) return notNullable(field, { msg: 'Cannot be cleared: every order has one', type: 'required' });
  return Type.Optional(Type.Unsafe({ ...field, type: [field.type, 'null'] }));
}

/** A gift now, and the name cleared. */
const PATCH_EXAMPLE = { order_id: '1001', order_tags: ['gift'], customer_name: null };
export const OrderPatch = Type.Object(
  Object.fromEntries(Object.entries(orderProperties).map(([name, field]) => [name, patchField(name, field)])),
  {
    ...orderOptions,
    description: 'The fields of an existing order to change; those left out keep their values, null clears one.',
    examples: [PATCH_EXAMPLE],
  },
);
export const OrderPatchBatch = batchOf(OrderPatch, PATCH_EXAMPLE);

export const Warning = Type.Object({
  order_id: Type.String(),
  loc: Type.String(),
  msg: Type.String(),
});
export type Warning = Static<typeof Warning>;

export const UpsertResult = Type.Object(
  {
    message: Type.String(),
    inserted: Type.Integer({ description: 'Orders that were new.' }),
    updated: Type.Integer({ description: 'Orders that existed and were replaced.' }),
    warnings: Type.Array(Warning, { description: 'Advice the specification gives as "should"; the orders were stored.' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Upserted 1 order', inserted: 1, updated: 0, warnings: [], request_id: '839e9201-7156-441e-8f07-05852dffaba4' }] },
);

export const PatchResult = Type.Object(
  {
    message: Type.String(),
    updated: Type.Integer({ description: 'Orders changed: every order of the request.' }),
    warnings: UpsertResult.properties.warnings,
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Updated 1 order', updated: 1, warnings: [], request_id: '6af41118-29f2-4108-9cf2-d21cfd1b92da' }] },
);

/** The order's id in the shop's ERP, beside the Shopify id its upsert gave. */
const ALIAS_EXAMPLE = { order_id: '1001', type: 'custom:erp', id: 'E-88' };
export const AliasRequest = Type.Object(
  {
    aliases: Type.Array(
      Type.Object({ order_id: Identifier('An existing order.'), ...Alias.properties }, { additionalProperties: false }),
      { minItems: 1, maxItems: MAX_ALIASES_PER_REQUEST },
    ),
  },
  { additionalProperties: false, examples: [{ aliases: [ALIAS_EXAMPLE] }] },
);

export const AliasResult = Type.Object(
  {
    message: Type.String(),
    added: Type.Integer({ description: 'Aliases attached by this request.' }),
    ignored: Type.Integer({ description: 'Aliases that were attached already.' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  { examples: [{ message: 'Added 1 alias', added: 1, ignored: 0, request_id: '49f8caaa-8dda-465e-8362-ee37ff0c0071' }] },
);

export const OrderListQuery = Type.Object(
  {
    start_date: Type.String({ format: 'date', description: 'First day (UTC) of time_of_purchase, inclusive.', examples: ['2024-03-01'] }),
    end_date: Type.String({ format: 'date', description: 'Last day (UTC) of time_of_purchase, inclusive.', examples: ['2024-03-31'] }),
    ...OptionalPageQuery.properties,
  },
  { additionalProperties: false },
);

export const StoredOrder = Type.Object({
  ...orderProperties,
  alternate_order_ids: Type.Array(Alias, { description: 'Every alias attached to the order.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

/** The order of the examples, as read back after its upsert, patch and aliases. */
const { customer_name: _cleared, alternate_order_ids: _sent, ...STORED_ORDER_EXAMPLE } = ORDER_EXAMPLE;
export const OrderPage = pageOf(StoredOrder, {
  examples: [
    {
      data: [
        {
          ...STORED_ORDER_EXAMPLE,
          order_tags: PATCH_EXAMPLE.order_tags,
          alternate_order_ids: [...ORDER_EXAMPLE.alternate_order_ids, { type: ALIAS_EXAMPLE.type, id: ALIAS_EXAMPLE.id }],
          created_at: '2024-03-08T09:24:02.114Z',
          updated_at: '2024-03-09T15:10:44.502Z',
        },
      ],
      page: 1,
      page_size: 100,
      total_pages: 1,
      total_count: 1,
    },
  ],
});
