/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { startApiServer, type ApiServer } from '../../src/server/app.js';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { recordAcceptance } from '../helpers/sent-intent.js';
import { ingestEvents } from '../../src/events/ingest.js';

// Debian's Chromium; .ci/run installs it. Without it this file is skipped, loudly.
const CHROMIUM = '/usr/bin/chromium';
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
    server = await startApiServer({
      pool: db.pool,
      schema: db.schema,
      config: { expiryPromiseS: 60, emailPromiseS: 900, ratePerSecond: 10, rateBurst: 10 },
      logger: silentLogger,
      metrics: createMetrics(),
      apiToken: token,
      port: 0,
      host: '127.0.0.1',
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
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
    // Three intents listed; only finished ones offer a replay.
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
    expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 3, burst: 6 });
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
    expect(await trace.textContent()).toMatch(/hold dash-1: expired\nbecame eligible +\d{4}-/);
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
});
