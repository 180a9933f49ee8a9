/**
 * The dashboard on the demo shop, as a newcomer opens it; the target is "the dashboard loads under
 * 1 s on the demo shop". A new store (the embedded one in a temporary DATA_DIR; with DATABASE_URL
 * set, a new database of that PostgreSQL server, dropped afterwards) is filled by `tributary demo`
 * (the CLI in a child process, as `npm run demo` runs it: a year of the sample shop), then
 * `tributary serve` is started on it and chromium (/usr/bin/chromium, headless) signs in with the
 * demo's client_id and read key, as a person does, by the fields' labels.
 *
 * Timed in the page from the click on *Sign in* (or the change of a picker) to the frame that
 * paints it (a MutationObserver sees the page's own signals; the time is taken once the next frame
 * is drawn):
 *
 * - figures shown: the first headline figure has a value and the table has rows;
 * - all shown: `#dashboard[aria-busy="false"]`, the other models' comparison included;
 * - feeds: the feeds' section is no longer busy (asked after the figures);
 *
 * for the first sign-in after the server started (cold: nothing of the store in memory but what
 * the start-up read), then BENCH_DASHBOARD_RUNS more (default 7), each in a new browser context,
 * each followed by a change of model (to first_touch) and one of period (to the last 90 days),
 * timed to `aria-busy="false"`. Beside each, from the page's resource timings, when the last
 * answer of the requests it waited for came in.
 *
 * The ceilings, measured in the same run against the same server: the page's own API requests
 * (recorded during a sign-in and the changes: URLs under /v1/) replayed by this process with the
 * read key, one after the other (the store's time for them: the floor the page cannot beat on the
 * embedded store's one connection) and all at once, BENCH_DASHBOARD_RUNS times each; and the
 * round trip of a trivial request, `GET /v1/client`. The page's part is the difference.
 *
 *   npm run bench:dashboard                                                          # the embedded store
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:dashboard    # a new database there
 *   BENCH_DASHBOARD_RUNS=15 npm run bench:dashboard
 *   BENCH_DASHBOARD_DAYS=60 npm run bench:dashboard   # a smaller demo shop (tributary demo --days): a quick check
 *
 * The last line printed is a one-line JSON summary, for a program to read.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/browser.js';
import { freePort, pgliteStore, serverStore, type Store } from './server.js';

const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 7);
/** The demo's --days; unset, the demo's own default (a year), as `npm run demo` makes it. */
const DAYS = process.env.BENCH_DASHBOARD_DAYS;
const ROUND_TRIPS = 20;
const TARGET_MS = 1000;
const CLI = new URL('../dist/cli.js', import.meta.url).pathname;
/** What the demo prints on stdout's last line. */
interface Demo {
  client_id: string;
  api_key: string;
  read_api_key: string;
  dashboard_url: string;
}

/** A new, empty store: a database of DATABASE_URL's server when it is set, else the embedded store in a temporary directory. */
const newStore = (): Promise<Store> => (process.env.DATABASE_URL ? serverStore('postgres') : Promise.resolve(pgliteStore()));

