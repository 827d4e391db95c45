import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { auditList } from '../../src/tables/audit-log.js';
import { webhookEventsGet } from '../../src/tables/webhook-events.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCliInProcess } from '../helpers/cli.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_webhooks');
  await db.pool.query(
    `INSERT INTO ${ident(db.schema)}.webhook_events (id, endpoint, type, hold_id, payload, occurred_at, state, attempts, last_error, finished_at)
     VALUES ('msg_cli_dead', 'slots', 'hold.expired', 'h1', '{}', now(), 'dead', 7, 'HTTP 503', now()),
            ('msg_cli_done', 'slots', 'hold.confirmed', 'h2', '{}', now(), 'delivered', 1, NULL, now())`,
  );
});
afterAll(() => db.close());

describe('leasehold webhooks', () => {
  it('lists the given-up webhooks with the backlog, and replays one under its id, audited', async () => {
    const list = await runCliInProcess(['webhooks', 'list', '--state', 'dead'], db.env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('endpoint slots: 0 pending');
    expect(list.stdout).toContain('1 given up');
    expect(list.stdout).toMatch(/msg_cli_dead {2}slots {2}hold\.expired {2}h1 {2}dead after 7 attempt\(s\), last: HTTP 503/);
    expect(list.stdout).not.toContain('msg_cli_done');

    const replay = await runCliInProcess(['webhooks', 'replay', 'msg_cli_dead'], db.env);
    expect(replay).toMatchObject({ code: 0 });
    expect(replay.stdout).toContain('webhook msg_cli_dead (hold.expired to slots) is pending again (replay 1)');
    expect(await webhookEventsGet(db.pool, db.schema, 'msg_cli_dead')).toMatchObject({ state: 'pending', attempts: 0, replays: 1 });
    const [entry] = (await auditList(db.pool, db.schema, { limit: 1, action: 'webhook.replay' })).entries;
    expect(entry).toMatchObject({ target: 'msg_cli_dead', actor: expect.stringMatching(/^cli:/) });
  });

  it('refuses a delivered one (exit 1), an unknown state or a malformed id (exit 2)', async () => {
    expect((await runCliInProcess(['webhooks', 'replay', 'msg_cli_done'], db.env)).code).toBe(1);
    expect((await runCliInProcess(['webhooks', 'list', '--state', 'lost'], db.env)).code).toBe(2);
    expect((await runCliInProcess(['webhooks', 'replay', 'reservation-expired:h1'], db.env)).code).toBe(2);
  });

  it('turns an endpoint off, audited; an unknown one is exit 1, a malformed name exit 2', async () => {
    await db.pool.query(`INSERT INTO ${ident(db.schema)}.webhook_endpoints (name, active) VALUES ('slots', true) ON CONFLICT (name) DO UPDATE SET active = true`);
    const off = await runCliInProcess(['webhooks', 'deactivate', 'slots'], db.env);
    expect(off).toMatchObject({ code: 0 });
    expect(off.stdout).toContain('webhook endpoint slots is off');
    const { rows } = await db.pool.query(`SELECT active FROM ${ident(db.schema)}.webhook_endpoints WHERE name = 'slots'`);
    expect(rows[0].active).toBe(false);
    const [entry] = (await auditList(db.pool, db.schema, { limit: 1, action: 'webhook_endpoint.deactivate' })).entries;
    expect(entry).toMatchObject({ target: 'slots', actor: expect.stringMatching(/^cli:/), before: { active: true }, after: { active: false } });
    expect((await runCliInProcess(['webhooks', 'deactivate', 'nobody'], db.env)).code).toBe(1);
    expect((await runCliInProcess(['webhooks', 'deactivate', 'Not A Name'], db.env)).code).toBe(2);
  });
});
