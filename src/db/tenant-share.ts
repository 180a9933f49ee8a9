import type { Tenant } from '../auth/tenant.js';

export interface TenantShareOptions {
  /** Reads of one client that may run at once in the process: the connections they may hold. */
  connections: number;
  /** Longest wait of a read past the share for one of its client's to finish. */
  waitMs: number;
}

/** Reads of one client that may wait for the share, for each that may run: a burst past them is refused at once. */
export const WAITING_PER_CONNECTION = 4;

/** A read refused because its client holds its share of the database (an answer 429). */
export class TenantBusyError extends Error {
  constructor(
    readonly connections: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`This client already has ${connections} reports or explanations running, its share of the database (TENANT_READ_CONNECTIONS), and more waiting`);
  }
}

export type TenantShare = ReturnType<typeof createTenantShare>;

interface Waiting {
  admit(): void;
}

/**
 * A client's share of the process's database connections for its reads (reports and
 * explanations: statements that may run for seconds): at most `connections` run at once, so that
 * however many one client sends, or abandons, the rest of the pool stays for other clients,
 * writes and health checks. A read past the share waits its turn, in order, for up to `waitMs`,
 * holding no connection; it is refused (TenantBusyError) after that, or at once when
 * WAITING_PER_CONNECTION × `connections` reads of the client already wait.
 */
export function createTenantShare({ connections, waitMs }: TenantShareOptions) {
  const tenants = new Map<string, { running: number; waiting: Waiting[] }>();
  const busy = () => new TenantBusyError(connections, Math.max(1, Math.ceil(waitMs / 1000)));

  function admitted(key: string): Promise<void> {
    const state = tenants.get(key) ?? { running: 0, waiting: [] };
    tenants.set(key, state);
    if (state.running < connections) {
      state.running += 1;
      return Promise.resolve();
    }
    if (state.waiting.length >= WAITING_PER_CONNECTION * connections) return Promise.reject(busy());
    return new Promise((resolve, reject) => {
      const waiting: Waiting = {
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        state.waiting.splice(state.waiting.indexOf(waiting), 1);
        reject(busy());
      }, waitMs);
      state.waiting.push(waiting);
    });
  }

  /** A finished read hands its place to the next waiting, if any. */
  function release(key: string): void {
    const state = tenants.get(key)!;
    const next = state.waiting.shift();
    if (next) return next.admit();
    state.running -= 1;
    if (state.running === 0) tenants.delete(key);
  }

  return {
    /** Runs `read` within its client's share: both environments of a client count together, as they use one pool. */
    async run<T>({ clientId }: Tenant, read: () => Promise<T>): Promise<T> {
      await admitted(clientId);
      try {
        return await read();
      } finally {
        release(clientId);
      }
    },
  };
}
