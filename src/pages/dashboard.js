// The dashboard: plain JavaScript over the API (no framework, no build step), uPlot for the chart.
// The credentials live in sessionStorage, for this tab only, and go out in the API's headers.
//
// One engine: every figure shown is a figure of GET /v1/reports/performance (the plan of rows
// exports run), as the API answered it. The page adds up or divides API figures only where the
// API has no such total (docs/dashboard.md lists each): the attributed revenue of the platforms
// with spend, and the ratios and changes made of it.

const CREDENTIALS = 'tributary.credentials';
const COMPARED = 'tributary.compared-models';
/** The longest period a report covers, in days (MAX_REPORT_DAYS, src/reports/performance.ts): a longer one is not asked. */
const MAX_REPORT_DAYS = 92;
const TABLE_METRICS = ['spend', 'rev', 'roas', 'cac', 'txns', 'visits'];
/** The store's figures of a period (level=total): they follow no attribution model. */
const STORE_METRICS = ['spend', 'revenue', 'transactions', 'new_customers', 'returning_customers', 'mer', 'blended_cac'];
/** The models compared until the reader picks others; the model picked is always among them. */
const DEFAULT_COMPARED = ['first_touch', 'last_touch', 'linear'];
/** The levels rows expand through, each with the column naming its objects, the one of their ids, and what a row without either is. */
const LEVELS = [
  { level: 'platform', name: 'platform', id: 'platform', none: '(no platform)' },
  { level: 'campaign', name: 'campaign', id: 'campaign_id', none: '(no campaign)' },
  { level: 'adset', name: 'adset', id: 'adset_id', none: '(no ad set)' },
  { level: 'ad', name: 'ad', id: 'ad_id', none: '(no ad)' },
];
/**
 * A touchpoint without a platform is reported under its channel as the platform (src/attribution/
 * attributed-rows.ts), an order without a path under `unattributed`: those rows carry no spend and
 * have no ad objects. Their names for people.
 */
const CHANNELS = {
  direct: 'Direct',
  email: 'E-mail',
  sms: 'SMS',
  organic_search: 'Organic search',
  organic_social: 'Organic social',
  referral: 'Referral',
  other: 'Other channels',
  paid: 'Paid, no platform named',
};

const $ = (id) => document.getElementById(id);
const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else if (value !== undefined && value !== null) node.setAttribute(name, value);
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
/** The days from `first` to `last`, both counted. */
const daysOf = (first, last) => Math.round((Date.parse(`${last}T00:00:00Z`) - Date.parse(`${first}T00:00:00Z`)) / DAY_MS) + 1;

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

/** The period of the same length just before `period`: what its figures are compared with. */
function previousOf({ start_date, end_date, timeZone }) {
  const days = daysOf(start_date, end_date);
  return { start_date: addDays(start_date, -days), end_date: addDays(start_date, -1), timeZone };
}

const shortDate = (date, withYear = true) =>
  new Intl.DateTimeFormat(undefined, { timeZone: 'UTC', day: 'numeric', month: 'short', ...(withYear ? { year: 'numeric' } : {}) }).format(Date.parse(`${date}T00:00:00Z`));

/**
 * Why the custom period picked cannot be shown, in the reader's words; null when it can. Only a
 * custom period can be wrong: the others are made by the page. Nothing is asked of the API for a
 * wrong one.
 */
function periodProblem() {
  if ($('period').value !== 'custom') return null;
  const [from, to] = [$('from').value, $('to').value];
  if (!from && !to) return 'Pick the first and the last day of the period to see its figures.';
  if (!from) return 'Pick the first day of the period to see its figures.';
  if (!to) return 'Pick the last day of the period to see its figures.';
  if (to < from) return `The period ends on ${shortDate(to)}, before it starts on ${shortDate(from)}: pick a last day on or after the first.`;
  const days = daysOf(from, to);
  if (days > MAX_REPORT_DAYS) {
    return `That period is ${days.toLocaleString()} days long: the dashboard shows at most ${MAX_REPORT_DAYS} days at a time. ` +
      'Pick a shorter period, or ask for a longer one as an export through the API.';
  }
  return null;
}

/** "31 Oct – 29 Nov 2026 (America/New_York)" in the reader's language, each date also as a <time>. */
function describePeriod({ start_date, end_date, timeZone }, withZone = true) {
  const sameYear = start_date.slice(0, 4) === end_date.slice(0, 4);
  const day = (date, withYear) => el('time', { datetime: date, text: shortDate(date, withYear) });
  return [day(start_date, !sameYear), ' – ', day(end_date, true), ...(withZone ? [` (${timeZone})`] : [])];
}

/** "the previous 30 days": what a change is against. */
const previousDays = (period) => {
  const days = daysOf(period.start_date, period.end_date);
  return days === 1 ? 'the previous day' : `the previous ${days} days`;
};

// Formatting ---------------------------------------------------------------------------------

