import type { RoundedNumber } from '../http/exact-numbers.js';
import { isEmail } from '../http/validation.js';
import type { OrderAsSent, OrderPatch, Warning } from './schema.js';

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/** The order (its index in the batch) of a `body/<index>/…` place. */
const orderIndexOf = (loc: string) => Number(/^body\/(\d+)/.exec(loc)![1]);

/**
 * The specification's "should" rules, over the fields sent (a patch's only), and the amounts
 * that were rounded to their scale (`rounded`, read by exactNumbers). Neither rejects the order:
 * the caller is told, and the order is stored as sent, those amounts rounded.
 */
export function orderWarnings(orders: readonly (OrderAsSent | OrderPatch)[], rounded: readonly RoundedNumber[] = []): Warning[] {
  const warnings: Warning[] = [];
  const roundedByOrder = new Map<number, RoundedNumber[]>();
  for (const number of rounded) {
    const index = orderIndexOf(number.loc);
    const ofOrder = roundedByOrder.get(index);
    if (ofOrder) ofOrder.push(number);
    else roundedByOrder.set(index, [number]);
  }
  orders.forEach((order, index) => {
    const warn = (path: string, msg: string) => warnings.push({ order_id: order.order_id, loc: `body/${index}/${path}`, msg });
    for (const { loc, msg } of roundedByOrder.get(index) ?? []) warnings.push({ order_id: order.order_id, loc, msg });

    if (order.customer_id != null && isEmail(order.customer_id)) {
      warn('customer_id', "Looks like an e-mail address; send the shop's internal customer id instead");
    }
    for (const field of ['hashed_customer_email', 'hashed_customer_phone_number'] as const) {
      const value = order[field];
      if (value != null && !SHA256_HEX.test(value)) warn(field, 'Is not a SHA-256 hash (64 hexadecimal characters)');
    }
    // Lines are never patched: only a whole order has refunds to measure against its products.
    if (!('products' in order)) return;
    order.refunds?.forEach((refund, r) => {
      // A refund without a variant refunds the product, whichever of its variants were ordered.
      const lines = order.products.filter(
        (line) => line.id === refund.product_id && (refund.variant_id === undefined || line.variant_id === refund.variant_id),
      );
      const ordered = lines.reduce((sum, line) => sum + line.quantity, 0);
      if (lines.length === 0) {
        warn(`refunds/${r}/product_id`, 'Refunds a product (and variant) that is not among the order products');
      } else if (refund.quantity > ordered) {
        warn(`refunds/${r}/quantity`, `Refunds more units than were ordered (${ordered})`);
      }
    });
  });
  return warnings;
}
