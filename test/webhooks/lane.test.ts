import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ident } from '../../src/db/pool.js';
import { silentLogger } from '../../src/observability/logger.js';
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

async function start(env: Record<string, string>) {
  const config = loadConfig({ ...db.env, LEASEHOLD_LISTEN: 'off', LEASEHOLD_EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'silent', ...env });
  const prepared = await prepareService(config, { expiry: true, delivery: true });
  return startService(prepared, { pool: db.pool, schema: db.schema, logger: silentLogger }, { databaseUrl: db.url });
}

describe('the service with LEASEHOLD_WEBHOOK_URL', () => {
  it('runs the webhook lane beside the delivery lane, and a start without endpoints turns the triggers off', async () => {
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

    const without = await start({});
    try {
      expect(without.webhooks).toBeUndefined();
      expect(await webhookEndpointsList(db.pool, db.schema)).toMatchObject([{ name: 'default', active: false }]);
      await insertDueHolds(db.pool, db.schema, 2, { prefix: 'quiet' });
      const deadline = Date.now() + 10_000;
      let expired = 0;
      while (expired < 2 && Date.now() < deadline) {
        const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.support_reservations WHERE id LIKE 'quiet-%' AND status = 'expired'`);
        expired = rows[0].n;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(expired).toBe(2);
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.webhook_events WHERE hold_id LIKE 'quiet-%'`);
      expect(rows[0].n).toBe(0);
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
