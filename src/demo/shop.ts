/**
 * The demo's sample shop: an outdoor-clothing store in New York with a year of orders, hourly ad
 * spend on three platforms, its visitors' visits and ad views, and the links of visitors to
 * customers, as the API takes them (POST /v2/orders, /v1/spend_hourly, /v1/touchpoints,
 * /v1/identities). Deterministic: the same seed and `now` give the same shop, which ends at `now`.
 *
 * How it is made, so that the dashboard's figures make sense:
 * - every day has a demand (growth over the year, a weekly rhythm, a quiet January, a Black
 *   Friday / Cyber Monday peak); orders and the visits of visitors who never buy fall on days in
 *   proportion to it, and on hours by a daily rhythm;
 * - each order has a path of 1 to 6 visits in the 20 days before it, whose sources depend on
 *   their place in it (prospecting, TikTok and organic search open paths; retargeting, brand
 *   search, e-mail and direct close them), so that first- and last-touch credits differ;
 * - each campaign's spend is what its linearly credited revenue over the period, divided by a
 *   return on ad spend of its own, comes to, spread over the days by their demand and over the
 *   hours by the daily rhythm. Reports credit a customer's every visit of the window, earlier
 *   orders' and browsing included, so campaigns that open paths show less than their figure
 *   (which is set higher to land at 1.5 to 4 under linear).
 */
import { addDays, localToday, utcMidnight } from '../calendar.js';
import { createRandom, type Random } from './random.js';
import { createZone } from './zone.js';

export const DEMO_TIME_ZONE = 'America/New_York';
export const DEMO_CURRENCY = 'USD';
/** The client's source mapping: the utm_source values of the shop's ads and the platform each is. */
export const DEMO_SOURCE_PLATFORMS: Record<string, string> = { fb: 'meta', ig: 'meta', google: 'google', tiktok: 'tiktok' };

const SHOP_URL = 'https://shop.example';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Customers of a year; a shorter period has its share. With the order counts below: some 12,000 orders. */
const CUSTOMERS_A_YEAR = 5_500;
/** Visitors who never buy, per customer: the paths that do not convert. */
const BROWSERS_PER_CUSTOMER = 4;
/** Days before an order its path's visits may come. */
const PATH_DAYS = 20;
const ORDER_NUMBER_START = 10_001;

export type ApiRecord = Record<string, unknown>;

export interface ShopOptions {
  seed: number;
  now: Date;
  /** Local days the shop has traded, today the last. */
  days: number;
}

export interface DemoShop {
  orders: ApiRecord[];
  touchpoints: ApiRecord[];
  identities: ApiRecord[];
  /** How many records `spend()` yields. */
  spendRecords: number;
  /** The hourly spend records, made as they are read (they are the most). */
  spend(): Generator<ApiRecord>;
  customers: number;
}

// The calendar -----------------------------------------------------------------------------------

/** Sunday first, as Date.getUTCDay(). */
const WEEKDAY = [1.12, 1.08, 1.0, 0.98, 1.0, 0.92, 0.85];
/** January to December. */
const MONTH = [0.7, 0.82, 0.95, 1.0, 1.02, 0.97, 0.9, 0.92, 1.0, 1.03, 1.08, 1.2];
/** Local hours 0 to 23: evenings busiest, nights quiet. */
const HOUR_WEIGHTS = [0.35, 0.22, 0.15, 0.12, 0.12, 0.18, 0.35, 0.6, 0.8, 0.95, 1.0, 1.05, 1.1, 1.05, 1.0, 1.0, 1.05, 1.1, 1.2, 1.35, 1.45, 1.4, 1.1, 0.7];
const HOUR_WEIGHT_SUM = HOUR_WEIGHTS.reduce((sum, weight) => sum + weight, 0);
const HOURS = HOUR_WEIGHTS.map((_, hour) => hour);
/** Days from Thanksgiving and the demand they add: the week before, Black Friday, the weekend, Cyber Monday. */
const BFCM_LIFT = new Map([
  [-7, 1.15], [-6, 1.2], [-5, 1.2], [-4, 1.25], [-3, 1.3], [-2, 1.35], [-1, 1.45],
  [0, 1.7], [1, 3.4], [2, 2.3], [3, 2.2], [4, 3.1], [5, 1.6], [6, 1.3], [7, 1.2], [8, 1.15],
]);
/** Days from Thanksgiving on which BFCM20 is offered: Wednesday to the Tuesday after Cyber Monday. */
const BFCM_CODE_DAYS = { from: -1, to: 5 };

