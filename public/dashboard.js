// The dashboard's script: a file of its own, since the page's Content-Security-Policy
// allows no inline script (script-src 'self').
'use strict';
// Every value from the API is placed with textContent, never as HTML.
const $ = (selector) => document.querySelector(selector);
const field = (name) => document.querySelector(`[data-field="${name}"]`);
let token = sessionStorage.getItem('leasehold-token');
// The token's role (GET /v1/token): a read token gets no control buttons.
let role = null;

async function api(method, path, body) {
  const sent = token;
  const response = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${sent}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) {
    // A late answer to a token already replaced (a refresh in flight when the
    // operator typed a new one) must not sign the new one out.
    if (token === sent) logout('That token was refused.');
    throw new Error('unauthorized');
  }
  if (!response.ok) throw new Error(data.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${response.status}`);
  return data;
}

const seconds = (s) => (s < 90 ? `${s.toFixed(1)} s` : s < 5400 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`);
const counts = (record) => Object.entries(record).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
const when = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '–');
// A provider event's kind: delivered, bounced (hard) ...
const kindText = (e) => (e.bounceType ? `${e.kind} (${e.bounceType})` : e.kind);

function bar(name, age, promise) {
  const el = document.querySelector(`[data-bar="${name}"]`);
  el.classList.toggle('bad', age > promise);
  el.firstElementChild.style.width = `${Math.min(100, (age / promise) * 100)}%`;
}

// Where the limit in force came from: the configuration applied at a start,
// or an operator's change (in force until the configuration changes).
function limitSource(l) {
  if (!l.source) return '';
  const since = l.setAt ? ` at ${at(l.setAt)}` : '';
  if (l.source !== 'operator') return ` · from the configuration${since}`;
  const c = l.configured;
  const differs = c && (c.perSecond !== l.perSecond || c.burst !== l.burst);
  return ` · set by ${l.setBy || 'an operator'}${since}${differs ? ` (configured: ${c.perSecond}/s, burst ${c.burst})` : ''}`;
}

function showMessage(text) { $('#message').textContent = text || ''; }

async function refreshStatus() {
  const r = await api('GET', '/v1/status');
  recordSample(r);
  const { expiry, delivery, control, limiter } = r.stats;
  // degraded: an account in failover is paused and the others carry its intents.
  const health = r.health ?? (r.healthy ? 'ok' : 'unavailable');
  $('#overall').textContent = health === 'ok' ? 'ok' : health === 'degraded' ? 'degraded' : 'NOT OK';
  $('#overall').className = `pill ${health === 'ok' ? 'ok' : health === 'degraded' ? 'warn' : 'bad'}`;
  field('dueHolds').textContent = String(expiry.dueHolds);
  field('oldestDue').textContent = `${seconds(expiry.oldestDueAgeSeconds)} (promise ${seconds(r.promises.expiryPromiseS)})`;
  bar('expiry', expiry.oldestDueAgeSeconds, r.promises.expiryPromiseS);
  // Named, with the database's error, so an operator can tell the application which hold its function refuses.
  const failing = r.hookFailures ?? [];
  field('hookFailing').textContent = (expiry.hookFailing ?? 0) === 0
    ? 'none'
    : `${expiry.hookFailing}: ${failing.slice(0, 3).map((f) => `${f.holdId} (${f.attempts}×, next ${new Date(f.retryAt).toLocaleTimeString()}: ${f.error})`).join('; ')}${expiry.hookFailing > 3 ? ', …' : ''}`;
  field('hookFailing').className = (expiry.hookFailing ?? 0) === 0 ? '' : 'hook-failing';
  const state = field('deliveryState');
  // The fleet's pause, else every account in failover paused (one account: its provider's pause), else some.
  const accounts = r.stats.accounts ?? { failover: [], paused: [] };
  const allAccounts = accounts.paused.length > 0 && accounts.paused.length >= accounts.failover.length;
  const first = limiter?.pause;
  state.textContent = control.paused
    ? `PAUSED: ${control.reason || 'no reason'} (by ${control.pausedBy || '?'})`
    : allAccounts
      ? accounts.failover.length === 1
        ? `PAUSED: ${first?.reason || 'no reason'} (account ${accounts.failover[0]}, by ${first?.pausedBy || '?'})`
        : `PAUSED: every account (${accounts.paused.join(', ')})`
      : accounts.paused.length > 0
        ? `running; paused accounts: ${accounts.paused.join(', ')}`
        : 'running';
  state.className = control.paused || allAccounts ? 'paused' : '';
  // Every account row says so too: no account sends while the fleet is paused.
  fleetPause = control.paused ? { reason: control.reason, pausedBy: control.pausedBy } : null;
  paintAccountStates();
  field('backlog').textContent = String(delivery.backlog);
  field('oldestPending').textContent = `${seconds(delivery.oldestPendingAgeSeconds)} (promise ${seconds(r.promises.emailPromiseS)})`;
  bar('email', delivery.oldestPendingAgeSeconds, r.promises.emailPromiseS);
  field('sendsMinute').textContent = counts(r.sendsLastMinute);
  field('sendRate').textContent = `${((r.sendsLastMinute.accepted || 0) / 60).toFixed(2)} accepted/s over the last minute`;
  field('intents').textContent = counts(delivery.intentsByState);
  field('limiter').textContent = limiter
    ? `${limiter.perSecond}/s, burst ${limiter.burst}${limiter.cooldownUntil && new Date(limiter.cooldownUntil) > new Date() ? ' (provider cooldown)' : ''}${limitSource(limiter)}`
    : 'not set yet';
  if (limiter && document.activeElement !== $('#per-second') && document.activeElement !== $('#burst')) {
    $('#per-second').placeholder = String(limiter.perSecond);
    $('#burst').placeholder = String(limiter.burst);
  }
}

