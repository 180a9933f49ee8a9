import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Environment } from '../auth/tenant.js';
import type { ClientRepository } from '../clients/repository.js';
import type { Database } from '../db/index.js';
import { invalidRequest, type ErrorItem } from '../http/errors.js';
import { parseJsonBody } from '../http/json-body.js';
import { ErrorEnvelope } from '../http/schemas.js';
import type { RateLimits } from '../rate-limit/limits.js';
import { deriveVisits, type Link, type Visit } from './ingest.js';
import { COLLECT_BODY_LIMIT_BYTES, COLLECT_REQUIRED_FIELDS, CollectBody, type CollectEvent } from './schema.js';
import { createCollectWriter, type Outcome } from './writer.js';

/** A browser clock further than this from the server's is wrong, and the server's time is taken. */
export const MAX_CLOCK_SKEW_MS = 24 * 3600 * 1000;
const PREFLIGHT_MAX_AGE_SECONDS = 24 * 3600;

/** Why a request's events were dropped, unstored, while it was answered as if they had been stored. */
type DropReason = Exclude<Outcome, 'stored'>;

export interface CollectOptions {
  environment: Environment;
  clients: ClientRepository;
  db: Database;
  rateLimits: RateLimits;
}

/** Each event's missing required field (by type): one problem per event. */
function missingFields(events: readonly CollectEvent[]): ErrorItem[] {
  return events.flatMap((event, index) => {
    const field = COLLECT_REQUIRED_FIELDS[event.type];
    return field === null || event[field] !== undefined
      ? []
      : [{ loc: `body/events/${index}/${field}`, msg: `Required for a ${event.type} event`, type: 'required' }];
  });
}

/** The event's time, or the server's when the browser's clock is more than a day off. */
function occurredAt(event: CollectEvent, now: Date): string {
  return Math.abs(Date.parse(event.occurred_at) - now.getTime()) > MAX_CLOCK_SKEW_MS ? now.toISOString() : event.occurred_at;
}

/** What a request's events store: page views as visits, identify and purchase as links. */
function readEvents(events: readonly CollectEvent[], now: Date): { visits: Visit[]; links: Link[] } {
  const visits: Visit[] = [];
  const links: Link[] = [];
  events.forEach((event, index) => {
    const { visitor_id } = event;
    if (event.type === 'identify') return void links.push({ visitor_id, customer_id: event.customer_id! });
    if (event.type === 'purchase') return void links.push({ visitor_id, order_id: event.order_id! });
    visits.push({
      input: {
        touchpoint_id: event.event_id,
        occurred_at: occurredAt(event, now),
        type: 'visit',
        visitor_id,
        customer_id: event.customer_id,
        landing_url: event.url,
        referrer: event.referrer,
      },
      urlLoc: `body/events/${index}/url`,
    });
  });
  return { visits, links };
}

/**
 * The public collector of the pixel: POST /v1/collect, no credentials. Open to every origin
 * (CORS without credentials); the body is JSON sent as application/json or as text/plain (what
 * navigator.sendBeacon sends, which needs no preflight). A request for a client id that does not
 * exist, or from an Origin the client did not list, is answered as any other (204) and its
 * events are dropped: the answer tells nobody which client ids exist. Nothing here reads data.
 */
export const collectRoutes: FastifyPluginAsyncTypebox<CollectOptions> = async (app, { environment, clients, db, rateLimits }) => {
  app.addContentTypeParser('text/plain', { parseAs: 'buffer' }, parseJsonBody);

  // Every answer, errors included, so that a page's script can read why it was refused.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('access-control-allow-origin', '*');
  });

  const writer = createCollectWriter(db, clients);
  const dropped: Record<DropReason, number> = { unknown_client: 0, origin_not_allowed: 0 };
  /** Counted, and logged with the process's total so far: without addresses, visitors or customers. */
  function drop(request: FastifyRequest, reason: DropReason, events: number, clientId?: string) {
    dropped[reason] += events;
    request.log.info({ reason, events, dropped_total: dropped[reason], ...(clientId && { client_id: clientId }) }, 'collected events dropped');
  }

  app.options(
    '',
    { schema: { hide: true } },
    async (_request, reply) =>
      reply
        .code(204)
        .headers({
          'access-control-allow-methods': 'POST',
          'access-control-allow-headers': 'Content-Type',
          'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
        })
        .send(),
  );

  app.post(
    '',
    {
      bodyLimit: COLLECT_BODY_LIMIT_BYTES,
      config: { validationStatus: 422 },
      // Counted per source address before the body is read: a flood costs no parse.
      onRequest: async (request) => rateLimits.limitCollect(request, 'collectAddresses', environment),
      schema: {
        summary: 'Collect pixel events (public)',
        description:
          'The endpoint of /pixel.js: no credentials. page events become visit touchpoints (touchpoint_id = event_id), identify and purchase events link the visitor to a customer or an order. JSON as application/json or text/plain, at most 16 KB. Always 204 once valid, whether the client id exists or not.',
        consumes: ['application/json', 'text/plain'],
        body: CollectBody,
        response: { 204: Type.Null(), 413: ErrorEnvelope, 415: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const { events } = request.body;
      const clientId = request.body.client_id.toLowerCase();
      await rateLimits.limitCollect(request, 'collectClients', environment, { id: clientId, events: events.length });
      const missing = missingFields(events);
      if (missing.length > 0) throw invalidRequest(missing, 422);

      const { visits, links } = readEvents(events, new Date());
      // Refused here, before the client is known (the source mapping changes what a URL's
      // parameters mean, never whether they can be stored): what is refused must not depend on it.
      const derived = deriveVisits(visits, {});
      const outcome = await writer.write(clientId, environment, { visits, derived, links, origin: request.headers.origin });
      if (outcome !== 'stored') drop(request, outcome, events.length, outcome === 'origin_not_allowed' ? clientId : undefined);
      return reply.code(204).send(null);
    },
  );
};
