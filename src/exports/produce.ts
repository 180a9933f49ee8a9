import fs from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/index.js';
import { METRICS, isOrderMetric } from './catalog.js';
import { writeCsv } from './csv.js';
import type { ExportJob } from './jobs.js';
import { resolvePeriod } from './period.js';
import type { ExportRequest } from './schema.js';
import { CLIENT_TEXT_COLUMNS, exportRowsSql, type Granularity, type Level } from './rows.js';

export interface ProducerOptions {
  db: Database;
  exportsDir: string;
  /** Rows after which an export continues in another file. */
  rowsPerFile: number;
}

/** Where downloads find an export's files. */
export const exportDir = (exportsDir: string, exportId: string) => path.join(exportsDir, exportId);

/**
 * Computes an export and writes its CSV files in a directory of this attempt's own, which
 * `publish` moves to `<exportsDir>/<export id>/` once the attempt has won (see ExportJobs.finish):
 * a worker that lost its lease without knowing it never writes over the files that stand. The
 * request was validated, with its defaults filled in, when the export was created; relative
 * periods are counted from that moment.
 */
export function createExportProducer({ db, exportsDir, rowsPerFile }: ProducerOptions) {
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
    const request = job.request as unknown as ExportRequest;
    const [client] = await db.query<{ time_zone: string }>('SELECT time_zone FROM clients WHERE client_id = $1', [job.client_id]);
    const timeZone = client!.time_zone;
    const options = request.options ?? {};
    const level: Level | null =
      options.export_aggregation === 'DATE' ? null : options.aggregate_data ? 'platform' : (request.level as Level);

    const { sql, params, columns } = exportRowsSql({
      tenant: { clientId: job.client_id, environment: job.environment, dryRun: false },
      timeZone,
      period: resolvePeriod(request.period_type!, request.period_options, timeZone, new Date(job.created_at)),
      granularity: request.time_granularity as Granularity,
      level,
      breakdowns: request.breakdowns ?? [],
      includeIds: options.include_ids ?? false,
      includeKind: options.include_kind_and_platform ?? false,
      removeZeroSpend: options.remove_zero_spend ?? false,
      withOrders: request.metrics.some((metric) => isOrderMetric(metric.id)),
    });
    const dimensions = columns.slice(0, columns.indexOf('currency') + 1);
    const labelOf = (id: string, label?: string) => label ?? METRICS.find((metric) => metric.id === id)!.label;
    const { files, distinct: currencies } = await db.transaction((tx) =>
      writeCsv(
        tx,
        sql,
        params,
        {
          dir,
          baseName: request.export_file_name ?? `export-${job.created_at.slice(0, 10)}`,
          header: [...dimensions, ...request.metrics.map((metric) => labelOf(metric.id, metric.label))],
          columns: [...dimensions, ...request.metrics.map((metric) => metric.id)],
          // Unset when the request had no options, or was stored before the option existed: on, as by default.
          spreadsheetTextColumns: (options.escape_formulas ?? true) ? CLIENT_TEXT_COLUMNS : [],
          rowsPerFile,
          distinctOf: 'currency',
        },
        signal,
      ),
    );
    const warn =
      currencies.length > 1
        ? { currencies: `Amounts in ${currencies.sort().join(', ')} are in rows of their own: amounts in different currencies are never added together.` }
        : undefined;
    return { files, warn };
  }
}