/** Thanksgiving of a year: the fourth Thursday of November. */
function thanksgiving(year: number): number {
  const november1 = Date.UTC(year, 10, 1);
  const firstThursday = 1 + ((4 - new Date(november1).getUTCDay() + 7) % 7);
  return Date.UTC(year, 10, firstThursday + 21);
}

const daysFromThanksgiving = (date: string) => Math.round((utcMidnight(date).getTime() - thanksgiving(Number(date.slice(0, 4)))) / DAY_MS);

/** How busy a day is: the number its orders and visits are in proportion to. */
function demandOf(date: string, daysAgo: number): number {
  const day = utcMidnight(date);
  const growth = 1.35 - (0.6 * Math.min(daysAgo, 365)) / 365;
  const month = day.getUTCMonth();
  // After the last day of shipping before Christmas, sales drop into January's.
  const season = month === 11 && day.getUTCDate() > 20 ? 0.85 : MONTH[month]!;
  return growth * WEEKDAY[day.getUTCDay()]! * season * (BFCM_LIFT.get(daysFromThanksgiving(date)) ?? 1);
}

// The catalogue ----------------------------------------------------------------------------------

interface Product {
  id: string;
  name: string;
  /** Cents. */
  price: number;
  variants: [id: string, name: string][];
  weight: number;
}

const CATALOGUE: Product[] = [
  { id: 'merino-tee', name: 'Merino crew tee', price: 4800, variants: [['black-m', 'Black / M'], ['black-l', 'Black / L'], ['navy-m', 'Navy / M'], ['sage-s', 'Sage / S']], weight: 14 },
  { id: 'trail-socks', name: 'Trail socks (3 pack)', price: 2400, variants: [['m', 'M'], ['l', 'L']], weight: 16 },
  { id: 'rain-shell', name: 'Packable rain shell', price: 12900, variants: [['slate-m', 'Slate / M'], ['slate-l', 'Slate / L'], ['ochre-m', 'Ochre / M']], weight: 6 },
  { id: 'grid-fleece', name: 'Grid fleece pullover', price: 8900, variants: [['moss-m', 'Moss / M'], ['moss-l', 'Moss / L'], ['charcoal-m', 'Charcoal / M']], weight: 8 },
  { id: 'canvas-tote', name: 'Waxed canvas tote', price: 3800, variants: [['olive', 'Olive'], ['sand', 'Sand']], weight: 7 },
  { id: 'bottle-750', name: 'Insulated bottle 750 ml', price: 3400, variants: [['steel', 'Steel'], ['forest', 'Forest']], weight: 10 },
  { id: 'wool-beanie', name: 'Ribbed wool beanie', price: 2800, variants: [['rust', 'Rust'], ['heather', 'Heather grey']], weight: 9 },
  { id: 'trail-shorts', name: 'Trail shorts', price: 6400, variants: [['32', 'Waist 32'], ['34', 'Waist 34']], weight: 6 },
  { id: 'down-vest', name: 'Down vest', price: 14900, variants: [['black-m', 'Black / M'], ['black-l', 'Black / L']], weight: 4 },
  { id: 'leather-belt', name: 'Leather belt', price: 4500, variants: [['brown', 'Brown'], ['black', 'Black']], weight: 5 },
];
const PRODUCT_WEIGHTS = CATALOGUE.map((product) => product.weight);
const TAX_RATE = 0.07;
const FREE_SHIPPING_FROM = 7500;
const SHIPPING = 695;
const RETURN_LABEL = 695;

// Where visits come from -------------------------------------------------------------------------

type Platform = 'meta' | 'google' | 'tiktok';
type SourceKey = 'meta_prospecting' | 'meta_retargeting' | 'google_brand' | 'google_shopping' | 'google_pmax' | 'tiktok_spark' | 'organic_search' | 'email' | 'direct';

interface Ad {
  id: string;
  name: string;
  /** Relative shares of its ad set's visits and spend: apart, so that ads' ROAS differ. */
  visits: number;
  spend: number;
}

interface AdSet {
  id: string;
  name: string;
  weight: number;
  ads: Ad[];
}