const missing = (value) => value === null || value === undefined || Number.isNaN(value);
const moneyIn = (currency, digits = 2) => (value) =>
  missing(value)
    ? '–'
    : currency
      ? new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: digits, minimumFractionDigits: digits === 0 ? 0 : undefined }).format(value)
      : new Intl.NumberFormat(undefined, { maximumFractionDigits: digits }).format(value);
const decimal = (digits) => (value) => (missing(value) ? '–' : new Intl.NumberFormat(undefined, { maximumFractionDigits: digits }).format(value));
/** Always two decimals (1.00, not 1): ratios (ROAS, MER), and attributed transactions, which are shares of orders. */
const twoDecimals = (value) => (missing(value) ? '–' : new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(value));
const percent = (value, digits = 1) => (missing(value) ? '–' : new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: digits }).format(value));
/** A large amount without its cents, a small one with them. */
const headlineMoney = (currency) => (value) => moneyIn(currency, !missing(value) && Math.abs(value) >= 1000 ? 0 : 2)(value);
const tableFormats = (currency) => ({ spend: moneyIn(currency), rev: moneyIn(currency), roas: twoDecimals, cac: moneyIn(currency), txns: twoDecimals, visits: decimal(0) });

/** A number as an attribute: as the API (or the page's sum) has it, '' for none. */
const attribute = (value) => (missing(value) ? '' : String(value));

// Reports --------------------------------------------------------------------------------------

const report = (query) => api(`/v1/reports/performance?${new URLSearchParams(query)}`);
const periodQuery = ({ start_date, end_date }) => ({ start_date, end_date });

/**
 * The load shown: its period and the one before, the options picked, and the API's answers.
 * Answers to a load come late land in its own view, never in the one shown after it.
 */
let view = null;

function newView(period) {
  return {
    period,
    previous: previousOf(period),
    model: $('model').value,
    window: $('window').value,
    mode: $('mode').value,
    /** Rows of the table per model and depth ("linear/1"): promises, and the answers once in. */
    asked: new Map(),
    answers: new Map(),
  };
}

const attributionQuery = (v, model = v.model) => ({ ...periodQuery(v.period), model, window: v.window, mode: v.mode });

/** The models whose revenue the comparison shows: the one picked first, then those ticked, in the catalog's order. */
function comparedModels(v) {
  const ticked = new Set(compared);
  return [v.model, ...[...models.keys()].filter((model) => model !== v.model && ticked.has(model))];
}

/** A report of the view under `key` ("linear/1"), asked once per view. */
function askOnce(v, key, query) {
  if (!v.asked.has(key)) {
    const asked = report(query).then(
      (answer) => {
        v.answers.set(key, answer);
        return answer;
      },
      (error) => {
        v.asked.delete(key);
        throw error;
      },
    );
    v.asked.set(key, asked);
  }
  return v.asked.get(key);
}

/** The table's metrics for the model picked, revenue for the others (and spend, which names a channel without spend). */
const metricsOf = (v, model) => (model === v.model ? TABLE_METRICS.join(',') : 'spend,rev');

/** The rows of one level for one model. */
const rowsFor = (v, model, depth) =>
  askOnce(v, `${model}/${depth}`, { ...attributionQuery(v, model), level: LEVELS[depth].level, granularity: 'PERIOD', metrics: metricsOf(v, model) });

/**
 * The paid channels' figures for one model: the rows of the platforms with spend in the period,
 * added up by the API. The picked model's by day, for the chart: their totals are the period's.
 */
const paidFor = (v, model) =>
  askOnce(v, `${model}/paid`, { ...attributionQuery(v, model), level: 'total', channels: 'paid', granularity: model === v.model ? 'DAILY' : 'PERIOD', metrics: metricsOf(v, model) });

/** Every level open of each model (every model compared, by default), with each model's paid total, asked side by side. */
const allRowsOf = (v, depths, shownModels = comparedModels(v)) =>
  Promise.all(shownModels.flatMap((model) => [paidFor(v, model), ...depths.map((depth) => rowsFor(v, model, depth))]));

const openDepths = () => [0, ...new Set([...expanded].map((key) => key.split('\u0000').length))];

/** Whether a platform row's platform carries spend in the period: a paid channel, as the API's channels=paid keeps them. */
const isPaid = (row) => Number(row.spend) !== 0;

// The headline -------------------------------------------------------------------------------

/** A change between two figures of the same kind: relative, or in percentage points for shares. */
function changeOf(current, previous, kind) {
  if (missing(current) || missing(previous)) return null;
  if (kind === 'points') return current - previous;
  if (previous === 0) return current === 0 ? 0 : null;
  return (current - previous) / Math.abs(previous);
}

function changeText(change, kind, current, previous, against) {
  if (missing(current)) return '\u00a0';
  if (current === 0 && previous === 0) return 'no change';
  if (change === null) return `none in ${against}`;
  const sign = change > 0 ? '+' : change < 0 ? '−' : '±';
  const size = Math.abs(change);
  const amount =
    kind === 'points'
      ? `${new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 }).format(size * 100)} pts`
      : new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: size < 0.1 ? 1 : 0 }).format(size);
  return `${sign}${amount} vs ${against}`;
}

