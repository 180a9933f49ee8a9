// The dashboard: plain JavaScript over the API (no framework, no build step), uPlot for the chart.
// The credentials live in sessionStorage, for this tab only, and go out in the API's headers.

const CREDENTIALS = 'tributary.credentials';
const TABLE_METRICS = ['spend', 'rev', 'roas', 'cac', 'txns', 'visits'];
/** The levels rows expand through, each with the column naming its objects and the one of their ids. */
const LEVELS = [
  { level: 'platform', name: 'platform', id: 'platform' },
  { level: 'campaign', name: 'campaign', id: 'campaign_id' },
  { level: 'adset', name: 'adset', id: 'adset_id' },
  { level: 'ad', name: 'ad', id: 'ad_id' },
];

const $ = (id) => document.getElementById(id);
const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
};

class ApiFailure extends Error {
  constructor(status, envelope) {
    super(envelope?.message ?? `The server answered ${status}`);
    this.status = status;
    this.requestId = envelope?.request_id ?? null;
    this.errors = envelope?.errors ?? null;
  }
}

const credentials = () => JSON.parse(sessionStorage.getItem(CREDENTIALS) ?? 'null');

async function api(path, init = {}) {
  const { clientId, apiKey } = credentials() ?? {};
  const headers = { authorization: apiKey ?? '', 'data-client-id': clientId ?? '' };
  if (init.body) headers['content-type'] = 'application/json';
  const response = await fetch(path, { ...init, headers, cache: 'no-store', credentials: 'omit' });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiFailure(response.status, body);
  return body;
}

function showError(error) {
  const box = $('error');
  box.replaceChildren();
  if (!error) {
    box.hidden = true;
    return;
  }
  box.append(el('strong', { text: error.message }));
  for (const item of error.errors ?? []) box.append(el('div', { text: `${item.loc}: ${item.msg}` }));
  if (error.requestId) box.append(el('div', {}, 'Request id: ', el('code', { text: error.requestId })));
  box.hidden = false;
}

// Dates ------------------------------------------------------------------------------------
// A report's days are local days of the client's time zone (the feeds answer names it), not of
// the browser's: "yesterday" in Tokyo is not yesterday in New York.

const DAY_MS = 86_400_000;
/** Calendar arithmetic on plain dates, done in UTC where no day is 23 or 25 hours long. */
const addDays = (date, days) => new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** The date it is at `now` in `timeZone`, as YYYY-MM-DD. */
function localToday(timeZone, now) {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  const part = (type) => parts.find((candidate) => candidate.type === type).value;
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/** The period picked, in the client's days: the last N days end yesterday, as exports' LAST_N_DAYS do; a custom one is as entered. */
function pickedPeriod(timeZone, now) {
  const choice = $('period').value;
  if (choice === 'custom') return { start_date: $('from').value, end_date: $('to').value, timeZone };
  const today = localToday(timeZone, now);
  return { start_date: addDays(today, -Number(choice)), end_date: addDays(today, -1), timeZone };
}

/** The period of the last load, fixed when it started: every request of the page asks these days. */
let shown = null;

/** "31 Oct – 29 Nov 2026 (America/New_York)" in the reader's language, each date also as a <time>. */
function describePeriod({ start_date, end_date, timeZone }) {
  const sameYear = start_date.slice(0, 4) === end_date.slice(0, 4);
  const day = (date, withYear) =>
    el('time', {
      datetime: date,
      text: new Intl.DateTimeFormat(undefined, { timeZone: 'UTC', day: 'numeric', month: 'short', ...(withYear ? { year: 'numeric' } : {}) }).format(Date.parse(`${date}T00:00:00Z`)),
    });
  return [day(start_date, !sameYear), ' – ', day(end_date, true), ` (${timeZone})`];
}

function options() {
  return { start_date: shown.start_date, end_date: shown.end_date, model: $('model').value, window: $('window').value, mode: $('mode').value };
}

const report = (query) => api(`/v1/reports/performance?${new URLSearchParams(query)}`);

// Formatting ---------------------------------------------------------------------------------

let currency = null;
const money = (value) =>
  value === null || value === undefined
    ? '–'
    : currency
      ? new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 2 }).format(value)
      : new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 }).format(value);
