#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { createClientRepository, type ClientRepository } from './clients/repository.js';
import { MAX_API_PROCESSES, loadConfig } from './config.js';
import { openDatabase } from './db/index.js';
import { migrate } from './db/migrate.js';
import { serve } from './cluster.js';
import { startWorker } from './server.js';
import { isUuid } from './uuid.js';
import { version } from './version.js';
import { clientNameProblem } from './clients/schema.js';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/** Runs `work` on the configured store (migrated first), then closes it. */
async function withClients<T>(work: (clients: ClientRepository) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig());
  try {
    await migrate(db);
    return await work(createClientRepository(db));
  } finally {
    await db.close();
  }
}

const program = new Command('tributary')
  .version(version)
  .description('Tributary: commerce data ingestion and export. Configured by environment variables (see README).');

program
  .command('serve')
  .description('start the production and UAT APIs')
  .option('--workers <n>', 'API processes sharing the ports (default: WEB_CONCURRENCY, or 1)', (value) => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_API_PROCESSES) {
      throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_API_PROCESSES}`);
    }
    return Number(value);
  })
  .action(async ({ workers }: { workers?: number }) => {
    const config = loadConfig();
    await serve(config, workers ?? config.apiProcesses);
  });

program
  .command('worker')
  .description('run export jobs only (no HTTP), EXPORT_CONCURRENCY at a time')
  .action(async () => {
    await startWorker();
  });

program
  .command('migrate')
  .description('apply pending schema migrations')
  .action(async () => {
    const db = await openDatabase(loadConfig());
    try {
      print(await migrate(db));
    } finally {
      await db.close();
    }
  });

const clients = program.command('clients').description('manage clients');
clients
  .command('create')
  .description('create a client and its first API key (the key is shown only now)')
  .requiredOption('--name <name>', 'client name')
  .action(async ({ name }: { name: string }) => {
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
  .action(async ({ client }: { client: string }) => {
    requireUuid('--client', client);
    const key = await withClients((repo) => repo.createKey(client));
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

function requireUuid(option: string, value: string) {
  if (!isUuid(value)) fail(`${option} must be a UUID, got "${value}"`);
}

function fail(message: string): never {
  process.stderr.write(`${JSON.stringify({ error: message })}\n`);
  process.exit(1);
}

program.parseAsync().catch((error: Error) => fail(error.message));
