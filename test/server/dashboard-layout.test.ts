/// <reference lib="dom" />
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, dashboardServer, launchChromium } from '../helpers/dashboard.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import type { ApiServer } from '../../src/server/app.js';
import { auditInsert } from '../../src/tables/audit-log.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

/**
 * The dashboard at a desktop's width and a phone's, in real Chromium: what
 * an operator sees after a refused token, while delivery is paused, with a
 * trace open and after tracing an unknown hold. Screenshots land in
 * /tmp/shots (layout-<width>-<step>.png) for a person to look at; the
 * assertions are the concrete parts of what they show.
 */
const token = 'dashboard-layout-token-0123456789';
const SHOTS = '/tmp/shots';
const WIDTHS = [1440, 390] as const;

let db: TestDatabase;
let server: ApiServer;
let browser: Browser;

const noSidewaysScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
// Each measurement finds its element and reads it in one evaluation: the
// refresh cycle replaces the tables' rows every 2 s, and an element found in
// one call and read in the next may be detached by then (no box, no style).
const heightOf = (page: Page, selector: string) =>
  page.evaluate((sel) => Math.round(document.querySelector(sel)!.getBoundingClientRect().height), selector);
/** The empty space at the bottom of a card: below its last child, inside its border (a stretched card is mostly this). */
const emptyBelow = (page: Page, selector: string) =>
  page.evaluate((sel) => {
    const el = document.querySelector(sel)!;
    const lowest = Math.max(...Array.from(el.children).map((child) => child.getBoundingClientRect().bottom));
    return Math.round(el.getBoundingClientRect().bottom - lowest);
  }, selector);