// Charts of the past hour: on open, the service's own samples of backlog
// and oldest ages (GET /v1/status/history, one per 10 s, kept in the
// database by the process serving the API) and sends per second by outcome
// (GET /v1/status/sends, counted from the attempts at the second each
// started, where the limiter counts them); then this tab's status polls are
// appended and both are topped up every refresh. Only numbers reach the
// charts; every label is ours.
const HISTORY_S = 3600;
const windowS = () => Number($('#chart-window').value) || HISTORY_S;
// Samples further apart than this are drawn with a gap between them: nobody was sampling.
const GAP_S = 35;
// The age chart is logarithmic (seconds and the 900 s promise on one axis); an age of 0 (nothing waiting) is drawn at its floor.
const AGE_FLOOR_S = 0.1;
// The rest (lease_expired, abandoned, any added later) is drawn as "other".
const OUTCOMES = ['accepted', 'rate_limited', 'failed', 'rejected', 'paused', 'other'];
const OUTCOME_COLORS = ['#1a7f37', '#9a6700', '#cf222e', '#8250df', '#57606a', '#6e7781'];
// The service's samples by time, and this tab's own (every 2 s), each { t, backlog, dueHolds, pendingAge, dueAge }.
const history = new Map();
const live = [];
let promises = null;
const sendBins = new Map();
let sendsLoaded = false;
let limit = null;
let charts = null;
const num = (v) => (Number.isFinite(Number(v)) ? Number(v) : null);
const nowS = () => Date.now() / 1000;

function recordSample(r) {
  const { expiry, delivery, limiter } = r.stats;
  live.push({
    t: nowS(),
    backlog: num(delivery.backlog),
    dueHolds: num(expiry.dueHolds),
    pendingAge: num(delivery.oldestPendingAgeSeconds),
    dueAge: num(expiry.oldestDueAgeSeconds),
  });
  while (live.length && live[0].t < nowS() - HISTORY_S) live.shift();
  promises = { email: num(r.promises.emailPromiseS), expiry: num(r.promises.expiryPromiseS) };
  limit = limiter ? { perSecond: num(limiter.perSecond), burst: num(limiter.burst) } : null;
}

let latestHistory = null;

