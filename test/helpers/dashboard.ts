import { chromium, type Browser } from 'playwright-core';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { startApiServer, type ApiOptions, type ApiServer } from '../../src/server/app.js';
import type { TestDatabase } from './database.js';

/** Debian's Chromium, which .ci/run installs; the browser tests skip, saying so, without it. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * The API with the dashboard on a free loopback port, over a test schema:
 * the promises and limiter the dashboard tests draw against, and whatever
 * else a test needs (a token, the tokens file, accounts).
 */
export function dashboardServer(db: TestDatabase, options: Partial<ApiOptions> = {}): Promise<ApiServer> {
  return startApiServer({
    pool: db.pool,
    schema: db.schema,
    config: { expiryPromiseS: 60, emailPromiseS: 900, ratePerSecond: 10, rateBurst: 10 },
    logger: silentLogger,
    metrics: createMetrics(),
    port: 0,
    host: '127.0.0.1',
    ...options,
  });
}

/** Headless Chromium with nothing of its own on the network (no updates, sync or QUIC). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** `work`, or an error naming `step` once it has taken `ms` (a teardown that hangs says where). */
export async function within(step: string, work: Promise<unknown> | undefined, ms = 25_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${step} took more than ${ms} ms`)), ms);
  });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