/** `tributary demo` on the store, its progress shown on stderr; the client it printed. */
async function runDemo(store: Store): Promise<Demo> {
  const child = spawn(process.execPath, [CLI, 'demo', ...(DAYS ? ['--days', DAYS] : [])], { env: { ...process.env, ...store.env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`tributary demo exited with ${code}`);
  return JSON.parse(output.trim().split('\n').at(-1)!) as Demo;
}

interface Server {
  url: string;
  startupMs: number;
  stop(): Promise<void>;
}

/** `tributary serve` on the store, as `npm start` runs it (its defaults), on free ports; its warnings and errors shown. */
async function serve(store: Store): Promise<Server> {
  const [port, uatPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, ...store.env, PORT: String(port), UAT_PORT: String(uatPort) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const level = (() => {
      try {
        return (JSON.parse(line) as { level: number }).level;
      } catch {
        return 40; // not a log line: shown
      }
    })();
    if (level >= 40) console.error(line);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
      if (await fetch(`${url}/readyz`).then((response) => response.ok, () => false)) break;
      if (performance.now() - started > 120_000) throw new Error('the server was not ready in 120 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, startupMs: performance.now() - started, stop };
}

/**
 * Runs in the page before its own scripts. A click on *Sign in* or a change of the model or the
 * period starts a round; the moments each of its signals first holds are noted (ms since the
 * start) once the frame after them is painted (requestAnimationFrame, then a task: the frame has
 * been drawn by then). The page is not changed: the script only watches.
 */
const MARKS_SCRIPT = `(() => {
  const bench = { round: 0, action: null, started: 0, marks: {}, seen: {}, sawBusy: false };
  Object.defineProperty(window, '__dashboardBench', { value: bench });
  const holds = {
    figures: () => document.querySelector('#kpis .kpi .value[data-value]:not([data-value=""])') !== null && document.querySelector('#performance tbody tr') !== null,
    all: () => bench.sawBusy && document.querySelector('#dashboard[aria-busy="false"]') !== null,
    feeds: () => document.querySelector('section:has(#feeds)[aria-busy="false"]') !== null,
  };
  const watched = { 'sign-in': ['figures', 'all', 'feeds'], model: ['all'], period: ['all'] };
  const afterPaint = (done) => requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = done;
    channel.port2.postMessage(null);
  });
  const look = () => {
    if (!bench.action) return;
    if (document.querySelector('#dashboard[aria-busy="true"]')) bench.sawBusy = true;
    const round = bench.round;
    for (const name of watched[bench.action]) {
      if (bench.seen[name] || !holds[name]()) continue;
      bench.seen[name] = true;
      afterPaint(() => {
        if (bench.round === round) bench.marks[name] = performance.now() - bench.started;
      });
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const begin = (action) => Object.assign(bench, { round: bench.round + 1, action, started: performance.now(), marks: {}, seen: {}, sawBusy: false });
  addEventListener('click', (event) => {
    if (event.target instanceof Element && event.target.closest('#sign-in [type="submit"]')) begin('sign-in');
  }, true);
  addEventListener('change', (event) => {
    const id = event.target && event.target.id;
    if (id === 'model' || id === 'period') begin(id);
  }, true);
})();`;

type Action = 'sign-in' | 'model' | 'period';
type Signal = 'figures' | 'all' | 'feeds';
const SIGNALS: Record<Action, Signal[]> = { 'sign-in': ['figures', 'all', 'feeds'], model: ['all'], period: ['all'] };

/** What a request of the page is for: the figures (with signing in), the other models' comparison, or the feeds. */
type Part = 'figures' | 'comparison' | 'feeds';

function partOf(url: string, pickedModel: string): Part {
  const { pathname, searchParams } = new URL(url, 'http://page');
  if (pathname === '/v1/health/feeds') return 'feeds';
  const model = searchParams.get('model');
  return pathname === '/v1/reports/performance' && model !== null && model !== pickedModel ? 'comparison' : 'figures';
}
/** The parts of the requests a signal waits for. */
const WAITED_FOR: Record<Signal, Part[]> = { figures: ['figures'], all: ['figures', 'comparison'], feeds: ['figures', 'comparison', 'feeds'] };

/** One round timed in the page: each signal's ms from the click, and when the last answer of the requests it waited for came in. */
interface Round {
  shown: Partial<Record<Signal, number>>;
  answered: Partial<Record<Signal, number>>;
  /** The page's requests under /v1/ (path and query), in the order sent. */
  requests: string[];
  /** The model picked in the round: its reports are the figures', the others' the comparison's. */
  picked: string;
}

/**
 * Reads the round's marks once every signal of `action` is painted, with the page's resource
 * timings of the round; the model picked is read then (on signing in, the models are not yet
 * offered when the click returns).
 */
async function roundOf(page: Page, action: Action, requests: string[]): Promise<Round> {
  type State = { action: Action | null; started: number; marks: Partial<Record<Signal, number>> };
  const deadline = Date.now() + 120_000;
  let state: State;
  for (;;) {
    state = (await page.evaluate('window.__dashboardBench')) as State;
    if (state.action === action && SIGNALS[action].every((signal) => state.marks[signal] !== undefined)) break;
    if (Date.now() > deadline) throw new Error(`${action}: not shown in 120 s (${JSON.stringify(state.marks)})`);
    await page.waitForTimeout(20);
  }
  if (await page.locator('#error').isVisible()) throw new Error(`${action}: the page shows an error: ${await page.locator('#error').innerText()}`);
  const pickedModel = await page.locator('#model').inputValue();
  if (!pickedModel) throw new Error(`${action}: no model picked`);
  const entries = (await page.evaluate(
    `performance.getEntriesByType('resource').filter((entry) => entry.startTime >= ${state.started} && new URL(entry.name).pathname.startsWith('/v1/')).map((entry) => ({ url: entry.name, end: entry.responseEnd }))`,
  )) as { url: string; end: number }[];
  const answered: Round['answered'] = {};
  for (const signal of SIGNALS[action]) {
    const ends = entries.filter((entry) => WAITED_FOR[signal].includes(partOf(entry.url, pickedModel))).map((entry) => entry.end - state.started);
    if (ends.length > 0) answered[signal] = Math.max(...ends);
  }
  return { shown: state.marks, answered, requests, picked: pickedModel };
}

/**
 * A sign-in on a new browser context, and, when `changes`, a change of model then of period on
 * the same page; each change is made once the page is idle (the feeds shown).
 */
async function visit(browser: Browser, url: string, demo: Demo, changes: boolean): Promise<Partial<Record<Action, Round>>> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  try {
    await context.addInitScript(MARKS_SCRIPT);
    const page = await context.newPage();
    let recording: string[] = [];
    const failures: string[] = [];
    page.on('request', (request) => {
      const { pathname, search } = new URL(request.url());
      if (pathname.startsWith('/v1/')) recording.push(pathname + search);
    });
    page.on('response', (response) => {
      if (new URL(response.url()).pathname.startsWith('/v1/') && response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
    });
    page.on('pageerror', (error) => failures.push(`uncaught: ${error.message}`));
    await page.goto(`${url}/`);
    await page.getByLabel('Client ID').fill(demo.client_id);
    await page.getByLabel('API key').fill(demo.read_api_key);
    const rounds: Partial<Record<Action, Round>> = {};
    const timed = async (action: Action, act: () => Promise<unknown>) => {
      recording = [];
      await act();
      rounds[action] = await roundOf(page, action, recording);
      if (failures.length > 0) throw new Error(`${action}: ${failures.join('; ')}`);
    };
    await timed('sign-in', () => page.getByRole('button', { name: 'Sign in' }).click());
    if (changes) {
      await timed('model', () => page.locator('#model').selectOption('first_touch'));
      await timed('period', () => page.getByLabel('Period').selectOption('90'));
    }
    return rounds;
  } finally {
    await context.close();
  }
}

/** ms to send `requests` with the read key, one after the other or all at once, each answer read to its end. */
async function replay(url: string, demo: Demo, requests: string[], together: boolean): Promise<number> {
  const headers = { authorization: demo.read_api_key, 'data-client-id': demo.client_id };
  const one = async (request: string) => {
    const response = await fetch(`${url}${request}`, { headers });
    const text = await response.text();
    if (!response.ok) throw new Error(`replay: ${response.status} ${request}: ${text.slice(0, 300)}`);
  };
  const started = performance.now();
  if (together) await Promise.all(requests.map(one));
  else for (const request of requests) await one(request);
  return performance.now() - started;
}

interface Spread {
  min: number;
  median: number;
  max: number;
}

function spread(values: number[]): Spread {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return { min: NaN, median: NaN, max: NaN };
  const middle = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { min: sorted[0]!, median, max: sorted.at(-1)! };
}

const ms = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? '' : String(Math.round(value)));
const roundSpread = ({ min, median, max }: Spread) => ({ min: Math.round(min), median: Math.round(median), max: Math.round(max) });

function printTable(header: string[], rows: string[][]) {
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((row) => row[i]!.length)));
  for (const line of [header, ...rows]) console.log(line.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
}

const store = await newStore();
let server: Server | undefined;
let browser: Browser | undefined;
try {
  console.log(`dashboard on the demo shop (${DAYS ? `${DAYS} days` : 'the demo\'s default, a year'}), ${store.name} store: a cold sign-in, then ${RUNS} more`);
  const filling = performance.now();
  const demo = await runDemo(store);
  console.log(`tributary demo: ${((performance.now() - filling) / 1000).toFixed(0)} s, client ${demo.client_id}`);
  // The browser is started first: the cold sign-in follows the server's start-up at once.
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  server = await serve(store);
  console.log(`tributary serve: ready in ${(server.startupMs / 1000).toFixed(1)} s`);

  const cold = (await visit(browser, server.url, demo, false))['sign-in']!;
  const line = (label: string, round: Round) =>
    console.log(`${label}: ${SIGNALS['sign-in'].filter((signal) => round.shown[signal] !== undefined).map((signal) => `${signal} ${ms(round.shown[signal])} ms`).join(', ')}`);
  line('sign-in, cold', cold);
  const warm: Partial<Record<Action, Round>>[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const rounds = await visit(browser, server.url, demo, true);
    warm.push(rounds);
    console.log(
      `run ${run}: sign-in: ${SIGNALS['sign-in'].map((signal) => `${signal} ${ms(rounds['sign-in']!.shown[signal])} ms`).join(', ')}; ` +
        `model: ${ms(rounds.model!.shown.all)} ms; period: ${ms(rounds.period!.shown.all)} ms`,
    );
  }
  await browser.close();
  browser = undefined;

  // The ceilings, the browser closed: the page's requests of the first warm run, replayed.
  const recorded = warm[0]!;
  const { requests: signInRequests, picked } = recorded['sign-in']!;
  const of = (parts: Part[]) => signInRequests.filter((request) => parts.includes(partOf(request, picked)));
  const groups: Record<string, string[]> = {
    figures: of(WAITED_FOR.figures),
    all: of(WAITED_FOR.all),
    feeds: of(WAITED_FOR.feeds),
    model: recorded.model!.requests,
    period: recorded.period!.requests,
  };
  console.log(`\nthe page's requests under /v1/ (run 1), in the order sent, by what they are for:`);
  for (const action of ['sign-in', 'model', 'period'] as const) {
    const round = recorded[action]!;
    for (const request of round.requests) console.log(`  ${action}, ${partOf(request, round.picked)}: ${decodeURIComponent(request)}`);
  }
  const replays: Record<string, { requests: number; oneByOne: Spread; atOnce: Spread }> = {};
  for (const [name, requests] of Object.entries(groups)) {
    await replay(server.url, demo, requests, false); // connections opened, as the page's are
    const oneByOne: number[] = [];
    const atOnce: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      oneByOne.push(await replay(server.url, demo, requests, false));
      atOnce.push(await replay(server.url, demo, requests, true));
    }
    replays[name] = { requests: requests.length, oneByOne: spread(oneByOne), atOnce: spread(atOnce) };
  }
  const trivial: number[] = [];
  await replay(server.url, demo, ['/v1/client'], false);
  for (let n = 0; n < ROUND_TRIPS; n++) trivial.push(await replay(server.url, demo, ['/v1/client'], false));

  const across = (action: Action, signal: Signal, what: 'shown' | 'answered') => spread(warm.map((rounds) => rounds[action]![what][signal] ?? NaN));
  type Row = { label: string; runs: number; page: Spread; answered: Spread; requests: number; ceiling?: string };
  const single = (value: number | undefined) => spread([value ?? NaN]);
  const rows: Row[] = [
    { label: 'sign-in, cold: figures shown', runs: 1, page: single(cold.shown.figures), answered: single(cold.answered.figures), requests: of(WAITED_FOR.figures).length },
    { label: 'sign-in, cold: all shown', runs: 1, page: single(cold.shown.all), answered: single(cold.answered.all), requests: of(WAITED_FOR.all).length },
    { label: 'sign-in, cold: feeds', runs: 1, page: single(cold.shown.feeds), answered: single(cold.answered.feeds), requests: of(WAITED_FOR.feeds).length },
    { label: 'sign-in: figures shown', runs: RUNS, page: across('sign-in', 'figures', 'shown'), answered: across('sign-in', 'figures', 'answered'), requests: groups.figures!.length, ceiling: 'figures' },
    { label: 'sign-in: all shown', runs: RUNS, page: across('sign-in', 'all', 'shown'), answered: across('sign-in', 'all', 'answered'), requests: groups.all!.length, ceiling: 'all' },
    { label: 'sign-in: feeds', runs: RUNS, page: across('sign-in', 'feeds', 'shown'), answered: across('sign-in', 'feeds', 'answered'), requests: groups.feeds!.length, ceiling: 'feeds' },
    { label: 'model → first_touch: all shown', runs: RUNS, page: across('model', 'all', 'shown'), answered: across('model', 'all', 'answered'), requests: groups.model!.length, ceiling: 'model' },
    { label: 'period → last 90 days: all shown', runs: RUNS, page: across('period', 'all', 'shown'), answered: across('period', 'all', 'answered'), requests: groups.period!.length, ceiling: 'period' },
  ];
  const roundTrip = spread(trivial);

  console.log(`\n${store.name}: ms from the click (or the change) to the frame that shows it; min / median / max of the runs`);
  console.log('last answer: when the last answer the page waited for came in (median); replayed: the same requests from this process, median of');
  console.log(`${RUNS} replays, one after the other (the store's time for them) and all at once; < 1 s: every run under ${TARGET_MS} ms`);
  printTable(
    ['', 'runs', 'requests', 'min', 'median', 'max', 'last answer', 'replayed one by one', 'replayed at once', '< 1 s'],
    [
      ...rows.map((row) => {
        const ceiling = row.ceiling ? replays[row.ceiling] : undefined;
        return [
          row.label,
          String(row.runs),
          String(row.requests),
          ms(row.page.min),
          ms(row.page.median),
          ms(row.page.max),
          ms(row.answered.median),
          ms(ceiling?.oneByOne.median),
          ms(ceiling?.atOnce.median),
          row.page.max < TARGET_MS ? 'yes' : 'no',
        ];
      }),
      ['GET /v1/client round trip', String(ROUND_TRIPS), '1', roundTrip.min.toFixed(1), roundTrip.median.toFixed(1), roundTrip.max.toFixed(1), '', '', '', ''],
    ],
  );
  const summary = {
    bench: 'dashboard',
    store: store.name,
    demo_days: DAYS ? Number(DAYS) : 365,
    runs: RUNS,
    cold_ms: { figures: Math.round(cold.shown.figures!), all: Math.round(cold.shown.all!), feeds: Math.round(cold.shown.feeds!) },
    warm_ms: { figures: roundSpread(rows[3]!.page), all: roundSpread(rows[4]!.page), feeds: roundSpread(rows[5]!.page) },
    model_change_ms: roundSpread(rows[6]!.page),
    period_change_ms: roundSpread(rows[7]!.page),
    replayed_median_ms: Object.fromEntries(
      Object.entries(replays).map(([name, { requests, oneByOne, atOnce }]) => [name, { requests, one_by_one: Math.round(oneByOne.median), at_once: Math.round(atOnce.median) }]),
    ),
    round_trip_ms: { min: Number(roundTrip.min.toFixed(1)), median: Number(roundTrip.median.toFixed(1)), max: Number(roundTrip.max.toFixed(1)) },
    figures_under_1s: cold.shown.figures! < TARGET_MS && rows[3]!.page.max < TARGET_MS,
  };
  console.log(JSON.stringify(summary));
} finally {
  await browser?.close();
  await server?.stop();
  await store.drop();
}
