import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

test('defaults: ports 8080 and 8081 on 127.0.0.1, embedded store in ./data, no admin API', () => {
  const config = loadConfig({});
  assert.deepEqual(config, {
    host: '127.0.0.1',
    port: 8080,
    uatPort: 8081,
    apiProcesses: 1,
    databaseUrl: undefined,
    databasePoolSize: 10,
    databaseQueryTimeoutMs: 60_000,
    reportLockWaitMs: 10_000,
    tenantReadConnections: 3,
    dataDir: path.resolve('data'),
    adminToken: undefined,
    bodyLimitBytes: 32 * 1024 * 1024,
    logLevel: 'info',
    exportsDir: path.resolve('data', 'exports'),
    publicUrl: 'http://127.0.0.1:8080',
    exportSigningSecret: undefined,
    exportConcurrency: 1,
    exportConnections: 2,
    exportLinkTtlSeconds: 604800,
    exportFileGraceSeconds: 86400,
    exportLeaseSeconds: 60,
    exportMaxRunningPerClient: 2,
    keepAheadDays: 90,
    redisUrl: undefined,
    orderWriteBytesPerMinute: 30 * 1024 * 1024,
    spendWriteBytesPerMinute: 30 * 1024 * 1024,
    touchpointWriteBytesPerMinute: 30 * 1024 * 1024,
    exportCreatesPerMinute: 60,
    exportReadsPerSecond: 100,
    authFailuresPerMinute: 30,
    collectRequestsPerMinute: 1200,
    collectEventsPerMinute: 120000,
    trustProxy: false,
    requestTimeoutMs: 60_000,
    overloadEventLoopDelayMs: 1000,
    corsOrigins: [],
  });
});

test('every variable is read', () => {
  const config = loadConfig({
    HOST: '0.0.0.0',
    PORT: '9000',
    UAT_PORT: '9001',
    WEB_CONCURRENCY: '4',
    DATABASE_URL: 'postgres://u@db/x',
    DATABASE_POOL_SIZE: '4',
    DATABASE_QUERY_TIMEOUT_MS: '1500',
    REPORT_LOCK_WAIT_MS: '2500',
    TENANT_READ_CONNECTIONS: '3',
    DATA_DIR: '/tmp/somewhere',
    ADMIN_TOKEN: 'an-admin-token-of-32-characters!',
    BODY_LIMIT_BYTES: '1000',
    LOG_LEVEL: 'warn',
    EXPORTS_DIR: '/tmp/exports',
    PUBLIC_URL: 'https://tributary.example.com/',
    EXPORT_SIGNING_SECRET: 'a-signing-key-of-32-characters!!',
    EXPORT_CONCURRENCY: '3',
    EXPORT_LINK_TTL_SECONDS: '3600',
    EXPORT_FILE_GRACE_SECONDS: '0',
    EXPORT_LEASE_SECONDS: '5',
    EXPORT_MAX_RUNNING_PER_CLIENT: '4',
    KEEP_AHEAD_DAYS: '0',
    REDIS_URL: 'redis://cache:6379',
    ORDER_WRITE_BYTES_PER_MINUTE: '1000000',
    SPEND_WRITE_BYTES_PER_MINUTE: '2000000',
    TOUCHPOINT_WRITE_BYTES_PER_MINUTE: '3000000',
    EXPORT_CREATES_PER_MINUTE: '0',
    EXPORT_READS_PER_SECOND: '7',
    AUTH_FAILURES_PER_MINUTE: '9',
    COLLECT_REQUESTS_PER_MINUTE: '11',
    COLLECT_EVENTS_PER_MINUTE: '12',
    TRUST_PROXY: 'true',
    REQUEST_TIMEOUT_MS: '5000',
    OVERLOAD_EVENT_LOOP_DELAY_MS: '0',
    CORS_ORIGINS: 'https://a.example, https://b.example',
  });
  assert.deepEqual(config, {
    host: '0.0.0.0',
    port: 9000,
    uatPort: 9001,
    apiProcesses: 4,
    databaseUrl: 'postgres://u@db/x',
    databasePoolSize: 4,
    databaseQueryTimeoutMs: 1500,
    reportLockWaitMs: 2500,
    tenantReadConnections: 3,
    dataDir: '/tmp/somewhere',
    adminToken: 'an-admin-token-of-32-characters!',
    bodyLimitBytes: 1000,
    logLevel: 'warn',
    exportsDir: '/tmp/exports',
    publicUrl: 'https://tributary.example.com',
    exportSigningSecret: 'a-signing-key-of-32-characters!!',
    exportConcurrency: 3,
    exportConnections: 1, // the default of 2, down to what three exports leave of a pool of 4
    exportLinkTtlSeconds: 3600,
    exportFileGraceSeconds: 0,
    exportLeaseSeconds: 5,
    exportMaxRunningPerClient: 4,
    keepAheadDays: 0,
    redisUrl: 'redis://cache:6379',
    orderWriteBytesPerMinute: 1000000,
    spendWriteBytesPerMinute: 2000000,
    touchpointWriteBytesPerMinute: 3000000,
    exportCreatesPerMinute: 0,
    exportReadsPerSecond: 7,
    authFailuresPerMinute: 9,
    collectRequestsPerMinute: 11,
    collectEventsPerMinute: 12,
    trustProxy: true,
    requestTimeoutMs: 5000,
    overloadEventLoopDelayMs: 0,
    corsOrigins: ['https://a.example', 'https://b.example'],
  });
});