/** Whether a rise is good news (revenue), bad news (CAC) or neither (spend), for the colour of its change. */
const GOOD_WHEN = { spend: 0, paid_rev: 1, roas: 1, mer: 1, transactions: 1, new_share: 1, blended_cac: -1, new_customers: 1, returning_customers: 1 };

function kpi({ id, label, value, previous, format, kind = 'relative', hint, follows, against }) {
  const change = changeOf(value, previous, kind);
  const tone = change === null || change === 0 || GOOD_WHEN[id] === 0 ? 'neutral' : Math.sign(change) === GOOD_WHEN[id] ? 'good' : 'bad';
  const arrow = change === null || change === 0 ? '' : change > 0 ? '▲ ' : '▼ ';
  return el(
    'div',
    { class: 'kpi', 'data-kpi': id },
    el('dt', { class: follows ? 'tagged' : null }, el('span', { text: label }), ...(follows ? [el('span', { class: 'follows', title: 'Follows the model, window and mode picked', text: 'model' })] : [])),
    el('dd', { class: 'value', 'data-value': attribute(value), text: format(value) }),
    el('dd', { class: `change ${tone}`, 'data-change': attribute(change), 'data-previous': attribute(previous) }, arrow ? el('span', { 'aria-hidden': 'true', text: arrow }) : '', changeText(change, kind, value, previous, against)),
    el('dd', { class: 'hint', text: hint }),
  );
}

/** The headline's figures, each with its value of the period before; the empty ones when nothing is shown. */
function renderHeadline(v) {
  const kpis = $('kpis');
  if (!v) {
    const blank = ['Spend', 'Attributed revenue', 'ROAS', 'MER', 'Orders', "New customers' share", 'Blended CAC'];
    kpis.replaceChildren(...blank.map((label) => el('div', { class: 'kpi empty-kpi' }, el('dt', { text: label }), el('dd', { class: 'value', 'data-value': '', text: '—' }), el('dd', { class: 'change neutral', text: '\u00a0' }), el('dd', { class: 'hint', text: '\u00a0' }))));
    $('headline-note').textContent = '';
    return;
  }
  const { store, storeBefore, paidBefore } = v;
  const [now, before] = [store.totals, storeBefore.totals];
  const [paid, paidThen] = [v.answers.get(`${v.model}/paid`).totals, paidBefore.totals];
  const money = headlineMoney(store.currency);
  const ratio = (numerator, denominator) => (missing(numerator) || missing(denominator) || denominator === 0 ? null : numerator / denominator);
  const against = previousDays(v.period);
  const modelName = models.get(v.model)?.name ?? v.model;
  const windowText = v.window === 'infinity' ? 'no window limit' : `${v.window}-day window`;
  kpis.replaceChildren(
    kpi({ id: 'spend', label: 'Spend', value: now.spend, previous: before.spend, format: money, hint: 'Every platform', against }),
    kpi({
      id: 'paid_rev',
      label: 'Attributed revenue',
      value: paid.rev,
      previous: paidThen.rev,
      format: money,
      hint: `Credited to paid channels (platforms with spend) by ${modelName}`,
      follows: true,
      against,
    }),
    kpi({ id: 'roas', label: 'ROAS', value: paid.roas, previous: paidThen.roas, format: twoDecimals, hint: 'Attributed revenue ÷ spend', follows: true, against }),
    kpi({ id: 'mer', label: 'MER', value: now.mer, previous: before.mer, format: twoDecimals, hint: `Store revenue ${money(now.revenue)} ÷ spend`, against }),
    kpi({ id: 'transactions', label: 'Orders', value: now.transactions, previous: before.transactions, format: decimal(0), hint: 'Every order, whatever its channel', against }),
    kpi({
      id: 'new_share',
      label: "New customers' share",
      value: ratio(now.new_customers, now.transactions),
      previous: ratio(before.new_customers, before.transactions),
      format: (value) => percent(value),
      kind: 'points',
      hint: missing(now.new_customers) || !now.transactions ? 'First orders ÷ orders' : `${decimal(0)(now.new_customers)} first orders of ${decimal(0)(now.transactions)}`,
      against,
    }),
    kpi({ id: 'blended_cac', label: 'Blended CAC', value: now.blended_cac, previous: before.blended_cac, format: money, hint: 'Spend ÷ new customers', against }),
  );
  const several = store.currency === null && store.rows.length > 0;
  $('headline-note').replaceChildren(
    'Compared with ',
    ...describePeriod(v.previous, false),
    `. Attributed revenue and ROAS follow the model, window and mode picked (${modelName}, ${windowText}, ${v.mode}); the other figures are the store's. `,
    several ? 'The period has amounts in several currencies, which are not added: those figures are left out.' : '',
  );
}

// New and returning customers ----------------------------------------------------------------

