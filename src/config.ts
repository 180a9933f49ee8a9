import net from 'node:net';
import path from 'node:path';

export interface Config {
  host: string;
  port: number;
  uatPort: number;
  /** API processes `tributary serve` runs on its ports (node:cluster); more than one needs PostgreSQL. */
  apiProcesses: number;
  /** PostgreSQL connection string; when absent the embedded PGlite store in `dataDir` is used. */
  databaseUrl: string | undefined;
  /** Connections each process keeps open to PostgreSQL. */
  databasePoolSize: number;
  /** Reports and explanations of one client that may run at once in an API process (src/db/tenant-share.ts). */
  tenantReadConnections: number;
  /** Longest time one statement may run on PostgreSQL (an export's included); the database stops it then. */
  databaseQueryTimeoutMs: number;
  /** Longest wait of a report for its client's kept attribution while other work holds it. */
  reportLockWaitMs: number;
  dataDir: string;
  /** Enables the admin API when set; at least 32 characters, so that guessing it is hopeless. */
  adminToken: string | undefined;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  logLevel: string;
  /** Where export files are written. */
  exportsDir: string;
  /** The address export download links start with. */
  publicUrl: string;
  /** Key of the download links' signatures; when unset, one is generated and kept in the store. */
  exportSigningSecret: string | undefined;
  /** Export jobs each process runs at once (0: this process runs none). */
  exportConcurrency: number;
  /** Connections each running export computes its rows on, side by side (PostgreSQL only). */
  exportConnections: number;
  /** How long a download link works. */
  exportLinkTtlSeconds: number;
  /** How long an export's files are kept after its links expired; then they are deleted. */
  exportFileGraceSeconds: number;
  /** How long a claimed export stays its worker's without a renewal: how long a dead worker's export waits. */
  exportLeaseSeconds: number;
  /** Exports of one client (production and UAT together) running at once across every process. */
  exportMaxRunningPerClient: number;
  /** Local days before today whose attribution the dashboard opens on, kept ahead for every client with data (0: none). */
  keepAheadDays: number;
  /** Where rate-limit counters are shared by several processes; unset, each process counts alone. */
  redisUrl: string | undefined;
  /** Rate limits; 0 turns one off. */
  orderWriteBytesPerMinute: number;
  spendWriteBytesPerMinute: number;
  /** Touchpoint and identity writes. */
  touchpointWriteBytesPerMinute: number;
  exportCreatesPerMinute: number;
  exportReadsPerSecond: number;
  authFailuresPerMinute: number;
  /** POST /v1/collect: requests per source address, events per client id. */
  collectRequestsPerMinute: number;
  collectEventsPerMinute: number;
  /**
   * Which proxies' X-Forwarded-For entries are believed, for the source address of per-address
   * limits: none, every one, or those at these addresses or ranges (Fastify's trustProxy).
   */
  trustProxy: boolean | string[];
  /** Time a request has to arrive whole, headers and body; slower ones are cut off with a 408. */
  requestTimeoutMs: number;
  /** Event-loop delay past which requests are refused with 503 until it recovers (0: never). */
  overloadEventLoopDelayMs: number;
  /** Browser origins allowed to call the API (CORS); none by default. */
  corsOrigins: string[];
}

export class ConfigError extends Error {}

/** The most API processes `tributary serve` runs (WEB_CONCURRENCY, --workers). */
export const MAX_API_PROCESSES = 1024;

/** The ports of the production and UAT APIs when PORT and UAT_PORT are unset. */
export const DEFAULT_PORT = 8080;
export const DEFAULT_UAT_PORT = 8081;

