import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ident, withTransaction } from '../../src/db/pool.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import { Operations } from '../../src/ops/operations.js';
import { Writable } from 'node:stream';
import { prepareService, startService } from '../../src/service.js';
import { webhookEndpointsList } from '../../src/tables/webhook-endpoints.js';
import { rateLimiterGet } from '../../src/tables/rate-limiter.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';
import { WebhookReceiver, webhookSecret } from '../helpers/webhook-receiver.js';

let db: TestDatabase;
let receiver: WebhookReceiver;
beforeAll(async () => {
  db = await testDatabase('webhooks_lane');
  receiver = new WebhookReceiver(webhookSecret());
  await receiver.up();
});
afterAll(async () => {
  await receiver.down();
  await db.close();
});

async function start(env: Record<string, string>, log?: (line: string) => void) {
  const config = loadConfig({ ...db.env, LEASEHOLD_LISTEN: 'off', LEASEHOLD_EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'silent', ...env });
  const prepared = await prepareService(config, { expiry: true, delivery: true });
  const logger = log ? createLogger({ level: 'warn', destination: new Writable({ write: (chunk: Buffer, _e, done) => (log(chunk.toString()), done()) }) }) : silentLogger;
  return startService(prepared, { pool: db.pool, schema: db.schema, logger }, { databaseUrl: db.url });
}

describe('the service with LEASEHOLD_WEBHOOK_URL', () => {
  it('runs the webhook lane beside the delivery lane; a start without endpoints leaves them on, warning, and only an operator turns one off', async () => {
    const service = await start({ LEASEHOLD_WEBHOOK_URL: receiver.url, LEASEHOLD_WEBHOOK_SECRET: receiver.secret, LEASEHOLD_RATE_PER_SECOND: '1000', LEASEHOLD_RATE_BURST: '1000' });
    try {
      expect(service.webhooks).toBeDefined();
      expect(service.announcements).toContain('webhooks to default');
      await insertDueHolds(db.pool, db.schema, 5, { prefix: 'lane' });
      const deadline = Date.now() + 30_000;
      while (receiver.delivered().size < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const types = [...receiver.delivered().values()].map((r) => r.body!.type).sort();
      expect(types).toEqual([...Array(5).fill('email.accepted'), ...Array(5).fill('hold.expired')]);
    } finally {
      await service.stop();
    }
    expect(await webhookEndpointsList(db.pool, db.schema)).toMatchObject([{ name: 'default', active: true, types: null, tenants: null }]);

    const logged: string[] = [];
    const without = await start({}, (line) => logged.push(line));
    const quietCount = async (prefix: string) =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.webhook_events WHERE hold_id LIKE $1 AND type = 'hold.expired'`, [`${prefix}-%`])).rows[0]!.n;
    const expireTwo = async (prefix: string) => {
      await insertDueHolds(db.pool, db.schema, 2, { prefix });
      const deadline = Date.now() + 10_000;
      let expired = 0;
      while (expired < 2 && Date.now() < deadline) {
        const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.support_reservations WHERE id LIKE $1 AND status = 'expired'`, [`${prefix}-%`]);
        expired = rows[0].n;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(expired).toBe(2);
    };
    try {
      expect(without.webhooks).toBeUndefined();
      // Another process (or this one's next start) may deliver it: the endpoint stays on, its events wait.
      expect(await webhookEndpointsList(db.pool, db.schema)).toMatchObject([{ name: 'default', active: true }]);
      expect(logged.some((l) => l.includes('"event":"webhook.endpoints_unserved"') && l.includes('"default"'))).toBe(true);
      await expireTwo('waiting');
      expect(await quietCount('waiting')).toBe(2);
      // An operator turns it off: from then on nothing is written for it.
      const ops = new Operations({ pool: db.pool, schema: db.schema, initialRate: { perSecond: 10, burst: 10 }, logger: silentLogger, actor: { name: 'oncall' } });
      expect(await ops.webhooks.deactivateEndpoint('default')).toMatchObject({ name: 'default', active: false });
      expect(await webhookEndpointsList(db.pool, db.schema)).toMatchObject([{ name: 'default', active: false }]);
      await expireTwo('quiet');
      expect(await quietCount('quiet')).toBe(0);
    } finally {
      await without.stop();
    }
  });
});

describe('the service with LEASEHOLD_WEBHOOKS_FILE', () => {
  it("applies a rate changed in the endpoints file at the next start, as the accounts' rates are", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-webhooks-'));
    const file = (perSecond: number, burst: number) => {
      const at = path.join(dir, `endpoints-${perSecond}.yaml`);
      writeFileSync(at, ['endpoints:', '  - name: slots', `    url: ${receiver.url}`, '    secret: ${SLOTS_SECRET}', `    rate: { perSecond: ${perSecond}, burst: ${burst} }`].join('\n'));
      return { LEASEHOLD_WEBHOOKS_FILE: at, SLOTS_SECRET: receiver.secret };
    };
    for (const [perSecond, burst] of [
      [5, 10],
      [9, 3],
    ] as const) {
      const service = await start(file(perSecond, burst));
      await service.stop();
      expect(await rateLimiterGet(db.pool, db.schema, null, 'webhook:slots')).toMatchObject({ perSecond, burst, configured: { perSecond, burst }, source: 'configuration' });
    }
  });
});

describe('webhook payload times (webhook_time_)', () => {
  it('is declared STABLE, as to_char is, and writes UTC with milliseconds whatever the session time zone', async () => {
    // In one transaction, SET LOCAL: the pooled session keeps its own zone.
    const { rows } = await withTransaction(db.pool, async (client) => {
      await client.query(`SET LOCAL TimeZone = 'Asia/Kolkata'`);
      return client.query<{ at: string; volatility: string }>(
        `SELECT ${ident(db.schema)}.webhook_time_('2026-12-03 10:00:00.123+00') AS at,
                (SELECT p.provolatile FROM pg_proc p WHERE p.oid = '${ident(db.schema)}.webhook_time_(timestamptz)'::regprocedure) AS volatility`,
      );
    });
    expect(rows[0]).toEqual({ at: new Date('2026-12-03T10:00:00.123Z').toISOString(), volatility: 's' });
  });
});
