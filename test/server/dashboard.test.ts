/// <reference lib="dom" />
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, dashboardServer, launchChromium, within } from '../helpers/dashboard.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { rateLimiterEnsure, rateLimiterGet, rateLimiterPause, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import type { Accounts } from '../../src/model/accounts.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { intentsGet } from '../../src/tables/outbox.js';
import type { ApiServer } from '../../src/server/app.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { recordAcceptance } from '../helpers/sent-intent.js';
import { ingestEvents } from '../../src/events/ingest.js';
import { tenantPause } from '../../src/tables/tenants.js';
import { ApiTokens } from '../../src/server/auth.js';
import { parseTokensFile, tokenHash } from '../../src/model/api-tokens.js';

// Debian's Chromium; .ci/run installs it. Without it this file is skipped, loudly.
const token = 'dashboard-test-token-0123456789';

let db: TestDatabase;
let server: ApiServer;
let browser: Browser;
let page: Page;

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard in a real browser', () => {
  beforeAll(async () => {
    db = await testDatabase('dashboard');
    await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 10 });
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'dash' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    // One intent already given up on, for the replay button.
    await db.pool.query(
      `UPDATE ${ident(db.schema)}.email_outbox SET state = 'dead', finished_at = now(), last_error = 'provider 503' WHERE id = 'reservation-expired:dash-0'`,
    );
    server = await dashboardServer(db, { apiToken: token });
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.dismiss());
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.close();
  });

  it('asks for the token, then shows both lanes from the database', async () => {
    await page.goto(`${server.url}/`);
    await page.fill('#token', token);
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('[data-field="backlog"]')?.textContent === '2');
    expect(await page.textContent('[data-field="dueHolds"]')).toBe('0');
    expect(await page.textContent('[data-field="deliveryState"]')).toBe('running');
    expect(await page.textContent('[data-field="limiter"]')).toContain('10/s, burst 10');
    expect(await page.textContent('#overall')).toBe('ok');
    // Three intents listed (a request of their own, so wait for the rows); only finished ones offer a replay.
    await page.waitForFunction(() => document.querySelectorAll('#intents tr').length >= 3);
    expect(await page.locator('#intents tr').count()).toBe(3);
    expect(await page.locator('#intents button', { hasText: 'Replay' }).count()).toBe(1);
    await page.screenshot({ path: 'dist/dashboard.png', fullPage: true });
  });

  it('pauses and resumes delivery fleet-wide', async () => {
    await page.fill('#pause-reason', 'drill from the dashboard');
    await page.click('#pause');
    await page.waitForFunction(() => document.querySelector('[data-field="deliveryState"]')?.textContent?.startsWith('PAUSED'));
    expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: true, reason: 'drill from the dashboard' });
    expect(await page.textContent('#overall')).toBe('NOT OK');
    await page.click('#resume');
    await page.waitForFunction(() => document.querySelector('[data-field="deliveryState"]')?.textContent === 'running');
    expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
  });

  it('changes the rate limit, and shows the API refusing a bad one', async () => {
    await page.fill('#per-second', '3');
    await page.fill('#burst', '6');
    await page.click('#rate-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('[data-field="limiter"]')?.textContent?.startsWith('3/s, burst 6'));
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 3, burst: 6, source: 'operator' });
    // Where the limit in force came from: an operator's change, by the dashboard's token.
    const { setBy } = (await rateLimiterGet(db.pool, db.schema))!;
    expect(await page.textContent('[data-field="limiter"]')).toContain(`· set by ${setBy} at `);
    await page.fill('#per-second', '2');
    await page.fill('#burst', '0');
    // The browser's own min=1 check would stop the form; send it anyway to see the API's answer.
    await page.$eval('#rate-form', (form) => form.setAttribute('novalidate', ''));
    await page.click('#rate-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#message')?.textContent?.includes('burst'));
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 3, burst: 6 });
  });

  it('replays a dead intent and traces its hold', async () => {
    await page.click('#intents button:has-text("Replay")');
    await page.waitForFunction(() => document.querySelectorAll('#intents button').length === 0);
    expect(await intentsGet(db.pool, db.schema, 'reservation-expired:dash-0')).toMatchObject({ state: 'pending', replays: 1 });
    await page.fill('#trace-id', 'dash-1');
    await page.click('#trace-form button[type=submit]');
    const trace = await page.waitForSelector('#trace-output');
    expect(await trace.textContent()).toMatch(/hold dash-1: expired\n[^]*expired\n[^]*\nbecame eligible +\d{4}-/);
  });

  it('traces the fifth moment: how the provider says the email ended', async () => {
    await recordAcceptance(db.pool, db.schema, 'reservation-expired:dash-1', 'dash-receipt-1');
    await ingestEvents(db.pool, db.schema, [
      {
        provider: 'sandbox',
        providerEventId: 'dash-event-1',
        messageId: 'dash-receipt-1',
        kind: 'delivered',
        bounceType: null,
        providerType: 'sandbox/Delivery',
        reason: null,
        occurredAt: new Date(),
        recipients: [],
      },
    ]);
    await page.fill('#trace-id', 'dash-1');
    await page.click('#trace-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#trace-output')?.textContent?.includes('email delivered'));
    const trace = (await page.textContent('#trace-output'))!;
    expect(trace).toMatch(/\nemail delivered +\d{4}-/);
    expect(trace).toMatch(/event delivered at \d{4}-.*\(sandbox, sandbox\/Delivery\)/);
  });

  it('treats data as text, never as markup, and shows no recipient', async () => {
    // Provider error texts end up in last_error: they must not become markup.
    const hostile = '<img src=x id=injected onerror="document.title=1">';
    await db.pool.query(`UPDATE ${ident(db.schema)}.email_outbox SET last_error = $1 WHERE id = 'reservation-expired:dash-2'`, [hostile]);
    await page.reload();
    await page.waitForFunction((text) => document.querySelector('#intents')?.textContent?.includes(text), hostile);
    expect(await page.locator('#injected').count()).toBe(0);
    expect(await page.content()).not.toContain('@example.com');
  });

  it('serves the chart library from the installed package, and nothing else under its path', async () => {
    const js = await fetch(`${server.url}/assets/uplot/uPlot.iife.min.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('text/javascript');
    const installed = readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
    expect(await js.text()).toBe(installed);
    const css = await fetch(`${server.url}/assets/uplot/uPlot.min.css`);
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    for (const name of ['uPlot.cjs.js', '..%2F..%2Fpackage.json', 'constructor', '__proto__']) {
      expect((await fetch(`${server.url}/assets/uplot/${name}`)).status, name).toBe(404);
    }
  });

  it("draws live charts: backlog, each lane's oldest age against its promise, sends/s by outcome against the limit", async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // Attempts of the last seconds, by outcome: what the send chart counts.
    const s = ident(db.schema);
    for (const [outcome, ago] of [['accepted', 3], ['rate_limited', 3], ['lease_expired', 2]] as const) {
      await db.pool.query(
        `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt, duration_ms)
         SELECT 'reservation-expired:dash-2', coalesce(max(attempt), 0) + 1, gen_random_uuid(), 'sandbox',
                now() - make_interval(secs => $2), now() - make_interval(secs => $2), $1::text,
                CASE WHEN $1::text = 'accepted' THEN 'chart-receipt' END, 5
           FROM ${s}.email_attempts WHERE intent_id = 'reservation-expired:dash-2'`,
        [outcome, ago],
      );
    }
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('#charts canvas').length === 3);
    // Two polls at least, so the lines have points.
    await page.waitForFunction(
      () => ((window as unknown as { leaseholdCharts?: Record<string, { data: number[][] }> }).leaseholdCharts?.backlog?.data[0]?.length ?? 0) >= 2,
      undefined,
      { timeout: 10_000 },
    );
    const charts = await page.evaluate(() => {
      const all = (window as unknown as { leaseholdCharts: Record<string, { series: Array<{ label?: string }>; data: Array<Array<number | null>> }> }).leaseholdCharts;
      return Object.fromEntries(
        Object.entries(all).map(([kind, chart]) => [kind, { labels: chart.series.slice(1).map((x) => x.label), data: chart.data }]),
      );
    });
    expect(charts.backlog!.labels).toEqual(['email backlog (pending)', 'due holds']);
    expect(charts.age!.labels).toEqual(['oldest pending email', 'email promise', 'oldest due hold', 'expiry promise']);
    expect(charts.sends!.labels).toEqual(['accepted', 'rate_limited', 'failed', 'rejected', 'paused', 'other', 'limit (rate)', 'burst + rate']);
    // The promises at their values; the limit as it was, from the audit log: 10/s, burst 10 until
    // the test above set rate 3, burst 6, then that.
    expect(new Set(charts.age!.data[2])).toEqual(new Set([900]));
    expect(new Set(charts.age!.data[4])).toEqual(new Set([60]));
    expect(new Set(charts.sends!.data[7])).toEqual(new Set([10, 3]));
    expect(new Set(charts.sends!.data[8])).toEqual(new Set([20, 9]));
    expect([charts.sends!.data[7]!.at(-1), charts.sends!.data[8]!.at(-1), charts.sends!.data[7]![0]]).toEqual([3, 9, 10]);
    const total = (i: number) => (charts.sends!.data[i] as number[]).reduce((a, b) => a + b, 0);
    expect(total(1)).toBeGreaterThanOrEqual(2); // accepted: these and dash-1's acceptance
    expect(total(2)).toBe(1); // rate_limited
    expect(total(6)).toBe(1); // other: the lease that expired
    // One x per second of the hour's window.
    expect(charts.sends!.data[0]!.length).toBeGreaterThanOrEqual(3600);
    expect(await page.locator('#charts .u-title').allTextContents()).toEqual([
      'Backlog',
      'Oldest age against the promise (s, log scale; none waiting: 0.1 s)',
      'Sends per second by outcome, against the limit',
    ]);
    await page.screenshot({ path: 'dist/dashboard-charts.png', fullPage: true });
    expect(errors).toEqual([]);
  });

  it('keeps the charts text-only: API text never becomes markup', async () => {
    const hostile = '<img src=x id=injected-chart onerror="document.title=2">';
    await page.fill('#pause-reason', hostile);
    await page.click('#pause');
    await page.waitForFunction(() => document.querySelector('[data-field="deliveryState"]')?.textContent?.startsWith('PAUSED'));
    await page.waitForTimeout(2500);
    expect(await page.locator('#injected-chart').count()).toBe(0);
    expect(await page.locator('#charts img').count()).toBe(0);
    expect(await page.textContent('[data-field="deliveryState"]')).toContain(hostile);
    await page.click('#resume');
    await page.waitForFunction(() => document.querySelector('[data-field="deliveryState"]')?.textContent === 'running');
  });

  it('stays usable, without script errors, when the API is unreachable or the chart library is missing', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.route('**/v1/**', (route) => route.abort('connectionrefused'));
    await page.waitForFunction(() => document.querySelector('#refresh-error')?.textContent?.startsWith('Could not refresh'), undefined, { timeout: 10_000 });
    expect(await page.locator('#charts canvas').count()).toBe(3);
    await page.unroute('**/v1/**');
    await page.waitForFunction(() => document.querySelector('#refresh-error')?.textContent === '', undefined, { timeout: 10_000 });

    const bare = await browser.newPage();
    const bareErrors: string[] = [];
    bare.on('pageerror', (error) => bareErrors.push(error.message));
    await bare.route('**/assets/uplot/**', (route) => route.abort());
    await bare.goto(`${server.url}/`);
    await bare.fill('#token', token);
    await bare.click('#login-form button[type=submit]');
    await bare.waitForFunction(() => document.querySelector('[data-field="limiter"]')?.textContent?.startsWith('3/s'));
    await bare.waitForFunction(() => document.querySelector('#chart-note')?.textContent?.includes('unavailable'));
    expect(await bare.locator('#charts canvas').count()).toBe(0);
    await bare.close();
    expect([...errors, ...bareErrors]).toEqual([]);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard: provider accounts', () => {
  const accounts: Accounts = {
    accounts: [
      { name: 'primary', provider: 'sandbox', rate: { perSecond: 2, burst: 2, unit: 'requests' }, settings: {} },
      { name: 'backup', provider: 'sandbox', rate: { perSecond: 10, burst: 10, unit: 'requests' }, settings: {} },
    ],
    failover: ['primary', 'backup'],
  };
  let adb: TestDatabase;
  let aserver: ApiServer;
  let abrowser: Browser;
  let apage: Page;
  const errors: string[] = [];
  const row = (name: string) => `#account-rows tr[data-account="${name}"]`;
  const cell = (name: string, col: string) => `${row(name)} td[data-col="${col}"]`;

  beforeAll(async () => {
    adb = await testDatabase('dashboard_accounts');
    // Two pending intents (with their recipients in the database): a backlog on the first account.
    await insertDueHolds(adb.pool, adb.schema, 2, { prefix: 'acct' });
    await new ExpiryWorker({ pool: adb.pool, schema: adb.schema }).runOnce();
    aserver = await dashboardServer(adb, {
      config: { expiryPromiseS: 60, emailPromiseS: 900, ratePerSecond: 2, rateBurst: 2 },
      apiToken: token,
      accounts,
    });
    // The rows ops.listAccounts would create on its first list; primary is paused as a provider's answer would.
    for (const a of accounts.accounts) await rateLimiterEnsure(adb.pool, adb.schema, a.rate, a.name);
    await rateLimiterPause(adb.pool, adb.schema, 'primary', { reason: 'key revoked', by: 'resend' });
    abrowser = await launchChromium();
    apage = await abrowser.newPage({ viewport: { width: 1280, height: 900 } });
    apage.on('dialog', (dialog) => void dialog.dismiss());
    apage.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await abrowser?.close();
    await aserver?.close();
    await adb?.close();
  });

  it('shows a row per account in failover order: provider, state, limiter, backlog, last minute', async () => {
    await apage.goto(`${aserver.url}/`);
    await apage.fill('#token', token);
    await apage.click('#login-form button[type=submit]');
    await apage.waitForFunction(() => document.querySelectorAll('#account-rows tr').length === 2);
    expect(await apage.locator('#account-rows tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.account))).toEqual([
      'primary',
      'backup',
    ]);
    expect(await apage.textContent(cell('primary', 'state'))).toBe('paused by resend: key revoked');
    expect(await apage.getAttribute(cell('primary', 'state'), 'class')).toBe('state-paused');
    expect(await apage.textContent(cell('backup', 'state'))).toBe('standby');
    // One account of two paused: degraded, not down.
    await apage.waitForFunction(() => document.querySelector('#overall')?.textContent === 'degraded');
    expect(await apage.getAttribute('#overall', 'class')).toBe('pill warn');
    expect(await apage.textContent(cell('primary', 'provider'))).toBe('sandbox');
    expect(await apage.textContent(cell('primary', 'failover'))).toBe('#1');
    expect(await apage.textContent(cell('backup', 'failover'))).toBe('#2');
    expect(await apage.textContent(cell('primary', 'rate'))).toBe('2 requests/s');
    expect(await apage.textContent(cell('primary', 'burst'))).toBe('2');
    expect(await apage.textContent(cell('backup', 'rate'))).toBe('10 requests/s');
    expect(await apage.textContent(cell('backup', 'burst'))).toBe('10');
    expect(Number(await apage.textContent(cell('backup', 'tokens')))).toBeCloseTo(10, 0);
    expect(await apage.textContent(cell('primary', 'backlog'))).toBe('2');
    expect(await apage.textContent(cell('backup', 'backlog'))).toBe('0');
    expect(await apage.textContent(cell('primary', 'lastMinute'))).toBe('none');
    expect(await apage.textContent('#accounts-note')).toBe('(failover: primary → backup)');
    // A paused account offers Resume, a running one Pause (with a reason field).
    expect(await apage.isVisible(`${row('primary')} button:has-text("Resume")`)).toBe(true);
    expect(await apage.isVisible(`${row('primary')} button:has-text("Pause")`)).toBe(false);
    expect(await apage.isVisible(`${row('backup')} button:has-text("Pause")`)).toBe(true);
    expect(await apage.isVisible(`${row('backup')} button:has-text("Resume")`)).toBe(false);
    expect(await apage.content()).not.toContain('@example.com');
    await apage.screenshot({ path: '/tmp/dashboard-accounts.png', fullPage: true });
  });

  it('follows the database on the refresh cycle: a cooldown, then its end', async () => {
    const s = ident(adb.schema);
    await adb.pool.query(
      `UPDATE ${s}.rate_limiter SET cooldown_until = now() + interval '5 minutes', cooldown_since = now() WHERE name = 'backup'`,
    );
    await apage.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent?.startsWith('cooling down until '),
      cell('backup', 'state'),
      { timeout: 10_000 },
    );
    expect(await apage.getAttribute(cell('backup', 'state'), 'class')).toBe('state-cooling');
    await adb.pool.query(`UPDATE ${s}.rate_limiter SET cooldown_until = NULL, cooldown_since = NULL WHERE name = 'backup'`);
    await apage.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'standby', cell('backup', 'state'), { timeout: 10_000 });
  });

  it('pauses and resumes one account from its row, the fleet untouched', async () => {
    await apage.click(`${row('primary')} button:has-text("Resume")`);
    await apage.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'sending', cell('primary', 'state'));
    expect((await rateLimiterGet(adb.pool, adb.schema, null, 'primary'))?.pause.paused).toBe(false);

    // A reason typed in the row survives the refreshes while it is being typed.
    await apage.fill(`${row('backup')} input`, 'quota exhausted');
    await apage.waitForTimeout(2500);
    expect(await apage.inputValue(`${row('backup')} input`)).toBe('quota exhausted');
    await apage.click(`${row('backup')} button:has-text("Pause")`);
    await apage.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent === 'paused by operator: quota exhausted',
      cell('backup', 'state'),
    );
    expect((await rateLimiterGet(adb.pool, adb.schema, null, 'backup'))?.pause).toMatchObject({ paused: true, reason: 'quota exhausted' });
    expect((await rateLimiterGet(adb.pool, adb.schema, null, 'primary'))?.pause.paused).toBe(false);
    expect((await deliveryControlGet(adb.pool, adb.schema)).paused).toBe(false);
    expect(await apage.textContent('#message')).toBe('');

    await apage.click(`${row('backup')} button:has-text("Resume")`);
    await apage.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'standby', cell('backup', 'state'));
    expect((await rateLimiterGet(adb.pool, adb.schema, null, 'backup'))?.pause.paused).toBe(false);
  });

  it('places an account\'s pause reason as text, never as markup', async () => {
    const hostile = '<img src=x id=injected-account onerror="document.title=3">';
    await rateLimiterPause(adb.pool, adb.schema, 'backup', { reason: hostile, by: 'postmark' });
    await apage.waitForFunction(
      (text) => document.querySelector('#account-rows tr[data-account="backup"] td[data-col="state"]')?.textContent === text,
      `paused by postmark: ${hostile}`,
      { timeout: 10_000 },
    );
    expect(await apage.locator('#injected-account').count()).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard: tenants', () => {
  let tdb: TestDatabase;
  let tserver: ApiServer;
  let tbrowser: Browser;
  let tpage: Page;
  const errors: string[] = [];
  const cell = (tenant: string, col: string) => `#tenant-rows tr[data-tenant="${tenant}"] td[data-col="${col}"]`;

  beforeAll(async () => {
    tdb = await testDatabase('dashboard_tenants');
    tserver = await dashboardServer(tdb, { apiToken: token });
    tbrowser = await launchChromium();
    tpage = await tbrowser.newPage({ viewport: { width: 1280, height: 900 } });
    tpage.on('dialog', (dialog) => void dialog.dismiss());
    tpage.on('pageerror', (error) => errors.push(error.message));
  });
  afterAll(async () => {
    await tbrowser?.close();
    await tserver?.close();
    await tdb?.close();
  });

  it('says so when no tenant has email waiting', async () => {
    await tpage.goto(`${tserver.url}/`);
    await tpage.fill('#token', token);
    await tpage.click('#login-form button[type=submit]');
    await tpage.waitForFunction(() => document.querySelector('#updated')?.textContent?.startsWith('updated'));
    expect(await tpage.isVisible('#tenants-empty')).toBe(true);
    expect(await tpage.textContent('#tenants-empty')).toBe('no tenant has email waiting');
    expect(await tpage.isVisible('#tenants-table')).toBe(false);
  });

  it('lists the tenants with email waiting on the refresh cycle, largest backlog first, a pause reason as text', async () => {
    const s = ident(tdb.schema);
    // Pending intents backdated by `age` seconds, so the oldest age is known.
    for (const [tenant, n, age] of [['acme', 5, 150], ['globex', 3, 30], ['', 1, 5]] as const) {
      await tdb.pool.query(
        `WITH r AS (INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, tenant)
                    SELECT 'tn-' || $1 || '-' || i, 'c@example.com', now() - make_interval(secs => $3), 'expired', now(), 'x', $1
                      FROM generate_series(1, $2::int) i RETURNING id, expires_at)
         INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at, tenant)
         SELECT 'reservation-expired:' || r.id, r.id, 'c@example.com', 'reservation-expired', 'pending', r.expires_at, r.expires_at, $1 FROM r`,
        [tenant, n, age],
      );
    }
    const hostile = '<img src=x id=injected-tenant onerror="document.title=4">';
    await tenantPause(tdb.pool, tdb.schema, 'globex', `billing ${hostile}`);

    await tpage.waitForFunction(() => document.querySelectorAll('#tenant-rows tr').length === 3, undefined, { timeout: 10_000 });
    expect(await tpage.locator('#tenant-rows tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.tenant))).toEqual([
      'acme',
      'globex',
      '',
    ]);
    expect(await tpage.isVisible('#tenants-empty')).toBe(false);
    expect(await tpage.isVisible('#tenants-table')).toBe(true);
    expect(await tpage.textContent(cell('acme', 'backlog'))).toBe('5');
    expect(await tpage.textContent(cell('globex', 'backlog'))).toBe('3');
    expect(await tpage.textContent(cell('', 'backlog'))).toBe('1');
    expect(await tpage.textContent(cell('', 'tenant'))).toBe('(empty tenant)');
    expect(await tpage.textContent(cell('acme', 'oldest'))).toMatch(/^2\.\d min$/);
    expect(await tpage.textContent(cell('globex', 'oldest'))).toMatch(/^3\d\.\d s$/);
    expect(await tpage.textContent(cell('acme', 'sent'))).toBe('0');
    expect(await tpage.textContent(cell('acme', 'state'))).toBe('');
    expect(await tpage.textContent(cell('globex', 'state'))).toBe(`paused: billing ${hostile}`);
    expect(await tpage.getAttribute(cell('globex', 'state'), 'class')).toBe('state-paused');
    expect(await tpage.locator('#injected-tenant').count()).toBe(0);
    await tpage.screenshot({ path: '/tmp/dashboard-tenants.png', fullPage: true });
    expect(errors).toEqual([]);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard: hardened page, roles and the audit panel', () => {
  let hdb: TestDatabase;
  let hserver: ApiServer;
  let hbrowser: Browser;
  const readToken = 'dashboard-read-token-0123456789';
  const operateToken = 'dashboard-operate-token-0123456789';

  beforeAll(async () => {
    hdb = await testDatabase('dashboard_access');
    const tokens = new ApiTokens({
      entries: parseTokensFile(`tokens:
  - { name: viewer, role: read, sha256: ${tokenHash(readToken)} }
  - { name: oncall, role: operate, sha256: ${tokenHash(operateToken)} }
`),
    });
    hserver = await dashboardServer(hdb, { tokens });
    hbrowser = await launchChromium();
  });
  afterAll(async () => {
    // Each step bounded, so a hang (seen once under a loaded CI run) names the step that hung.
    await within('closing Chromium', hbrowser?.close());
    await within('closing the API server', hserver?.close());
    await within('dropping the test schema', hdb?.close());
  }, 90_000);

  /** A fresh tab that records every CSP violation and script error, logged in with `token`. */
  async function open(token: string): Promise<{ page: Page; violations: string[]; errors: string[] }> {
    const page = await hbrowser.newPage({ viewport: { width: 1280, height: 900 } });
    const violations: string[] = [];
    const errors: string[] = [];
    await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as unknown as { reportViolation: (t: string) => void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content.Security.Policy/i.test(message.text())) violations.push(message.text());
    });
    page.on('dialog', (dialog) => void dialog.dismiss());
    await page.goto(`${hserver.url}/`);
    await page.fill('#token', token);
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#updated')?.textContent?.startsWith('updated'));
    return { page, violations, errors };
  }

  it('is served with a strict CSP (no inline script or style), nosniff, no referrer, and no framing', async () => {
    for (const url of ['/', '/dashboard', '/dashboard.js', '/dashboard.css']) {
      const res = await fetch(`${hserver.url}${url}`);
      expect(res.status, url).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
    const html = await (await fetch(`${hserver.url}/`)).text();
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=/i);
  });

  it('works under its CSP with an operate token: controls shown, a pause recorded in the audit panel, the token in sessionStorage only', async () => {
    const { page, violations, errors } = await open(operateToken);
    expect(await page.isVisible('#pause')).toBe(true);
    expect(await page.textContent('#role-note')).toBe('token oncall (operate)');
    await page.fill('#pause-reason', 'audited from the dashboard');
    await page.click('#pause');
    await page.waitForFunction(() => document.querySelector('#audit-rows tr[data-action="delivery.pause"]') !== null);
    const row = await page.textContent('#audit-rows tr[data-action="delivery.pause"]');
    expect(row).toContain('oncall');
    expect(row).toContain('audited from the dashboard');
    await page.click('#resume');
    await page.waitForFunction(() => document.querySelector('[data-field="deliveryState"]')?.textContent === 'running');
    await page.waitForFunction(() => document.querySelectorAll('#charts canvas').length === 3);
    expect(await page.evaluate(() => [sessionStorage.getItem('leasehold-token') !== null, localStorage.length])).toEqual([true, 0]);
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows a read token no control button, and the API refuses it a pause', async () => {
    const { page, violations, errors } = await open(readToken);
    expect(await page.textContent('#role-note')).toBe('token viewer (read)');
    for (const selector of ['#pause', '#resume', '#rate-form', '#pause-form']) expect(await page.isVisible(selector), selector).toBe(false);
    expect(await page.locator('#account-rows button:visible').count()).toBe(0);
    expect(await page.locator('#intents button:visible').count()).toBe(0);
    // Reading still works: the panels fill in, the trace form stays.
    expect(await page.isVisible('#trace-form')).toBe(true);
    expect(await page.textContent('[data-field="deliveryState"]')).toBe('running');
    // Forcing the call from the page changes nothing.
    const answer = await page.evaluate(async (token) => {
      const res = await fetch('/v1/delivery/pause', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      return [res.status, (await res.json()).error.code];
    }, readToken);
    expect(answer).toEqual([403, 'forbidden']);
    expect((await deliveryControlGet(hdb.pool, hdb.schema)).paused).toBe(false);
    await page.screenshot({ path: '/tmp/dashboard-read-token.png', fullPage: true });
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
