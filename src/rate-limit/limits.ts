import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from '../http/errors.js';
import { meteredBody } from '../http/metered-body.js';
import { addressBucket } from './address.js';
import { redisStore } from './redis.js';
import { decide, memoryStore, type CounterStore, type Decision, type Policy } from './window.js';

/**
 * The limited groups of routes; a route names its group in `config.rateLimit`. A new batch
 * endpoint joins a budget by naming its group, or gets its own with a line in `routePolicies`.
 */
export type LimitName = 'orderWrites' | 'spendWrites' | 'touchpointWrites' | 'exportCreates' | 'exportReads';

/** The limits of the public collector (POST /v1/collect), which has no credentials to count by. */
export type CollectLimitName = 'collectAddresses' | 'collectClients';

declare module 'fastify' {
  interface FastifyContextConfig {
    rateLimit?: LimitName;
  }
}

export interface RateLimitConfig {
  redisUrl: string | undefined;
  orderWriteBytesPerMinute: number;
  spendWriteBytesPerMinute: number;
  touchpointWriteBytesPerMinute: number;
  exportCreatesPerMinute: number;
  exportReadsPerSecond: number;
  authFailuresPerMinute: number;
  collectRequestsPerMinute: number;
  collectEventsPerMinute: number;
}

/** A route group's policy, and whose budget it is: each API key's (writes), or each client's. */
interface RoutePolicy extends Policy {
  per: 'key' | 'client';
}

/** A limit of 0 is no limit. */
const limited = <P extends Policy>(policy: P): P | undefined => (policy.limit > 0 ? policy : undefined);

function routePolicies(config: RateLimitConfig): Record<LimitName, RoutePolicy | undefined> {
  const bytesPerKey = { windowSeconds: 60, unit: 'content-bytes', per: 'key' } as const;
  return {
    orderWrites: limited({ name: 'order-writes', limit: config.orderWriteBytesPerMinute, ...bytesPerKey }),
    spendWrites: limited({ name: 'spend-writes', limit: config.spendWriteBytesPerMinute, ...bytesPerKey }),
    touchpointWrites: limited({ name: 'touchpoint-writes', limit: config.touchpointWriteBytesPerMinute, ...bytesPerKey }),
    exportCreates: limited({ name: 'export-creates', limit: config.exportCreatesPerMinute, windowSeconds: 60, unit: 'requests', per: 'client' }),
    exportReads: limited({ name: 'export-reads', limit: config.exportReadsPerSecond, windowSeconds: 1, unit: 'requests', per: 'client' }),
  };
}

/** A body larger than a byte budget's whole window: a 413, not a 429 it could never get past. */
const largerThanBudget = (policy: Policy) =>
  new ApiError(413, `The request body is larger than the whole ${policy.name} budget of ${policy.limit} bytes in ${policy.windowSeconds} s`);

/** A source address (its IPv6 /64), as a counter key: hashed, so that no address is kept anywhere. */
const addressKey = (request: FastifyRequest) => `ip:${createHash('sha256').update(addressBucket(request.ip)).digest('base64url').slice(0, 22)}`;

/**
 * A source address in a log line: a keyed hash whose key lives and dies with the process, so
 * that one source's lines can be told apart from another's, and no address can be recovered
 * (a plain hash of an IPv4 address can, by hashing all 2^32 of them).
 */
const LOG_KEY = randomBytes(32);
const addressForLog = (request: FastifyRequest) => createHmac('sha256', LOG_KEY).update(addressBucket(request.ip)).digest('base64url').slice(0, 16);

export type RateLimits = ReturnType<typeof createRateLimits>;

/**
 * The service's rate limits: order-, spend- and touchpoint-write body bytes per API key, export creations
 * and reads per client, failed authentications per source address. Counters are in memory, or
 * in Redis when `redisUrl` is set; when Redis cannot be reached requests are served unlimited
 * (fail open) and the log says so.
 */