const MIB = 1024 * 1024;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR || './data');
  // Each running export holds its connections: at least one must be left for the API and the leases.
  const databasePoolSize = integer(env, 'DATABASE_POOL_SIZE', 10, { min: 2 });
  const exportConcurrency = integer(env, 'EXPORT_CONCURRENCY', 1, { max: databasePoolSize - 1 });
  const exportConnectionsMax = Math.floor((databasePoolSize - 1) / Math.max(exportConcurrency, 1));
  const exportConnections = integer(env, 'EXPORT_CONNECTIONS', Math.min(2, exportConnectionsMax), { min: 1, max: exportConnectionsMax });
  const host = env.HOST || '127.0.0.1';
  const port = integer(env, 'PORT', DEFAULT_PORT, { max: 65535 });
  return {
    host,
    port,
    uatPort: integer(env, 'UAT_PORT', DEFAULT_UAT_PORT, { max: 65535 }),
    apiProcesses: integer(env, 'WEB_CONCURRENCY', 1, { min: 1, max: MAX_API_PROCESSES }),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize,
    databaseQueryTimeoutMs: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', 60_000, { min: 1 }),
    reportLockWaitMs: integer(env, 'REPORT_LOCK_WAIT_MS', 10_000, { min: 1 }),
    // A third of the pool: one client's reads leave two thirds to the others, writes and health checks.
    tenantReadConnections: integer(env, 'TENANT_READ_CONNECTIONS', Math.max(1, Math.floor(databasePoolSize / 3)), { min: 1, max: databasePoolSize - 1 }),
    dataDir,
    adminToken: secret(env, 'ADMIN_TOKEN', 32),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 32 * MIB, { min: 1 }),
    logLevel: env.LOG_LEVEL || 'info',
    exportsDir: path.resolve(env.EXPORTS_DIR || path.join(dataDir, 'exports')),
    publicUrl: (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
    exportSigningSecret: secret(env, 'EXPORT_SIGNING_SECRET', 32),
    exportConcurrency,
    exportConnections,
    exportLinkTtlSeconds: integer(env, 'EXPORT_LINK_TTL_SECONDS', 7 * 24 * 3600, { min: 1 }),
    exportFileGraceSeconds: integer(env, 'EXPORT_FILE_GRACE_SECONDS', 24 * 3600),
    exportLeaseSeconds: integer(env, 'EXPORT_LEASE_SECONDS', 60, { min: 1 }),
    exportMaxRunningPerClient: integer(env, 'EXPORT_MAX_RUNNING_PER_CLIENT', 2, { min: 1 }),
    keepAheadDays: integer(env, 'KEEP_AHEAD_DAYS', 90, { max: 366 }),
    redisUrl: env.REDIS_URL || undefined,
    orderWriteBytesPerMinute: integer(env, 'ORDER_WRITE_BYTES_PER_MINUTE', 30 * MIB),
    spendWriteBytesPerMinute: integer(env, 'SPEND_WRITE_BYTES_PER_MINUTE', 30 * MIB),
    touchpointWriteBytesPerMinute: integer(env, 'TOUCHPOINT_WRITE_BYTES_PER_MINUTE', 30 * MIB),
    exportCreatesPerMinute: integer(env, 'EXPORT_CREATES_PER_MINUTE', 60),
    exportReadsPerSecond: integer(env, 'EXPORT_READS_PER_SECOND', 100),
    authFailuresPerMinute: integer(env, 'AUTH_FAILURES_PER_MINUTE', 30),
    collectRequestsPerMinute: integer(env, 'COLLECT_REQUESTS_PER_MINUTE', 1_200),
    collectEventsPerMinute: integer(env, 'COLLECT_EVENTS_PER_MINUTE', 120_000),
    trustProxy: trustedProxies(env),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 60_000, { min: 1 }),
    overloadEventLoopDelayMs: integer(env, 'OVERLOAD_EVENT_LOOP_DELAY_MS', 1_000),
    corsOrigins: (env.CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean),
  };
}

/** A secret setting, unset or long enough not to be guessed. */
function secret(env: NodeJS.ProcessEnv, name: string, minLength: number): string | undefined {
  const value = env[name];
  if (!value) return undefined;
  if (value.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters long`);
  return value;
}

function trustedProxies(env: NodeJS.ProcessEnv): Config['trustProxy'] {
  const raw = env.TRUST_PROXY ?? '';
  if (['', 'true', 'false'].includes(raw)) return raw === 'true';
  const addresses = raw.split(',').map((address) => address.trim());
  const isRange = (address: string) => {
    const [ip = '', prefix, ...rest] = address.split('/');
    const version = net.isIP(ip);
    // A /0 range, which Fastify refuses, is every address: TRUST_PROXY=true says that.
    const prefixFits = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (version === 4 ? 32 : 128));
    return version !== 0 && rest.length === 0 && prefixFits;
  };
  if (addresses.every(isRange)) return addresses;
  throw new ConfigError(`TRUST_PROXY must be true, false, or the proxies' addresses (CIDR ranges allowed), got "${raw}"`);
}

function integer(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}
