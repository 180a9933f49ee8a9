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
}

const JOB = `client_id, environment, export_id, request, status, files, warn, attempts, lease_token,
  utc_iso(created_at) AS created_at, utc_iso(finished_at) AS finished_at, utc_iso(links_expire_at) AS links_expire_at`;
/** The job, as long as the lease of `job` is still the one it holds. */
const HELD = 'client_id = $1 AND environment = $2 AND export_id = $3 AND lease_token = $4 AND status = \'PENDING\'';
const held = (job: ExportJob) => [job.client_id, job.environment, job.export_id, job.lease_token];

export type ExportJobs = ReturnType<typeof createExportJobs>;

/**
 * The export job store: what the API creates and reads, and what workers claim and finish. The
 * download links of a job that succeeds work for `linkTtlSeconds` from the moment it finished.
 */
export function createExportJobs(db: Database, { linkTtlSeconds }: { linkTtlSeconds: number }) {
  return {
    async create(tenant: Tenant, exportId: string, request: object, warn: object): Promise<ExportJob> {
      const [job] = await db.query<ExportJob>(
        `INSERT INTO exports (client_id, environment, export_id, request, warn)
         VALUES ($1, $2, $3, $4, $5) RETURNING ${JOB}`,
        [tenant.clientId, tenant.environment, exportId, JSON.stringify(request), JSON.stringify(warn)],
      );
      return job!;
    },

    async find(tenant: Tenant, exportId: string): Promise<ExportJob | undefined> {
      const [job] = await db.query<ExportJob>(
        `SELECT ${JOB} FROM exports WHERE client_id = $1 AND environment = $2 AND export_id = $3`,
        [tenant.clientId, tenant.environment, exportId],
      );
      return job;
    },

    /**
     * Takes the oldest pending job whose lease is free (never taken, or expired because its
     * worker died), other than those in `excluding`, and leases it for `leaseSeconds` under a
     * new token. SKIP LOCKED lets any number of workers claim at once without waiting on, or
     * taking, each other's job.
     */
    async claim(leaseSeconds: number, excluding: readonly string[] = []): Promise<ExportJob | undefined> {
      const [job] = await db.query<ExportJob>(
        `UPDATE exports
            SET attempts = attempts + 1, lease_token = gen_random_uuid(), lease_expires_at = now() + make_interval(secs => $1)
          WHERE (client_id, environment, export_id) = (
                 SELECT client_id, environment, export_id FROM exports
                  WHERE status = 'PENDING' AND (lease_expires_at IS NULL OR lease_expires_at < now())
                    AND export_id <> ALL ($2::uuid[])
                  ORDER BY created_at
                  LIMIT 1
                    FOR UPDATE SKIP LOCKED)
         RETURNING ${JOB}`,
        [leaseSeconds, excluding],
      );
      return job;
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