export function createRateLimits(config: RateLimitConfig, logger?: Logger) {
  const store: CounterStore = config.redisUrl ? redisStore(config.redisUrl, logger) : memoryStore();
  const limits = routePolicies(config);
  const authFailures = limited<Policy>({ name: 'auth-failures', limit: config.authFailuresPerMinute, windowSeconds: 60, unit: 'requests' });

  let failureLoggedAt = -Infinity;
  async function consume(policy: Policy, subject: string, cost: number): Promise<Decision | undefined> {
    const now = Date.now();
    try {
      const consumed = await store.consume(`${policy.name}:${subject}`, cost, policy.limit, policy.windowSeconds * 1000, now);
      return decide(policy, consumed, cost, now);
    } catch (error) {
      // Served unlimited. A lost connection is also logged as it goes and comes back (redis.ts);
      // a command refused or unanswered on a live one only here, at most once a minute.
      if (now - failureLoggedAt >= 60_000) {
        failureLoggedAt = now;
        logger?.warn({ err: { message: (error as Error).message } }, 'rate-limit counters could not be updated: requests are served without limits meanwhile');
      }
      return undefined;
    }
  }

  const tooMany = (decision: Decision, message: string) =>
    new ApiError(429, message, null, { 'retry-after': String(decision.retryAfterSeconds) }, { retry_after_seconds: decision.retryAfterSeconds });

  const collectLimits: Record<CollectLimitName, Policy | undefined> = {
    collectAddresses: limited({ name: 'collect-requests', limit: config.collectRequestsPerMinute, windowSeconds: 60, unit: 'requests' }),
    collectClients: limited({ name: 'collect-events', limit: config.collectEventsPerMinute, windowSeconds: 60, unit: 'events' }),
  };

  return {
    /** A route group's limit, for a request whose body is `bodyBytes` long: counted before validation, as invalid requests cost too. */
    async limitRoute(request: FastifyRequest, reply: FastifyReply, bodyBytes: number) {
      const name = request.routeOptions.config.rateLimit;
      const policy = name && limits[name];
      if (!policy) return;
      const { tenant } = request;
      // The public UAT test credentials are shared by everyone: their budget is per address.
      const subject = tenant.dryRun
        ? addressKey(request)
        : policy.per === 'key'
          ? `${tenant.environment}:key:${tenant.apiKeyHash}`
          : `${tenant.environment}:client:${tenant.clientId}`;
      const cost = policy.unit === 'content-bytes' ? bodyBytes : 1;
      if (cost > policy.limit) throw largerThanBudget(policy);
      const decision = await consume(policy, subject, cost);
      if (!decision) return;
      reply.header('ratelimit-policy', `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}${policy.unit === 'content-bytes' ? ';qu="content-bytes"' : ''}`);
      reply.header('ratelimit', `"${policy.name}";r=${decision.remaining};t=${decision.resetSeconds}`);
      if (!decision.allowed) {
        throw tooMany(decision, `Rate limit exceeded (${policy.name}): retry after ${decision.retryAfterSeconds} s`);
      }
    },

    /**
     * limitRoute for a body sent without a length (chunked): a group counted in requests is
     * charged at once; one counted in bytes, chunk by chunk as the body arrives, so that a body
     * past the budget is refused as soon as it is, not once it has been read whole.
     */
    async limitStreamedBody(request: FastifyRequest, reply: FastifyReply, payload: Readable): Promise<Readable> {
      const name = request.routeOptions.config.rateLimit;
      const policy = name && limits[name];
      if (!policy) return payload;
      if (policy.unit !== 'content-bytes') {
        await this.limitRoute(request, reply, 0);
        return payload;
      }
      return meteredBody(payload, async (soFar, chunk) => {
        if (soFar > policy.limit) throw largerThanBudget(policy);
        await this.limitRoute(request, reply, chunk);
      });
    },

    /**
     * The collector's limits: requests per source address, events per client id as sent (known
     * or not, so that a refusal says nothing of which ids exist). Without RateLimit headers: how
     * much of a client's budget others have spent would tell whether its id is in use.
     */
    async limitCollect(request: FastifyRequest, name: CollectLimitName, environment: string, client?: { id: string; events: number }) {
      const policy = collectLimits[name];
      if (!policy) return;
      const [subject, events] = client ? [`${environment}:client:${client.id}`, client.events] : [`${environment}:${addressKey(request)}`, 1];
      const decision = await consume(policy, subject, events);
      if (decision && !decision.allowed) throw tooMany(decision, `Rate limit exceeded (${policy.name}): retry after ${decision.retryAfterSeconds} s`);
    },

    /**
     * Wraps authentication: failures (401s) are counted per source address, and past the budget
     * they are answered 429, so that guessing credentials is slow. Valid credentials are served
     * whatever the count, so that a guesser cannot lock out the clients that share its address
     * (a NAT, a proxy). A success costs no counter operation, a failure one. With
     * `failureMessage`, each failure is logged at warn, its address as a pseudonym.
     */
    guardAuthentication(authenticate: (request: FastifyRequest) => Promise<void>, failureMessage?: string) {
      return async (request: FastifyRequest) => {
        try {
          await authenticate(request);
        } catch (error) {
          if (!(error instanceof ApiError && error.statusCode === 401)) throw error;
          const decision = authFailures && (await consume(authFailures, addressKey(request), 1));
          const refused = decision !== undefined && !decision.allowed;
          if (failureMessage) request.log.warn({ source: addressForLog(request), refused }, failureMessage);
          if (refused) throw tooMany(decision, 'Too many failed authentications from this address: retry later');
          throw error;
        }
      };
    },

    ready: () => store.ready(),
    close: () => store.close(),
  };
}

/**
 * Applies the route groups' limits to the routes registered in `api`. A body is counted as it is
 * announced (Content-Length), before it is read, so that a caller past its budget costs no
 * parse; one sent without a length (chunked) is counted as it arrives.
 */
export function registerRateLimits(api: FastifyInstance, rateLimits: RateLimits) {
  api.addHook('preParsing', async (request, reply, payload) => {
    const announced = request.headers['content-length'];
    if (announced === undefined) return rateLimits.limitStreamedBody(request, reply, payload);
    await rateLimits.limitRoute(request, reply, Number(announced));
    return payload;
  });
}