async function refreshHistory() {
  // The whole hour until a sample comes back (the ring is 360 rows at most), then what was sampled since (more after the tab slept).
  const since = latestHistory === null ? HISTORY_S : Math.min(HISTORY_S, Math.max(30, Math.ceil(nowS() - latestHistory) + 20));
  const r = await api('GET', `/v1/status/history?seconds=${since}`);
  for (const s of r.samples) {
    const t = num(s.t);
    if (t === null) continue;
    history.set(t, { t, backlog: num(s.backlog), dueHolds: num(s.dueHolds), pendingAge: num(s.oldestPendingAgeSeconds), dueAge: num(s.oldestDueAgeSeconds) });
    if (latestHistory === null || t > latestHistory) latestHistory = t;
  }
  for (const t of history.keys()) if (t < num(r.now) - HISTORY_S) history.delete(t);
}

/** The samples of the window, oldest first: the service's, then this tab's since its latest; a row of nulls where none were taken. */
function chartSamples() {
  const served = [...history.values()].sort((a, b) => a.t - b.t);
  const after = served.length ? served[served.length - 1].t : -Infinity;
  const from = nowS() - windowS();
  const rows = [];
  let previous = null;
  for (const s of [...served, ...live.filter((x) => x.t > after)]) {
    if (s.t < from) continue;
    if (previous && s.t - previous.t > GAP_S) rows.push({ t: previous.t + 1, backlog: null, dueHolds: null, pendingAge: null, dueAge: null });
    rows.push(s);
    previous = s;
  }
  return rows;
}

async function refreshSends() {
  // The whole hour once, then the last half minute (attempts finishing late land in their start second).
  const r = await api('GET', `/v1/status/sends?seconds=${sendsLoaded ? 30 : HISTORY_S}`);
  for (const bin of r.bins) {
    const t = num(bin.t);
    if (t === null) continue;
    const counts = OUTCOMES.map(() => 0);
    for (const [outcome, n] of Object.entries(bin.outcomes)) {
      const i = OUTCOMES.indexOf(outcome);
      counts[i === -1 ? OUTCOMES.length - 1 : i] += num(n) || 0;
    }
    sendBins.set(t, counts);
  }
  const oldest = num(r.now) - HISTORY_S;
  for (const t of sendBins.keys()) if (t < oldest) sendBins.delete(t);
  sendsLoaded = true;
}

// An axis label: 0.1 s, 10 s, 16.7 min, 2.8 h.
const ageText = (v) => (v < 90 ? `${v} s` : v < 5400 ? `${+(v / 60).toFixed(1)} min` : `${+(v / 3600).toFixed(1)} h`);

function chartOptions(kind, width) {
  // All three share the window's time axis, so a pause lines up across them.
  const windowRange = () => { const now = nowS(); return [now - windowS(), now]; };
  const base = { width, height: 170, scales: { x: { time: true, auto: false, range: windowRange } }, legend: { live: false } };
  const line = (label, stroke, extra = {}) => ({ label, stroke, width: 2, ...extra });
  const dashed = { dash: [6, 4], width: 1.5 };
  if (kind === 'backlog') {
    return { ...base, title: 'Backlog', series: [{}, line('email backlog (pending)', '#0969da'), line('due holds', '#1a7f37')] };
  }
  if (kind === 'age') {
    // Whole decades from the floor to above the largest age or promise, a tick and a grid line at each.
    const ageRange = (_u, _min, max) => [AGE_FLOOR_S, 10 ** Math.ceil(Math.log10(Math.max(max || 1, 1) * 1.5))];
    const decades = (_u, _axis, min, max) => {
      const out = [];
      for (let e = Math.round(Math.log10(min)); 10 ** e <= max * 1.0001; e++) out.push(Number((10 ** e).toPrecision(1)));
      return out;
    };
    return { ...base, height: 210,
      title: `Oldest age against the promise (s, log scale; none waiting: ${AGE_FLOOR_S} s)`,
      scales: { ...base.scales, y: { distr: 3, log: 10, range: ageRange } },
      axes: [{}, { splits: decades, filter: (_u, splits) => splits, values: (_u, splits) => splits.map((v) => (v === null ? '' : ageText(v))), size: 76 }],
      series: [{},
        line('oldest pending email', '#0969da'), line('email promise', '#cf222e', dashed),
        line('oldest due hold', '#1a7f37'), line('expiry promise', '#bf8700', dashed)] };
  }
  const stepped = typeof uPlot.paths?.stepped === 'function' ? uPlot.paths.stepped({ align: 1 }) : undefined;
  return { ...base, title: 'Sends per second by outcome, against the limit', series: [{},
    ...OUTCOMES.map((o, i) => line(o, OUTCOME_COLORS[i], stepped ? { paths: stepped } : {})),
    line('limit (rate)', '#cf222e', dashed), line('burst + rate', '#cf222e', { dash: [2, 3], width: 1 })] };
}