const decimal = (digits) => (value) => (value === null || value === undefined ? '–' : new Intl.NumberFormat(undefined, { maximumFractionDigits: digits }).format(value));
const FORMATS = { spend: money, rev: money, roas: decimal(2), cac: money, txns: decimal(2), visits: decimal(0) };

// The chart ----------------------------------------------------------------------------------

let plot = null;
const cssColor = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

let chartRows = [];

/** Every day of the period, those without rows at 0 (and no MER): the chart shows gaps in data as they are. */
function everyDay(rows, { start_date, end_date }) {
  const byDate = new Map(rows.map((row) => [row.date, row]));
  const days = [];
  for (let day = Date.parse(`${start_date}T00:00:00Z`); day <= Date.parse(`${end_date}T00:00:00Z`); day += 86_400_000) {
    const date = new Date(day).toISOString().slice(0, 10);
    days.push(byDate.get(date) ?? { date, spend: 0, rev: 0, mer: null });
  }
  return days;
}

function drawChart(rows) {
  chartRows = rows;
  const container = $('chart');
  plot?.destroy();
  plot = null;
  const empty = rows.every((row) => !row.spend && !row.rev);
  $('chart-empty').hidden = !empty;
  container.hidden = empty;
  if (empty) return;
  const data = [
    rows.map((row) => Date.parse(`${row.date}T00:00:00Z`) / 1000),
    rows.map((row) => row.spend),
    rows.map((row) => row.rev),
    rows.map((row) => row.mer),
  ];
  const axis = { stroke: cssColor('--muted'), grid: { stroke: cssColor('--line') }, ticks: { stroke: cssColor('--line') } };
  plot = new window.uPlot(
    {
      width: container.clientWidth,
      height: 300,
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, money: {}, mer: {} },
      series: [
        { label: 'Day' },
        { label: 'Spend', scale: 'money', stroke: cssColor('--spend'), width: 2, value: (_, v) => money(v) },
        { label: 'Attributed revenue', scale: 'money', stroke: cssColor('--revenue'), width: 2, value: (_, v) => money(v) },
        { label: 'MER', scale: 'mer', stroke: cssColor('--mer'), width: 2, dash: [6, 4], value: (_, v) => decimal(2)(v) },
      ],
      axes: [
        // Days, weeks or months apart, never hours: the points are days.
        { ...axis, incrs: [1, 2, 3, 7, 14, 28].map((days) => days * 86_400), values: (_, ticks) => ticks.map((tick) => new Date(tick * 1000).toISOString().slice(5, 10)) },
        { ...axis, scale: 'money', size: 70, values: (_, ticks) => ticks.map((tick) => decimal(0)(tick)) },
        { ...axis, scale: 'mer', side: 1, size: 50, grid: { show: false }, label: 'MER' },
      ],
    },
    data,
    container,
  );
}

addEventListener('resize', () => plot?.setSize({ width: $('chart').clientWidth, height: 300 }));
// The chart's colours are read from the page's when drawn: drawn again when the scheme changes.
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => plot && drawChart(chartRows));

// The table ----------------------------------------------------------------------------------

/** Rows fetched per level for the current options, and which rows are open. */
let tableRows = {};
let totals = {};
const expanded = new Set();
let sort = { key: 'spend', descending: true };

const rowKey = (row, depth) => LEVELS.slice(0, depth + 1).map((level) => row[level.id] ?? '').join('\u0000');

async function rowsOf(depth) {
  // This load's rows: an answer to an earlier load, come late, lands in that load's, not in the one shown.
  const rows = tableRows;
  if (!rows[depth]) {
    const answer = await report({ ...options(), level: LEVELS[depth].level, granularity: 'PERIOD', metrics: TABLE_METRICS.join(',') });
    rows[depth] = answer.rows;
    if (depth === 0 && rows === tableRows) {
      totals = answer.totals;
      currency = answer.currency;
    }
  }
  return tableRows[depth];
}

