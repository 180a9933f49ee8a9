/**
 * Shopify's orders export (Admin → Orders → Export, CSV for Excel or plain CSV) as orders. The
 * export has one row per line item; the order's own fields are on its first row only. Every
 * mapping is in docs/importing.md's table.
 */
import { createHash } from 'node:crypto';
import type { Order } from '../client/index.js';
import { ALPHA3_OF_ALPHA2 } from './countries.js';

/** Columns that only Shopify's orders export has together. */
const SIGNATURE = ['Name', 'Financial Status', 'Lineitem name', 'Lineitem quantity'];

export const isShopifyOrders = (header: readonly string[]) => SIGNATURE.every((column) => header.includes(column));

/** The order a row belongs to: rows of one order are consecutive and share its Name. */
export const shopifyOrderKey = (row: Record<string, string>) => row.Name ?? '';

/** customer_id and hashed_customer_email: the SHA-256 (hex) of the e-mail trimmed and lower-cased. */
export const emailHash = (email: string) => createHash('sha256').update(email.trim().toLowerCase()).digest('hex');

/** An amount as Shopify writes it ("1234.50"); empty is 0. */
const amount = (text: string | undefined) => (text === undefined || text.trim() === '' ? 0 : Number(text));
const list = (text: string | undefined) => [...new Set((text ?? '').split(',').map((part) => part.trim()).filter(Boolean))];

/** "2024-03-08 01:23:45 -0800", Shopify's time stamps, as ISO-8601. */
export function shopifyTime(text: string): string {
  const match = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(?::\d\d)?)\s*([+-]\d\d:?\d\d|Z|UTC)?$/.exec(text.trim());
  if (!match) return text;
  const [, date, time, zone = 'Z'] = match;
  return `${date}T${time!.length === 5 ? `${time}:00` : time}${zone === 'UTC' ? 'Z' : zone}`;
}

const rounded = (value: number) => Math.round(value * 100) / 100;

/** The order of a group of rows (the first one holding the order's fields). */
export function shopifyOrder(rows: readonly Record<string, string>[]): Order {
  const head = rows[0]!;
  const orderId = head.Name!.replace(/^#/, '');
  const products: Order['products'] = [];
  for (const row of rows) {
    if (!row['Lineitem name']) continue;
    const id = row['Lineitem sku'] || row['Lineitem name'];
    const same = products.find((product) => product.id === id);
    if (same) same.quantity += amount(row['Lineitem quantity']);
    else products.push({ id, name: row['Lineitem name'], quantity: amount(row['Lineitem quantity']), price: amount(row['Lineitem price']) });
  }
  const email = head.Email?.trim();
  const createdAt = shopifyTime(head['Created at'] ?? '');
  const order: Order = {
    order_id: orderId,
    customer_id: email ? emailHash(email) : `guest-order-${orderId}`,
    time_of_purchase: createdAt,
    currency: head.Currency ?? '',
    purchase_total: amount(head.Total),
    tax: amount(head.Taxes),
    shipping_cost: amount(head.Shipping),
    products,
  };
  if (email) order.hashed_customer_email = emailHash(email);
  const name = head['Billing Name'] || head['Shipping Name'];
  if (name) order.customer_name = name;
  const codes = list(head['Discount Code']);
  if (codes.length > 0) order.discount_codes = codes;
  if (head['Discount Amount']) order.discount_amount = amount(head['Discount Amount']);
  const tags = list(head.Tags);
  if (tags.length > 0) order.order_tags = tags;
  if (head.Id) order.alternate_order_ids = [{ type: 'shopify', id: head.Id }];
  const country = head['Shipping Country']?.trim();
  if (country) {
    order.customer_shipping_address = {
      // Shopify writes a ' before postal codes so that spreadsheets keep their leading zeros.
      zip: (head['Shipping Zip'] ?? '').replace(/^'/, ''),
      country_code: ALPHA3_OF_ALPHA2.get(country.toUpperCase()) ?? country,
      ...(head['Shipping Address1'] && { address1: head['Shipping Address1'] }),
      ...(head['Shipping Address2'] && { address2: head['Shipping Address2'] }),
      ...(head['Shipping City'] && { city: head['Shipping City'] }),
      ...(head['Shipping Province'] && { state: head['Shipping Province'] }),
    };
  }
  const refunded = amount(head['Refunded Amount']);
  if (refunded > 0 && products.length > 0) order.refunds = refundsOf(products, refunded, head['Financial Status'] === 'refunded', shopifyTime(head['Cancelled at'] || '') || createdAt);
  return order;
}

/**
 * The export gives only the amount refunded. A whole refund (status "refunded") is every line,
 * its units, the amount shared in proportion to the lines' values; a partial one is a refund of
 * no units on the first line, for the amount.
 */
function refundsOf(products: Order['products'], refunded: number, whole: boolean, madeAt: string): NonNullable<Order['refunds']> {
  const refund = (product: Order['products'][number], quantity: number, refundAmount: number) => ({
    product_id: product.id,
    quantity,
    refund_amount: refundAmount,
    refund_cost: refundAmount,
    refund_made_at: madeAt,
  });
  if (!whole) return [refund(products[0]!, 0, refunded)];
  const value = products.reduce((sum, product) => sum + product.price * product.quantity, 0);
  let left = refunded;
  return products.map((product, index) => {
    const share = index === products.length - 1 ? rounded(left) : value > 0 ? rounded((refunded * product.price * product.quantity) / value) : 0;
    left -= share;
    return refund(product, product.quantity, share);
  });
}
