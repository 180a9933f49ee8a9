/**
 * Sliding-window rate limiting, the way most API gateways do it: two fixed windows, the
 * previous one weighed by how much of it the sliding window still covers. Memory is two
 * counters a key, and a store can apply it atomically (see redis.ts).
 */

/** At most `limit` units (requests, bytes of request body, or events collected) in any `windowSeconds`. */
export interface Policy {
  name: string;
  limit: number;
  windowSeconds: number;
  unit: 'requests' | 'content-bytes' | 'events';
}

/** The units counted in the current fixed window and in the one before it. */
export interface Windows {
  previous: number;
  current: number;
}

export interface Consumed extends Windows {
  allowed: boolean;
}

/** Where counters live: in this process, or in Redis for several processes to share. */
export interface CounterStore {
  /**
   * Adds `cost` to `key`'s current window unless the sliding window would then hold more than
   * `limit`; answers the windows as they are after.
   */
  consume(key: string, cost: number, limit: number, windowMs: number, nowMs: number): Promise<Consumed>;
  /** Resolves once the store can count, or has given up for now (then requests are not limited). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The units the sliding window holds at `elapsed` (0 to 1) into the current fixed window. */
export const slidingCount = ({ previous, current }: Windows, elapsed: number) => previous * (1 - elapsed) + current;

export interface Decision {
  allowed: boolean;
  /** Units still available now. */
  remaining: number;
  /** Seconds until the current fixed window ends and its older share starts to fall away. */
  resetSeconds: number;
  /** When refused: seconds until a request of the same cost would be allowed. */
  retryAfterSeconds: number;
}

/** What a consumption means to the caller, from the windows after it. */
export function decide(policy: Policy, consumed: Consumed, cost: number, nowMs: number): Decision {
  const windowMs = policy.windowSeconds * 1000;
  const elapsed = (nowMs % windowMs) / windowMs;
  const used = slidingCount(consumed, elapsed);
  const toWindowEnd = (1 - elapsed) * windowMs;
  let waitMs = 0;
  if (!consumed.allowed) {
    const excess = used + cost - policy.limit;
    // The previous window's share shrinks as time passes; if that is not enough, wait for the
    // current window to become the previous one, and its share to shrink in turn.
    if (consumed.previous * (1 - elapsed) >= excess) waitMs = (excess / consumed.previous) * windowMs;
    else waitMs = toWindowEnd + Math.max(0, 1 - (policy.limit - cost) / consumed.current) * windowMs;
  }
  return {
    allowed: consumed.allowed,
    remaining: Math.max(0, Math.floor(policy.limit - used)),
    resetSeconds: Math.ceil(toWindowEnd / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
  };
}

interface Counter extends Windows {
  index: number;
  windowMs: number;
}

/** Counters in this process's memory; stale ones are swept once a minute. */
export function memoryStore(): CounterStore {
  const counters = new Map<string, Counter>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, counter] of counters) if (counter.index < Math.floor(now / counter.windowMs) - 1) counters.delete(key);
  }, 60_000).unref();
  return {
    async consume(key, cost, limit, windowMs, nowMs) {
      const index = Math.floor(nowMs / windowMs);
      const found = counters.get(key);
      const counter: Counter =
        found?.index === index
          ? found
          : { index, windowMs, previous: found?.index === index - 1 ? found.current : 0, current: 0 };
      counters.set(key, counter);
      const allowed = slidingCount(counter, (nowMs % windowMs) / windowMs) + cost <= limit;
      if (allowed) counter.current += cost;
      return { allowed, previous: counter.previous, current: counter.current };
    },
    ready: async () => {},
    async close() {
      clearInterval(sweep);
    },
  };
}
