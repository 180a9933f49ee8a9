import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../bench/server.js';
import { ADMIN_TOKEN, createChildStore, makeOrder, pgliteEnv, serverUrl, tempDir, type ChildStore } from './helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const onPostgres = Boolean(serverUrl);

/**
 * `tributary serve <args>` from the sources, in a process group of its own (as a service manager
 * starts it), its JSON log lines collected as they come.
 */
function serve(env: NodeJS.ProcessEnv, args: string[] = []) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts.filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return {
    child,
    lines,
    stderr: () => stderr,
    /** Resolves with the first log line (from `after` on) whose msg is `msg`. */
    async logged(msg: string, after = 0): Promise<Record<string, unknown>> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const line = lines.slice(after).find((entry) => entry.msg === msg);
        if (line) return line;
        if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode} before logging "${msg}": ${stderr}`);
        if (Date.now() > deadline) throw new Error(`serve never logged "${msg}"`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    /**
     * The API processes running now (those that said they were ready and are alive), once there
     * are `count`: the primary's "all API processes are ready" and a new worker's own "ready"
     * come down one pipe from two processes, in either order.
     */
    async workerPids(count: number): Promise<number[]> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const pids = lines.filter((line) => line.msg === 'tributary is ready').map((line) => line.pid as number);
        const alive = [...new Set(pids)].filter(isAlive).sort((a, b) => a - b);
        if (alive.length === count) return alive;
        if (Date.now() > deadline) throw new Error(`${alive.length} API processes running, not ${count}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/** Kills what is left of the process group led by `pid` (the primary and its workers). */
function killGroup(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // nothing left
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A request on a connection of its own: each new connection goes to the next API process. */
function request(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('several API processes need PostgreSQL: the embedded store refuses them before anything starts', async () => {
  const dataDir = tempDir();
  try {
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--workers', '2'], { cwd: ROOT, env: pgliteEnv(dataDir) }, (error, _stdout, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, stderr }),
      );
    });
    assert.equal(code, 1);
    assert.match((JSON.parse(stderr) as { error: string }).error, /several API processes need DATABASE_URL/);
    assert.deepEqual(fs.readdirSync(dataDir), [], 'the embedded store was not even opened');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test('--workers takes a whole number from 1 to 1024, WEB_CONCURRENCY likewise', async () => {
  const run = (args: string[], env: NodeJS.ProcessEnv) =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', ...args], { cwd: ROOT, env }, (error, _stdout, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, stderr }),
      );
    });
  const env = pgliteEnv(tempDir());
  for (const workers of ['0', 'two', '1.5', '1025']) {
    const { code, stderr } = await run(['--workers', workers], env);
    assert.equal(code, 1);
    assert.match(stderr, /--workers <n>.*must be a whole number from 1 to 1024/);
  }
  const { code, stderr } = await run([], { ...env, WEB_CONCURRENCY: '0' });
  assert.equal(code, 1);
  assert.equal((JSON.parse(stderr) as { error: string }).error, 'WEB_CONCURRENCY must be a whole number from 1 to 1024, got "0"');
  fs.rmSync(env.DATA_DIR!, { recursive: true, force: true });
});

