import { randomUUID } from 'node:crypto';
import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';

export type ExportStatus = 'PENDING' | 'SUCCESS' | 'ERROR';

export interface ExportJob {
  client_id: string;
  environment: Tenant['environment'];
  export_id: string;
  request: Record<string, unknown>;
  status: ExportStatus;
  files: string[];
  warn: Record<string, unknown>;
  attempts: number;
  /** Set by the claim that handed the job to a worker: proof that it still holds the job. */
  lease_token: string | null;
  /** ISO-8601, UTC. */
  created_at: string;
  finished_at: string | null;
  /** When the download links of a SUCCESS job stop working: fixed as it finishes. ISO-8601, UTC. */
  links_expire_at: string | null;
  /** When its files were deleted, its links having expired (src/exports/retention.ts). ISO-8601, UTC. */
  files_deleted_at: string | null;
}

/** A successful export whose files a sweep has leased, to delete them. */
export type ExpiredExport = Pick<ExportJob, 'client_id' | 'environment' | 'export_id' | 'lease_token'>;

const JOB = `client_id, environment, export_id, request, status, files, warn, attempts, lease_token,
  utc_iso(created_at) AS created_at, utc_iso(finished_at) AS finished_at, utc_iso(links_expire_at) AS links_expire_at,
  utc_iso(files_deleted_at) AS files_deleted_at`;
/** The job, as long as the lease of `job` is still the one it holds. */
const HELD = 'client_id = $1 AND environment = $2 AND export_id = $3 AND lease_token = $4 AND status = \'PENDING\'';
const held = (job: ExportJob) => [job.client_id, job.environment, job.export_id, job.lease_token];
/** A pending job whose lease is free: never taken, handed back, or run out (its worker died). */
const FREE = '(lease_expires_at IS NULL OR lease_expires_at < now())';
/** A pending job whose lease has not run out: it counts as running. */
const RUNNING = 'lease_expires_at >= now()';
/** The channel the creation of a job is announced on, as it commits. */
const CREATED = 'export_created';
/** Clients a claim tries, best placed first, before it leaves the rest to the next poll. */
const CANDIDATE_CLIENTS = 5;

export type ExportJobs = ReturnType<typeof createExportJobs>;

/**
 * The export job store: what the API creates and reads, and what workers claim and finish. The
 * download links of a job that succeeds work for `linkTtlSeconds` from the moment it finished.
 */
