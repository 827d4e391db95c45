/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, dashboardServer, launchChromium } from '../helpers/dashboard.js';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import type { ApiServer } from '../../src/server/app.js';
import { auditInsert } from '../../src/tables/audit-log.js';
import { laneSamplesRecord } from '../../src/tables/lane-samples.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

/**
 * The dashboard opened on a service that has been running for an hour: the
 * charts draw that hour at once, from the samples and attempts already in
 * the database (seeded in the past here, instead of waiting for them).
 */
const token = 'dashboard-history-token-0123456789';
const SHOTS = '/tmp/shots';

type ChartView = { distr: number | undefined; title: string; data: Array<Array<number | null>> };

let db: TestDatabase;
let server: ApiServer;
let browser: Browser;
let page: Page;
let dbNow: number;
const errors: string[] = [];
const violations: string[] = [];
// Ages of the oldest pending email, 10 minutes at each: nothing waiting, then a fraction of a second up to past the promise.
const AGES = [0, 0.4, 3, 25, 200, 1200];
// Attempts in the past: [outcome, seconds ago].
const ATTEMPTS: Array<[string, number]> = [
  ['accepted', 3300], ['accepted', 3300], ['rate_limited', 3300],
  ['accepted', 1800], ['failed', 1800],
  ['accepted', 400], ['lease_expired', 60],
];

