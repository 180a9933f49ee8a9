import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../bench/server.js';
import { createChildStore, startCli, tempDir, type ChildStore } from './helpers.js';

/*
 * The README's "Try it" tour, run for real: its ```sh blocks, taken from README.md as it is now,
 * run in order in one bash process (`set -euo pipefail`), in an empty directory, against a
 * `tributary serve` of this checkout on free ports. Only two things of the README are not run:
 *
 * - `npm install`: the dependencies are installed already (the test runs in this checkout).
 * - `npm start` (`npm run build`, then `node dist/cli.js serve`): the test starts `tributary serve`
 *   itself, from the sources as the other tests do, on free ports and a store of its own (its
 *   DATA_DIR the tour's ./data, or a new PostgreSQL database with DATABASE_URL set), with the
 *   ADMIN_TOKEN that README line gives it. The tour's shell waits there until the server is ready.
 *
 * Everything else runs as written (the `openssl rand` of the admin token included), with
 * `localhost:8080` pointed at the test's server, every curl made to fail on an HTTP error
 * (`--fail-with-body`), and each curl's answer logged so that the test can check what it got.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = path.join(ROOT, 'README.md');
const SECTION = 'Try it';
const DAY_MS = 24 * 3600 * 1000;

/** The ```sh blocks of the README's section `## heading`, in order. */
function shellBlocks(markdown: string, heading: string): string[] {
  const blocks: string[] = [];
  let inSection = false;
  let found = false;
  let block: { shell: boolean; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (block && /^```\s*$/.test(line)) {
      if (inSection && block.shell) blocks.push(block.lines.join('\n'));
      block = undefined;
    } else if (block) block.lines.push(line);
    else if (line.startsWith('```')) block = { shell: /^```(sh|bash)\s*$/.test(line), lines: [] };
    else if (/^#{1,2} /.test(line)) {
      inSection = line.trim() === `## ${heading}`;
      found ||= inSection;
    }
  }
  assert.ok(found, `README.md has no "## ${heading}" section: the tour test/readme-tour.test.ts runs`);
  assert.ok(blocks.length > 0, `README.md's "## ${heading}" section has no \`\`\`sh block`);
  return blocks;
}

/**
 * What the test changes in the tour's text, each change with why. Each must find its text, so
 * that a README that changes there makes this test fail, not run something else.
 */
const REWRITES: { find: RegExp; replace: string; why: string }[] = [
  { find: /^npm install && /m, replace: '', why: 'the dependencies are installed already (the test runs in this checkout)' },
  {
    find: /^(ADMIN_TOKEN=.+) npm start\s*$/m,
    replace: '$1 start_server_of_the_test',
    why: 'the test starts `tributary serve` itself, on free ports and a store of its own, with that ADMIN_TOKEN',
  },
];

/** The shell the tour runs in: strict, its curls failing on HTTP errors and logged, and the server handed over. */
function preamble(curlLog: string): string {
  return `set -euo pipefail
trap 'echo "the tour stopped at line $LINENO of its script" >&2' ERR
# Every curl of the tour fails on an HTTP error and is logged for the test: exit code, arguments, answer.
curl() {
  local code=0 answer
  answer=$(command curl --fail-with-body -sS "$@") || code=$?
  printf '%s\\n' "$answer"
  printf '%s\\0%s\\0%s\\0' "$code" "$*" "$answer" >> ${JSON.stringify(curlLog)}
  return "$code"
}
# In place of npm start: asks the test (fd 3) to start the server with this ADMIN_TOKEN, waits until it has (stdin).
start_server_of_the_test() {
  printf '%s\\n' "$ADMIN_TOKEN" >&3
  local answer
  read -r answer
  [[ $answer == started ]]
}
`;
}

interface CurlCall {
  code: number;
  args: string;
  answer: string;
}

function readCurlLog(file: string): CurlCall[] {
  if (!fs.existsSync(file)) return [];
  const fields = fs.readFileSync(file, 'utf8').split('\0');
  const calls: CurlCall[] = [];
  for (let i = 0; i + 2 < fields.length; i += 3) calls.push({ code: Number(fields[i]), args: fields[i + 1]!, answer: fields[i + 2]! });
  return calls;
}

/** The first line `stream` sends, or a rejection when `child` exits before. */
function firstLine(stream: Readable, child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`the tour's shell exited with ${code} before ${what}`)));
  });
}