interface Campaign {
  source: SourceKey;
  platform: Platform;
  account: string;
  id: string;
  name: string;
  medium: string;
  /** utm_source values, each with its weight. */
  utmSources: [string, number][];
  clickId: 'fbclid' | 'gclid' | 'ttclid';
  /** Where its links land. */
  landing: 'product' | 'home' | 'cart';
  /** Linear revenue ÷ spend the campaign is given. */
  roas: number;
  /** Dollars a click, and clicks an impression. */
  cpc: number;
  ctr: number;
  adsets: AdSet[];
}

const META_ACCOUNT = 'act_2817346590';
const GOOGLE_ACCOUNT = '482-193-5506';
const TIKTOK_ACCOUNT = '7291846530128374651';

const CAMPAIGNS: Campaign[] = [
  {
    source: 'meta_prospecting', platform: 'meta', account: META_ACCOUNT, id: '120210934517730042', name: 'Prospecting | Advantage+ | US',
    medium: 'paid_social', utmSources: [['fb', 65], ['ig', 35]], clickId: 'fbclid', landing: 'product', roas: 2.3, cpc: 1.35, ctr: 0.011,
    adsets: [
      { id: '120210934517730101', name: 'Broad 25-54', weight: 3, ads: [
        { id: '120210934517730201', name: 'UGC video: rain test', visits: 3, spend: 2 },
        { id: '120210934517730202', name: 'Carousel: bestsellers', visits: 2, spend: 3 } ] },
      { id: '120210934517730102', name: 'Lookalike 3% purchasers', weight: 2, ads: [
        { id: '120210934517730203', name: 'Static: merino tee', visits: 1, spend: 1 },
        { id: '120210934517730204', name: 'Video: packing list', visits: 1, spend: 1.4 } ] },
    ],
  },
  {
    source: 'meta_retargeting', platform: 'meta', account: META_ACCOUNT, id: '120210934517731043', name: 'Retargeting | Catalog',
    medium: 'paid_social', utmSources: [['fb', 60], ['ig', 40]], clickId: 'fbclid', landing: 'cart', roas: 3.6, cpc: 0.85, ctr: 0.016,
    adsets: [
      { id: '120210934517731101', name: 'Viewed product 14d', weight: 3, ads: [
        { id: '120210934517731201', name: 'Dynamic: viewed products', visits: 2, spend: 2 },
        { id: '120210934517731202', name: 'Static: free shipping over $75', visits: 1, spend: 1.3 } ] },
      { id: '120210934517731102', name: 'Added to cart 7d', weight: 2, ads: [
        { id: '120210934517731203', name: 'Dynamic: cart items', visits: 2, spend: 1.5 },
        { id: '120210934517731204', name: 'Review quote: 4.8 stars', visits: 1, spend: 1 } ] },
    ],
  },
  {
    source: 'google_brand', platform: 'google', account: GOOGLE_ACCOUNT, id: '20981547302', name: 'Brand search',
    medium: 'cpc', utmSources: [['google', 1]], clickId: 'gclid', landing: 'home', roas: 4.1, cpc: 0.55, ctr: 0.09,
    adsets: [
      { id: '158204719362', name: 'Brand exact', weight: 4, ads: [
        { id: '689102374551', name: 'RSA: brand, free returns', visits: 3, spend: 3 },
        { id: '689102374552', name: 'RSA: brand, new season', visits: 2, spend: 2.4 } ] },
      { id: '158204719363', name: 'Brand + product', weight: 1, ads: [
        { id: '689102374553', name: 'RSA: brand + merino', visits: 1, spend: 1 },
        { id: '689102374554', name: 'RSA: brand + rain shell', visits: 1, spend: 1.2 } ] },
    ],
  },
  {
    source: 'google_shopping', platform: 'google', account: GOOGLE_ACCOUNT, id: '20981547311', name: 'Shopping | All products',
    medium: 'cpc', utmSources: [['google', 1]], clickId: 'gclid', landing: 'product', roas: 2.9, cpc: 0.75, ctr: 0.012,
    adsets: [
      { id: '158204719371', name: 'Bestsellers', weight: 3, ads: [
        { id: '689102374561', name: 'Product ads: tees and socks', visits: 3, spend: 2 },
        { id: '689102374562', name: 'Product ads: outerwear', visits: 2, spend: 2.5 } ] },
      { id: '158204719372', name: 'Everything else', weight: 2, ads: [
        { id: '689102374563', name: 'Product ads: accessories', visits: 1, spend: 1 },
        { id: '689102374564', name: 'Product ads: bottoms', visits: 1, spend: 1.3 } ] },
    ],
  },
  {
    source: 'google_pmax', platform: 'google', account: GOOGLE_ACCOUNT, id: '20981547327', name: 'Performance Max',
    medium: 'cpc', utmSources: [['google', 1]], clickId: 'gclid', landing: 'product', roas: 2.3, cpc: 1.05, ctr: 0.009,
    adsets: [
      { id: '158204719381', name: 'Asset group: outerwear', weight: 1, ads: [
        { id: '689102374571', name: 'Assets: outerwear video', visits: 1, spend: 1.2 },
        { id: '689102374572', name: 'Assets: outerwear images', visits: 1, spend: 1 } ] },
      { id: '158204719382', name: 'Asset group: everyday basics', weight: 1, ads: [
        { id: '689102374573', name: 'Assets: basics video', visits: 1, spend: 1 },
        { id: '689102374574', name: 'Assets: basics images', visits: 1, spend: 0.8 } ] },
    ],
  },
  {
    source: 'tiktok_spark', platform: 'tiktok', account: TIKTOK_ACCOUNT, id: '1790234518840321', name: 'Spark ads | Creators',
    medium: 'paid_social', utmSources: [['tiktok', 1]], clickId: 'ttclid', landing: 'product', roas: 2.0, cpc: 0.7, ctr: 0.008,
    adsets: [
      { id: '1790234518840401', name: 'Interest: hiking and camping', weight: 1, ads: [
        { id: '1790234518840501', name: 'Spark: creator trail review', visits: 2, spend: 1.5 },
        { id: '1790234518840502', name: 'Spark: what I pack', visits: 1, spend: 1 } ] },
      { id: '1790234518840402', name: 'Broad 18-44', weight: 1, ads: [
        { id: '1790234518840503', name: 'Spark: rain shell in a storm', visits: 1, spend: 1.2 },
        { id: '1790234518840504', name: 'Spark: tee, 7 days straight', visits: 1, spend: 1 } ] },
    ],
  },
];
const CAMPAIGN_OF = new Map(CAMPAIGNS.map((campaign) => [campaign.source, campaign]));
const META_CAMPAIGNS = CAMPAIGNS.filter((campaign) => campaign.platform === 'meta');