function chartData(kind, rows) {
  if (kind === 'backlog') return [rows.map((s) => s.t), rows.map((s) => s.backlog), rows.map((s) => s.dueHolds)];
  if (kind === 'age') {
    const age = (v) => (v === null ? null : Math.max(AGE_FLOOR_S, v));
    // The promises are configuration: the same over the whole window.
    return [rows.map((s) => s.t), rows.map((s) => age(s.pendingAge)), rows.map(() => promises?.email ?? null),
      rows.map((s) => age(s.dueAge)), rows.map(() => promises?.expiry ?? null)];
  }
  // Every second of the window, zero where nothing was sent.
  const now = Math.floor(nowS());
  const xs = [];
  for (let t = now - windowS(); t <= now; t++) xs.push(t);
  const perOutcome = OUTCOMES.map((_, i) => xs.map((t) => (sendBins.get(t) || [])[i] || 0));
  // The limit as it was at each second, from the audit log's rate-limit changes; the current one where none is known.
  const limits = xs.map((t) => limitAt(t) || limit);
  const rate = limits.map((l) => (l ? l.perSecond : null));
  const ceiling = limits.map((l) => (l ? l.perSecond + l.burst : null));
  return [xs, ...perOutcome, rate, ceiling];
}

// rate_limit.set entries of the first account in failover within the window, oldest first: { t, before, after }.
let limitChanges = [];
let firstAccount = null;

function limitAt(t) {
  if (limitChanges.length === 0) return null;
  let at = null;
  for (const change of limitChanges) if (change.t <= t) at = change.after;
  return at || limitChanges[0].before;
}

const policy = (v) => (v && num(v.perSecond) !== null && num(v.burst) !== null ? { perSecond: num(v.perSecond), burst: num(v.burst) } : null);

async function refreshLimitHistory() {
  const since = new Date(Date.now() - HISTORY_S * 1000).toISOString();
  const page = await api('GET', `/v1/audit?action=rate_limit.set&limit=500&since=${encodeURIComponent(since)}`);
  limitChanges = page.entries
    .filter((e) => firstAccount === null || e.target === firstAccount)
    .map((e) => ({ t: new Date(e.at).getTime() / 1000, before: policy(e.before), after: policy(e.after) }))
    .sort((a, b) => a.t - b.t);
}

// The latest changes, as text only: every value is placed with textContent.
const change = (e) => {
  const text = (v) => (v === null || v === undefined ? '' : JSON.stringify(v));
  const parts = [];
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(e.before) && isObject(e.after)) {
    // Only what changed: `perSecond 10 → 4`.
    const keys = [...new Set([...Object.keys(e.before), ...Object.keys(e.after)])];
    const changed = keys.filter((k) => text(e.before[k]) !== text(e.after[k]));
    parts.push(changed.map((k) => `${k} ${text(e.before[k]) || '–'} → ${text(e.after[k]) || '–'}`).join(', ') || 'no change');
  } else if (e.before !== null || e.after !== null) parts.push(`${text(e.before) || '–'} → ${text(e.after) || '–'}`);
  if (e.detail !== null) parts.push(text(e.detail));
  return parts.join(' ');
};

async function refreshAudit() {
  const page = await api('GET', '/v1/audit?limit=15');
  const rows = page.entries.map((e) => {
    const tr = document.createElement('tr');
    tr.dataset.action = e.action;
    for (const [col, value] of [['at', at(e.at)], ['actor', e.actor], ['action', e.action], ['target', e.target || ''], ['change', change(e)]]) {
      const td = document.createElement('td');
      td.dataset.col = col;
      td.textContent = value;
      tr.append(td);
    }
    return tr;
  });
  $('#audit-rows').replaceChildren(...rows);
  $('#audit-table').hidden = rows.length === 0;
  $('#audit-empty').hidden = rows.length > 0;
}

