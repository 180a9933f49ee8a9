import { isEmail } from '../http/validation.js';
import type { OrderAsSent, Warning } from './schema.js';

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/**
 * The specification's "should" rules. Breaking one does not reject the order: the caller is
 * told, and the order is stored as sent.
 */
export function orderWarnings(orders: readonly OrderAsSent[]): Warning[] {
  const warnings: Warning[] = [];
  orders.forEach((order, index) => {
    const warn = (path: string, msg: string) => warnings.push({ order_id: order.order_id, loc: `body/${index}/${path}`, msg });

    if (isEmail(order.customer_id)) {
      warn('customer_id', "Looks like an e-mail address; send the shop's internal customer id instead");
    }
    for (const field of ['hashed_customer_email', 'hashed_customer_phone_number'] as const) {
      const value = order[field];
      if (value !== undefined && !SHA256_HEX.test(value)) warn(field, 'Is not a SHA-256 hash (64 hexadecimal characters)');
    }
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