function renderCustomers(v) {
  const box = $('customers-figures');
  if (!v) {
    box.replaceChildren();
    return;
  }
  const against = previousDays(v.period);
  // returning_customers has no total (a customer returns in several buckets): the period's one row (one currency) has it.
  const returningOf = (answer) => (answer.rows.length === 0 ? 0 : answer.rows.length === 1 ? answer.rows[0].returning_customers : null);
  const figures = [
    { id: 'new_customers', label: 'New customers', value: v.store.totals.new_customers, previous: v.storeBefore.totals.new_customers, hint: 'First order ever in the period' },
    { id: 'returning_customers', label: 'Returning customers', value: returningOf(v.store), previous: returningOf(v.storeBefore), hint: 'Ordered before the period, and again in it' },
  ];
  const [fresh, returning] = figures.map((figure) => figure.value);
  const customers = missing(fresh) || missing(returning) ? null : fresh + returning;
  const bar = el('div', { class: 'split-bar', role: 'img', 'aria-label': customers ? `New ${percent(fresh / customers, 0)}, returning ${percent(returning / customers, 0)} of the customers` : 'No customers' });
  if (customers) {
    for (const [part, value] of [['new', fresh], ['returning', returning]].filter(([, count]) => count > 0)) {
      const span = el('span', { class: part });
      span.style.width = `${(value / customers) * 100}%`;
      bar.append(span);
    }
  }
  box.replaceChildren(
    el(
      'dl',
      { class: 'split' },
      ...figures.map(({ id, label, value, previous, hint }) => {
        const change = changeOf(value, previous, 'relative');
        return el(
          'div',
          { class: `split-figure ${id === 'new_customers' ? 'new' : 'returning'}`, 'data-metric': id },
          el('dt', {}, el('span', { class: 'swatch', 'aria-hidden': 'true' }), label),
          el('dd', { class: 'value', 'data-value': attribute(value), text: decimal(0)(value) }),
          el('dd', { class: 'share', text: customers ? `${percent(value / customers, 0)} of customers` : 'no customers' }),
          el('dd', { class: 'change neutral', 'data-change': attribute(change), 'data-previous': attribute(previous), text: changeText(change, 'relative', value, previous, against) }),
          el('dd', { class: 'hint', text: hint }),
        );
      }),
    ),
    bar,
  );
}

// The chart ----------------------------------------------------------------------------------

let plot = null;
const cssColor = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

let chartData = null;

/**
 * Every day of the period, those without rows at 0 (and no MER): the chart shows gaps in data as
 * they are. Spend, store revenue and MER are the API's `level=total` rows, the attributed revenue
 * of paid channels its `level=total&channels=paid` rows.
 */
function chartDays(v) {
  const byDate = new Map(v.daily.rows.map((row) => [row.date, row]));
  // Amounts in several currencies are not added, nor one of them shown as the day's: those days draw nothing.
  const several = (answer) => answer.currency === null && answer.rows.some((row) => row.currency !== null);
  const dailyPaid = v.answers.get(`${v.model}/paid`);
  const severalCurrencies = several(dailyPaid) || several(v.daily);
  const paidByDate = new Map(dailyPaid.rows.map((row) => [row.date, row.rev]));
  const days = [];
  for (let day = v.period.start_date; day <= v.period.end_date; day = addDays(day, 1)) {
    const row = byDate.get(day);
    days.push(
      severalCurrencies
        ? { date: day, spend: null, revenue: null, mer: null, paid: null }
        : { date: day, spend: row?.spend ?? 0, revenue: row?.revenue ?? 0, mer: row?.mer ?? null, paid: paidByDate.get(day) ?? 0 },
    );
  }
  return days;
}