async function refreshRole() {
  if (role) return;
  const me = await api('GET', '/v1/token');
  role = me.role;
  document.body.dataset.role = role;
  $('#role-note').textContent = `token ${me.name} (${me.role}${me.tenants ? `, tenants ${me.tenants.join(', ')}` : ''})`;
}

function drawCharts() {
  if (typeof uPlot === 'undefined') {
    $('#chart-note').textContent = '(charts unavailable: the chart library did not load)';
    return;
  }
  const width = () => Math.max(300, $('#charts').clientWidth - 40);
  const rows = chartSamples();
  if (!charts) {
    charts = {};
    for (const el of document.querySelectorAll('[data-chart]')) {
      const kind = el.dataset.chart;
      charts[kind] = new uPlot(chartOptions(kind, width()), chartData(kind, rows), el);
    }
    window.addEventListener('resize', () => { for (const c of Object.values(charts)) c.setSize({ width: width(), height: c.height }); });
    // For a look from the browser console.
    window.leaseholdCharts = charts;
  } else {
    for (const [kind, chart] of Object.entries(charts)) chart.setData(chartData(kind, rows));
  }
  const served = rows.filter((r) => history.has(r.t)).length;
  const own = rows.filter((r) => !history.has(r.t) && r.backlog !== null).length;
  $('#chart-note').textContent = `(${served} samples from the service, every 10 s; ${own} from this tab, every 2 s)`;
}

async function refreshIntents() {
  const state = $('#state-filter').value;
  const page = await api('GET', `/v1/intents?limit=15${state ? `&state=${encodeURIComponent(state)}` : ''}`);
  const rows = page.intents.map((intent) => {
    const tr = document.createElement('tr');
    tr.dataset.intent = intent.id;
    const cells = [intent.id, intent.state + (intent.possibleDuplicate ? ' (possible duplicate)' : ''), String(intent.attempts),
      when(intent.createdAt), when(intent.sentAt), intent.lastError || ''];
    cells.forEach((text, i) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (i === 0) td.className = 'id';
      tr.append(td);
    });
    const action = document.createElement('td');
    if (intent.state !== 'pending') {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = 'Replay';
      button.className = 'operate-only';
      button.addEventListener('click', () => act(() => api('POST', `/v1/intents/${encodeURIComponent(intent.id)}/replay`)));
      action.append(button);
    }
    tr.append(action);
    return tr;
  });
  $('#intents').replaceChildren(...rows);
}

// The provider accounts, in failover order (those not in failover last). A
// row is built once per account and then updated in place, so a reason being
// typed or a button under the pointer survives the refresh. Only the fields
// named here are shown: an account's settings and recipients never are.
const accountRows = new Map();
const ACCOUNT_COLUMNS = ['name', 'provider', 'failover', 'state', 'rate', 'burst', 'tokens', 'backlog', 'lastMinute'];
const NUMERIC_COLUMNS = new Set(['rate', 'burst', 'tokens', 'backlog']);
// A time today as the time alone; another day's with its date.
const at = (iso) => {
  const d = new Date(iso);
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
};

// The fleet's pause (GET /v1/status), which stops every account whatever its own state.
let fleetPause = null;

function accountState(a) {
  const own = ownAccountState(a);
  if (!fleetPause) return own;
  const fleet = `paused with all delivery: ${fleetPause.reason || 'no reason'} (by ${fleetPause.pausedBy || '?'})`;
  return ['paused', own[0] === 'paused' ? `${fleet}; and its own pause: ${own[1]}` : fleet];
}

function ownAccountState(a) {
  const pause = a.pause || {};
  if (pause.paused) {
    const until = pause.pausedUntil ? ` (until ${at(pause.pausedUntil)})` : '';
    return ['paused', `paused by ${pause.pausedBy || '?'}: ${pause.reason || 'no reason'}${until}`];
  }
  if (a.coolingDown) return ['cooling', a.cooldownUntil ? `cooling down until ${at(a.cooldownUntil)}` : 'cooling down'];
  // Not first in failover and nothing waiting on it: it sends only when the ones before it cannot.
  if (a.failoverIndex !== 0 && !(num(a.backlog) > 0)) return ['standby', a.failoverIndex === null ? 'standby (not in failover)' : 'standby'];
  return ['sending', 'sending'];
}

