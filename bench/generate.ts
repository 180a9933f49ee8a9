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

/** Paid campaigns: `cmp-<c>` with the ads `ad-<c>-0` and `ad-<c>-1` in the adset `set-<c>`; Google's first, then Meta's, then TikTok's. */
export const PAID_CAMPAIGNS = { google: 150, meta: 150, tiktok: 20 } as const;
export const ADS_PER_CAMPAIGN = 2;
/** How the paid touchpoints name their platform in utm_source: the client's source mapping makes them spend's platform names. */
export const SOURCE_PLATFORMS = { adwords: 'google', fb: 'meta', ig: 'meta' } as const;

/** The platform of campaign `c` of PAID_CAMPAIGNS. */
export function campaignPlatform(c: number): keyof typeof PAID_CAMPAIGNS {
  if (c < PAID_CAMPAIGNS.google) return 'google';
  return c < PAID_CAMPAIGNS.google + PAID_CAMPAIGNS.meta ? 'meta' : 'tiktok';
}
export const CAMPAIGN_COUNT = PAID_CAMPAIGNS.google + PAID_CAMPAIGNS.meta + PAID_CAMPAIGNS.tiktok;

const SHOP = 'https://shop.example.com';
const PAGES = ['/', '/products/linen-shirt', '/products/canvas-tote', '/collections/summer', '/products/rain-jacket?variant=42'];
const SEARCH_REFERRERS = ['https://www.google.com/', 'https://www.google.co.uk/', 'https://www.bing.com/', 'https://duckduckgo.com/'];
const SOCIAL_REFERRERS = ['https://l.facebook.com/', 'https://t.co/', 'https://www.instagram.com/', 'https://www.reddit.com/r/malefashionadvice/'];
const REFERRAL_REFERRERS = ['https://blog.example.org/best-totes-2024', 'https://news.example.net/review/linen', 'https://forum.example.io/t/1234'];
const CLICK_ID = { google: 'gclid', meta: 'fbclid', tiktok: 'ttclid' } as const;
const UTM_SOURCE = { google: 'adwords', meta: 'fb', tiktok: 'tiktok' } as const;

/**
 * A visit as a tracker would send it, without its ids: about half from paid campaigns (UTMs and a
 * click id in landing_url), the rest e-mail, SMS, search, social, referral and direct visits.
 * `clickId` is the click id's value.
 */
export function generateVisit(rand: () => number, clickId: string): Record<string, unknown> {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const page = `${SHOP}${pick(PAGES)}`;
  const query = (params: Record<string, string>) => `${page}${page.includes('?') ? '&' : '?'}${new URLSearchParams(params)}`;
  const kind = rand();
  if (kind < 0.5) {
    const c = Math.floor(rand() * CAMPAIGN_COUNT);
    const platform = campaignPlatform(c);
    const utms = { utm_source: UTM_SOURCE[platform], utm_medium: platform === 'google' ? 'cpc' : 'paid_social', utm_campaign: `cmp-${c}`, utm_term: `set-${c}`, utm_content: `ad-${c}-${Math.floor(rand() * ADS_PER_CAMPAIGN)}` };
    return { landing_url: query({ ...utms, [CLICK_ID[platform]]: clickId }), referrer: platform === 'google' ? 'https://www.google.com/' : pick(SOCIAL_REFERRERS) };
  }
  if (kind < 0.6) return { landing_url: query({ utm_source: 'klaviyo', utm_medium: 'email', utm_campaign: pick(['spring-sale', 'welcome', 'restock']) }) };
  if (kind < 0.63) return { landing_url: query({ utm_source: 'attentive', utm_medium: 'sms', utm_campaign: 'flash-friday' }) };
  if (kind < 0.78) return { landing_url: page, referrer: pick(SEARCH_REFERRERS) };
  if (kind < 0.85) return { landing_url: page, referrer: pick(SOCIAL_REFERRERS) };
  if (kind < 0.9) return { landing_url: page, referrer: pick(REFERRAL_REFERRERS) };
  return { landing_url: page };
}

/**
 * `count` visits with ids `<prefix>-<n>` over 2024, of one of `visitors` visitors (`visitor-<v>`),
 * a third of them with the visitor's customer (`cust-<v>`) as a logged-in shopper's.
 */
export function generateTouchpoints(seed: number, prefix: string, count: number, visitors: number): Record<string, unknown>[] {
  const rand = random(seed);
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: count }, (_, n) => {
    const visitor = Math.floor(rand() * visitors);
    return {
      touchpoint_id: `${prefix}-${n}`,
      occurred_at: new Date(start + Math.floor(rand() * 365 * 86_400_000)).toISOString(),
      visitor_id: `visitor-${visitor}`,
      ...(rand() < 1 / 3 ? { customer_id: `cust-${visitor}` } : {}),
      ...generateVisit(rand, `Cj0KCQiA${Math.floor(rand() * 1e12).toString(36)}`),
    };
  });
}