function sorted(rows) {
  const { key, descending } = sort;
  const value = (row) => (key === 'name' ? String(row.label) : (row[key] ?? -Infinity));
  return [...rows].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    const order = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return descending ? -order : order;
  });
}

/** A figure as shown, with the API's value beside it, as the API answered it. */
const metricCell = (metric, value) => el('td', { class: 'num', 'data-metric': metric, 'data-value': value === null || value === undefined ? '' : String(value), text: FORMATS[metric](value) });

function renderTable() {
  const body = document.querySelector('#performance tbody');
  const lines = [];
  const add = (depth, parentKey) => {
    const children = (tableRows[depth] ?? [])
      .filter((row) => depth === 0 || rowKey(row, depth - 1) === parentKey)
      .map((row) => ({ ...row, label: row[LEVELS[depth].name] ?? row[LEVELS[depth].id] ?? '(none)' }));
    for (const row of sorted(children)) {
      const key = rowKey(row, depth);
      const name = el('td', { class: 'name', title: row.label });
      // A platform without ad objects (a channel, unattributed) has nothing to open.
      if (depth < LEVELS.length - 1 && (depth > 0 || row.platform !== 'unattributed')) {
        const toggle = el('button', { type: 'button', class: 'toggle', 'aria-expanded': String(expanded.has(key)), text: row.label });
        toggle.addEventListener('click', () => toggleRow(key, depth + 1));
        name.append(toggle);
      } else name.textContent = row.label;
      lines.push(
        el('tr', { 'data-depth': String(depth), 'data-key': key }, name, ...TABLE_METRICS.map((metric) => metricCell(metric, row[metric]))),
      );
      if (expanded.has(key)) add(depth + 1, key);
    }
  };
  add(0, '');
  body.replaceChildren(...lines);
  const foot = document.querySelector('#performance tfoot');
  const hasRows = (tableRows[0] ?? []).length > 0;
  $('table-empty').hidden = hasRows;
  $('performance').hidden = !hasRows;
  $('download').disabled = !hasRows;
  foot.replaceChildren(
    el(
      'tr',
      {},
      el('td', { text: currency || !hasRows ? 'Total' : 'Total (several currencies: not added)' }),
      ...TABLE_METRICS.map((metric) => metricCell(metric, totals[metric])),
    ),
  );
  for (const header of document.querySelectorAll('#performance thead th')) {
    header.setAttribute('aria-sort', header.dataset.key === sort.key ? (sort.descending ? 'descending' : 'ascending') : 'none');
  }
}

async function toggleRow(key, childDepth) {
  if (expanded.has(key)) {
    for (const open of [...expanded]) if (open.startsWith(key)) expanded.delete(open);
  } else {
    try {
      await rowsOf(childDepth);
      expanded.add(key);
    } catch (error) {
      showError(error);
    }
  }
  renderTable();
  document.querySelector(`#performance tr[data-key="${CSS.escape(key)}"] .toggle`)?.focus();
}

function setUpSorting() {
  for (const header of document.querySelectorAll('#performance thead th')) {
    const label = header.textContent;
    const button = el('button', { type: 'button', text: label });
    button.addEventListener('click', () => {
      sort = { key: header.dataset.key, descending: sort.key === header.dataset.key ? !sort.descending : header.dataset.key !== 'name' };
      renderTable();
    });
    header.replaceChildren(button);
  }
}

