import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_api');
});
afterAll(() => db.close());

async function startApi(env: Record<string, string>): Promise<{ child: Child; url: string }> {
  const child = startNode(cliPath, ['api', '--host', '127.0.0.1'], { ...db.env, PORT: '0', ...env });
  const line = await child.waitForLine(/listening on http/);
  return { child, url: line.slice(line.indexOf('http')) };
}

describe('leasehold api', () => {
  it('generates a token when none is set, prints it once, serves, and drains on SIGTERM (exit 0)', async () => {
    const { child, url } = await startApi({});
    try {
      const tokenLine = await child.waitForLine(/^API token/);
      const token = tokenLine.slice(tokenLine.lastIndexOf(' ') + 1);
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(child.stdout().split(token).length - 1).toBe(1);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/v1/intents`)).status).toBe(401);
      const created = await fetch(`${url}/v1/holds`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'via-cli-api', customerEmail: 'cli.api@example.com', ttlSeconds: 60 }),
      });
      expect(created.status).toBe(201);
      const metrics = await fetch(`${url}/metrics`);
      expect(await metrics.text()).toMatch(/^leasehold_database_up 1$/m);
    } finally {
      child.process.kill('SIGTERM');
    }
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(child.stderr()).not.toContain('cli.api@example.com');
  });

  it('uses LEASEHOLD_API_TOKEN when set and never prints it', async () => {
    const token = 'operator-chosen-token-123456';
    const { child, url } = await startApi({ LEASEHOLD_API_TOKEN: token });
    try {
      const ok = await fetch(`${url}/v1/rate-limit`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ perSecond: 10, burst: 10 });
      expect(child.stdout()).not.toContain(token);
      expect(child.stdout()).not.toMatch(/API token/);
    } finally {
      child.process.kill('SIGTERM');
    }
    expect((await child.exited).code).toBe(0);
  });

  it('a token with whitespace in it is a configuration error (exit 2, one line), and the token is not echoed', async () => {
    const token = 'operator chosen token 123456';
    const child = startNode(cliPath, ['api'], { ...db.env, PORT: '0', LEASEHOLD_API_TOKEN: token });
    expect((await child.exited).code).toBe(2);
    const lines = child.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^leasehold: invalid configuration: LEASEHOLD_API_TOKEN: .*whitespace/);
    expect(child.stderr() + child.stdout()).not.toContain('chosen token');
  });

  it('a port already in use is a failure with one line (exit 1)', async () => {
    const { child, url } = await startApi({ LEASEHOLD_API_TOKEN: 'operator-chosen-token-123456' });
    try {
      const port = new URL(url).port;
      const second = startNode(cliPath, ['api', '--host', '127.0.0.1'], { ...db.env, PORT: port, LEASEHOLD_API_TOKEN: 'operator-chosen-token-123456' });
      const { code } = await second.exited;
      expect(code).toBe(1);
      expect(second.stderr().trim()).toMatch(/^leasehold: cannot listen on 127\.0\.0\.1:\d+: the port is already in use; set PORT/);
    } finally {
      child.process.kill('SIGTERM');
      await child.exited;
    }
  });
});