function accountRow(name) {
  const tr = document.createElement('tr');
  tr.dataset.account = name;
  const cells = {};
  for (const col of ACCOUNT_COLUMNS) {
    const td = document.createElement('td');
    td.dataset.col = col;
    if (NUMERIC_COLUMNS.has(col)) td.className = 'num';
    cells[col] = td;
    tr.append(td);
  }
  // The same handling as the fleet's buttons: the token through api(), the result in #message.
  const path = (action) => `/v1/accounts/${encodeURIComponent(name)}/${action}`;
  const form = document.createElement('form');
  const reason = document.createElement('input');
  reason.maxLength = 500;
  reason.size = 16;
  reason.placeholder = 'reason';
  reason.setAttribute('aria-label', `Pause reason for ${name}`);
  const pause = document.createElement('button');
  pause.type = 'submit';
  pause.textContent = 'Pause';
  form.append(reason, pause);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = reason.value.trim();
    act(async () => {
      await api('POST', path('pause'), text ? { reason: text } : undefined);
      reason.value = '';
    });
  });
  const resume = document.createElement('button');
  resume.type = 'button';
  resume.textContent = 'Resume';
  resume.addEventListener('click', () => act(() => api('POST', path('resume'))));
  const action = document.createElement('td');
  action.className = 'operate-only';
  action.append(form, resume);
  tr.append(action);
  return { tr, cells, form, resume };
}

async function refreshAccounts() {
  const r = await api('GET', '/v1/accounts');
  const accounts = [...r.accounts].sort((a, b) => (a.failoverIndex ?? Infinity) - (b.failoverIndex ?? Infinity));
  const seen = new Set();
  for (const a of accounts) {
    seen.add(a.name);
    let row = accountRows.get(a.name);
    if (!row) { row = accountRow(a.name); accountRows.set(a.name, row); }
    row.account = a;
    const rate = a.rate || {};
    const c = row.cells;
    c.name.textContent = a.name;
    c.provider.textContent = a.provider;
    c.failover.textContent = a.failoverIndex === null ? '–' : `#${a.failoverIndex + 1}`;
    paintAccountState(row);
    c.rate.textContent = `${rate.perSecond} ${a.unit}/s${a.dailyQuota !== null && a.dailyQuota !== undefined ? `, ${a.dailyQuota}/day` : ''}`;
    c.burst.textContent = String(rate.burst);
    c.tokens.textContent = num(rate.tokens) === null ? '–' : num(rate.tokens).toFixed(1);
    c.backlog.textContent = String(a.backlog);
    c.lastMinute.textContent = counts(a.lastMinute || {});
    const paused = Boolean(a.pause && a.pause.paused);
    row.form.hidden = paused;
    row.resume.hidden = !paused;
  }
  for (const name of [...accountRows.keys()]) if (!seen.has(name)) accountRows.delete(name);
  const rows = accounts.map((a) => accountRows.get(a.name).tr);
  // Moved only when the order changed: moving a row would take the focus out of its reason field.
  const body = $('#account-rows');
  if (rows.length !== body.children.length || rows.some((tr, i) => body.children[i] !== tr)) body.replaceChildren(...rows);
  $('#accounts-note').textContent = r.failover.length ? `(failover: ${r.failover.join(' → ')})` : '';
  firstAccount = r.failover[0] ?? null;
}

// An account's state cell from its latest row and the fleet's pause, each of which may arrive first.
function paintAccountState(row) {
  const [kind, text] = accountState(row.account);
  row.cells.state.textContent = text;
  row.cells.state.className = `state-${kind}`;
}

function paintAccountStates() {
  for (const row of accountRows.values()) if (row.account) paintAccountState(row);
}