for (const [name, value] of <[string, string][]>[
  ['PORT', '1e3'],
  ['PORT', '99999'],
  ['PORT', '-1'],
  ['UAT_PORT', 'eighty'],
  ['WEB_CONCURRENCY', '0'],
  ['DATABASE_POOL_SIZE', '0'],
  ['DATABASE_POOL_SIZE', '1'], // an export would hold the only connection
  ['TENANT_READ_CONNECTIONS', '0'],
  ['TENANT_READ_CONNECTIONS', '10'], // one client's reads would take the whole pool
  ['BODY_LIMIT_BYTES', '1.5'],
  ['ADMIN_TOKEN', 'an-admin-token-of-31-characters'],
  ['EXPORT_SIGNING_SECRET', 'a-key-of-31-characters-is-short'],
  ['TRUST_PROXY', 'yes'],
  ['TRUST_PROXY', '10.0.0.1,proxy.internal'],
  ['TRUST_PROXY', '1'], // a hop count, which Fastify 5 takes as trusting no proxy at all
  ['TRUST_PROXY', '10.0.0.0/99'],
  ['TRUST_PROXY', '::1/129'],
  ['TRUST_PROXY', '0.0.0.0/0'], // every address: that is TRUST_PROXY=true
  ['EXPORT_CONCURRENCY', '10'], // not below the default pool of 10 connections
  ['EXPORT_CONNECTIONS', '0'],
  ['KEEP_AHEAD_DAYS', '367'], // more than a year of days kept ahead for every client
  ['KEEP_AHEAD_DAYS', '90000'],
  ['EXPORT_CONNECTIONS', '10'], // one export on all of the default pool of 10
  ['EXPORT_MAX_RUNNING_PER_CLIENT', '0'], // no client's export would ever run
]) {
  test(`${name}=${value} is refused with a message naming it`, () => {
    assert.throws(() => loadConfig({ [name]: value }), (error: Error) => error instanceof ConfigError && error.message.includes(name));
  });
}

test('EXPORT_CONNECTIONS: as many as the running exports leave of the pool, one connection kept for the rest', () => {
  const connections = (env: Record<string, string>) => loadConfig(env).exportConnections;
  assert.equal(connections({ DATABASE_POOL_SIZE: '7', EXPORT_CONCURRENCY: '2', EXPORT_CONNECTIONS: '3' }), 3);
  assert.throws(() => connections({ DATABASE_POOL_SIZE: '7', EXPORT_CONCURRENCY: '2', EXPORT_CONNECTIONS: '4' }), /EXPORT_CONNECTIONS must be a whole number from 1 to 3/);
  assert.equal(connections({ DATABASE_POOL_SIZE: '2' }), 1);
  assert.equal(connections({ EXPORT_CONCURRENCY: '0', EXPORT_CONNECTIONS: '9' }), 9); // `tributary worker` runs one export at least
});

test('TRUST_PROXY: off, every proxy, or the proxies at these addresses', () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1,192.0.2.7,fd00::/8' }).trustProxy, ['10.0.0.0/8', '::1', '192.0.2.7', 'fd00::/8']);
});

test('the default PUBLIC_URL brackets an IPv6 host', () => {
  assert.equal(loadConfig({ HOST: '::', PORT: '9000' }).publicUrl, 'http://[::]:9000');
});
