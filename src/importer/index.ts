/** `tributary import <kind> <file>`: a file's records into the API, through the typed client. */
import { Tributary } from '../client/index.js';
import { DEFAULT_PORT, DEFAULT_UAT_PORT } from '../config.js';
import { MAX_ORDERS_PER_REQUEST, MAX_RATES_PER_REQUEST, MAX_RECORDS_PER_REQUEST, MAX_TOUCHPOINTS_PER_REQUEST } from '../request-limits.js';
import { createProgress } from './progress.js';
import { runImport, type Summary } from './run.js';
import { openSource, type Kind, type Target } from './sources.js';

/** The public UAT test credentials: every request validated and answered, nothing stored. */
const TEST_CREDENTIALS = { apiKey: 'None', clientId: 'test' };

const BATCH_LIMITS: Record<Target, number> = {
  orders: MAX_ORDERS_PER_REQUEST,
  spend_hourly: MAX_RECORDS_PER_REQUEST,
  spend_daily: MAX_RECORDS_PER_REQUEST,
  touchpoints: MAX_TOUCHPOINTS_PER_REQUEST,
  rates: MAX_RATES_PER_REQUEST,
};

export interface ImportCommandOptions {
  url: string;
  /** Where a dry run sends: the UAT API (found from `url` when not given). */
  uatUrl?: string;
  apiKey?: string;
  clientId?: string;
  concurrency: number;
  /** Records a request; at most (and by default) the endpoint's limit. */
  batchSize?: number;
  rejectFile?: string;
  checkpoint?: string;
  resume: boolean;
  dryRun: boolean;
  currency?: string;
}

/**
 * Where a dry run sends: the test credentials work on the UAT port only. The UAT URL given, else
 * `url` when it is on the default UAT port, else `url` on the default UAT port when it is on the
 * default production port; any other URL says nothing of where its UAT API is.
 */
export function dryRunUrl(url: string, uatUrl: string | undefined): string {
  if (uatUrl) return uatUrl;
  const address = new URL(url);
  if (address.port === String(DEFAULT_UAT_PORT)) return url;
  if (address.port !== String(DEFAULT_PORT)) {
    throw new Error(
      `--dry-run sends to the UAT API (the test credentials work there only), and ${url} is on neither default port (${DEFAULT_PORT} production, ${DEFAULT_UAT_PORT} UAT): give the UAT API's URL with --uat-url (or TRIBUTARY_UAT_URL)`,
    );
  }
  address.port = String(DEFAULT_UAT_PORT);
  return address.href.replace(/\/$/, '');
}

export async function importFile(kind: Kind, file: string, options: ImportCommandOptions): Promise<Summary & { format: string; target: string; reject_file: string }> {
  const credentials = options.dryRun ? TEST_CREDENTIALS : { apiKey: options.apiKey, clientId: options.clientId };
  if (!credentials.apiKey || !credentials.clientId) throw new Error('Give --api-key and --client-id (or TRIBUTARY_API_KEY and TRIBUTARY_CLIENT_ID), or --dry-run');
  const url = options.dryRun ? dryRunUrl(options.url, options.uatUrl) : options.url;
  process.stderr.write(`Importing ${file} into ${url}${options.dryRun ? ' as a dry run: validated with the UAT test credentials, nothing stored' : ''}\n`);
  const client = new Tributary({ url, apiKey: credentials.apiKey, clientId: credentials.clientId });
  const source = await openSource(kind, file, { currency: options.currency });
  for (const notice of source.notices ?? []) process.stderr.write(`${notice}\n`);
  const rejectFile = options.rejectFile ?? `${file}.rejects.ndjson`;
  const controller = new AbortController();
  const stop = () => controller.abort(new Error('Interrupted: run again with --resume to go on'));
  process.once('SIGINT', stop);
  try {
    const summary = await runImport({
      client,
      source,
      file,
      concurrency: options.concurrency,
      batchSize: Math.min(options.batchSize ?? Infinity, BATCH_LIMITS[source.target]),
      rejectFile,
      // A dry run stores nothing, so there is nothing to resume from.
      checkpointFile: options.dryRun ? undefined : (options.checkpoint ?? `${file}.checkpoint.json`),
      resume: options.resume,
      progress: createProgress(source.size),
      signal: controller.signal,
    });
    return { format: source.format, target: source.target, ...summary, reject_file: rejectFile };
  } finally {
    process.off('SIGINT', stop);
  }
}
