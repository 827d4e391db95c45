import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { laneSamplesRecord } from '../../src/tables/lane-samples.js';
import { accessApp, TOKENS, type AccessApp } from '../helpers/access.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
let api: AccessApp;
let dbNow: number;
beforeAll(async () => {
  db = await testDatabase('history');
  api = await accessApp(db);
  const { rows } = await db.pool.query<{ now: Date }>('SELECT now()');
  dbNow = rows[0]!.now.getTime();
  // Samples 50 min, 5 min and 20 s ago, and one from two hours ago that the ring kept (nobody sampled its slot since).
  for (const [ago, backlog] of [[7200, 1], [3000, 2], [300, 3], [20, 4]] as const) {
    await laneSamplesRecord(
      db.pool,
      db.schema,
      { backlog, dueHolds: backlog * 10, oldestPendingAgeSeconds: backlog + 0.5, oldestDueAgeSeconds: backlog / 4 },
      new Date(dbNow - ago * 1000),
    );
  }
});
afterAll(async () => {
  await api.app.close();
  await db.close();
});

type History = { now: number; intervalSeconds: number; samples: Array<{ t: number; backlog: number; dueHolds: number; oldestPendingAgeSeconds: number; oldestDueAgeSeconds: number }> };

describe('GET /v1/status/history', () => {
  it('answers the samples of the last hour by default, oldest first, with the database clock', async () => {
    const res = await api.call(TOKENS.read, 'GET', '/v1/status/history');
    expect(res.statusCode).toBe(200);
    const body = res.json() as History;
    expect(body.intervalSeconds).toBe(10);
    expect(body.now * 1000).toBeGreaterThanOrEqual(dbNow);
    expect(body.samples).toEqual([
      { t: (dbNow - 3_000_000) / 1000, backlog: 2, dueHolds: 20, oldestPendingAgeSeconds: 2.5, oldestDueAgeSeconds: 0.5 },
      { t: (dbNow - 300_000) / 1000, backlog: 3, dueHolds: 30, oldestPendingAgeSeconds: 3.5, oldestDueAgeSeconds: 0.75 },
      { t: (dbNow - 20_000) / 1000, backlog: 4, dueHolds: 40, oldestPendingAgeSeconds: 4.5, oldestDueAgeSeconds: 1 },
    ]);
    const minute = (await api.call(TOKENS.read, 'GET', '/v1/status/history?seconds=60')).json() as History;
    expect(minute.samples.map((s) => s.backlog)).toEqual([4]);
  });

  it('refuses a bad window with 400 naming the field and why', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['seconds=0', 'seconds', /at least 1/],
      ['seconds=3601', 'seconds', /at most 3600/],
      ['seconds=1.5', 'seconds', /whole number/],
      ['seconds=x', 'seconds', /number/],
      ['second=60', 'second', /unknown field/],
    ];
    for (const [query, field, why] of cases) {
      const res = await api.call(TOKENS.read, 'GET', `/v1/status/history?${query}`);
      expect(res.statusCode, query).toBe(400);
      const error = res.json().error as { code: string; field: string; message: string };
      expect([error.code, error.field], query).toEqual(['validation_error', field]);
      expect(error.message, query).toMatch(why);
    }
  });

  it('takes any role reaching every tenant: read yes, a tenant-limited token or none no', async () => {
    for (const token of [TOKENS.read, TOKENS.operate, TOKENS.admin]) {
      expect((await api.call(token, 'GET', '/v1/status/history?seconds=60')).statusCode).toBe(200);
    }
    const limited = await api.call(TOKENS.acme, 'GET', '/v1/status/history');
    expect([limited.statusCode, limited.json().error.code]).toEqual([403, 'forbidden']);
    expect((await api.call(undefined, 'GET', '/v1/status/history')).statusCode).toBe(401);
    const route = api.routes.find((r) => r.method === 'GET' && r.url === '/v1/status/history');
    expect(route?.access).toEqual({ role: 'read', scope: 'fleet' });
  });
});