const SOURCES: SourceKey[] = ['meta_prospecting', 'meta_retargeting', 'google_brand', 'google_shopping', 'google_pmax', 'tiktok_spark', 'organic_search', 'email', 'direct'];
/**
 * Each source's weight by the place of a visit: opening a path, in its middle, closing it, and
 * in the visits of people who do not buy. In the order of SOURCES.
 */
const PLACE_WEIGHTS = {
  first: [20, 2, 3, 12, 8, 15, 16, 3, 5],
  middle: [8, 12, 6, 9, 8, 5, 10, 8, 10],
  last: [4, 16, 18, 9, 7, 2, 7, 13, 16],
  browsing: [22, 6, 3, 12, 9, 20, 16, 3, 8],
};
/** A returning customer comes back through e-mail and directly more, through prospecting less. */
const RETURNING_FACTORS = [0.5, 1, 1.2, 1, 1, 0.5, 1, 2.5, 1.8];
const EMAIL_FLOWS: [string, number][] = [['weekly-newsletter', 5], ['abandoned-cart', 4], ['back-in-stock', 1], ['winback-60d', 1]];
const SEARCH_REFERRERS: [string, number][] = [['https://www.google.com/', 85], ['https://www.bing.com/', 10], ['https://duckduckgo.com/', 5]];
const META_REFERRERS: Record<string, string> = { fb: 'https://l.facebook.com/', ig: 'https://l.instagram.com/' };

const pick = <T>(random: Random, weighted: [T, number][]) => random.weighted(weighted.map(([item]) => item), weighted.map(([, weight]) => weight));
const dollars = (cents: number) => cents / 100;

interface Customer {
  id: string;
  visitors: string[];
  orders: PlannedOrder[];
}

interface PlannedOrder {
  customer: Customer;
  at: number;
  /** 0 for the customer's first. */
  nth: number;
  id: string;
  /** The visitor of the visit the order was placed in, if it has a path. */
  visitor?: string;
}

