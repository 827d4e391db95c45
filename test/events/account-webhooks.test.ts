import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { accountWebhooks } from '../../src/events/webhook-config.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { ident } from '../../src/db/pool.js';
import { parseAccounts } from '../../src/model/accounts-file.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { intentsGet } from '../../src/tables/outbox.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { sentIntent } from '../helpers/sent-intent.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * Each account's webhook, POST /v1/webhooks/<account>, verified with that
 * account's own secret; and a hard bounce reported by any account stops
 * every send to the address, through every account.
 */
const FILE = `
accounts:
  - name: primary
    provider: resend
    apiKey: \${PRIMARY_KEY}
    webhookSecret: \${PRIMARY_HOOK_SECRET}
    rate: { perSecond: 1000, burst: 1000 }
  - name: backup
    provider: postmark
    serverToken: \${BACKUP_TOKEN}
    webhookUser: backup-hooks
    webhookPassword: \${BACKUP_HOOK_PASSWORD}
    rate: { perSecond: 1000, burst: 1000 }
failover: [primary, backup]
`;
const ENV = {
  PRIMARY_KEY: 're_test_key',
  PRIMARY_HOOK_SECRET: `whsec_${Buffer.from('primary-signing-secret-0123456789').toString('base64')}`,
  BACKUP_TOKEN: 'pm-test-token',
  BACKUP_HOOK_PASSWORD: 'backup-password-0123456789',
};
// The environment's own Postmark credentials: the default account's, not backup's.
const DEFAULT_POSTMARK = { user: 'default-hooks', password: 'default-password-0123456' };

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
let eventId = 4000;
const hardBounce = (messageId: string, email: string) => ({
  RecordType: 'Bounce',
  ID: ++eventId,
  Type: 'HardBounce',
  TypeCode: 1,
  Name: 'Hard bounce',
  MessageID: messageId,
  MessageStream: 'outbound',
  Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
  Details: 'smtp;550 5.1.1 mailbox does not exist',
  Email: email,
  From: 'support@example.com',
  BouncedAt: new Date().toISOString(),
  Inactive: true,
  CanActivate: true,
  Metadata: {},
});

let h: ApiHarness;
beforeAll(async () => {
  const accounts = parseAccounts(FILE, ENV);
  h = await apiHarness(
    'account_hooks',
    { POSTMARK_WEBHOOK_USER: DEFAULT_POSTMARK.user, POSTMARK_WEBHOOK_PASSWORD: DEFAULT_POSTMARK.password },
    { accounts, accountWebhooks: accountWebhooks(accounts.accounts), webhooks: { postmark: DEFAULT_POSTMARK } },
  );
});
afterAll(() => h.close());

const post = (path: string, payload: unknown, authorization?: string) =>
  h.app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    payload: JSON.stringify(payload),
  });

describe('webhooks per account', () => {
  it("an account's endpoint takes its own credentials only; the provider route keeps serving the default account", async () => {
    const record = hardBounce('pm-nobody', 'nobody@example.com');
    expect((await post('/v1/webhooks/backup', record, basic(DEFAULT_POSTMARK.user, DEFAULT_POSTMARK.password))).statusCode).toBe(401);
    expect((await post('/v1/webhooks/postmark', record, basic('backup-hooks', ENV.BACKUP_HOOK_PASSWORD))).statusCode).toBe(401);
    expect((await post('/v1/webhooks/postmark', record, basic(DEFAULT_POSTMARK.user, DEFAULT_POSTMARK.password))).statusCode).toBe(200);
    expect((await post('/v1/webhooks/backup', record, basic('backup-hooks', ENV.BACKUP_HOOK_PASSWORD))).statusCode).toBe(200);
    // The Resend account checks its Svix signature: unsigned is refused, not ignored.
    const unsigned = await post('/v1/webhooks/primary', { type: 'email.bounced', data: {} });
    expect(unsigned.statusCode).toBe(401);
    expect(unsigned.json().error.code).toBe('missing_signature');
    const unknown = await post('/v1/webhooks/nosuch', record);
    expect(unknown.statusCode).toBe(404);
  });

  it('a hard bounce reported by the backup stops the primary from sending to that address', async () => {
    const { pool, schema } = h.db;
    const victim = 'gone-for-good@example.com';
    await sentIntent(pool, schema, 'bounced-on-backup', { receipt: 'pm-msg-77', email: victim, provider: 'postmark' });
    const answer = await post('/v1/webhooks/backup', hardBounce('pm-msg-77', victim), basic('backup-hooks', ENV.BACKUP_HOOK_PASSWORD));
    expect(answer.json()).toMatchObject({ stored: 1, suppressed: 1 });

    // A later email to the same address, due on the primary (Resend).
    await createHold(pool, { id: 'second-hold', customerEmail: victim, ttlSeconds: 600 }, { schema });
    await pool.query(`UPDATE ${ident(schema)}.support_reservations SET expires_at = now() - interval '2 seconds' WHERE id = 'second-hold'`);
    await new ExpiryWorker({ pool, schema }).runOnce();
    const fake = new FakeResend();
    await fake.start();
    try {
      for (const name of ['primary', 'backup']) await rateLimiterSet(pool, schema, { perSecond: 1000, burst: 1000 }, null, name);
      const worker = new DeliveryWorker({
        pool,
        schema,
        accounts: [{ name: 'primary', gateway: new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url }) }],
      });
      expect((await worker.runOnce()).outcomes).toEqual({ rejected: 1 });
      expect(fake.requests).toHaveLength(0);
      expect(await intentsGet(pool, schema, 'reservation-expired:second-hold')).toMatchObject({ state: 'rejected' });
    } finally {
      await fake.stop();
    }
  });
});
