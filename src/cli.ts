#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { KEY_SCOPES, type KeyScope } from './clients/api-keys.js';
import type { ClientRepository } from './clients/repository.js';
import type { Database } from './db/index.js';
import type { MigrationResult } from './db/migrate.js';
import { DEFAULT_PORT, DEFAULT_UAT_PORT, MAX_API_PROCESSES, loadConfig } from './config.js';
import path from 'node:path';
import v8 from 'node:v8';
import { isUuid } from './uuid.js';
import { version } from './version.js';
import { importFile } from './importer/index.js';
import { KINDS, type Kind } from './importer/sources.js';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

// The stores' modules (PGlite, pg) and the schemas (TypeBox) are loaded by the commands that use
// them only, like the server's: `import` runs without them, some 25 MB less.

/** Runs `work` on the configured store once migrated (with what the migration applied), then closes it. */
async function withStore<T>(work: (db: Database, applied: MigrationResult) => Promise<T>): Promise<T> {
  const { openMigratedDatabase } = await import('./db/index.js');
  const { db, applied } = await openMigratedDatabase(loadConfig());
  try {
    return await work(db, { applied });
  } finally {
    await db.close();
  }
}

async function withClients<T>(work: (clients: ClientRepository) => Promise<T>): Promise<T> {
  const { createClientRepository } = await import('./clients/repository.js');
  return withStore((db) => work(createClientRepository(db)));
}

const wholeNumber = (min: number, max: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
  return Number(value);
};

const program = new Command('tributary')
  .version(version)
  .description('Tributary: commerce data ingestion and export. Configured by environment variables (see docs/configuration.md).');

program
  .command('serve')
  .description('start the production and UAT APIs')
  .option('--workers <n>', 'API processes sharing the ports (default: WEB_CONCURRENCY, or 1)', wholeNumber(1, MAX_API_PROCESSES))
  .action(async ({ workers }: { workers?: number }) => {
    const config = loadConfig();
    // Loaded by the commands that run the server only: the importer's memory stays its own.
    const { serve } = await import('./cluster.js');
    await serve(config, workers ?? config.apiProcesses);
  });

program
  .command('worker')
  .description('run export jobs only (no HTTP), EXPORT_CONCURRENCY at a time')
  .action(async () => {
    const { startWorker } = await import('./server.js');
    await startWorker();
  });

program
  .command('migrate')
  .description('apply pending schema migrations')
  .action(async () => {
    print(await withStore(async (_db, applied) => applied));
  });

/** The embedded store's directory; PostgreSQL is backed up with its own tools. */
function embeddedStoreDir(command: string): string {
  const config = loadConfig();
  if (config.databaseUrl) {
    fail(`tributary ${command} is for the embedded store; with PostgreSQL (DATABASE_URL) use pg_dump and pg_restore (docs/operations.md, "Backup and restore")`);
  }
  return path.join(config.dataDir, 'pglite');
}

program
  .command('backup')
  .description('copy the embedded store into <file> (a gzipped tarball); the server must be stopped')
  .argument('<file>', 'where the backup is written (replaced if it exists)')
  .action(async (file: string) => {
    const { backupEmbeddedStore } = await import('./db/pglite-backup.js');
    print(await backupEmbeddedStore(embeddedStoreDir('backup'), file));
  });

program
  .command('restore')
  .description('make the embedded store the one backed up in <file>; the server must be stopped')
  .argument('<file>', 'a file written by tributary backup')
  .option('--replace', 'replace the store DATA_DIR holds (its data is lost)', false)
  .action(async (file: string, { replace }: { replace: boolean }) => {
    const { restoreEmbeddedStore } = await import('./db/pglite-backup.js');
    print(await restoreEmbeddedStore(embeddedStoreDir('restore'), file, { replace }));
  });

const clients = program.command('clients').description('manage clients');
clients
  .command('create')
  .description('create a client and its first API key (the key is shown only now)')
  .requiredOption('--name <name>', 'client name')
  .action(async ({ name }: { name: string }) => {
    const { clientNameProblem } = await import('./clients/schema.js');
    const problem = clientNameProblem(name);
    if (problem) fail(problem);
    print(await withClients((repo) => repo.create(name)));
  });
clients
  .command('list')
  .description('list clients')
  .action(async () => {
    print(await withClients((repo) => repo.list()));
  });

const keys = program.command('keys').description('manage API keys');
keys
  .command('create')
  .description('issue another API key for a client (shown only now)')
  .requiredOption('--client <client_id>', 'client id')
  .option('--scope <scope>', `${KEY_SCOPES.join(' or ')}; read: reports, exports and the dashboard, nothing that writes`, 'write')
  .action(async ({ client, scope }: { client: string; scope: KeyScope }) => {
    requireUuid('--client', client);
    if (!KEY_SCOPES.includes(scope)) fail(`--scope must be one of ${KEY_SCOPES.join(', ')}`);
    const key = await withClients((repo) => repo.createKey(client, scope));
    if (!key) fail(`no client ${client}`);
    print({ client_id: client, ...key });
  });
