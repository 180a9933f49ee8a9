import { makeOrder } from './helpers.js';

/*
 * One customer of 1,000 orders and 1,000 touchpoints over 25 days, every order's path holding
 * every earlier touchpoint: ordinary data of a shop, quadratic in what attribution keeps of it.
 * Half the visits carry the customer, half come from its cookies, linked directly or through its
 * first order.
 */

export const ORDERS = 1_000;
export const TOUCHPOINTS = 1_000;
const FIRST_DAY = Date.UTC(2024, 2, 1);
const SPAN_MS = 25 * 86_400_000;
export const touchpointTime = (k: number) => FIRST_DAY + (k * SPAN_MS) / TOUCHPOINTS;
export const orderTime = (k: number) => FIRST_DAY + 3_600_000 + (k * SPAN_MS) / ORDERS;

/** The requests that send the customer's data: [path, body], in order. */
export function oneCustomerRequests(): [string, unknown][] {
  const touchpoints = Array.from({ length: TOUCHPOINTS }, (_, k) => ({
    touchpoint_id: `t${k}`,
    occurred_at: new Date(touchpointTime(k)).toISOString(),
    visitor_id: `cookie-${k % 7}`,
    ...(k % 2 === 1 && { customer_id: 'loyal' }),
    landing_url: `https://shop.example/?utm_source=meta&utm_campaign=campaign-${k % 5}`,
  }));
  const links = Array.from({ length: 7 }, (_, v) => (v % 2 ? { visitor_id: `cookie-${v}`, customer_id: 'loyal' } : { visitor_id: `cookie-${v}`, order_id: 'o0' }));
  const orders = Array.from({ length: ORDERS }, (_, k) => makeOrder(`o${k}`, { customer_id: 'loyal', time_of_purchase: new Date(orderTime(k)).toISOString() }));
  return [
    ['/v1/touchpoints', { data: touchpoints.slice(0, 500) }],
    ['/v1/touchpoints', { data: touchpoints.slice(500) }],
    ['/v1/identities', { data: links }],
    ['/v2/orders', orders],
  ];
}
