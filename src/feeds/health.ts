import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { Tenant } from '../auth/tenant.js';
import type { Store } from '../db/store.js';
import { addDays, localToday } from '../calendar.js';
import { EnvironmentServed, ErrorEnvelope } from '../http/schemas.js';
import type { Feed } from './repository.js';

/** The days a feed's health covers, today (in the client's time zone) included. */
export const FEED_HEALTH_DAYS = 30;

const Count = (feed: string) => Type.Integer({ description: `${feed} received that day.` });
const LastAt = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const FeedHealthReport = Type.Object(
  {
    environment: EnvironmentServed,
    time_zone: Type.String({
      description: "The client's IANA time zone, whose local days `days` are: the days the reports API's start_date and end_date name.",
      examples: ['America/New_York'],
    }),
    days: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), orders: Count('Orders'), spend: Count('Spend records (hourly and daily)'), touchpoints: Count('Touchpoints') }), {
      description: `The last ${FEED_HEALTH_DAYS} days, today included, oldest first. A record sent again counts on the day it was last received.`,
    }),
    last_received_at: Type.Object(
      { orders: LastAt, spend: LastAt, touchpoints: LastAt },
      { description: 'When each feed last delivered a record, ever; null if never.' },
    ),
  },
  {
    // The last two of the days, for the client of the API reference's examples: its two visits (src/touchpoints/schema.ts),
    // then order 1001 patched and the day's hourly and daily spend records of the Spring sale campaign.
    examples: [
      {
        environment: 'production',
        time_zone: 'America/New_York',
        days: [
          { date: '2024-03-08', orders: 0, spend: 0, touchpoints: 2 },
          { date: '2024-03-09', orders: 1, spend: 2, touchpoints: 0 },
        ],
        last_received_at: { orders: '2024-03-09T15:10:44.502Z', spend: '2024-03-09T06:00:02.000Z', touchpoints: '2024-03-08T09:30:05.208Z' },
      },
    ],
  },
);

type FeedHealth = Static<typeof FeedHealthReport>;

/** What each feed of a client delivered over the last FEED_HEALTH_DAYS local days, oldest first. */
export async function feedHealth({ clients, feeds }: Pick<Store, 'clients' | 'feeds'>, tenant: Tenant, now: Date): Promise<FeedHealth> {
  const timeZone = await clients.timeZone(tenant.clientId);
  const today = localToday(timeZone, now);
  const first = addDays(today, 1 - FEED_HEALTH_DAYS);
  const days = Array.from({ length: FEED_HEALTH_DAYS }, (_, index) => ({ date: addDays(first, index), orders: 0, spend: 0, touchpoints: 0 }));
  const last: Record<Feed, string | null> = { orders: null, spend: null, touchpoints: null };
  for (const { feed, day, received, last_at } of await feeds.receipts(tenant, timeZone, first)) {
    const counted = days.find((candidate) => candidate.date === day);
    if (counted) counted[feed] += received;
    if (last[feed] === null || last_at > last[feed]) last[feed] = last_at;
  }
  return { environment: tenant.environment, time_zone: timeZone, days, last_received_at: last };
}

/** GET /v1/health/feeds: whether orders, spend and touchpoints are arriving, so that a stopped feed shows at once. */
export const feedHealthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/feeds',
    {
      config: { rateLimit: 'exportReads' },
      schema: {
        summary: 'Data health of the feeds',
        description: `Orders, spend records and touchpoints received per day over the last ${FEED_HEALTH_DAYS} days of the client's time zone, and when each last arrived; and the environment (production or uat) the port serves.`,
        response: { 200: FeedHealthReport, 401: ErrorEnvelope },
      },
    },
    async (request) => feedHealth(request.store, request.tenant, new Date()),
  );
};