async function charts(p: Page): Promise<Record<string, ChartView>> {
  return p.evaluate(() => {
    const all = (window as unknown as {
      leaseholdCharts: Record<string, { scales: Record<string, { distr?: number }>; data: Array<Array<number | null>>; root: HTMLElement }>;
    }).leaseholdCharts;
    return Object.fromEntries(
      Object.entries(all).map(([kind, c]) => [kind, { distr: c.scales['y']?.distr, title: c.root.querySelector('.u-title')?.textContent ?? '', data: c.data }]),
    );
  });
}

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard: the past hour on open', () => {
  beforeAll(async () => {
    db = await testDatabase('dashboard_history');
    const s = ident(db.schema);
    dbNow = (await db.pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now.getTime();
    await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 10 });
    // 40 minutes ago the limit went from 20/s, burst 5 to today's 10/s, burst 10.
    await auditInsert(
      db.pool,
      db.schema,
      { name: 'oncall' },
      { action: 'rate_limit.set', target: 'default', before: { perSecond: 20, burst: 5 }, after: { perSecond: 10, burst: 10 } },
      new Date(dbNow - 2400_000),
    );
    // A sample every 10 s over the last hour, except for five minutes 30 minutes ago (nobody was sampling).
    for (let i = 0; i < 360; i++) {
      const ago = 3595 - i * 10;
      if (ago > 1500 && ago < 1800) continue;
      await laneSamplesRecord(
        db.pool,
        db.schema,
        { backlog: 100 + (i % 60), dueHolds: i % 5, oldestPendingAgeSeconds: AGES[Math.floor(i / 60)]!, oldestDueAgeSeconds: 0.05 * (i % 20) },
        new Date(dbNow - ago * 1000),
      );
    }
    // Intents to hang the attempts on.
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'hist' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    let attempt = 0;
    for (const [outcome, ago] of ATTEMPTS) {
      await db.pool.query(
        `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt, duration_ms)
         VALUES ('reservation-expired:hist-0', $1::int, gen_random_uuid(), 'sandbox', $2::timestamptz - make_interval(secs => $3),
                 $2::timestamptz - make_interval(secs => $3 - 1), $4::text, CASE WHEN $4::text = 'accepted' THEN 'hist-receipt-' || $1::int END, 5)`,
        [++attempt, new Date(dbNow), ago, outcome],
      );
    }
    server = await dashboardServer(db, { apiToken: token });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as unknown as { reportViolation: (t: string) => void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('dialog', (dialog) => void dialog.dismiss());
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.close();
  });

  it('shows no "Forget token" on the login screen, and shows it once a token is in use', async () => {
    await page.goto(`${server.url}/`);
    await page.waitForSelector('#login-form');
    expect(await page.isVisible('#login')).toBe(true);
    expect(await page.isVisible('#logout')).toBe(false);
    await page.screenshot({ path: `${SHOTS}/history-login.png` });
    await page.fill('#token', token);
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#updated')?.textContent?.startsWith('updated'));
    expect(await page.isVisible('#logout')).toBe(true);
  });

  it('draws the past hour the moment it opens: samples across the hour, a gap where none were taken, sends from the attempts', async () => {
    await page.waitForFunction(() => document.querySelectorAll('#charts canvas').length === 3);
    const view = await charts(page);
    const now = dbNow / 1000;
    const xs = view['backlog']!.data[0] as number[];
    // The first poll already has the hour (the tab has taken one sample of its own at most).
    expect(xs[0]).toBeLessThan(now - 3500);
    expect(xs.at(-1)).toBeGreaterThan(now - 30);
    for (let minutes = 0; minutes < 60; minutes += 10) {
      const from = now - 3600 + minutes * 60;
      const inside = xs.filter((t) => t >= from && t < from + 600).length;
      expect(inside, `minute ${minutes}`).toBeGreaterThanOrEqual(minutes === 30 ? 25 : 55);
    }
    // The five minutes nobody sampled are a gap (a row of nulls), not a line drawn across them.
    const backlog = view['backlog']!.data[1]!;
    const gap = backlog.findIndex((v) => v === null);
    expect(xs[gap]!).toBeGreaterThan(now - 1810);
    expect(xs[gap]!).toBeLessThan(now - 1795);
    expect(backlog.filter((v) => v === null)).toHaveLength(1);
    expect(Math.max(...(backlog.filter((v) => v !== null) as number[]))).toBe(159);

    // Sends per second over the hour, one x per second, from the attempts of the last hour.
    const sends = view['sends']!.data;
    expect(sends[0]!.length).toBeGreaterThanOrEqual(3600);
    expect(sends[0]!.at(-1)! - sends[0]![0]!).toBe(3600);
    const total = (i: number) => (sends[i] as number[]).reduce((a, b) => a + b, 0);
    expect([total(1), total(2), total(3), total(6)]).toEqual([4, 1, 1, 1]);
    // The limit as it was: 20/s (burst 5) until 40 minutes ago, 10/s (burst 10) since.
    const at = (seconds: number) => sends[0]!.findIndex((t) => t! >= Math.floor(now - seconds));
    expect([sends[7]![at(3000)], sends[8]![at(3000)]]).toEqual([20, 25]);
    expect([sends[7]![at(1200)], sends[8]![at(1200)]]).toEqual([10, 20]);
    expect(await page.textContent('#chart-title')).toBe('Last hour');
    expect(await page.textContent('#chart-note')).toMatch(/^\(3\d\d samples from the service, every 10 s; \d+ from this tab, every 2 s\)$/);
    await page.locator('#charts').screenshot({ path: `${SHOTS}/history-charts-hour.png` });
  });

  it('draws the ages on a log axis, so seconds show beside the 900 s promise', async () => {
    const age = (await charts(page))['age']!;
    expect(age.distr).toBe(3);
    expect(age.title).toBe('Oldest age against the promise (s, log scale; none waiting: 0.1 s)');
    // The service's samples (the tab's own, after them, read this database's real ages).
    const pending = age.data[1]!.filter((v, i) => v !== null && age.data[0]![i]! < dbNow / 1000) as number[];
    // Nothing waiting is drawn at the floor; every other age as it was.
    expect(new Set(pending)).toEqual(new Set([0.1, 0.4, 3, 25, 200, 1200]));
    expect(new Set(age.data[2])).toEqual(new Set([900]));
    // A labelled tick at each decade (uPlot draws them on the canvas; these are the labels it drew).
    const ticks = await page.evaluate(
      () => (window as unknown as { leaseholdCharts: Record<string, { axes: Array<{ _values?: string[] }> }> }).leaseholdCharts['age']!.axes[1]!._values,
    );
    expect(ticks).toEqual(['0.1 s', '1 s', '10 s', '1.7 min', '16.7 min', '2.8 h']);
  });

  it('narrows to the last 10 minutes and back', async () => {
    await page.selectOption('#chart-window', '600');
    expect(await page.textContent('#chart-title')).toBe('Last 10 minutes');
    const view = await charts(page);
    const now = Date.now() / 1000;
    expect(Math.min(...(view['backlog']!.data[0] as number[]))).toBeGreaterThanOrEqual(now - 605);
    expect(view['sends']!.data[0]!.length).toBe(601);
    await page.locator('#charts').screenshot({ path: `${SHOTS}/history-charts-10min.png` });
    await page.selectOption('#chart-window', '3600');
    expect((await charts(page))['sends']!.data[0]!.length).toBe(3601);
  });

  it('sets the rate alone, or the burst alone, keeping the other; asks for one when both are empty', async () => {
    await page.fill('#per-second', '4');
    await page.click('#rate-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('[data-field="limiter"]')?.textContent?.startsWith('4/s, burst 10'));
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 4, burst: 10 });
    // Emptied, the placeholder showing what is in force.
    expect(await page.inputValue('#per-second')).toBe('');
    await page.waitForFunction(() => (document.querySelector('#per-second') as HTMLInputElement).placeholder === '4');
    await page.fill('#burst', '7');
    await page.click('#rate-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('[data-field="limiter"]')?.textContent?.startsWith('4/s, burst 7'));
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 4, burst: 7 });
    await page.click('#rate-form button[type=submit]');
    expect(await page.textContent('#message')).toBe('Enter a rate per second, a burst, or both.');
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 4, burst: 7 });
    // The new limit is the last point of the limit line.
    await page.waitForFunction(() => {
      const sends = (window as unknown as { leaseholdCharts: Record<string, { data: number[][] }> }).leaseholdCharts['sends']!;
      return sends.data[7]!.at(-1) === 4 && sends.data[8]!.at(-1) === 11;
    });
    await page.screenshot({ path: `${SHOTS}/history-page.png`, fullPage: true });
  });

  it('serves its icon openly, as SVG under the page CSP, at /favicon.svg and /favicon.ico', async () => {
    expect(await page.getAttribute('link[rel="icon"]', 'href')).toBe('/favicon.svg');
    for (const url of ['/favicon.svg', '/favicon.ico']) {
      const res = await fetch(`${server.url}${url}`);
      expect(res.status, url).toBe(200);
      expect(res.headers.get('content-type'), url).toBe('image/svg+xml; charset=utf-8');
      expect(res.headers.get('content-security-policy'), url).toContain("default-src 'none'");
      expect(res.headers.get('x-content-type-options'), url).toBe('nosniff');
      const svg = await res.text();
      expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      expect(svg).not.toMatch(/<script|\son[a-z]+=/i);
    }
    // The browser loads it as an image under the page's CSP (img-src 'self').
    const size = await page.evaluate(async () => {
      const img = new Image();
      img.src = '/favicon.svg';
      await img.decode();
      return [img.naturalWidth > 0, img.naturalHeight > 0];
    });
    expect(size).toEqual([true, true]);
  });

  it('forgets the token: back to the login screen, and "Forget token" hidden again', async () => {
    await page.click('#logout');
    expect(await page.isVisible('#login')).toBe(true);
    expect(await page.isVisible('#logout')).toBe(false);
    expect(await page.evaluate(() => sessionStorage.getItem('leasehold-token'))).toBeNull();
    expect(errors).toEqual([]);
    expect(violations).toEqual([]);
  });

  it('a refused token answered late does not sign out the token typed after it', async () => {
    // The refused token's first request is held until the right token is in
    // use: a refresh still in flight when the operator corrects a typo.
    const wrong = 'not-the-history-token-0123456789';
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = true;
    await page.route('**/v1/token', async (route) => {
      const refused = route.request().headers()['authorization'] === `Bearer ${wrong}`;
      if (refused && holding) {
        holding = false;
        await held;
      }
      await route.continue();
    });
    try {
      await page.fill('#token', wrong);
      await page.click('#login-form button[type=submit]');
      // The same refused token's next refresh is answered at once: the login screen says so.
      await page.waitForFunction(() => document.querySelector('#login-error')?.textContent === 'That token was refused.', undefined, { timeout: 10_000 });
      await page.fill('#token', token);
      await page.click('#login-form button[type=submit]');
      await page.waitForFunction(() => document.querySelector('#updated')?.textContent?.startsWith('updated'));
      const late = page.waitForEvent('requestfinished', (r) => r.url().endsWith('/v1/token') && r.headers()['authorization'] === `Bearer ${wrong}`);
      release();
      await late;
      // The page reads the late 401's body and acts on it within a task or two.
      await page.waitForTimeout(300);
      expect(await page.isVisible('#app')).toBe(true);
      expect(await page.isVisible('#login')).toBe(false);
      expect(await page.evaluate(() => sessionStorage.getItem('leasehold-token'))).toBe(token);
    } finally {
      release();
      await page.unroute('**/v1/token');
    }
  });
});
