import type { Environment, Tenant } from '../auth/tenant.js';
import type { ClientRepository } from '../clients/repository.js';
import type { Database } from '../db/database.js';
import { isClientGone, isDatabaseUnavailable } from '../db/errors.js';
import type { DerivedTouchpoint } from '../touchpoints/derive.js';
import { PUBLIC_COLLECTOR } from '../touchpoints/repository.js';
import { ingest, withSourceMapping, type Link, type Visit } from './ingest.js';

/** The most events one group's statements write: a bound on their size, far past a busy shop's second. */
export const MAX_GROUP_EVENTS = 2000;
/**
 * The most groups of one client written at once: each is a lookup and a statement, one after
 * the other, so one at a time would cap a busy client at a group per two round trips; more would
 * take the connections other clients and the API need.
 */
export const MAX_GROUPS_IN_FLIGHT = 4;

/** What became of a request's events: stored, or dropped unstored (and why). */
export type Outcome = 'stored' | 'unknown_client' | 'origin_not_allowed';

/** A request's events, as read from it. */
export interface Collected {
  visits: readonly Visit[];
  /** The visits derived without a source mapping: the client's may change a few. */
  derived: readonly DerivedTouchpoint[];
  links: readonly Link[];
  /** The request's Origin header. */
  origin: string | undefined;
}

interface Member extends Collected {
  resolve: (outcome: Outcome) => void;
  reject: (error: unknown) => void;
}

/** A client's requests waiting to be written, and its groups being written. */
interface Queue {
  tenant: Tenant;
  pending: Member[];
  writing: number;
  /** A group will start at the next turn of the event loop. */
  starting: boolean;
}

const size = (member: Member) => member.visits.length + member.links.length;

/**
 * Group commit for the collector. A beacon holds one or a few events, and a lookup and
 * statements of their own for each would spend the database on per-statement and per-commit
 * costs: the requests of a client read in the same turn of the event loop, and those that arrive
 * while MAX_GROUPS_IN_FLIGHT of its groups are being written, are written together (up to
 * MAX_GROUP_EVENTS events) after one read of the client's settings: whether it exists, the
 * origins it takes events from, its source mapping. Each request is answered once its events are
 * stored, or dropped. A group the database refuses is written again one request at a time, so
 * that a request whose events cannot be stored fails alone. Groups are per client id and
 * environment: a statement names one tenant.
 */
export function createCollectWriter(db: Database, clients: Pick<ClientRepository, 'collectSettings'>) {
  const queues = new Map<string, Queue>();

  async function writeGroup(tenant: Tenant, group: Member[]) {
    const settings = await clients.collectSettings(tenant.clientId).catch((error: unknown) => {
      for (const member of group) member.reject(error);
      return null;
    });
    if (settings === null) return;
    if (settings === undefined) return group.forEach((member) => member.resolve('unknown_client'));

    const origins = settings.collect_origins;
    const kept: [Member, DerivedTouchpoint[]][] = [];
    for (const member of group) {
      if (origins.length > 0 && !origins.includes(member.origin ?? '')) member.resolve('origin_not_allowed');
      else kept.push([member, withSourceMapping(member.visits, member.derived, settings.source_platforms)]);
    }
    const store = (members: typeof kept) =>
      ingest(db, tenant, members.flatMap(([, visits]) => visits), members.flatMap(([member]) => member.links), new Date(), PUBLIC_COLLECTOR);
    try {
      await store(kept);
      for (const [member] of kept) member.resolve('stored');
    } catch (error) {
      // Deleted since its settings were read: its events are dropped, as an unknown client's.
      if (isClientGone(error)) return kept.forEach(([member]) => member.resolve('unknown_client'));
      if (kept.length === 1 || isDatabaseUnavailable(error)) return kept.forEach(([member]) => member.reject(error));
      for (const [member, visits] of kept) {
        await store([[member, visits]]).then(
          () => member.resolve('stored'),
          (alone: unknown) => (isClientGone(alone) ? member.resolve('unknown_client') : member.reject(alone)),
        );
      }
    }
  }

  /**
   * Starts a group of the client's waiting requests at the next turn of the event loop, when it
   * may: once the requests already received are read (the embedded store runs statements on
   * this thread, so a group started at once would never have company).
   */
  function schedule(key: string, queue: Queue) {
    if (queue.starting || queue.writing >= MAX_GROUPS_IN_FLIGHT || queue.pending.length === 0) return;
    queue.starting = true;
    setImmediate(() => {
      queue.starting = false;
      let events = 0;
      const count = queue.pending.findIndex((member) => (events += size(member)) > MAX_GROUP_EVENTS);
      const group = queue.pending.splice(0, Math.max(1, count === -1 ? queue.pending.length : count));
      queue.writing++;
      void writeGroup(queue.tenant, group)
        .catch((error: unknown) => group.forEach((member) => member.reject(error)))
        .finally(() => {
          queue.writing--;
          if (queue.writing === 0 && queue.pending.length === 0) queues.delete(key);
          else schedule(key, queue);
        });
      schedule(key, queue);
    });
  }

  return {
    /**
     * Stores a request's events for `clientId` with those of the requests arriving meanwhile;
     * resolves once they are stored, or dropped (an unknown client, an origin it does not take).
     */
    write(clientId: string, environment: Environment, collected: Collected): Promise<Outcome> {
      return new Promise((resolve, reject) => {
        const key = `${environment}:${clientId}`;
        let queue = queues.get(key);
        if (!queue) {
          queue = { tenant: { clientId, environment, dryRun: false }, pending: [], writing: 0, starting: false };
          queues.set(key, queue);
        }
        queue.pending.push({ ...collected, resolve, reject });
        schedule(key, queue);
      });
    },
  };
}