/** The table as shown, as an export of the API: the same options at the deepest level open, one row per day. */
async function downloadCsv() {
  const status = $('download-status');
  const button = $('download');
  button.disabled = true;
  try {
    const deepest = Math.max(0, ...[...expanded].map((key) => key.split('\u0000').length));
    const { start_date, end_date, model, window: lookback, mode } = options();
    status.textContent = 'Preparing the export…';
    const { id } = await api('/v1/exports/data-export', {
      method: 'POST',
      body: JSON.stringify({
        level: LEVELS[deepest].level,
        period_type: 'FIXED',
        period_options: { period_starting_at: start_date, period_ending_at: end_date },
        options: { include_ids: true },
        attribution_options: { attribution_models: [model], attribution_windows: [lookback], accounting_modes: [mode] },
        metrics: TABLE_METRICS.map((metric) => ({ id: metric })),
      }),
    });
    let result;
    do {
      await new Promise((resolve) => setTimeout(resolve, 500));
      result = await api(`/v1/exports/data-export/result/${id}`);
    } while (result.status === 'PENDING');
    if (result.status !== 'SUCCESS') throw new Error(`The export failed: ${JSON.stringify(result.warn)}`);
    // The links are signed: downloading needs no key.
    for (const link of result.result) el('a', { href: link, download: '' }).click();
    status.textContent = `Downloaded ${result.result.length} file${result.result.length > 1 ? 's' : ''} (daily rows, ${LEVELS[deepest].level} level).`;
  } catch (error) {
    status.textContent = '';
    showError(error);
  } finally {
    button.disabled = false;
  }
}

// Data health -------------------------------------------------------------------------------

const FEEDS = [
  ['orders', 'Orders'],
  ['spend', 'Spend records'],
  ['touchpoints', 'Touchpoints'],
];

function renderFeeds(health) {
  const { time_zone: timeZone } = health;
  const when = (at) =>
    at ? new Date(at).toLocaleString(undefined, { timeZone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }) : 'never';
  const stale = (at) => !at || Date.now() - Date.parse(at) > 2 * 86_400_000;
  $('last-received').replaceChildren(
    ...FEEDS.map(([feed, label]) =>
      el('div', {}, el('dt', { text: `${label}: last received` }), el('dd', { class: stale(health.last_received_at[feed]) ? 'stale' : '', text: when(health.last_received_at[feed]) })),
    ),
  );
  $('feeds-zone').textContent = timeZone;
  $('feeds-empty').hidden = FEEDS.some(([feed]) => health.last_received_at[feed]);
  document.querySelector('#feeds tbody').replaceChildren(
    ...[...health.days].reverse().map((day) =>
      el('tr', {}, el('th', { scope: 'row', text: day.date }), ...FEEDS.map(([feed]) => el('td', { class: day[feed] === 0 ? 'num zero' : 'num', text: String(day[feed]) }))),
    ),
  );
}

// Loading -------------------------------------------------------------------------------------

let loading = 0;

async function load() {
  // An incomplete custom period asks nothing: a load under way finishes and says what it shows.
  if ($('period').value === 'custom' && !($('from').value && $('to').value)) return;
  const mine = ++loading;
  $('dashboard').setAttribute('aria-busy', 'true');
  $('download-status').textContent = '';
  try {
    // The feeds answer names the client's time zone, whose days the period is: it comes first.
    const health = await api('/v1/health/feeds');
    if (mine !== loading) return;
    shown = pickedPeriod(health.time_zone, new Date());
    tableRows = {};
    $('period-shown').replaceChildren(...describePeriod(shown));
    const [chart] = await Promise.all([
      report({ ...options(), level: 'total', granularity: 'DAILY', metrics: 'spend,rev,mer' }),
      rowsOf(0),
      showLearnt(options().model, shown, options().window),
    ]);
    const openDepths = new Set([...expanded].map((key) => key.split('\u0000').length));
    await Promise.all([...openDepths].map(rowsOf));
    if (mine !== loading) return;
    showError(null);
    drawChart(everyDay(chart.rows, shown));
    renderTable();
    renderFeeds(health);
  } catch (error) {
    if (mine !== loading) return;
    if (error.status === 401) signOut();
    showError(error);
  } finally {
    if (mine === loading) $('dashboard').setAttribute('aria-busy', 'false');
  }
}

/** A bar as long as a weight (of 1): its width set through the CSSOM, which the pages' policy allows where a style attribute is refused. */
function weightBar(weight) {
  const bar = el('span', { class: 'bar' });
  bar.style.width = `${weight * 100}%`;
  return bar;
}

/** The models offered, by id: their names, and whether they learn from the client's paths. */
let models = new Map();

const longDay = (instant, timeZone) => new Intl.DateTimeFormat(undefined, { timeZone, day: 'numeric', month: 'short', year: 'numeric' }).format(Date.parse(instant));