function drawChart(days, currency) {
  chartData = days && { days, currency };
  const container = $('chart');
  plot?.destroy();
  plot = null;
  const several = days?.every((day) => day.spend === null);
  const empty = !days || several || days.every((day) => !day.spend && !day.revenue && !day.paid);
  $('chart-empty').hidden = !days || several || !empty;
  container.hidden = empty;
  $('chart-note').hidden = empty && !several;
  if (several) $('chart-note').textContent = "This period's amounts are in several currencies, which are not added: there is no daily total to draw.";
  if (empty) return;
  const money = moneyIn(currency);
  const data = [
    days.map((day) => Date.parse(`${day.date}T00:00:00Z`) / 1000),
    days.map((day) => day.spend),
    days.map((day) => day.revenue),
    days.map((day) => day.paid),
    days.map((day) => day.mer),
  ];
  const axis = { stroke: cssColor('--muted'), grid: { stroke: cssColor('--line') }, ticks: { stroke: cssColor('--line') } };
  const narrow = container.clientWidth < 500;
  plot = new window.uPlot(
    {
      width: container.clientWidth,
      height: narrow ? 240 : 300,
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, money: {}, mer: {} },
      legend: { live: !narrow },
      // At rest, the legend shows the last day's figures rather than dashes.
      hooks: { setLegend: [(u) => u.legend.idx == null && u.setLegend({ idx: days.length - 1 }, false)] },
      series: [
        { label: 'Day', value: (_, ts) => (ts === null ? '–' : shortDate(new Date(ts * 1000).toISOString().slice(0, 10))) },
        { label: 'Spend', scale: 'money', stroke: cssColor('--spend'), width: 2, value: (_, v) => money(v) },
        { label: 'Store revenue (all orders)', scale: 'money', stroke: cssColor('--store'), width: 2, value: (_, v) => money(v) },
        { label: 'Attributed revenue, paid channels', scale: 'money', stroke: cssColor('--revenue'), width: 2, fill: cssColor('--revenue-fill'), value: (_, v) => money(v) },
        { label: 'MER', scale: 'mer', stroke: cssColor('--mer'), width: 1.5, dash: [6, 4], value: (_, v) => twoDecimals(v) },
      ],
      axes: [
        // Days, weeks or months apart, never hours: the points are days.
        { ...axis, incrs: [1, 2, 3, 7, 14, 28].map((n) => n * 86_400), values: (_, ticks) => ticks.map((tick) => shortDate(new Date(tick * 1000).toISOString().slice(0, 10), false)) },
        { ...axis, scale: 'money', size: narrow ? 50 : 70, values: (_, ticks) => ticks.map((tick) => new Intl.NumberFormat(undefined, { notation: 'compact' }).format(tick)) },
        { ...axis, scale: 'mer', side: 1, size: narrow ? 36 : 50, grid: { show: false }, label: narrow ? '' : 'MER', values: (_, ticks) => ticks.map((tick) => decimal(1)(tick)) },
      ],
    },
    data,
    container,
  );
  plot.setLegend({ idx: days.length - 1 }, false);
}

addEventListener('resize', () => {
  if (!plot) return;
  const narrow = $('chart').clientWidth < 500;
  // Narrow and wide charts differ in more than size: drawn again when crossing.
  if (narrow !== plot.width < 500) drawChart(chartData.days, chartData.currency);
  else plot.setSize({ width: $('chart').clientWidth, height: narrow ? 240 : 300 });
});
// The chart's colours are read from the page's when drawn: drawn again when the scheme changes.
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => plot && drawChart(chartData.days, chartData.currency));

// The table ----------------------------------------------------------------------------------

const expanded = new Set();
let sort = { key: 'spend', descending: true };

const rowKey = (row, depth) => LEVELS.slice(0, depth + 1).map((level) => row[level.id] ?? '').join('\u0000');

/** What a row is called, and what kind of row it is: an ad object, a channel without a platform, unattributed orders, or an object without a name. */
function labelOf(row, depth) {
  if (depth === 0) {
    if (row.platform === 'unattributed') return { text: 'Unattributed', tag: 'no touchpoint', kind: 'unattributed' };
    if (Object.hasOwn(CHANNELS, row.platform) && !isPaid(row)) return { text: CHANNELS[row.platform], tag: 'channel, no ad platform', kind: 'channel' };
  }
  const { name, id, none } = LEVELS[depth];
  const text = row[name] || row[id];
  return text ? { text, kind: 'object' } : { text: none, kind: 'unnamed' };
}

/** The rows shown, in the order shown: each level's rows under their open parent, sorted. */
function linesOf(v) {
  const lines = [];
  const add = (depth, parentKey) => {
    const children = (v.answers.get(`${v.model}/${depth}`)?.rows ?? [])
      .filter((row) => depth === 0 || rowKey(row, depth - 1) === parentKey)
      .map((row) => ({ row, depth, key: rowKey(row, depth), label: labelOf(row, depth) }));
    for (const line of sorted(children)) {
      lines.push(line);
      if (expanded.has(line.key)) add(depth + 1, line.key);
    }
  };
  if (v) add(0, '');
  return lines;
}

function sorted(lines) {
  const { key, descending } = sort;
  const value = (line) => (key === 'name' ? line.label.text : (line.row[key] ?? -Infinity));
  return [...lines].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    const order = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return descending ? -order : order;
  });
}

/** A figure as shown, with the API's value beside it, as the API answered it. */
const metricCell = (format, metric, value) => el('td', { class: 'num', 'data-metric': metric, 'data-value': attribute(value), text: format(value) });

function nameCell({ depth, key, label }, { toggles }) {
  const cell = el('td', { class: `name ${label.kind}`, title: label.tag ? `${label.text}: ${label.tag}` : label.text });
  const text = el('span', { class: 'label', text: label.text });
  // A platform without ad objects (a channel, unattributed) has nothing to open.
  if (toggles && depth < LEVELS.length - 1 && !(depth === 0 && label.kind !== 'object')) {
    const toggle = el('button', { type: 'button', class: 'toggle', 'aria-expanded': String(expanded.has(key)) }, text);
    toggle.addEventListener('click', () => toggleRow(key, depth + 1));
    cell.append(toggle);
  } else cell.append(text);
  if (label.tag) cell.append(el('span', { class: 'tag', text: label.tag }));
  return cell;
}