keys
  .command('revoke')
  .description('revoke an API key; it stops working at once')
  .requiredOption('--client <client_id>', 'client id')
  .requiredOption('--key <key_id>', 'key id')
  .action(async ({ client, key }: { client: string; key: string }) => {
    requireUuid('--client', client);
    requireUuid('--key', key);
    if (!(await withClients((repo) => repo.revokeKey(client, key)))) fail(`client ${client} has no key ${key}`);
    print({ client_id: client, key_id: key, revoked: true });
  });

program
  .command('demo')
  .description(
    'create a new client, "Demo shop …", filled with a sample shop: a year of orders, hourly ad spend on three platforms, ' +
      'visits and identity links, ending now; print its client_id, api_key, read_api_key and the dashboard\'s URL ' +
      '(start the server, npm start, to open it). On the embedded store the server must be stopped (see docs/operations.md)',
  )
  .option('--days <n>', 'days of trading, ending today (fewer: a smaller, faster shop)', wholeNumber(1, 730), 365)
  .option('--seed <n>', 'seed of the shop: the same seed and moment make the same shop', wholeNumber(0, 2 ** 32 - 1), 1)
  .action(async ({ days, seed }: { days: number; seed: number }) => {
    const config = loadConfig();
    const { runDemo } = await import('./demo/run.js');
    // Creating the embedded store takes a while the first time: say what is going on meanwhile.
    process.stderr.write(config.databaseUrl ? 'Opening the PostgreSQL store…\n' : `Opening the embedded store in ${config.dataDir}…\n`);
    const result = await withStore((db) => runDemo(db, config, { days, seed })).catch(async (error: unknown) => {
      // The embedded store is one process's (src/db/pglite.ts): the demo does not wait for it.
      const { DataDirInUseError } = await import('./db/pglite.js');
      if (!(error instanceof DataDirInUseError)) throw error;
      return fail(
        `The embedded store in ${config.dataDir} is in use by a running server (process ${error.holder || 'unknown'}): ` +
          'stop it, run the demo, start it again. With PostgreSQL (DATABASE_URL) the demo runs beside the server',
      );
    });
    // The last line, and the only one on stdout: a program reads it.
    process.stdout.write(`${JSON.stringify(result)}\n`);
  });

program
  .command('import')
  .description(`send a file's records to a running API: ${KINDS.join(', ')} (see docs/importing.md)`)
  .argument('<kind>', KINDS.join(' | '), (value) => {
    if (!(KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${KINDS.join(', ')}`);
    return value as Kind;
  })
  .argument('<file>', "NDJSON, a JSON array, or CSV (Shopify orders export; Meta Ads Manager or Google Ads daily campaign report; the ECB's reference rates)")
  .option('--url <url>', 'the API (env TRIBUTARY_URL)', process.env.TRIBUTARY_URL ?? 'http://127.0.0.1:8080')
  .option('--uat-url <url>', `the UAT API, for --dry-run (env TRIBUTARY_UAT_URL; default: --url on port ${DEFAULT_UAT_PORT} when it is on ${DEFAULT_PORT} or ${DEFAULT_UAT_PORT})`, process.env.TRIBUTARY_UAT_URL)
  .option('--api-key <key>', 'API key (env TRIBUTARY_API_KEY)', process.env.TRIBUTARY_API_KEY)
  .option('--client-id <id>', 'client id (env TRIBUTARY_CLIENT_ID)', process.env.TRIBUTARY_CLIENT_ID)
  .option('--concurrency <n>', 'batches sent at once', wholeNumber(1, 64), 4)
  .option('--batch-size <n>', "records a request (default and most: the endpoint's limit)", wholeNumber(1, 1000))
  .option('--reject-file <path>', 'where refused records go, with the reasons (default <file>.rejects.ndjson)')
  .option('--checkpoint <path>', 'where acknowledged batches are recorded (default <file>.checkpoint.json)')
  .option('--resume', 'go on from the checkpoint: batches it holds are not sent again', false)
  .option('--dry-run', 'validate with the UAT test credentials, on the UAT API (see --uat-url): nothing is stored', false)
  .option('--currency <code>', 'currency of an ad report that names none')
  .action(async (kind: Kind, file: string, options: Parameters<typeof importFile>[2]) => {
    // fetch parses answers with llhttp compiled to WebAssembly, and V8's optimising compiler
    // takes some 30 MB while it compiles that, more than the import's batches hold; its baseline
    // compiler parses the importer's small answers as fast (docs/decisions.md).
    v8.setFlagsFromString('--liftoff-only');
    print(await importFile(kind, file, options));
  });

function requireUuid(option: string, value: string) {
  if (!isUuid(value)) fail(`${option} must be a UUID, got "${value}"`);
}

function fail(message: string): never {
  process.stderr.write(`${JSON.stringify({ error: message })}\n`);
  process.exit(1);
}

program.parseAsync().catch((error: Error) => fail(error.message));