export function createExportJobs(db: Database, { linkTtlSeconds }: { linkTtlSeconds: number }) {
  /**
   * Leases the client's oldest free job if fewer than `maxRunning` of its jobs are running.
   * The claims of one client take turns on a lock of its row, so each counts the leases the
   * claims before it committed: two at once cannot both take the client's last place. A row
   * lock rather than an advisory lock: it stays on the client's shard under Citus, with the
   * client's jobs, and needs no key space of its own; FOR NO KEY UPDATE lets the foreign-key
   * checks of the client's writes through. SKIP LOCKED passes over a job a late worker is
   * renewing or finishing.
   */
  function claimOf(clientId: string, leaseSeconds: number, maxRunning: number, excluding: readonly string[]) {
    return db.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM clients WHERE client_id = $1 FOR NO KEY UPDATE', [clientId]);
      const [job] = await tx.query<ExportJob>(
        `UPDATE exports
            SET attempts = attempts + 1, lease_token = $2, lease_expires_at = now() + make_interval(secs => $3)
          WHERE client_id = $1 AND (environment, export_id) = (
                 SELECT environment, export_id FROM exports
                  WHERE client_id = $1 AND status = 'PENDING' AND ${FREE} AND export_id <> ALL ($5::uuid[])
                    AND (SELECT count(*) FROM exports WHERE client_id = $1 AND status = 'PENDING' AND ${RUNNING}) < $4
                  ORDER BY created_at
                  LIMIT 1
                    FOR UPDATE SKIP LOCKED)
         RETURNING ${JOB}`,
        [clientId, randomUUID(), leaseSeconds, maxRunning, excluding],
      );
      return job;
    });
  }

  return {
    /** Creates a pending job, and tells every worker listening (see onCreated) once it is committed. */
    create(tenant: Tenant, exportId: string, request: object, warn: object): Promise<ExportJob> {
      return db.transaction(async (tx) => {
        const [job] = await tx.query<ExportJob>(
          `INSERT INTO exports (client_id, environment, export_id, request, warn)
           VALUES ($1, $2, $3, $4, $5) RETURNING ${JOB}`,
          [tenant.clientId, tenant.environment, exportId, JSON.stringify(request), JSON.stringify(warn)],
        );
        await tx.query(`NOTIFY ${CREATED}`);
        return job!;
      });
    },

    /** Calls `onCreated` whenever a job is created, by any process on the database (see Database.listen). */
    onCreated: (onCreated: () => void) => db.listen(CREATED, onCreated),

    async find(tenant: Tenant, exportId: string): Promise<ExportJob | undefined> {
      const [job] = await db.query<ExportJob>(
        `SELECT ${JOB} FROM exports WHERE client_id = $1 AND environment = $2 AND export_id = $3`,
        [tenant.clientId, tenant.environment, exportId],
      );
      return job;
    },

    /**
     * Leases a pending job whose lease is free, other than those in `excluding`, for
     * `leaseSeconds` under a new token. The job is the oldest of a client with fewer than
     * `maxRunningPerClient` jobs running (its production and UAT exports together): of the
     * client with the fewest running, then of the one whose last export finished longest ago
     * (never, first). So one client's queue never holds up another's: a client that queued
     * many exports waits its turn after each. Finding the clients locks nothing and may read
     * every client's jobs; the claim itself is about one client (see claimOf).
     */
    async claim(leaseSeconds: number, maxRunningPerClient: number, excluding: readonly string[] = []): Promise<ExportJob | undefined> {
      const candidates = await db.query<{ client_id: string }>(
        `SELECT queued.client_id
           FROM (SELECT client_id,
                        count(*) FILTER (WHERE ${RUNNING}) AS running,
                        min(created_at) FILTER (WHERE ${FREE} AND export_id <> ALL ($2::uuid[])) AS oldest_free
                   FROM exports
                  WHERE status = 'PENDING'
                  GROUP BY client_id) AS queued
           LEFT JOIN LATERAL (SELECT finished_at FROM exports AS done
                               WHERE done.client_id = queued.client_id AND finished_at IS NOT NULL
                               ORDER BY finished_at DESC
                               LIMIT 1) AS last ON true
          WHERE queued.oldest_free IS NOT NULL AND queued.running < $1
          ORDER BY queued.running, last.finished_at NULLS FIRST, queued.oldest_free
          LIMIT $3`,
        [maxRunningPerClient, excluding, CANDIDATE_CLIENTS],
      );
      for (const { client_id } of candidates) {
        const job = await claimOf(client_id, leaseSeconds, maxRunningPerClient, excluding);
        if (job) return job;
      }
      return undefined;
    },

    /**
     * Leases up to `limit` successful exports whose links expired more than `graceSeconds` ago and
     * whose files are still there, for `leaseSeconds`, to delete their files. Finding them reads
     * the index of such exports across clients and locks nothing; each lease is one statement
     * about one export, which passes over an export another sweep holds (its lease not run out).
     */
    async leaseExpiredFiles(graceSeconds: number, leaseSeconds: number, limit: number): Promise<ExpiredExport[]> {
      const candidates = await db.query<ExpiredExport>(
        `SELECT client_id, environment, export_id FROM exports
          WHERE status = 'SUCCESS' AND files_deleted_at IS NULL AND links_expire_at < now() - make_interval(secs => $1) AND ${FREE}
          ORDER BY links_expire_at
          LIMIT $2`,
        [graceSeconds, limit],
      );
      const leased: ExpiredExport[] = [];
      for (const { client_id, environment, export_id } of candidates) {
        const [row] = await db.query<ExpiredExport>(
          `UPDATE exports SET lease_token = $4, lease_expires_at = now() + make_interval(secs => $5)
            WHERE client_id = $1 AND environment = $2 AND export_id = $3 AND status = 'SUCCESS' AND files_deleted_at IS NULL AND ${FREE}
            RETURNING client_id, environment, export_id, lease_token`,
          [client_id, environment, export_id, randomUUID(), leaseSeconds],
        );
        if (row) leased.push(row);
      }
      return leased;
    },

    /** Records that the files of a leased export are deleted, if the lease is still held; false when it was lost. */
    async filesDeleted(expired: ExpiredExport): Promise<boolean> {
      const rows = await db.query(
        `UPDATE exports SET files_deleted_at = now(), lease_token = NULL, lease_expires_at = NULL
          WHERE client_id = $1 AND environment = $2 AND export_id = $3 AND lease_token = $4 AND status = 'SUCCESS'
          RETURNING 1`,
        [expired.client_id, expired.environment, expired.export_id, expired.lease_token],
      );
      return rows.length > 0;
    },

    /** Extends the lease of a job being worked on; false when the lease was lost (it ran out and another worker took the job). */
    async renew(job: ExportJob, leaseSeconds: number): Promise<boolean> {
      const rows = await db.query(
        `UPDATE exports SET lease_expires_at = now() + make_interval(secs => $5) WHERE ${HELD} RETURNING 1`,
        [...held(job), leaseSeconds],
      );
      return rows.length > 0;
    },

    /** Hands a job back unfinished (its worker is stopping): another may claim it at once. */
    async release(job: ExportJob): Promise<void> {
      await db.query(
        `UPDATE exports SET lease_token = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0) WHERE ${HELD}`,
        held(job),
      );
    },

    /**
     * Finishes a job, if its lease is still held: so a job finishes once, by its last claimant.
     * `publish` (putting the files where downloads find them) runs before the commit, under the
     * row's lock: a former holder finishing at the same moment waits, then finds its lease gone.
     * Its links' expiry is counted from the same instant as finished_at, on the database's clock
     * like every other time of a job; a failed job has none.
     */
    finish(
      job: ExportJob,
      outcome: { status: 'SUCCESS'; files: string[]; warn?: object } | { status: 'ERROR'; reason: string },
      publish?: () => Promise<void>,
    ): Promise<boolean> {
      return db.transaction(async (tx) => {
        const rows = await tx.query(
          `UPDATE exports
              SET status = $5, files = $6, warn = warn || $7::jsonb, finished_at = now(),
                  links_expire_at = now() + make_interval(secs => $8), lease_token = NULL, lease_expires_at = NULL
            WHERE ${HELD}
            RETURNING 1`,
          [
            ...held(job),
            outcome.status,
            outcome.status === 'SUCCESS' ? outcome.files : [],
            JSON.stringify(outcome.status === 'ERROR' ? { error: outcome.reason } : (outcome.warn ?? {})),
            outcome.status === 'SUCCESS' ? linkTtlSeconds : null,
          ],
        );
        if (rows.length === 0) return false;
        await publish?.();
        return true;
      });
    },
  };
}

/** What requests do with export jobs: create one (what creating returns is not read), and read one back. */
export interface ExportRequests {
  create(tenant: Tenant, exportId: string, request: object, warn: object): Promise<unknown>;
  find(tenant: Tenant, exportId: string): Promise<ExportJob | undefined>;
}

/** The exports of the UAT test credentials: created without a job, so none is ever found. */
export const standInExportRequests: ExportRequests = {
  create: async () => {},
  find: async () => undefined,
};