async function stop(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

let store: ChildStore | undefined;
let server: ChildProcess | undefined;
let shell: ChildProcess | undefined;
const root = tempDir();
after(async () => {
  await stop(shell, 'SIGKILL');
  await stop(server, 'SIGTERM');
  await store?.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

test("the README's Try it tour runs as written, and its data shows in the dashboard's default period", { timeout: 180_000 }, async () => {
  let script = shellBlocks(fs.readFileSync(README, 'utf8'), SECTION).join('\n\n');
  for (const { find, replace, why } of REWRITES) {
    assert.match(script, find, `the Try it tour no longer has ${find} (the test skips it: ${why}); update test/readme-tour.test.ts`);
    script = script.replace(find, replace);
  }
  store = await createChildStore();
  const [port, uatPort] = [await freePort(), await freePort()];
  script = script.replaceAll('localhost:8080', `127.0.0.1:${port}`).replaceAll('localhost:8081', `127.0.0.1:${uatPort}`);

  const work = path.join(root, 'shop'); // the newcomer's directory: the README's ./data is made in it
  fs.mkdirSync(work);
  const curlLog = path.join(root, 'curl.log');
  const scriptFile = path.join(root, 'tour.sh');
  fs.writeFileSync(scriptFile, preamble(curlLog) + script + '\n');

  const started = Date.now();
  shell = spawn('bash', [scriptFile], {
    cwd: work,
    // A terminal of its own: no curlrc or proxy of this machine's, and a time zone far from UTC
    // (the tour's dates must not depend on the newcomer's).
    env: { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`, HOME: root, LANG: 'C.UTF-8', TZ: 'Pacific/Kiritimati' },
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  shell.stdin!.on('error', () => {}); // a shell that died early: its exit code tells
  let transcript = '';
  shell.stdout!.setEncoding('utf8').on('data', (chunk: string) => (transcript += chunk));
  shell.stderr!.setEncoding('utf8').on('data', (chunk: string) => (transcript += chunk));
  const shellExit = once(shell, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const failure = (what: string) => {
    const lines = fs.readFileSync(scriptFile, 'utf8').split('\n');
    const stopped = Number(/stopped at line (\d+)/.exec(transcript)?.[1] ?? 0);
    const near = stopped ? `\n--- the script there:\n${lines.slice(Math.max(stopped - 4, 0), stopped + 3).map((line, i) => `${Math.max(stopped - 4, 0) + i + 1}: ${line}`).join('\n')}` : '';
    return `${what}\n--- the tour's output:\n${transcript}${near}`;
  };

  // The tour's first block made ./data/admin-token and asks for the server, with that token.
  const adminToken = await firstLine(shell.stdio[3] as Readable, shell, 'asking for the server').catch((error: Error) => assert.fail(failure(error.message)));
  assert.equal(adminToken, fs.readFileSync(path.join(work, 'data', 'admin-token'), 'utf8').trim());
  server = await startCli('serve', { ...store.env, DATA_DIR: path.join(work, 'data'), ADMIN_TOKEN: adminToken, PORT: String(port), UAT_PORT: String(uatPort), LOG_LEVEL: 'info' }, 'tributary is ready');
  shell.stdin!.end('started\n');

  const [code, signal] = await shellExit;
  const calls = readCurlLog(curlLog);
  assert.equal(code, 0, failure(`the tour failed (exit ${code ?? signal})`));
  const failed = calls.filter((call) => call.code !== 0);
  assert.deepEqual(failed, [], failure('a curl of the tour failed'));

  // Yesterday and 30 days ago in UTC, the new client's time zone: the dashboard's default period.
  const day = (daysAgo: number) => new Date(started - daysAgo * DAY_MS).toISOString().slice(0, 10);
  const [first, last] = [day(30), day(1)];
  const call = (pattern: RegExp) => {
    const matching = calls.filter((entry) => pattern.test(entry.args));
    assert.ok(matching.length > 0, failure(`the tour made no request matching ${pattern}`));
    return matching.at(-1)!;
  };

  const client = JSON.parse(call(/\/admin\/v1\/clients -H/).answer) as { client_id: string; api_key: string };
  const readBack = JSON.parse(call(/\/v2\/orders\?/).answer) as { data: { order_id: string; purchase_total: number; time_of_purchase: string }[] };
  assert.deepEqual(readBack.data.map((order) => [order.order_id, order.purchase_total]), [['1001', 43.18]], 'the tour read its order back');
  const report = JSON.parse(call(/\/v1\/reports\/performance\?/).answer) as { totals: { spend: number; rev: number } };
  assert.deepEqual([report.totals.spend, report.totals.rev], [12.5, 43.18], "the tour's report has its spend and the order's revenue");
  const result = JSON.parse(call(/\/v1\/exports\/data-export\/result\//).answer) as { status: string; result: string[] };
  assert.equal(result.status, 'SUCCESS', 'the export finished');
  assert.ok(result.result.length > 0);
  assert.match(call(/\/v1\/exports\/files\//).answer, /,meta,Spring sale,spring,USD,12\.5,/, 'the downloaded file holds the spend');

  // What the dashboard asks for when it opens: the last 30 days, ending yesterday.
  const api = async <T>(route: string): Promise<T> => {
    const answer = await fetch(`http://127.0.0.1:${port}${route}`, { headers: { authorization: client.api_key, 'data-client-id': client.client_id } });
    assert.equal(answer.status, 200, `${route}: ${await answer.clone().text()}`);
    return (await answer.json()) as T;
  };
  const stored = await api<{ data: { order_id: string }[] }>(`/v2/orders?start_date=${last}&end_date=${last}`);
  assert.deepEqual(stored.data.map((order) => order.order_id), ['1001'], 'the order is stored, dated yesterday');
  const dashboard = await api<{ totals: object }>(`/v1/reports/performance?start_date=${first}&end_date=${last}&level=campaign&metrics=spend,rev`);
  assert.deepEqual(dashboard.totals, { spend: 12.5, rev: 43.18 }, "the dashboard's default period has the order's revenue and the spend");
  for (const page of ['/', '/docs']) assert.equal((await fetch(`http://127.0.0.1:${port}${page}`)).status, 200, `${page} is served`);
});
