import fs from 'node:fs/promises';
import path from 'node:path';
import { createClientRepository } from '../clients/repository.js';
import type { Database } from '../db/index.js';
import { csvRowSelect, writeCsv } from './csv.js';
import type { ExportJob } from './jobs.js';
import { planExport, planRowsSql, rowsPlanOf } from './plan.js';
import { CLIENT_TEXT_COLUMNS, learnWeights, readSlicedRows } from '../attribution/index.js';
import type { ExportRequest } from './schema.js';

export interface ProducerOptions {
  db: Database;
  exportsDir: string;
  /** Rows after which an export continues in another file. */
  rowsPerFile: number;
  /** Connections an export computes its rows on, side by side (slices.ts). */
  connections: number;
}

/** Rows read from the database at a time. */
const BATCH = 1000;

/** Where downloads find an export's files. */
export const exportDir = (exportsDir: string, exportId: string) => path.join(exportsDir, exportId);

/**
 * Computes an export and writes its CSV files in a directory of this attempt's own, which
 * `publish` moves to `<exportsDir>/<export id>/` once the attempt has won (see ExportJobs.finish):
 * a worker that lost its lease without knowing it never writes over the files that stand. The
 * request was validated when the export was created; it is planned again here, in the client's
 * time zone, with relative periods counted from the moment of creation.
 */
export function createExportProducer({ db, exportsDir, rowsPerFile, connections }: ProducerOptions) {
  const clients = createClientRepository(db);
  return async (job: ExportJob, signal: AbortSignal) => {
    const attemptsDir = path.join(exportsDir, '.attempts');
    const attemptDir = path.join(attemptsDir, `${job.export_id}-${job.lease_token}`);
    const discard = () => fs.rm(attemptDir, { recursive: true, force: true });
    try {
      const { files, warn } = await writeExport(job, attemptDir, signal);
      const publish = async () => {
        const dir = exportDir(exportsDir, job.export_id);
        await fs.rm(dir, { recursive: true, force: true }); // an attempt that published, then lost its commit
        await fs.rename(attemptDir, dir);
        // What earlier attempts of this export left: a crashed worker's, or a late one's still being
        // written. Best effort: a leftover must not fail the attempt that won.
        const earlier = (await fs.readdir(attemptsDir)).filter((name) => name.startsWith(`${job.export_id}-`));
        await Promise.all(earlier.map((name) => fs.rm(path.join(attemptsDir, name), { recursive: true, force: true }).catch(() => {})));
      };
      return { files, warn, publish, discard };
    } catch (error) {
      await discard().catch(() => {}); // the error that matters is the first
      throw error;
    }
  };

  async function writeExport(job: ExportJob, dir: string, signal: AbortSignal) {
    const planned = planExport(job.request as unknown as ExportRequest, await clients.timeZone(job.client_id), new Date(job.created_at));
    // A stored request was planned without problems when it was created; this is never expected.
    if ('problems' in planned) throw new Error(`The export request cannot be carried out: ${planned.problems.map((problem) => problem.msg).join('; ')}`);
    const tenant = { clientId: job.client_id, environment: job.environment, dryRun: false };
    const plan = { ...planned.plan, learnt: await learnWeights(db, tenant, planned.plan, signal) };
    const { columns } = planRowsSql(tenant, plan);
    const select = csvRowSelect(
      columns.map((column) => column.name),
      { clientTextColumns: CLIENT_TEXT_COLUMNS, escapeFormulas: plan.escapeFormulas },
      'currency',
    );
    const { files, distinct: currencies } = await writeCsv(
      (onBatch) => readSlicedRows(db, tenant, rowsPlanOf(plan), { connections, batchSize: BATCH, select, signal }, onBatch),
      { dir, baseName: plan.fileBaseName, header: columns.map((column) => column.header), rowsPerFile },
      signal,
    );
    const warnings = {
      ...(currencies.length > 1 && {
        currencies: `Amounts in ${currencies.sort().join(', ')} are in rows of their own: amounts in different currencies are never added together.`,
      }),
      ...(plan.learnt && plan.learnt.warnings.length > 0 && { attribution_models: plan.learnt.warnings.join('; ') }),
    };
    const warn = Object.keys(warnings).length > 0 ? warnings : undefined;
    return { files, warn };
  }
}