describe('tributary serve --workers 2 (PostgreSQL)', { skip: onPostgres ? false : 'needs DATABASE_URL' }, () => {
  let store: ChildStore;
  let server: ReturnType<typeof serve>;
  let port: number;
  let exportsDir: string;

  before(async () => {
    store = await createChildStore();
    port = await freePort();
    exportsDir = tempDir();
    const env = { ...store.env, PORT: String(port), UAT_PORT: String(await freePort()), ADMIN_TOKEN, LOG_LEVEL: 'info', EXPORTS_DIR: exportsDir };
    server = serve({ ...env, WEB_CONCURRENCY: '3' }, ['--workers', '2']);
    await server.logged('all API processes are ready');
  });
  after(async () => {
    killGroup(server.child.pid!);
    fs.rmSync(exportsDir, { recursive: true, force: true });
    await store.cleanup();
  });

  test('the option wins over WEB_CONCURRENCY; connections are shared between the processes, which share the database', async () => {
    await server.workerPids(2);
    const created = await request(port, 'POST', '/admin/v1/clients', { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, '{"name":"cluster"}');
    assert.equal(created.status, 201, created.body);
    const client = JSON.parse(created.body) as { client_id: string; api_key: string };
    const headers = { authorization: client.api_key, 'data-client-id': client.client_id, 'content-type': 'application/json' };

    const from = server.lines.length;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, n) => request(port, 'POST', '/v2/orders', headers, JSON.stringify([makeOrder(`cluster-${n}`)]))),
    );
    assert.deepEqual(answers.map((answer) => answer.status), Array(10).fill(200));
    const servedBy = new Set(server.lines.slice(from).filter((line) => line.route === '/v2/orders').map((line) => line.pid));
    assert.equal(servedBy.size, 2, 'both API processes answered');

    // Written through both, read through either.
    for (let n = 0; n < 2; n++) {
      const listed = await request(port, 'GET', '/v2/orders?start_date=2024-01-01&end_date=2024-12-31', headers);
      assert.equal(listed.status, 200, listed.body);
      assert.equal((JSON.parse(listed.body) as { total_count: number }).total_count, 10);
    }
  });

  test('an API process that dies is replaced, and the service answers throughout', async () => {
    const [victim, survivor] = await server.workerPids(2);
    const from = server.lines.length;
    process.kill(victim!, 'SIGKILL');
    const replaced = await server.logged('an API process exited: starting another', from);
    assert.equal(replaced.worker_pid, victim);
    for (let n = 0; n < 5; n++) assert.equal((await request(port, 'GET', '/readyz')).status, 200, 'the survivor answers meanwhile');
    await server.logged('all API processes are ready', from);
    const now = await server.workerPids(2);
    assert.ok(now.includes(survivor!) && !now.includes(victim!));
  });

  test('SIGTERM to the whole process group, as a service manager sends it, stops every API process gracefully once; exit 0', async () => {
    const workers = await server.workerPids(2);
    const from = server.lines.length;
    process.kill(-server.child.pid!, 'SIGTERM');
    const [code] = (await once(server.child, 'exit')) as [number];
    assert.equal(code, 0, server.stderr());
    const stopped = server.lines.slice(from).filter((line) => line.msg === 'shutting down').map((line) => [line.pid, line.signal]);
    assert.deepEqual(
      stopped.sort(),
      [server.child.pid, ...workers].map((pid) => [pid, 'SIGTERM']).sort(),
      'the primary and each worker stopped once, none cut short by a second signal',
    );
    for (const pid of workers) assert.equal(isAlive(pid), false, `process ${pid} is gone`);
  });
});

/** Runs `work` on `serve --workers 2` over a store of its own, killing what is left afterwards. */
async function withCluster(work: (server: ReturnType<typeof serve>) => Promise<void>, port?: number) {
  const store = await createChildStore();
  const server = serve(
    { ...store.env, PORT: String(port ?? (await freePort())), UAT_PORT: String(await freePort()), LOG_LEVEL: 'info' },
    ['--workers', '2'],
  );
  try {
    await work(server);
  } finally {
    killGroup(server.child.pid!);
    await store.cleanup();
  }
}

const postgresOnly = { skip: onPostgres ? false : 'needs DATABASE_URL' };

test('an API process that cannot start (its port is taken) stops the cluster with exit 1', postgresOnly, async () => {
  const taken = net.createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    await withCluster(async (server) => {
      const [code] = (await once(server.child, 'exit')) as [number];
      assert.equal(code, 1);
      assert.ok(server.lines.some((line) => line.msg === 'an API process exited before the service was ready: stopping'));
    }, (taken.address() as net.AddressInfo).port);
  } finally {
    taken.close();
  }
});

// The primary's last line before it forks: the workers are then still loading.
const FORKING = 'without REDIS_URL each API process counts rate limits alone: together they allow that many times each limit';

for (const [to, kill] of [
  ['the primary', (server: ReturnType<typeof serve>) => server.child.kill('SIGTERM')],
  ['the process group', (server: ReturnType<typeof serve>) => process.kill(-server.child.pid!, 'SIGTERM')],
] as const) {
  test(`SIGTERM to ${to} while the API processes are still starting stops them all, exit 0`, postgresOnly, async () => {
    await withCluster(async (server) => {
      await server.logged(FORKING);
      kill(server);
      const [code] = (await once(server.child, 'exit')) as [number];
      assert.equal(code, 0, JSON.stringify(server.lines.filter((line) => (line.level as number) >= 40)));
      assert.ok(!server.lines.some((line) => line.msg === 'API processes did not stop in time: killing them'));
    });
  });
}

test('API processes whose primary is killed stop gracefully by themselves', postgresOnly, async () => {
  await withCluster(async (server) => {
    await server.logged('all API processes are ready');
    const workers = await server.workerPids(2);
    process.kill(server.child.pid!, 'SIGKILL');
    const deadline = Date.now() + 15_000;
    while (workers.some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(workers.filter(isAlive), [], 'the workers are gone');
    const stopped = server.lines.filter((line) => line.msg === 'shutting down').map((line) => line.pid);
    assert.deepEqual(stopped.sort(), [...workers].sort(), 'each worker went through its graceful stop');
  });
});