/**
 * What a data-driven model learnt before the period shown: each channel's weight, which the
 * credit of an order is shared by, what it was learnt from, and a warning when that was few orders.
 */
async function showLearnt(model, { start_date, timeZone }, lookback) {
  if (!models.get(model)?.data_driven) {
    $('learnt').hidden = true;
    return;
  }
  const { name, learnt } = await api(`/v1/attribution/models/${model}?${new URLSearchParams({ window: lookback, period_from: start_date })}`);
  const { training, paths, channels } = learnt;
  const lastDay = new Date(Date.parse(training.before) - 1).toISOString();
  $('learnt-title').textContent = `What ${name} learnt`;
  $('learnt-summary').textContent =
    `From ${paths.converting.toLocaleString()} orders with a path and ${paths.not_converting.toLocaleString()} visitors who did not buy, ` +
    `${longDay(training.from, timeZone)} – ${longDay(lastDay, timeZone)}. Each order's credit is shared among the channels of its path by these weights.`;
  const warning = $('model-warning');
  warning.hidden = learnt.warning === null;
  warning.textContent =
    paths.converting === 0
      ? 'No order of that time had a path to learn from: every order here is shared equally among its touchpoints, as Linear shares it.'
      : `Learnt from few orders (${paths.converting.toLocaleString()}; about 300 are needed): the split between channels may be chance.`;
  const effect = model === 'markov' ? 'removal_effect' : 'shapley_value';
  $('learnt-effect').textContent = model === 'markov' ? 'Removal effect' : 'Shapley value';
  const percent = (value) => `${(value * 100).toFixed(1)}%`;
  $('learnt-channels').hidden = channels.length === 0;
  $('learnt-channels').tBodies[0].replaceChildren(
    ...[...channels]
      .sort((a, b) => b.weight - a.weight || (a.channel < b.channel ? -1 : 1))
      .map((channel) =>
        el(
          'tr',
          {},
          el('th', { scope: 'row', text: channel.channel }),
          el('td', { class: 'weight' }, weightBar(channel.weight), el('span', { text: percent(channel.weight) })),
          el('td', { class: 'num', text: channel[effect].toFixed(4) }),
        ),
      ),
  );
  $('learnt').hidden = false;
}

async function loadModels() {
  // Our own ids: the hosted API's aliases, which exports take too, name the same models.
  const { models: offered } = await api('/v1/attribution/models');
  models = new Map(offered.map((model) => [model.id, model]));
  $('model').replaceChildren(...offered.map((model) => el('option', { value: model.id, text: model.name })));
  $('model').value = models.has('linear') ? 'linear' : offered[0].id;
}

function showScreen(signedIn) {
  $('sign-in-screen').hidden = signedIn;
  $('dashboard').hidden = !signedIn;
  $('sign-out').hidden = !signedIn;
}

function signOut() {
  sessionStorage.removeItem(CREDENTIALS);
  plot?.destroy();
  plot = null;
  showScreen(false);
}

async function start() {
  try {
    await loadModels();
  } catch (error) {
    if (error.status === 401) signOut();
    showError(error);
    return;
  }
  showScreen(true);
  await load();
}

$('sign-in').addEventListener('submit', async (event) => {
  event.preventDefault();
  sessionStorage.setItem(CREDENTIALS, JSON.stringify({ clientId: $('client-id').value.trim(), apiKey: $('api-key').value.trim() }));
  $('api-key').value = '';
  await start();
});
$('sign-out').addEventListener('click', () => {
  signOut();
  showError(null);
});
$('period').addEventListener('change', () => {
  const custom = $('period').value === 'custom';
  $('from-field').hidden = !custom;
  $('to-field').hidden = !custom;
  // A custom period starts as the one shown, in the client's days.
  if (custom && !$('from').value && shown) {
    $('from').value = shown.start_date;
    $('to').value = shown.end_date;
  }
  load();
});
for (const id of ['from', 'to', 'model', 'window', 'mode']) $(id).addEventListener('change', load);
$('download').addEventListener('click', downloadCsv);
setUpSorting();

if (credentials()) start();
else showScreen(false);
