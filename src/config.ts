import path from 'node:path';

export interface Config {
  host: string;
  port: number;
  uatPort: number;
  /** PostgreSQL connection string; when absent the embedded PGlite store in `dataDir` is used. */
  databaseUrl: string | undefined;
  /** Connections each process keeps open to PostgreSQL. */
  databasePoolSize: number;
  dataDir: string;
  /** Enables the admin API when set. */
  adminToken: string | undefined;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  logLevel: string;
}

export class ConfigError extends Error {}

const MIB = 1024 * 1024;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR || './data');
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 8080),
    uatPort: integer(env, 'UAT_PORT', 8081),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10),
    dataDir,
    adminToken: env.ADMIN_TOKEN || undefined,
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 32 * MIB),
    logLevel: env.LOG_LEVEL || 'info',
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  }
  return value;
}