function renderTable(v) {
  const lines = linesOf(v);
  const top = v?.answers.get(`${v.model}/0`);
  const currency = top?.currency ?? null;
  const formats = tableFormats(currency);
  document.querySelector('#performance tbody').replaceChildren(
    ...lines.map((line) =>
      el('tr', { 'data-depth': String(line.depth), 'data-key': line.key, class: line.label.kind }, nameCell(line, { toggles: true }), ...TABLE_METRICS.map((metric) => metricCell(formats[metric], metric, line.row[metric]))),
    ),
  );
  const hasRows = (top?.rows ?? []).length > 0;
  $('table-empty').hidden = !v || hasRows;
  $('performance').hidden = !hasRows;
  $('download').disabled = !hasRows;
  const severalCurrencies = hasRows && currency === null;
  const totals = top?.totals ?? {};
  const paid = v?.answers.get(`${v.model}/paid`)?.totals ?? {};
  const foot = document.querySelector('#performance tfoot');
  foot.replaceChildren(
    ...(hasRows
      ? [
          el(
            'tr',
            { class: 'paid' },
            el('th', { scope: 'row', text: 'Paid channels (platforms with spend)' }),
            ...TABLE_METRICS.map((metric) => metricCell(formats[metric], metric, paid[metric])),
          ),
          el(
            'tr',
            { class: 'all' },
            el('th', { scope: 'row', text: severalCurrencies ? 'All rows (several currencies: not added)' : 'All rows: paid, other channels and unattributed' }),
            ...TABLE_METRICS.map((metric) => metricCell(formats[metric], metric, totals[metric])),
          ),
        ]
      : []),
  );
  for (const header of document.querySelectorAll('#performance thead th')) {
    header.setAttribute('aria-sort', header.dataset.key === sort.key ? (sort.descending ? 'descending' : 'ascending') : 'none');
  }
  const modelName = v ? (models.get(v.model)?.name ?? v.model) : '';
  $('table-note').textContent = v
    ? `Attributed revenue, ROAS, CAC and transactions by ${modelName}. Each row is the API's; "All rows" is its total, which adds direct, e-mail, organic and unattributed orders: in cash mode, that is the store's revenue.`
    : '';
  renderComparison(v, lines);
}

// The comparison of models -------------------------------------------------------------------

function renderComparison(v, lines) {
  const table = $('comparison');
  const shownModels = v ? comparedModels(v).filter((model) => v.answers.has(`${model}/0`)) : [];
  table.tHead.rows[0].replaceChildren(
    el('th', { scope: 'col', text: 'Name' }),
    ...shownModels.map((model) =>
      el('th', { scope: 'col', class: `num${model === v.model ? ' picked' : ''}`, 'data-model': model }, models.get(model)?.name ?? model, ...(model === v.model ? [el('span', { class: 'picked-tag', text: 'picked' })] : [])),
    ),
  );
  const revenue = new Map(
    shownModels.map((model) => {
      const byKey = new Map();
      for (const depth of openDepths()) for (const row of v.answers.get(`${model}/${depth}`)?.rows ?? []) byKey.set(`${depth}|${rowKey(row, depth)}`, row.rev);
      return [model, byKey];
    }),
  );
  const money = moneyIn(v ? (v.answers.get(`${v.model}/0`)?.currency ?? null) : null);
  const pickedName = models.get(v?.model)?.name ?? v?.model;
  /** How far a model's figure is from the picked model's: a share of it, or an amount when that is 0. */
  const against = (value, base) => {
    if (missing(value) || missing(base)) return '';
    const [x, y] = [Number(value), Number(base)];
    if (x === y) return 'same';
    if (y === 0) return `+${money(x)}`;
    const change = (x - y) / Math.abs(y);
    return `${change > 0 ? '+' : '−'}${new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: Math.abs(change) < 0.1 ? 1 : 0 }).format(Math.abs(change))}`;
  };
  const cellsOf = (values) =>
    shownModels.map((model, index) => {
      const value = values[index];
      const cell = el('td', { class: `num${model === v.model ? ' picked' : ''}`, 'data-model': model, 'data-value': attribute(value) }, el('span', { class: 'amount', text: money(value) }));
      const difference = model === v.model ? '' : against(value, values[0]);
      if (difference) cell.append(el('span', { class: `against${difference === 'same' ? ' same' : ''}`, title: `Against ${pickedName}`, text: difference === 'same' ? 'same' : `${difference} vs ${pickedName}` }));
      return cell;
    });
  const body = lines
    .filter((line) => shownModels.every((model) => v.answers.has(`${model}/${line.depth}`)))
    .map((line) =>
      el('tr', { 'data-depth': String(line.depth), 'data-key': line.key, class: line.label.kind }, nameCell(line, { toggles: false }), ...cellsOf(shownModels.map((model) => revenue.get(model).get(`${line.depth}|${line.key}`)))),
    );
  table.tBodies[0].replaceChildren(...body);
  const hasRows = body.length > 0;
  table.tFoot.replaceChildren(
    ...(hasRows
      ? [
          el('tr', { class: 'paid' }, el('th', { scope: 'row', text: 'Paid channels' }), ...cellsOf(shownModels.map((model) => v.answers.get(`${model}/paid`)?.totals.rev))),
          el('tr', { class: 'all' }, el('th', { scope: 'row', text: 'All rows' }), ...cellsOf(shownModels.map((model) => v.answers.get(`${model}/0`).totals.rev))),
        ]
      : []),
  );
  table.hidden = !hasRows;
  $('compare-empty').hidden = !v || hasRows;
}

