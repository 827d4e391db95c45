import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmHold, createHold } from '../../src/holds/holds.js';
import { ident } from '../../src/db/pool.js';
import { endpointsExactly } from '../helpers/webhooks.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_app_webhooks');
});
afterAll(() => h.close());

describe('application webhooks over HTTP', () => {
  it("GET /v1/holds/:id shows the hold's webhooks; the list shows the given-up ones; replay answers 200, then 409", async () => {
    const { pool, schema } = h.db;
    await endpointsExactly(pool, schema, [{ name: 'app' }]);
    await createHold(pool, { id: 'wh-1', customerEmail: 'wh@example.com', ttlSeconds: 600 }, { schema });
    await confirmHold(pool, 'wh-1', { schema });

    const timeline = (await h.call('GET', '/v1/holds/wh-1')).json();
    expect(timeline.webhooks).toMatchObject([{ type: 'hold.confirmed', endpoint: 'app', holdId: 'wh-1', state: 'pending', attempts: 0 }]);
    expect(timeline.life.map((e: { what: string }) => e.what)).toContain('webhook hold.confirmed to app due');
    const id = timeline.webhooks[0].id as string;

    await pool.query(`UPDATE ${ident(schema)}.webhook_events SET state = 'dead', finished_at = now(), attempts = 9, last_status = 503 WHERE id = $1`, [id]);
    const dead = (await h.call('GET', '/v1/webhook-deliveries?state=dead')).json();
    expect(dead.webhooks.map((w: { id: string }) => w.id)).toEqual([id]);
    expect(dead.backlog).toEqual([{ endpoint: 'app', pending: 0, dead: 1, oldestPendingAgeSeconds: 0 }]);
    expect((await h.call('GET', '/v1/webhook-deliveries?state=lost')).statusCode).toBe(400);

    const replay = await h.call('POST', `/v1/webhook-deliveries/${id}/replay`);
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toMatchObject({ id, state: 'pending', replays: 1 });
    const again = await h.call('POST', `/v1/webhook-deliveries/${id}/replay`);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('webhook_state');
    expect((await h.call('POST', '/v1/webhook-deliveries/msg_missing/replay')).statusCode).toBe(404);
  });
});