// The tenants with email waiting, largest backlog first, as the API orders
// them. No inputs in these rows, so they are rebuilt on every refresh.
async function refreshTenants() {
  const r = await api('GET', '/v1/tenants?top=10');
  const rows = r.backlog.map((t) => {
    const tr = document.createElement('tr');
    tr.dataset.tenant = t.tenant;
    const cell = (col, text, className) => {
      const td = document.createElement('td');
      td.dataset.col = col;
      td.textContent = text;
      if (className) td.className = className;
      tr.append(td);
    };
    cell('tenant', t.tenant === '' ? '(empty tenant)' : t.tenant, t.tenant === '' ? 'empty-tenant' : '');
    cell('backlog', String(t.backlog), 'num');
    cell('oldest', seconds(num(t.oldestAgeSeconds) ?? 0), 'num');
    cell('sent', String(t.sentLastMinute), 'num');
    cell('state', t.paused ? `paused: ${t.pauseReason || 'no reason'}` : '', t.paused ? 'state-paused' : '');
    return tr;
  });
  $('#tenant-rows').replaceChildren(...rows);
  $('#tenants-table').hidden = rows.length === 0;
  $('#tenants-empty').hidden = rows.length > 0;
}

// The application's webhooks: each endpoint's backlog, and the given-up ones with a replay (same webhook-id).
async function refreshAppWebhooks() {
  const r = await api('GET', '/v1/webhook-deliveries?state=dead&limit=10');
  const row = (cells, key) => {
    const tr = document.createElement('tr');
    tr.dataset.webhook = key;
    for (const [col, text, className] of cells) {
      const td = document.createElement('td');
      td.dataset.col = col;
      td.textContent = text;
      if (className) td.className = className;
      tr.append(td);
    }
    return tr;
  };
  const backlog = r.backlog.map((b) => row([['endpoint', b.endpoint], ['pending', String(b.pending), 'num'],
    ['oldest', seconds(num(b.oldestPendingAgeSeconds) ?? 0), 'num'], ['dead', String(b.dead), 'num']], b.endpoint));
  const dead = r.webhooks.map((w) => {
    const tr = row([['id', w.id, 'id'], ['type', w.type], ['hold', w.holdId || ''], ['endpoint', w.endpoint], ['error', w.lastError || '']], w.id);
    const action = document.createElement('td');
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'Replay';
    button.className = 'operate-only';
    button.addEventListener('click', () => act(() => api('POST', `/v1/webhook-deliveries/${encodeURIComponent(w.id)}/replay`)));
    action.append(button);
    tr.append(action);
    return tr;
  });
  $('#app-webhook-rows').replaceChildren(...backlog);
  $('#app-webhook-dead').replaceChildren(...dead);
  $('#app-webhooks-table').hidden = backlog.length === 0;
  $('#app-webhooks-empty').hidden = backlog.length > 0;
}

async function refresh() {
  if (!token) return;
  try {
    await refreshRole();
    await Promise.all([refreshStatus(), refreshIntents(), refreshSends(), refreshHistory(), refreshAccounts(), refreshTenants(), refreshAudit(), refreshLimitHistory(), refreshAppWebhooks()]);
    $('#updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    $('#refresh-error').textContent = '';
  } catch (error) {
    if (error.message !== 'unauthorized') $('#refresh-error').textContent = `Could not refresh: ${error.message}`;
  }
  // Whatever came back is drawn; a failed poll leaves a gap, not a broken page.
  try {
    drawCharts();
  } catch (error) {
    $('#chart-note').textContent = `(charts failed: ${error.message})`;
  }
}

// The outcome of the operator's last action stays shown until the next one.
async function act(work) {
  try {
    await work();
    showMessage('');
  } catch (error) {
    showMessage(error.message);
  }
  await refresh();
}

function logout(reason) {
  token = null;
  role = null;
  delete document.body.dataset.role;
  $('#role-note').textContent = '';
  $('#logout').hidden = true;
  sessionStorage.removeItem('leasehold-token');
  $('#app').hidden = true;
  $('#login').hidden = false;
  // Said on the login screen itself: a native alert() blocks the page and cannot be styled or read by a screen reader in place.
  $('#login-error').textContent = reason || '';
}

function login(value) {
  token = value;
  $('#login-error').textContent = '';
  sessionStorage.setItem('leasehold-token', value);
  $('#logout').hidden = false;
  $('#login').hidden = true;
  $('#app').hidden = false;
  refresh();
}

$('#login-form').addEventListener('submit', (e) => { e.preventDefault(); login($('#token').value.trim()); });
$('#logout').addEventListener('click', () => logout());
$('#pause-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const reason = $('#pause-reason').value.trim();
  act(() => api('POST', '/v1/delivery/pause', reason ? { reason } : undefined));
});
$('#resume').addEventListener('click', () => act(() => api('POST', '/v1/delivery/resume')));
$('#rate-form').addEventListener('submit', (e) => {
  e.preventDefault();
  // Either field or both: PUT /v1/rate-limit keeps the one left out.
  const body = {};
  for (const [key, selector] of [['perSecond', '#per-second'], ['burst', '#burst']]) {
    const text = $(selector).value.trim();
    if (text !== '') body[key] = Number(text);
  }
  if (Object.keys(body).length === 0) {
    showMessage('Enter a rate per second, a burst, or both.');
    return;
  }
  act(async () => {
    await api('PUT', '/v1/rate-limit', body);
    // Emptied, so the placeholders show the policy now in force.
    $('#per-second').value = '';
    $('#burst').value = '';
  });
});
$('#chart-window').addEventListener('change', () => {
  $('#chart-title').textContent = windowS() === HISTORY_S ? 'Last hour' : `Last ${windowS() / 60} minutes`;
  try { drawCharts(); } catch (error) { $('#chart-note').textContent = `(charts failed: ${error.message})`; }
});
$('#state-filter').addEventListener('change', () => refresh());
// The trace panel shows one hold's answer: its life, or why there is none. It is
// cleared before each request, so an error never sits above another hold's trace.
function showTrace(id, content) {
  $('#trace-note').textContent = id ? `(hold ${id})` : '';
  $('#trace').replaceChildren(...(content ? [content] : []));
  $('#trace-panel').hidden = !content;
}

