import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { TOKEN } from '../helpers/server.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('api_shutdown');
});
afterAll(() => db.close());

describe('a request while the server shuts down', () => {
  it('answers 503 shutting_down in the one error shape, and does not keep the connection', async () => {
    const app = buildApp({ pool: db.pool, schema: db.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKEN });
    // Hold the close at its start (after the server's own preClose hook), with the socket still listening.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let closingStarted!: () => void;
    const started = new Promise<void>((resolve) => (closingStarted = resolve));
    app.addHook('preClose', async () => {
      closingStarted();
      await held;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    expect((await fetch(`${url}/v1/token`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);

    const closed = app.close();
    await started;
    const during = await fetch(`${url}/v1/token`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(during.status).toBe(503);
    expect(during.headers.get('connection')).toBe('close');
    expect(await during.json()).toEqual({ error: { code: 'shutting_down', message: 'this server is shutting down; try again' } });
    release();
    await closed;
  });
});