let compared = (() => {
  try {
    const stored = JSON.parse(window.localStorage.getItem(COMPARED) ?? 'null');
    return Array.isArray(stored) ? stored : DEFAULT_COMPARED;
  } catch {
    return DEFAULT_COMPARED;
  }
})();

function renderModelPicker() {
  $('compare-models').replaceChildren(
    ...[...models.values()].map((model) => {
      const box = el('input', { type: 'checkbox', value: model.id });
      box.checked = compared.includes(model.id);
      box.addEventListener('change', changeCompared);
      return el('label', { class: 'check' }, box, ` ${model.name}`, ...(model.data_driven ? [el('span', { class: 'tag', text: 'slower: learns' })] : []));
    }),
  );
}

async function changeCompared() {
  compared = [...$('compare-models').querySelectorAll('input:checked')].map((box) => box.value);
  window.localStorage.setItem(COMPARED, JSON.stringify(compared));
  const v = view;
  if (!v) return;
  const section = $('comparison').closest('section');
  section.setAttribute('aria-busy', 'true');
  try {
    await allRowsOf(v, openDepths());
    if (v === view) renderTable(v);
  } catch (error) {
    showError(error);
  } finally {
    section.setAttribute('aria-busy', 'false');
  }
}

// Opening rows and sorting -------------------------------------------------------------------

async function toggleRow(key, childDepth) {
  const v = view;
  if (expanded.has(key)) {
    for (const open of [...expanded]) if (open.startsWith(key)) expanded.delete(open);
  } else {
    try {
      await allRowsOf(v, [childDepth]);
      expanded.add(key);
    } catch (error) {
      showError(error);
    }
  }
  if (v !== view) return;
  renderTable(v);
  document.querySelector(`#performance tr[data-key="${CSS.escape(key)}"] .toggle`)?.focus();
}

function setUpSorting() {
  for (const header of document.querySelectorAll('#performance thead th')) {
    const label = header.textContent;
    const button = el('button', { type: 'button', text: label });
    button.addEventListener('click', () => {
      sort = { key: header.dataset.key, descending: sort.key === header.dataset.key ? !sort.descending : header.dataset.key !== 'name' };
      renderTable(view);
    });
    header.replaceChildren(button);
  }
}

