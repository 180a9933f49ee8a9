import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CounterStore } from './window.js';

/**
 * The sliding window of window.ts, applied atomically in Redis, so that every API process
 * counts against one budget. KEYS[1]: the counter; ARGV: cost, limit, window ms, now ms.
 */
const CONSUME = `
local cost, limit, window, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local index = math.floor(now / window)
local current_key, previous_key = KEYS[1] .. ':' .. index, KEYS[1] .. ':' .. (index - 1)
local current = tonumber(redis.call('GET', current_key) or '0')
local previous = tonumber(redis.call('GET', previous_key) or '0')
local allowed = previous * (1 - (now % window) / window) + current + cost <= limit
if allowed then
  current = redis.call('INCRBY', current_key, cost)
  redis.call('PEXPIRE', current_key, window * 2)
end
return { allowed and 1 or 0, previous, current }`;

const CONNECT_WAIT_MS = 2000;

/**
 * Counters in Redis. Commands fail at once while Redis is unreachable (no offline queue) and
 * the client reconnects by itself; callers decide what a failure means.
 */
export function redisStore(url: string, logger?: Logger): CounterStore {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, keyPrefix: 'tributary:rate:' });
  let reported = false;
  redis.on('error', (error: Error) => {
    if (!reported) logger?.warn({ err: { message: error.message } }, 'Redis is unreachable; rate limits are not applied until it is back');
    reported = true;
  });
  redis.on('ready', () => {
    if (reported) logger?.info('Redis is back; rate limits apply again');
    reported = false;
  });
  return {
    async consume(key, cost, limit, windowMs, nowMs) {
      const [allowed, previous, current] = (await redis.eval(CONSUME, 1, key, cost, limit, windowMs, nowMs)) as number[];
      return { allowed: allowed === 1, previous: previous!, current: current! };
    },
    // The first connection is waited for (briefly), so that a process counts from its first request.
    ready: () =>
      new Promise<void>((resolve) => {
        if (redis.status === 'ready') return resolve();
        const timer = setTimeout(resolve, CONNECT_WAIT_MS);
        redis.once('ready', () => {
          clearTimeout(timer);
          resolve();
        });
      }),
    async close() {
      redis.disconnect();
    },
  };
}
