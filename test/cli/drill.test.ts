import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { startApiServer, type ApiServer } from '../../src/server/app.js';
import { rateLimiterGet, rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { deliveryControlGet } from '../../src/tables/delivery-control.js';
import { runCli } from '../helpers/cli.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { findAll, parseXml } from '../helpers/xml.js';

/**
 * `leasehold drill` end to end at a small size against a real PostgreSQL:
 * embedded mode (the drill starts the API and both lanes in its own process
 * on the sandbox) passes and writes its report; remote mode against an API
 * with no lanes behind it fails, with the criteria that broke, and leaves the
 * deployment as it found it.
 */

let db: TestDatabase;
let out: string;
beforeAll(async () => {
  db = await testDatabase('drill_cli');
  out = await mkdtemp(path.join(tmpdir(), 'leasehold-drill-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
  await db?.close();
});

describe('leasehold drill', () => {
  it('embedded: pauses, piles up, resumes at the limit, passes and writes the report', async () => {
    const schema = `${db.schema}_drill`;
    const dir = path.join(out, 'embedded');
    try {
      const result = await runCli(
        ['drill', '--hold-window', '2', '--holds', '12', '--rate', '5', '--burst', '2', '--schema', schema, '--out', dir, '--json'],
        db.env,
      );
      expect(result.code, result.stderr).toBe(0);
      const verdict = JSON.parse(result.stdout) as { passed: boolean; criteria: Array<{ name: string; passed: boolean }> };
      expect(verdict.passed).toBe(true);
      expect(verdict.criteria.map((c) => c.name)).toEqual(['expiry-on-time', 'silent-while-paused', 'no-burst', 'recovered', 'all-delivered']);
      // Progress went to stderr, a line per sample, through each phase.
      expect(result.stderr).toMatch(/PAUSED +backlog +12/);
      expect(result.stderr).toMatch(/draining +backlog +0/);

      const data = JSON.parse(await readFile(path.join(dir, 'drill.json'), 'utf8'));
      expect(data.observations.holds).toHaveLength(12);
      expect(data.observations.backlogAtResume).toBe(12);
      expect(data.observations.samples.length).toBeGreaterThanOrEqual(6);
      // The pause held the intents past one hold window: the email promise (one window) was broken, then restored.
      expect(data.verdict.peakOldestPendingAgeS).toBeGreaterThan(2);
      expect(data.verdict.maxSendsPerWindow).toBeLessThanOrEqual(7);

      const markdown = await readFile(path.join(dir, 'drill.md'), 'utf8');
      expect(markdown).toMatch(/^# leasehold drill \w+: PASSED/);
      expect(markdown).toContain('| no-burst | no 1 s window holds more than burst + perSecond = 2 + 5 = 7 sends |');
      expect(markdown).toContain('](drill.svg)');
      const svg = parseXml(await readFile(path.join(dir, 'drill.svg'), 'utf8'));
      expect(findAll(svg, (e) => e.attrs.class === 'panel')).toHaveLength(3);
      const bars = findAll(svg, (e) => e.attrs.class === 'bar');
      expect(bars.length).toBeGreaterThan(0);

      // Its own schema, with every drill hold's story in it.
      const { rows } = await db.pool.query<{ sent: number }>(`SELECT count(*)::int AS sent FROM ${ident(schema)}.email_outbox WHERE state = 'sent'`);
      expect(rows[0]!.sent).toBe(12);
    } finally {
      await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
    }
  });

  it('remote: against an API with no lanes running it fails the criteria that broke and puts the deployment back', async () => {
    const token = 'drill-remote-token-0123456789';
    await rateLimiterSet(db.pool, db.schema, { perSecond: 10, burst: 10 });
    let server: ApiServer | undefined;
    try {
      server = await startApiServer({
        pool: db.pool,
        schema: db.schema,
        config: { expiryPromiseS: 2, emailPromiseS: 60, ratePerSecond: 10, rateBurst: 10 },
        logger: silentLogger,
        metrics: createMetrics(),
        apiToken: token,
        port: 0,
        host: '127.0.0.1',
      });
      const dir = path.join(out, 'remote');
      const result = await runCli(
        ['drill', '--url', server.url, '--token', token, '--hold-window', '1', '--holds', '3', '--rate', '4', '--burst', '1', '--out', dir],
        db.env,
      );
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain('leasehold drill: FAILED (expiry-on-time, all-delivered)');
      expect(result.stdout).toMatch(/^FAIL {2}expiry-on-time: 3 of 3 holds never expired/m);
      expect(result.stdout).toMatch(/^pass {2}no-burst/m);
      expect(await readFile(path.join(dir, 'drill.md'), 'utf8')).toMatch(/^# leasehold drill \w+: FAILED/);
      // Resumed, and the rate limit it found is back.
      expect(await deliveryControlGet(db.pool, db.schema)).toMatchObject({ paused: false });
      expect(await rateLimiterGet(db.pool, db.schema)).toMatchObject({ perSecond: 10, burst: 10 });
    } finally {
      await server?.close();
    }
  });

  it('refuses bad flags with exit 2 before touching anything', async () => {
    expect((await runCli(['drill', '--holds', '0'], db.env)).code).toBe(2);
    expect((await runCli(['drill', '--schema', 'leasehold'], db.env)).code).toBe(2);
    expect((await runCli(['drill', '--url', 'ftp://x'], db.env)).code).toBe(2);
    const noToken = await runCli(['drill', '--url', 'http://127.0.0.1:9'], { ...db.env, LEASEHOLD_API_TOKEN: '' });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('--url needs --token');
  });
});