export function generateShop({ seed, now, days }: ShopOptions): DemoShop {
  const random = createRandom(seed);
  const zone = createZone(DEMO_TIME_ZONE);
  const nowMs = Math.floor(now.getTime() / 1000) * 1000;
  const today = localToday(DEMO_TIME_ZONE, now);
  const dates = Array.from({ length: days }, (_, index) => addDays(today, index - days + 1));
  const dayIndex = new Map(dates.map((date, index) => [date, index]));
  const start = zone.instantOf(dates[0]!, 0);
  const demand = dates.map((date, index) => demandOf(date, days - 1 - index));
  const totalDemand = demand.reduce((sum, value) => sum + value, 0);
  const cumulative: number[] = [];
  for (let sum = 0, index = 0; index < days; index++) cumulative.push((sum += demand[index]!));

  /** A day, as likely as its demand. */
  const someDay = () => {
    const point = random.next() * totalDemand;
    let [low, high] = [0, days - 1];
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle]! > point) high = middle;
      else low = middle + 1;
    }
    return low;
  };
  /** A time of a day, its hour by the daily rhythm. */
  const timeOn = (day: number) => zone.instantOf(dates[day]!, random.weighted(HOURS, HOUR_WEIGHTS), random.int(0, 59), random.int(0, 59));

  // Customers and when they order.
  const customerCount = Math.max(20, Math.round((CUSTOMERS_A_YEAR * days) / 365));
  const customers: Customer[] = [];
  const planned: PlannedOrder[] = [];
  for (let n = 0; n < customerCount; n++) {
    const customer: Customer = { id: `c-${200_001 + n}`, visitors: [], orders: [] };
    customer.visitors.push(visitorId(random, customers.length * 2));
    if (random.chance(0.3)) customer.visitors.push(visitorId(random, customers.length * 2 + 1));
    const wanted = random.weighted([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [52, 24, 7, 5, 3.5, 2.5, 2, 1.6, 1.2, 1.2]);
    const orderDays = Array.from({ length: wanted }, someDay).sort((a, b) => a - b);
    let last = -Infinity;
    for (const day of orderDays) {
      // Two orders of one customer are days apart.
      if (day - last < 3) continue;
      last = day;
      const at = timeOn(day);
      if (at > nowMs) continue;
      const order: PlannedOrder = { customer, at, nth: customer.orders.length, id: '' };
      customer.orders.push(order);
      planned.push(order);
    }
    customers.push(customer);
  }
  planned.sort((a, b) => a.at - b.at);
  planned.forEach((order, index) => (order.id = String(ORDER_NUMBER_START + index)));

  const touchpoints: ApiRecord[] = [];
  /** Linearly credited revenue of each campaign, in cents. */
  const credited = new Map<SourceKey, number>();
  const visitorsSeen = new Set<string>();

  function addVisit(source: SourceKey, at: number, visitor: string, customerId?: string) {
    touchpoints.push(visit(random, touchpoints.length, source, zone.iso(at), visitor, customerId, bfcmDay(zone.localOf(at).date)));
    visitorsSeen.add(visitor);
  }
  function addView(campaign: Campaign, at: number, visitor: string) {
    if (at < start || at > nowMs) return;
    const adset = random.weighted(campaign.adsets, campaign.adsets.map((set) => set.weight));
    const ad = random.weighted(adset.ads, adset.ads.map((item) => item.visits));
    touchpoints.push({
      touchpoint_id: touchpointId(touchpoints.length),
      occurred_at: zone.iso(at),
      type: 'view',
      visitor_id: visitor,
      platform_name: campaign.platform,
      platform_account_id: campaign.account,
      campaign_id: campaign.id,
      adset_id: adset.id,
      ad_id: ad.id,
    });
    visitorsSeen.add(visitor);
  }
  const bfcmDay = (date: string) => {
    const fromThanksgiving = daysFromThanksgiving(date);
    return fromThanksgiving >= BFCM_CODE_DAYS.from && fromThanksgiving <= BFCM_CODE_DAYS.to;
  };

  // Orders and their paths.
  const orders: ApiRecord[] = [];
  for (const order of planned) {
    const returning = order.nth > 0;
    const { body, totalCents } = orderBody(random, order, zone.iso(order.at), bfcmDay(zone.localOf(order.at).date), (at) => (at <= nowMs ? zone.iso(at) : undefined));
    orders.push(body);
    // Some orders have no visit on record (an ad blocker, a phone order): they stay unattributed.
    if (random.chance(0.04)) continue;
    const length = random.weighted([1, 2, 3, 4, 5, 6], returning ? [34, 26, 17, 11, 7, 5] : [22, 24, 20, 15, 10, 9]);
    // The visit the order is placed in comes minutes before it; the others over the days before.
    const before = [random.int(2, 45) * 60_000];
    for (let i = 1; i < length; i++) before.push(Math.round(HOUR_MS + (PATH_DAYS * DAY_MS - HOUR_MS) * random.next() ** 1.6));
    before.sort((a, b) => b - a);
    const path: SourceKey[] = [];
    before.forEach((ago, index) => {
      const place = length === 1 ? (random.chance(0.5) ? 'first' : 'last') : index === 0 ? 'first' : index === length - 1 ? 'last' : 'middle';
      const weights = PLACE_WEIGHTS[place].map((weight, source) => (returning ? weight * RETURNING_FACTORS[source]! : weight));
      const source = random.weighted(SOURCES, weights);
      const at = Math.floor((order.at - ago) / 1000) * 1000;
      if (at < start) return;
      const visitor = random.pick(order.customer.visitors);
      // A customer who has ordered before is sometimes signed in.
      const signedIn = returning && random.chance(0.3);
      addVisit(source, at, visitor, signedIn ? order.customer.id : undefined);
      path.push(source);
      if (index === length - 1) order.visitor = visitor;
      // Meta reports some of the impressions before a click.
      const campaign = CAMPAIGN_OF.get(source);
      if (campaign?.platform === 'meta' && random.chance(0.35)) addView(campaign, at - random.int(1, 36) * HOUR_MS, visitor);
    });
    for (const source of path) {
      if (CAMPAIGN_OF.has(source)) credited.set(source, (credited.get(source) ?? 0) + totalCents / path.length);
    }
  }

  // Customers who come back and buy nothing (yet).
  for (const customer of customers) {
    const last = customer.orders.at(-1);
    if (!last || !random.chance(0.15)) continue;
    let at = last.at + random.int(2, 40) * DAY_MS + random.int(0, 23) * HOUR_MS;
    for (let visits = random.int(1, 2); visits > 0 && at <= nowMs; visits--) {
      addVisit(random.weighted(SOURCES, PLACE_WEIGHTS.browsing.map((weight, source) => weight * RETURNING_FACTORS[source]!)), at, random.pick(customer.visitors));
      at += Math.round(random.exponential(2 * DAY_MS));
    }
  }

  // Visitors who never buy.
  const browsers = Math.round(customerCount * BROWSERS_PER_CUSTOMER);
  for (let n = 0; n < browsers; n++) {
    const visitor = visitorId(random, customerCount * 2 + n);
    let at = timeOn(someDay());
    const visits = random.weighted([1, 2, 3], [65, 25, 10]);
    for (let index = 0; index < visits && at <= nowMs; index++) {
      const source = random.weighted(SOURCES, index === 0 ? PLACE_WEIGHTS.browsing : PLACE_WEIGHTS.middle);
      addVisit(source, at, visitor);
      const campaign = CAMPAIGN_OF.get(source);
      if (campaign?.platform === 'meta' && random.chance(0.2)) addView(campaign, at - random.int(1, 36) * HOUR_MS, visitor);
      at += Math.round(HOUR_MS + random.exponential(3 * DAY_MS));
    }
  }
  // Impressions of people who saw an ad and never came.
  for (let n = 0, viewers = Math.round(browsers * 0.1); n < viewers; n++) {
    addView(random.pick(META_CAMPAIGNS), timeOn(someDay()), visitorId(random, customerCount * 2 + browsers + n));
  }

  // Visitors linked to their customers: most directly (a sign-in), some through an order placed
  // in their browser; a few never (their visits look like those of people who do not buy).
  const identities: ApiRecord[] = [];
  for (const customer of customers) {
    for (const visitor of customer.visitors) {
      if (!visitorsSeen.has(visitor) || random.chance(0.03)) continue;
      const placed = customer.orders.find((order) => order.visitor === visitor);
      identities.push(placed && random.chance(0.3) ? { visitor_id: visitor, order_id: placed.id } : { visitor_id: visitor, customer_id: customer.id });
    }
  }

  // Spend: each campaign's day in proportion to the day's demand, at the campaign's ROAS.
  const dailySpend = new Map(
    CAMPAIGNS.map((campaign) => {
      const yearly = dollars(credited.get(campaign.source) ?? 0) / campaign.roas;
      return [campaign.source, demand.map((value) => (yearly * value * random.jitter(0.12)) / totalDemand)];
    }),
  );
  const ads = CAMPAIGNS.flatMap((campaign) => {
    const setWeights = campaign.adsets.reduce((sum, set) => sum + set.weight, 0);
    return campaign.adsets.flatMap((adset) => {
      const adWeights = adset.ads.reduce((sum, ad) => sum + ad.spend, 0);
      return adset.ads.map((ad) => ({ campaign, adset, ad, share: ((adset.weight / setWeights) * ad.spend) / adWeights }));
    });
  });
  const lastHour = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  const hours = Math.max(0, (lastHour - start) / HOUR_MS + 1);

  function* spend(): Generator<ApiRecord> {
    // A stream of its own: the records are the same whenever they are read.
    const noise = createRandom(seed ^ 0x5bd1e995);
    for (let hour = start; hour <= lastHour; hour += HOUR_MS) {
      const local = zone.localOf(hour);
      const day = dayIndex.get(local.date);
      const hourStart = zone.iso(hour);
      for (const { campaign, adset, ad, share } of ads) {
        const amount = day === undefined ? 0 : (dailySpend.get(campaign.source)![day]! * share * HOUR_WEIGHTS[local.hour]! * noise.jitter(0.3)) / HOUR_WEIGHT_SUM;
        const impressions = Math.round((amount / (campaign.cpc * campaign.ctr)) * noise.jitter(0.15));
        yield {
          hour_start_iso: hourStart,
          platform_name: campaign.platform,
          platform_account_id: campaign.account,
          campaign_id: campaign.id,
          campaign_name: campaign.name,
          adset_id: adset.id,
          adset_name: adset.name,
          ad_id: ad.id,
          ad_name: ad.name,
          spend: Math.round(amount * 100) / 100,
          spend_currency: DEMO_CURRENCY,
          impressions,
          clicks: Math.round(impressions * campaign.ctr * noise.jitter(0.2)),
        };
      }
    }
  }

  // In time order, as a tracker would send them (ISO text of one zone sorts as time, but for the hour clocks go back).
  touchpoints.sort((a, b) => {
    const [x, y] = [String(a.occurred_at), String(b.occurred_at)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return { orders, touchpoints, identities, spendRecords: hours * ads.length, spend, customers: customerCount };
}

const touchpointId = (n: number) => `tp-${String(n + 1).padStart(7, '0')}`;
/** A browser's id, random as a tracker's cookie; the number after it keeps every one apart. */
const visitorId = (random: Random, n: number) => `v-${random.chars(12, 'abcdefghijklmnopqrstuvwxyz0123456789')}${n.toString(36)}`;

/** A product page's address. */
const productPage = (random: Random) => `${SHOP_URL}/products/${random.weighted(CATALOGUE, PRODUCT_WEIGHTS).id}`;

/** A visit from `source`, as a shop's tracker sends it: the landing page with its UTMs and click id, the referrer. */
function visit(random: Random, n: number, source: SourceKey, occurredAt: string, visitor: string, customerId: string | undefined, bfcm: boolean): ApiRecord {
  const touchpoint: ApiRecord = { touchpoint_id: touchpointId(n), occurred_at: occurredAt, visitor_id: visitor };
  if (customerId) touchpoint.customer_id = customerId;
  const campaign = CAMPAIGN_OF.get(source);
  if (campaign) {
    const adset = random.weighted(campaign.adsets, campaign.adsets.map((set) => set.weight));
    const ad = random.weighted(adset.ads, adset.ads.map((item) => item.visits));
    const utmSource = pick(random, campaign.utmSources);
    const page = campaign.landing === 'product' ? productPage(random) : campaign.landing === 'cart' && random.chance(0.5) ? `${SHOP_URL}/cart` : `${SHOP_URL}/`;
    const clickId =
      campaign.clickId === 'fbclid' ? `IwAR${random.chars(36)}` : campaign.clickId === 'gclid' ? `Cj0KCQjw${random.chars(40)}_BwE` : `E.C.P.${random.chars(34)}`;
    const query = new URLSearchParams({
      utm_source: utmSource,
      utm_medium: campaign.medium,
      utm_campaign: campaign.id,
      utm_term: adset.id,
      utm_content: ad.id,
      [campaign.clickId]: clickId,
    });
    touchpoint.landing_url = `${page}?${query}`;
    touchpoint.referrer = META_REFERRERS[utmSource] ?? (campaign.platform === 'google' ? 'https://www.google.com/' : 'https://www.tiktok.com/');
  } else if (source === 'email') {
    const flow = bfcm && random.chance(0.6) ? 'bfcm-early-access' : pick(random, EMAIL_FLOWS);
    touchpoint.landing_url = `${SHOP_URL}/${flow === 'abandoned-cart' ? 'cart' : ''}?utm_source=klaviyo&utm_medium=email&utm_campaign=${flow}`;
  } else if (source === 'organic_search') {
    touchpoint.landing_url = random.chance(0.6) ? productPage(random) : `${SHOP_URL}/`;
    touchpoint.referrer = pick(random, SEARCH_REFERRERS);
  } else {
    touchpoint.landing_url = random.chance(0.8) ? `${SHOP_URL}/` : productPage(random);
  }
  return touchpoint;
}

/** An order as POST /v2/orders takes it, with no personal data: products, tax, shipping, a discount, maybe a refund. */
function orderBody(
  random: Random,
  order: PlannedOrder,
  timeOfPurchase: string,
  bfcm: boolean,
  /** The time of a refund, if it has come yet. */
  refundTime: (at: number) => string | undefined,
): { body: ApiRecord; totalCents: number } {
  const lines: { product: Product; variant: [string, string]; quantity: number }[] = [];
  for (let wanted = random.weighted([1, 2, 3, 4], [55, 28, 12, 5]), tries = 0; lines.length < wanted && tries < 10; tries++) {
    const product = random.weighted(CATALOGUE, PRODUCT_WEIGHTS);
    const variant = random.pick(product.variants);
    if (lines.some((line) => line.product === product && line.variant === variant)) continue;
    lines.push({ product, variant, quantity: random.weighted([1, 2, 3], [85, 12, 3]) });
  }
  const subtotal = lines.reduce((sum, line) => sum + line.product.price * line.quantity, 0);
  const code = bfcm && random.chance(0.7) ? 'BFCM20' : order.nth === 0 && random.chance(0.35) ? 'WELCOME10' : order.nth > 0 && random.chance(0.12) ? 'LOYALTY15' : undefined;
  const rate = code === 'BFCM20' ? 0.2 : code === 'WELCOME10' ? 0.1 : code === 'LOYALTY15' ? 0.15 : 0;
  const discount = Math.round(subtotal * rate);
  const shipping = subtotal - discount >= FREE_SHIPPING_FROM ? 0 : SHIPPING;
  const tax = Math.round((subtotal - discount) * TAX_RATE);
  const total = subtotal - discount + tax + shipping;
  const body: ApiRecord = {
    order_id: order.id,
    customer_id: order.customer.id,
    time_of_purchase: timeOfPurchase,
    currency: DEMO_CURRENCY,
    purchase_total: dollars(total),
    tax: dollars(tax),
    shipping_cost: dollars(shipping),
    products: lines.map(({ product, variant, quantity }) => ({
      id: product.id,
      variant_id: variant[0],
      name: product.name,
      variant_name: variant[1],
      quantity,
      price: dollars(product.price),
    })),
  };
  if (code) {
    body.discount_codes = [code];
    body.discount_amount = dollars(discount);
  }
  if (order.nth > 0) body.order_tags = ['returning-customer'];
  if (random.chance(0.065)) {
    const line = random.pick(lines);
    const madeAt = refundTime(order.at + random.int(3, 24) * DAY_MS + random.int(0, 23) * HOUR_MS);
    if (madeAt) {
      body.refunds = [
        {
          product_id: line.product.id,
          variant_id: line.variant[0],
          quantity: line.quantity,
          refund_amount: dollars(Math.round(line.product.price * line.quantity * (1 - rate) * (1 + TAX_RATE))),
          refund_cost: dollars(RETURN_LABEL),
          refund_made_at: madeAt,
        },
      ];
    }
  }
  return { body, totalCents: total };
}
