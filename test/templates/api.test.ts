import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { insertDueHolds } from '../helpers/holds.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('tpl_api');
  await rateLimiterSet(h.db.pool, h.db.schema, { perSecond: 1000, burst: 1000 });
  await insertDueHolds(h.db.pool, h.db.schema, 1, { prefix: 'api' });
  await new ExpiryWorker({ pool: h.db.pool, schema: h.db.schema }).runOnce();
});
afterAll(() => h.close());

describe('the API shows the subject that was sent', () => {
  it('GET /v1/holds/:id and GET /v1/intents/:id carry the stored message summary, never the bodies; replay clears it', async () => {
    expect((await h.call('GET', '/v1/holds/api-0')).json().message).toBeNull();
    await new DeliveryWorker({ pool: h.db.pool, schema: h.db.schema, gateway: new SandboxGateway() }).runOnce();

    const timeline = (await h.call('GET', '/v1/holds/api-0')).json();
    expect(timeline.message).toMatchObject({
      subject: 'Your reservation has expired',
      template: 'reservation-expired',
      templateLocale: 'en',
      locale: 'en',
      timeZone: 'UTC',
      from: 'Support <support@example.com>',
      replyTo: null,
    });
    const intent = (await h.call('GET', '/v1/intents/reservation-expired:api-0')).json();
    expect(intent.message).toEqual(timeline.message);
    expect(JSON.stringify([timeline, intent])).not.toMatch(/We were holding|<html/);

    expect((await h.call('POST', '/v1/intents/reservation-expired:api-0/replay')).statusCode).toBe(200);
    expect((await h.call('GET', '/v1/intents/reservation-expired:api-0')).json().message).toBeNull();
  });
});
