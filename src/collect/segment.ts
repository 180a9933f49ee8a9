import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorEnvelope } from '../http/schemas.js';
import { deriveVisits, type Link, type Visit } from './ingest.js';
import { SegmentPayload, SegmentResult, type SegmentEvent } from './schema.js';

/** The track event of Segment's e-commerce spec that a purchase is. */
export const ORDER_COMPLETED = 'Order Completed';

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** Segment's campaign fields and the UTM each is (`name` is the campaign). */
const CAMPAIGN_UTMS = { source: 'utm_source', medium: 'utm_medium', name: 'utm_campaign', term: 'utm_term', content: 'utm_content' } as const;

/** A page event as a visit, or undefined when it lacks what a touchpoint needs (an id, a time, a visitor or customer). */
function pageVisit(event: SegmentEvent, loc: string): Visit | undefined {
  const { messageId, timestamp, anonymousId, userId, context, properties } = event;
  if (messageId === undefined || timestamp === undefined || (anonymousId === undefined && userId === undefined)) return undefined;
  const urlFrom = context?.page?.url !== undefined ? 'context/page' : 'properties';
  const utms = Object.fromEntries(Object.entries(CAMPAIGN_UTMS).map(([field, utm]) => [utm, context?.campaign?.[field as keyof typeof CAMPAIGN_UTMS]]));
  return {
    input: {
      touchpoint_id: messageId,
      occurred_at: timestamp,
      type: 'visit',
      visitor_id: anonymousId,
      customer_id: userId,
      landing_url: context?.page?.url ?? properties?.url,
      referrer: context?.page?.referrer ?? properties?.referrer,
      ...utms,
    },
    urlLoc: `${loc}/${urlFrom}/url`,
  };
}

/** The link an identify or an Order Completed track makes, or undefined when it has no visitor and customer or order. */
function link(event: SegmentEvent): Link | undefined {
  const { type, anonymousId, userId } = event;
  if (anonymousId === undefined) return undefined;
  if (type === 'identify' && userId !== undefined) return { visitor_id: anonymousId, customer_id: userId };
  const orderId = event.properties?.order_id;
  if (type === 'track' && event.event === ORDER_COMPLETED && orderId !== undefined) return { visitor_id: anonymousId, order_id: String(orderId) };
  return undefined;
}

/** What a batch's events store, and how many it ignores. */
function readSegment(events: readonly SegmentEvent[], loc: (index: number) => string) {
  const visits: Visit[] = [];
  const links: Link[] = [];
  let ignored = 0;
  events.forEach((event, index) => {
    const read = event.type === 'page' ? pageVisit(event, loc(index)) : link(event);
    if (read === undefined) ignored++;
    else if ('input' in read) visits.push(read);
    else links.push(read);
  });
  return { visits, links, ignored };
}

/**
 * Event forwarding: Segment-spec events, one or a batch, as Segment, RudderStack or Jitsu
 * deliver them to a webhook, with the API's credentials. Pages become visit touchpoints
 * (messageId is the touchpoint_id), identify and Order Completed link the visitor to a customer
 * or an order; every other event is accepted and counted as ignored.
 */
export const segmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/segment',
    {
      config: { validationStatus: 422, rateLimit: 'touchpointWrites' },
      schema: {
        summary: 'Forward Segment-spec events',
        description:
          "A Segment-spec event or {\"batch\": [...]}. page: a visit touchpoint (messageId, timestamp, anonymousId and/or userId, context.page.url and referrer, context.campaign's UTMs); identify: links anonymousId to userId; track of Order Completed: links anonymousId to properties.order_id. Other events, and these without the ids they need, are ignored and counted. All or nothing.",
        body: SegmentPayload,
        response: { 200: SegmentResult, 401: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const { tenant, store, body } = request;
      const events = body.batch ?? [body as SegmentEvent];
      const { visits, links, ignored } = readSegment(events, (index) => (body.batch ? `body/batch/${index}` : 'body'));
      const derived = deriveVisits(visits, await store.touchpoints.sourcePlatforms(tenant.clientId));
      const stored = await store.events.ingest(tenant, derived, links, new Date());
      return reply.send({
        message: `Stored ${count(stored.touchpoints, 'touchpoint')} and ${count(stored.links, 'link')}; ignored ${count(ignored, 'event')}`,
        ...stored,
        ignored,
        request_id: request.id,
      });
    },
  );
};
