import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';
import { runCli } from '../helpers/cli.js';

/**
 * Which interface the API listens on, and that what `start`/`api` print is
 * the address actually bound. 127.0.0.2 is another loopback address on
 * Linux: a server bound to 127.0.0.1 refuses it, one bound to 0.0.0.0 (every
 * interface) accepts it, so the tests can tell the two apart on any machine.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_host');
});
afterAll(() => db.close());

const TOKEN = 'operator-chosen-token-123456';

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function run(args: string[], env: Record<string, string> = {}): Promise<{ child: Child; url: URL }> {
  const child = startNode(cliPath, args, { ...db.env, PORT: '0', LEASEHOLD_API_TOKEN: TOKEN, ...env });
  const line = await child.waitForLine(/listening on http/);
  return { child, url: new URL(line.slice(line.indexOf('http')).split(' ')[0]!) };
}

async function stop(child: Child): Promise<void> {
  child.process.kill('SIGTERM');
  const exit = await child.exited;
  expect(exit, `${JSON.stringify(exit)} ${child.stdout()} ${child.stderr()}`).toEqual({ code: 0, signal: null });
}

describe('the interface the API listens on', () => {
  it('`start` listens on 127.0.0.1 only by default, and says so', async () => {
    const { child, url } = await run(['start']);
    try {
      expect(url.hostname).toBe('127.0.0.1');
      const port = Number(url.port);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      expect(await accepts('127.0.0.2', port)).toBe(false);
    } finally {
      await stop(child);
    }
  });

  it('`start --host 0.0.0.0` prints the address it really bound, not a loopback one', async () => {
    const { child, url } = await run(['start', '--host', '0.0.0.0']);
    try {
      expect(url.hostname).toBe('0.0.0.0');
      expect(await accepts('127.0.0.2', Number(url.port))).toBe(true);
    } finally {
      await stop(child);
    }
  });

  it('`api` follows LEASEHOLD_HOST', async () => {
    const fromEnv = await run(['api'], { LEASEHOLD_HOST: '127.0.0.2' });
    try {
      expect(fromEnv.url.hostname).toBe('127.0.0.2');
      const res = await fetch(new URL('/v1/intents', fromEnv.url), { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      expect(await accepts('127.0.0.1', Number(fromEnv.url.port))).toBe(false);
    } finally {
      await stop(fromEnv.child);
    }
  });

  it('--host overrides LEASEHOLD_HOST', async () => {
    const overridden = await run(['api', '--host', '127.0.0.1'], { LEASEHOLD_HOST: '127.0.0.2' });
    try {
      expect(overridden.url.hostname).toBe('127.0.0.1');
    } finally {
      await stop(overridden.child);
    }
  });

  it('an IPv6 address is printed in brackets', async () => {
    const { child, url } = await run(['api', '--host', '::1']).catch(() => ({ child: undefined, url: undefined }));
    // A machine without IPv6 on loopback cannot bind ::1; nothing to check there.
    if (!child || !url) return;
    try {
      expect(url.host).toBe(`[::1]:${url.port}`);
    } finally {
      await stop(child);
    }
  });

  it.each([
    [['api'], { LEASEHOLD_HOST: 'not a host' }, /^leasehold: invalid configuration: LEASEHOLD_HOST: /],
    [['start'], { LEASEHOLD_HOST: 'http://127.0.0.1' }, /^leasehold: invalid configuration: LEASEHOLD_HOST: /],
    [['api', '--host', 'two words'], {}, /--host/],
    [['start', '--host', ''], {}, /--host/],
  ])('%j with %j is a usage error: exit 2, one line', async (args, env, pattern) => {
    const result = await runCli(args, { ...db.env, PORT: '0', LEASEHOLD_API_TOKEN: TOKEN, ...env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(pattern);
    expect(result.stdout).not.toMatch(/listening/);
  });
});