$('#trace-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const id = $('#trace-id').value.trim();
  showTrace(null, null);
  try {
    const t = await api('GET', `/v1/holds/${encodeURIComponent(id)}`);
    // The whole life first (created, extensions, reminder, expiry or confirmation, each email), then the expiry email's five moments.
    const settledFirst = t.moments.eligibleAt === null;
    const lines = [
      `hold ${t.hold.id}: ${t.hold.status}`,
      ...(t.life || []).map((e) => `${e.at}  ${e.what}${e.detail ? `  (${e.detail})` : ''}`),
      '',
      ...(settledFirst
        ? [`no expiry email: the hold was ${t.hold.status} before its deadline, so none will be sent`]
        : [
            `became eligible   ${t.moments.eligibleAt || '–'}`,
            `was expired       ${t.moments.expiredAt || '–'}`,
            `email available   ${t.moments.emailAvailableAt || '–'}`,
            `email accepted    ${t.moments.emailFirstAcceptedAt || t.moments.emailAcceptedAt || '–'}`,
            ...(t.moments.emailFirstAcceptedAt && t.moments.emailAcceptedAt !== t.moments.emailFirstAcceptedAt
              ? [`  and again       ${t.moments.emailAcceptedAt} (replay)`]
              : []),
            `${`email ${t.outcome ? kindText(t.outcome) : 'outcome'}`.padEnd(17)} ${t.moments.emailOutcomeAt || '–'}`,
          ]),
      ...(t.emails || []).flatMap((m) => [
        `${m.kind}: ${m.intent.state}${m.message ? ` — ${m.message.subject} (${m.message.template}/${m.message.templateLocale})` : ''}`,
        ...m.attempts.map((a) => `  attempt ${a.attempt}: ${a.outcome || 'in flight'} ${a.providerCode || ''} ${a.error || ''}`),
        ...(m.events || []).map((e) => `  event ${kindText(e)} at ${e.occurredAt} (${e.provider}${e.providerType ? `, ${e.providerType}` : ''})`),
      ]),
    ];
    const pre = document.createElement('pre');
    pre.id = 'trace-output';
    pre.textContent = lines.join('\n');
    showTrace(t.hold.id, pre);
  } catch (error) {
    if (error.message === 'unauthorized') return;
    const p = document.createElement('p');
    p.id = 'trace-error';
    p.className = 'trace-error';
    p.setAttribute('role', 'alert');
    p.textContent = `No trace: ${error.message}`;
    showTrace(id, p);
  }
});

if (token) login(token); else $('#login').hidden = false;
setInterval(refresh, 2000);
