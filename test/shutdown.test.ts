import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../bench/server.js';
import { MODEL_IDS, WINDOW_NAMES } from '../src/attribution/models.js';
import { SHUTDOWN_GRACE_MS } from '../src/server.js';
import { ADMIN_TOKEN, createChildStore, minimalOrder, startCli, type ChildStore } from './helpers.js';
import { oneCustomerRequests } from './one-customer-data.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

let store: ChildStore;
let server: ChildProcess;
let port: number;
const logLines: string[] = [];

/** Resolves once the server has logged a line containing `text`. */
async function logged(text: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!logLines.some((line) => line.includes(text))) {
    if (Date.now() > deadline) throw new Error(`the server never logged "${text}":\n${logLines.join('\n')}`);
    await once(server.stdout!, 'data');
  }
}

before(async () => {
  store = await createChildStore();
  port = await freePort();
  server = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    // On every interface, and without PUBLIC_URL: the export links it would hand out need a warning.
    env: { ...store.env, HOST: '0.0.0.0', PORT: String(port), UAT_PORT: String(await freePort()), ADMIN_TOKEN, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  server.stdout!.setEncoding('utf8').on('data', (chunk: string) => logLines.push(...chunk.split('\n')));
  await logged('tributary is ready');
});
after(async () => {
  if (server.exitCode === null) server.kill('SIGKILL');
  await store.cleanup();
});

test('a server on every interface, without PUBLIC_URL, warns that its download links only work locally', async () => {
  await logged('set PUBLIC_URL to the address clients reach');
});

test('SIGTERM stops accepting, finishes the request in flight, then closes the store and exits 0', async () => {
  const created = await fetch(`http://127.0.0.1:${port}/admin/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Acme' }),
  });
  const { client_id, api_key } = (await created.json()) as Record<string, string>;
  const body = Buffer.from(JSON.stringify(Array.from({ length: 1000 }, (_, i) => minimalOrder(`o-${i}`))));

  // A request the server has begun to read: headers and half of the body.
  const request = http.request({
    port,
    method: 'POST',
    path: '/v2/orders',
    headers: { authorization: api_key, 'data-client-id': client_id, 'content-type': 'application/json', 'content-length': body.length },
  });
  const response = once(request, 'response') as Promise<[http.IncomingMessage]>;
  request.write(body.subarray(0, body.length / 2));
  await logged('"route":"/admin/v1/clients"'); // the server is serving requests
  await new Promise((resolve) => setTimeout(resolve, 200)); // let the half body cross loopback

  server.kill('SIGTERM');
  await logged('shutting down');
  await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'a new connection is refused');

  request.end(body.subarray(body.length / 2));
  const [answer] = await response;
  let text = '';
  for await (const chunk of answer) text += chunk;
  assert.equal(answer.statusCode, 200, text);
  assert.equal(JSON.parse(text).inserted, 1000);

  const [code] = (await once(server, 'exit')) as [number];
  assert.equal(code, 0);
  const [row] = await store.withStore((db) => db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders'));
  assert.equal(row?.n, 1000, 'the in-flight batch was stored whole');
});

test('tributary worker runs export jobs alone and stops cleanly on SIGTERM', async () => {
  const workerStore = await createChildStore();
  try {
    const worker = await startCli('worker', { ...workerStore.env, LOG_LEVEL: 'info' }, 'export worker is ready');
    worker.kill('SIGTERM');
    const [code] = (await once(worker, 'exit')) as [number];
    assert.equal(code, 0);
  } finally {
    await workerStore.cleanup();
  }
});

test('SIGTERM during a statement of minutes ends the process within its grace period', async () => {
  const longStore = await createChildStore();
  try {
    const longPort = await freePort();
    const env = { ...longStore.env, PORT: String(longPort), UAT_PORT: String(await freePort()), ADMIN_TOKEN, KEEP_AHEAD_DAYS: '0', LOG_LEVEL: 'info' };
    const longServer = await startCli('serve', env, 'tributary is ready');
    const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const answer = await fetch(`http://127.0.0.1:${longPort}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
      assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${await answer.clone().text()}`);
      return (await answer.json()) as Record<string, unknown>;
    };
    const { client_id, api_key } = (await api('POST', '/admin/v1/clients', { name: 'Loyal' }, { authorization: `Bearer ${ADMIN_TOKEN}` })) as Record<string, string>;
    const credentials = { authorization: api_key!, 'data-client-id': client_id! };
    for (const [path, body] of oneCustomerRequests()) await api('POST', path, body, credentials);
    // Every model, window and mode over a month of one customer's 500,000 path rows: minutes of statements.
    const { id } = await api(
      'POST',
      '/v1/exports/data-export',
      {
        period_type: 'FIXED',
        period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-04-01T00:00:00Z' },
        level: 'campaign',
        attribution_options: { attribution_models: MODEL_IDS, attribution_windows: WINDOW_NAMES, accounting_modes: ['cash', 'accrual'] },
        metrics: [{ id: 'rev', label: 'Revenue' }],
      },
      credentials,
    );
    // The server's export worker takes it at once (a notification), and runs it for minutes.
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    const signalled = performance.now();
    longServer.kill('SIGTERM');
    await once(longServer, 'exit');
    const took = performance.now() - signalled;
    assert.ok(took < SHUTDOWN_GRACE_MS + 3_000, `the process took ${Math.round(took)} ms to end`);
    const [{ status } = { status: '' }] = await longStore.withStore((db) => db.query<{ status: string }>('SELECT status FROM exports WHERE export_id = $1', [id]));
    assert.equal(status, 'PENDING', 'the export was still running when the signal came');
  } finally {
    await longStore.cleanup();
  }
});
