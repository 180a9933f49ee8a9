/** Realistic, varied orders from a fixed seed, so that every run sends the same data. */

export function random(seed: number): () => number {
  // mulberry32: small, fast and good enough for test data.
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = ['Ava', 'Liam', 'Mia', 'Noah', 'Zoe', 'Omar', 'Ines', 'Kenji', 'Lena', 'Ravi'];
const LAST = ['Smith', 'Garcia', 'Müller', 'Rossi', 'Tanaka', 'Dubois', 'Kowalski', 'Silva'];
const CITIES: [string, string, string][] = [
  ['Portland', 'OR', 'USA'],
  ['Austin', 'TX', 'USA'],
  ['Toronto', 'ON', 'CAN'],
  ['Berlin', 'BE', 'DEU'],
  ['Lyon', 'ARA', 'FRA'],
  ['Leeds', 'ENG', 'GBR'],
];
const PRODUCTS = ['Linen Shirt', 'Canvas Tote', 'Merino Beanie', 'Trail Socks', 'Rain Jacket', 'Ceramic Mug', 'Desk Lamp', 'Notebook'];
const VARIANTS = ['XS', 'S', 'M', 'L', 'XL', 'Blue', 'Green', 'Sand'];
const CURRENCIES = ['USD', 'USD', 'USD', 'CAD', 'EUR', 'GBP'];

const cents = (value: number) => Math.round(value * 100) / 100;

export function generateOrder(rand: () => number, orderId: string, purchasedAt: Date): Record<string, unknown> {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const first = pick(FIRST);
  const last = pick(LAST);
  const [city, state, country] = pick(CITIES);
  const lines = 1 + Math.floor(rand() * 8);
  const products = Array.from({ length: lines }, (_, i) => ({
    id: `sku-${1000 + Math.floor(rand() * 500)}-${i}`,
    name: pick(PRODUCTS),
    quantity: 1 + Math.floor(rand() * 3),
    price: cents(5 + rand() * 120),
    variant_id: `var-${Math.floor(rand() * 40)}`,
    variant_name: pick(VARIANTS),
  }));
  const subtotal = products.reduce((sum, line) => sum + line.quantity * line.price, 0);
  const tax = cents(subtotal * 0.08);
  const shipping = cents(rand() < 0.3 ? 0 : 4.99 + rand() * 10);
  const discount = rand() < 0.25 ? cents(subtotal * 0.1) : 0;
  const customer = Math.floor(rand() * 50_000);
  const order: Record<string, unknown> = {
    order_id: orderId,
    customer_id: `cust-${customer}`,
    time_of_purchase: purchasedAt.toISOString().replace('Z', '-00:00'),
    customer_email: `${first}.${last}.${customer}@example.com`.toLowerCase(),
    customer_phone_number: `+1555${String(customer).padStart(7, '0')}`,
    customer_name: `${first} ${last}`,
    customer_ip_address: `198.51.${Math.floor(rand() * 255)}.${Math.floor(rand() * 255)}`,
    order_tags: rand() < 0.5 ? ['web'] : ['web', 'returning'],
    tax,
    is_recurring_order: rand() < 0.1,
    currency: pick(CURRENCIES),
    purchase_total: cents(subtotal + tax + shipping - discount),
    products,
    customer_shipping_address: {
      address1: `${1 + Math.floor(rand() * 999)} ${pick(LAST)} Street`,
      city,
      state,
      zip: String(10000 + Math.floor(rand() * 89999)),
      country_code: country,
    },
    shipping_cost: shipping,
  };
  if (discount > 0) {
    order.discount_codes = ['SAVE10'];
    order.discount_amount = discount;
  }
  if (rand() < 0.1) {
    const line = products[0]!;
    order.refunds = [
      {
        product_id: line.id,
        variant_id: line.variant_id,
        quantity: 1,
        refund_amount: line.price,
        refund_cost: cents(line.price + 3),
        refund_made_at: new Date(purchasedAt.getTime() + 3 * 86_400_000).toISOString(),
      },
    ];
  }
  if (rand() < 0.2) order.alternate_order_ids = [{ type: 'shopify', id: `gid-${orderId}` }];
  return order;
}

/** `count` orders with ids `<prefix>-<n>`, purchased over 2024. */
export function generateOrders(seed: number, prefix: string, count: number): Record<string, unknown>[] {
  const rand = random(seed);
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: count }, (_, n) =>
    generateOrder(rand, `${prefix}-${n}`, new Date(start + Math.floor(rand() * 365 * 86_400_000))),
  );
}
