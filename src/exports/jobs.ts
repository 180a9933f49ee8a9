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
  /** ISO-8601, UTC. */
  created_at: string;
  finished_at: string | null;
}

const JOB = `client_id, environment, export_id, request, status, files, warn, attempts,
  utc_iso(created_at) AS created_at, utc_iso(finished_at) AS finished_at`;

export type ExportJobs = ReturnType<typeof createExportJobs>;

/** The export job store: what the API creates and reads, and what workers claim and finish. */
export function createExportJobs(db: Database) {
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
     * worker died) and leases it for `leaseSeconds`. SKIP LOCKED lets any number of workers
     * claim at once without waiting on, or taking, each other's job.
     */
    async claim(leaseSeconds: number): Promise<ExportJob | undefined> {
      const [job] = await db.query<ExportJob>(
        `UPDATE exports SET attempts = attempts + 1, lease_expires_at = now() + make_interval(secs => $1)
          WHERE (client_id, environment, export_id) = (
                 SELECT client_id, environment, export_id FROM exports
                  WHERE status = 'PENDING' AND (lease_expires_at IS NULL OR lease_expires_at < now())
                  ORDER BY created_at
                  LIMIT 1
                    FOR UPDATE SKIP LOCKED)
         RETURNING ${JOB}`,
        [leaseSeconds],
      );
      return job;
    },

    /** Keeps the lease of a job still being worked on. */
    async renew(job: ExportJob, leaseSeconds: number): Promise<void> {
      await db.query(
        `UPDATE exports SET lease_expires_at = now() + make_interval(secs => $4)
          WHERE client_id = $1 AND environment = $2 AND export_id = $3 AND status = 'PENDING'`,
        [job.client_id, job.environment, job.export_id, leaseSeconds],
      );
    },

    /** Hands a job back unfinished (its worker is stopping): another may claim it at once. */
    async release(job: ExportJob): Promise<void> {
      await db.query(
        `UPDATE exports SET lease_expires_at = NULL, attempts = greatest(attempts - 1, 0)
          WHERE client_id = $1 AND environment = $2 AND export_id = $3 AND status = 'PENDING'`,
        [job.client_id, job.environment, job.export_id],
      );
    },

    /** Finishes a job; only a job still pending is finished, so a job finishes once. */
    async finish(job: ExportJob, outcome: { status: 'SUCCESS'; files: string[] } | { status: 'ERROR'; reason: string }) {
      const rows = await db.query(
        `UPDATE exports
            SET status = $4, files = $5, warn = warn || $6::jsonb, finished_at = now(), lease_expires_at = NULL
          WHERE client_id = $1 AND environment = $2 AND export_id = $3 AND status = 'PENDING'
          RETURNING 1`,
        [
          job.client_id,
          job.environment,
          job.export_id,
          outcome.status,
          outcome.status === 'SUCCESS' ? outcome.files : [],
          JSON.stringify(outcome.status === 'ERROR' ? { error: outcome.reason } : {}),
        ],
      );
      return rows.length > 0;
    },
  };
}