describe.skipIf(!existsSync(CHROMIUM))('operator dashboard layout at 1440 and 390 px', () => {
  beforeAll(async () => {
    db = await testDatabase('dashboard_layout');
    await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 10 });
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'lay' });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    // Audit entries of the lengths an operator writes: a rate change and a pause with a sentence of a reason.
    await auditInsert(db.pool, db.schema, { name: 'oncall' }, {
      action: 'rate_limit.set',
      target: 'default',
      before: { perSecond: 20, burst: 5 },
      after: { perSecond: 10, burst: 10 },
    });
    await auditInsert(db.pool, db.schema, { name: 'oncall' }, {
      action: 'delivery.pause',
      target: null,
      before: { paused: false },
      after: { paused: true, reason: 'provider incident INC-4411: bounces from one domain, holding sends until they confirm' },
    });
    server = await dashboardServer(db, { apiToken: token });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.close();
  });

  it('the chart window defaults to the hour docs/operations.md describes', async () => {
    const html = readFileSync(new URL('../../public/dashboard.html', import.meta.url), 'utf8');
    expect(html).toMatch(/<option value="3600" selected>1 hour<\/option>/);
    expect(html).toMatch(/<span id="chart-title">Last hour<\/span>/);
    const docs = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain('Live charts of the last hour by default');
    expect(docs).not.toMatch(/charts of the last 10 minutes/i);
  });

  it.each(WIDTHS)('at %i px: a refused token inline, the fleet pause on every account row, a trace in its own panel, an unknown hold traced clean', async (width) => {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const dialogs: string[] = [];
    const errors: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on('pageerror', (error) => errors.push(error.message));
    try {
      // A refused token: said on the login screen, no native dialog.
      await page.goto(`${server.url}/`);
      await page.fill('#token', 'not-the-token-0123456789');
      await page.click('#login-form button[type=submit]');
      await page.waitForFunction(() => document.querySelector('#login-error')?.textContent === 'That token was refused.');
      expect(await page.isVisible('#login-error')).toBe(true);
      expect(await page.isVisible('#app')).toBe(false);
      expect(await noSidewaysScroll(page)).toBe(true);
      await page.screenshot({ path: `${SHOTS}/layout-${width}-refused.png`, fullPage: true });

      await page.fill('#token', token);
      await page.click('#login-form button[type=submit]');
      expect(await page.textContent('#login-error')).toBe('');
      await page.waitForFunction(() => document.querySelectorAll('#account-rows tr').length === 1 && document.querySelectorAll('#audit-rows tr').length >= 2);
      await page.waitForFunction(() => document.querySelector('[data-field="backlog"]')?.textContent === '3');
      const state = '#account-rows tr[data-account="default"] td[data-col="state"]';
      expect(await page.textContent(state)).toBe('sending');
      expect(await page.inputValue('#chart-window')).toBe('3600');
      expect(await page.textContent('#chart-title')).toBe('Last hour');
      expect(await noSidewaysScroll(page)).toBe(true);
      // The audit log reads in lines, not a word per line: the change has most of the width, a few lines at most.
      const change = await page.evaluate(() => {
        const td = document.querySelector('#audit-rows tr[data-action="delivery.pause"] td[data-col="change"]')!;
        const box = td.getBoundingClientRect();
        return { width: box.width, lines: Math.round(box.height / parseFloat(getComputedStyle(td).lineHeight)) };
      });
      expect(change.width).toBeGreaterThan(width === 390 ? 300 : 400);
      expect(change.lines).toBeLessThanOrEqual(width === 390 ? 4 : 2);
      // So does an intent id: two lines at most, the table scrolling inside its panel if it must.
      const idLines = await page.evaluate(() => {
        const td = document.querySelector('#intents td.id')!;
        return Math.round(td.getBoundingClientRect().height / parseFloat(getComputedStyle(td).lineHeight));
      });
      expect(idLines).toBeLessThanOrEqual(2);
      await page.screenshot({ path: `${SHOTS}/layout-${width}-open.png`, fullPage: true });

      // Paused fleet-wide: the account row says so, in the paused colour.
      await page.fill('#pause-reason', 'layout check');
      await page.click('#pause');
      await page.waitForFunction((sel) => document.querySelector(sel)?.textContent?.startsWith('paused with all delivery'), state);
      expect(await page.textContent(state)).toBe('paused with all delivery: layout check (by operator)');
      expect(await page.getAttribute(state, 'class')).toBe('state-paused');
      expect(await page.evaluate((sel) => getComputedStyle(document.querySelector(sel)!).color, state)).toBe('rgb(207, 34, 46)');
      expect(await noSidewaysScroll(page)).toBe(true);
      await page.screenshot({ path: `${SHOTS}/layout-${width}-paused.png`, fullPage: true });

      // A trace opens below the top row; the cards keep their height.
      const before = { expiry: await heightOf(page, '#expiry'), delivery: await heightOf(page, '#delivery'), controls: await heightOf(page, '#controls') };
      await page.fill('#trace-id', 'lay-1');
      await page.click('#trace-form button[type=submit]');
      await page.waitForSelector('#trace-output');
      expect(await page.textContent('#trace-output')).toMatch(/^hold lay-1: expired/);
      expect(await page.textContent('#trace-note')).toBe('(hold lay-1)');
      // Each card as tall as its own content: a refresh may add a line to one
      // (the numbers move), but no card gains empty space under its content.
      for (const card of ['#expiry', '#delivery', '#controls']) expect(await emptyBelow(page, card)).toBeLessThan(30);
      if (width === 1440) {
        // Side by side, each as tall as its own content, none a tall empty box.
        expect(before.expiry).toBeLessThan(before.delivery);
        expect(before.delivery).toBeLessThan(300);
      }
      expect(await noSidewaysScroll(page)).toBe(true);
      await page.screenshot({ path: `${SHOTS}/layout-${width}-trace.png`, fullPage: true });

      // An unknown hold: its error alone, nothing of the previous hold left under the new id.
      await page.fill('#trace-id', 'no-such-hold');
      await page.click('#trace-form button[type=submit]');
      await page.waitForSelector('#trace-error');
      expect(await page.locator('#trace-output').count()).toBe(0);
      expect(await page.textContent('#trace-note')).toBe('(hold no-such-hold)');
      expect(await page.textContent('#trace-error')).toMatch(/^No trace: not_found: .*no-such-hold/);
      expect(await page.textContent('#trace')).not.toContain('lay-1');
      await page.screenshot({ path: `${SHOTS}/layout-${width}-unknown.png`, fullPage: true });

      await page.click('#resume');
      await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'sending', state);
      expect((await deliveryControlGet(db.pool, db.schema)).paused).toBe(false);
      expect(dialogs).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      // Whatever failed above, the next width starts with delivery running.
      await fetch(`${server.url}/v1/delivery/resume`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    }
  });
});