/** The table as shown, as an export of the API: the same options at the deepest level open, one row per day. */
async function downloadCsv() {
  const status = $('download-status');
  const button = $('download');
  const v = view;
  button.disabled = true;
  try {
    const deepest = Math.max(0, ...[...expanded].map((key) => key.split('\u0000').length));
    status.textContent = 'Preparing the export…';
    const { id } = await api('/v1/exports/data-export', {
      method: 'POST',
      body: JSON.stringify({
        level: LEVELS[deepest].level,
        period_type: 'FIXED',
        period_options: { period_starting_at: v.period.start_date, period_ending_at: v.period.end_date },
        options: { include_ids: true },
        attribution_options: { attribution_models: [v.model], attribution_windows: [v.window], accounting_modes: [v.mode] },
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
    button.disabled = view === null;
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

/** The environment of this port, as the API names it: production, or the UAT copy, whose data is kept apart. */
function showEnvironment(environment) {
  const badge = $('environment');
  const uat = environment === 'uat';
  badge.textContent = uat ? 'UAT' : 'Production';
  badge.title = uat ? 'UAT: the acceptance-testing copy, its data kept apart from production' : 'Production data';
  badge.dataset.environment = environment;
  badge.hidden = false;
  document.title = uat ? 'UAT · Tributary' : 'Tributary';
}

// Loading -------------------------------------------------------------------------------------

let loading = 0;

function setBusy(busy) {
  $('dashboard').setAttribute('aria-busy', String(busy));
  $('dashboard').classList.toggle('loading', busy);
}

/** Nothing shown: the figures of the last load are taken away, and `why` is said instead. */
function clearFigures(why) {
  view = null;
  $('dashboard').classList.add('cleared');
  const problem = $('period-problem');
  problem.textContent = why;
  problem.hidden = false;
  $('period-shown').textContent = '';
  renderHeadline(null);
  renderCustomers(null);
  drawChart(null);
  $('chart-empty').hidden = true;
  renderTable(null);
  $('download-status').textContent = '';
}

async function load() {
  const mine = ++loading;
  // A wrong custom period asks nothing: a load under way is dropped, its figures never shown.
  const problem = periodProblem();
  if (problem) {
    clearFigures(problem);
    setBusy(false);
    return;
  }
  $('period-problem').hidden = true;
  $('dashboard').classList.remove('cleared');
  setBusy(true);
  $('download-status').textContent = '';
  if (!view) renderHeadline(null);
  try {
    // The period is of the client's days, in its time zone.
    const v = newView(pickedPeriod(client.time_zone, new Date()));
    $('period-shown').replaceChildren(...describePeriod(v.period), el('span', { class: 'updating', text: ' · updating…' }));
    const storeQuery = (period, granularity) => ({ ...periodQuery(period), level: 'total', granularity, metrics: STORE_METRICS.join(',') });
    const [store, storeBefore, daily, paidBefore] = await Promise.all([
      report(storeQuery(v.period, 'PERIOD')),
      report(storeQuery(v.previous, 'PERIOD')),
      report({ ...periodQuery(v.period), level: 'total', granularity: 'DAILY', metrics: 'spend,revenue,mer' }),
      report({ ...attributionQuery(v), ...periodQuery(v.previous), level: 'total', channels: 'paid', granularity: 'PERIOD', metrics: 'rev,roas' }),
      allRowsOf(v, openDepths(), [v.model]),
      showLearnt(v.model, v.period, v.window),
    ]);
    if (mine !== loading) return;
    Object.assign(v, { store, storeBefore, daily, paidBefore });
    view = v;
    showError(null);
    $('period-shown').replaceChildren(...describePeriod(v.period));
    renderHeadline(v);
    renderCustomers(v);
    const modelName = models.get(v.model)?.name ?? v.model;
    $('chart-note').textContent = `Store revenue counts every order, whatever its channel. Attributed revenue is what ${modelName} credits to the platforms with spend in the period; MER is store revenue ÷ spend (right axis).`;
    drawChart(chartDays(v), daily.currency);
    renderTable(v);
    // The figures first; the other models compared follow (their revenue beside the picked model's).
    await allRowsOf(v, openDepths());
    if (mine !== loading) return;
    renderTable(v);
  } catch (error) {
    if (mine !== loading) return;
    if (error.status === 401) signOut();
    showError(error);
  } finally {
    if (mine === loading) {
      setBusy(false);
      document.querySelector('#period-shown .updating')?.remove();
    }
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
  const share = (value) => `${(value * 100).toFixed(1)}%`;
  $('learnt-channels').hidden = channels.length === 0;
  $('learnt-channels').tBodies[0].replaceChildren(
    ...[...channels]
      .sort((a, b) => b.weight - a.weight || (a.channel < b.channel ? -1 : 1))
      .map((channel) =>
        el(
          'tr',
          {},
          el('th', { scope: 'row', text: channel.channel }),
          el('td', { class: 'weight' }, weightBar(channel.weight), el('span', { text: share(channel.weight) })),
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
  renderModelPicker();
}

function showScreen(signedIn) {
  $('sign-in-screen').hidden = signedIn;
  $('dashboard').hidden = !signedIn;
  $('sign-out').hidden = !signedIn;
  if (!signedIn) {
    $('environment').hidden = true;
    document.title = 'Tributary';
  }
}

function signOut() {
  sessionStorage.removeItem(CREDENTIALS);
  // Nothing of this client stays on the page for the next one to see.
  loading++;
  view = null;
  client = null;
  $('client-name').textContent = '';
  $('last-received').replaceChildren();
  document.querySelector('#feeds tbody').replaceChildren();
  expanded.clear();
  renderHeadline(null);
  $('customers-figures').replaceChildren();
  drawChart(null);
  renderTable(null);
  $('period-shown').textContent = '';
  $('period-problem').hidden = true;
  $('dashboard').classList.remove('cleared');
  showScreen(false);
}

/** The client of the credentials: its name, its time zone (whose days periods are) and the environment of the port. */
let client = null;

/** The feeds' data health: asked once the figures are in (it reads every record the client sent), not at each change of option. */
async function loadFeeds() {
  const section = $('feeds').closest('section');
  section.setAttribute('aria-busy', 'true');
  const body = document.querySelector('#feeds tbody');
  if (body.rows.length === 0) body.replaceChildren(el('tr', {}, el('td', { colspan: '4', class: 'muted-cell', text: 'Counting what each feed delivered…' })));
  try {
    renderFeeds(await api('/v1/health/feeds'));
  } catch (error) {
    body.replaceChildren();
    showError(error);
  } finally {
    section.setAttribute('aria-busy', 'false');
  }
}

async function start() {
  try {
    [client] = await Promise.all([api('/v1/client'), loadModels()]);
  } catch (error) {
    if (error.status === 401) signOut();
    showError(error);
    return;
  }
  showEnvironment(client.environment);
  $('client-name').textContent = client.name;
  showScreen(true);
  await load();
  await loadFeeds();
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
  if (custom && !$('from').value && view) {
    $('from').value = view.period.start_date;
    $('to').value = view.period.end_date;
  }
  load();
});
for (const id of ['from', 'to', 'model', 'window', 'mode']) $(id).addEventListener('change', load);
$('download').addEventListener('click', downloadCsv);
setUpSorting();
renderHeadline(null);

if (credentials()) start();
else showScreen(false);
