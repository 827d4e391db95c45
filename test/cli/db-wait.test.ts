import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { createPool, ident } from '../../src/db/pool.js';
import { insertDueHolds } from '../helpers/holds.js';
import { cliPath, startNode, type Child } from '../helpers/processes.js';
import { freePort } from '../helpers/standby-pair.js';

// Processes started as an operator starts them (node bin/leasehold.js),
// while their database is away. This file stops and starts a server of
// its own: a cluster made once, then stopped, so its URL (and password) is
// known before anything listens on its port.
let dir: string;
let port: number;
let url: string;
let server: EmbeddedPostgres | undefined;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'leasehold-dbwait-'));
  port = await freePort();
  const first = await startEmbeddedPostgres({ dataDir: dir, port });
  url = first.url;
  await first.stop();
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const lines = (child: Child, event: string) => child.stderr().split('\n').filter((line) => line.includes(`"event":"${event}"`));

async function until<T>(read: () => Promise<T | undefined> | T | undefined, what: string, child: Child, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve(read()).catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${child.stderr().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a process started while its database is away', () => {
  it('`leasehold start` logs once that it waits and why, connects when the server comes, and works; it never exits', async () => {
    const schema = 'waited';
    const child = startNode(cliPath, ['start'], {
      DATABASE_URL: url,
      LEASEHOLD_SCHEMA: schema,
      PORT: '0',
      LOG_LEVEL: 'info',
      LEASEHOLD_EXPIRY_INTERVAL_MS: '100',
    });
    let exited = false;
    void child.exited.then(() => (exited = true));
    try {
      const [waiting] = await until(() => (lines(child, 'db.waiting').length > 0 ? lines(child, 'db.waiting') : undefined), 'db.waiting', child);
      expect(JSON.parse(waiting!)).toMatchObject({ event: 'db.waiting', hosts: `127.0.0.1:${port}`, code: 'ECONNREFUSED', waitS: 'forever' });
      // The URL carries the embedded server's password; no line may.
      expect(child.stderr()).not.toContain(new URL(url).password);
      // Several more tries meanwhile, still one line.
      await new Promise((r) => setTimeout(r, 2500));
      expect(exited).toBe(false);
      server = await startEmbeddedPostgres({ dataDir: dir, port });
      await child.waitForLine(/expiry lane running/, 60_000);
      expect(lines(child, 'db.waiting')).toHaveLength(1);
      expect(lines(child, 'db.connected')).toHaveLength(1);
      const pool = createPool({ connectionString: url, max: 2 });
      try {
        await insertDueHolds(pool, schema, 5);
        await until(
          async () => ((await pool.query(`SELECT count(*)::int AS n FROM ${ident(schema)}.email_outbox WHERE state = 'sent'`)).rows[0].n === 5 ? true : undefined),
          'five emails sent',
          child,
        );
      } finally {
        await pool.end();
      }
      expect(exited).toBe(false);
      child.process.kill('SIGTERM');
      expect((await child.exited).code).toBe(0);
    } finally {
      child.process.kill('SIGKILL');
    }
  }, 120_000);

  it('a one-shot command waits LEASEHOLD_DB_WAIT_S, then gives up with exit 1 and one clear line', async () => {
    const nothing = await freePort();
    const child = startNode(cliPath, ['status'], { DATABASE_URL: `postgres://leasehold:secret@127.0.0.1:${nothing}/leasehold`, LEASEHOLD_DB_WAIT_S: '1' });
    const { code } = await child.exited;
    expect(code).toBe(1);
    const stderr = child.stderr();
    expect(stderr.match(/waiting for the database/g)).toHaveLength(1);
    expect(stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(`^leasehold: the database is unreachable \\(127\\.0\\.0\\.1:${nothing}\\): connect ECONNREFUSED .*; gave up after [12] s \\(LEASEHOLD_DB_WAIT_S=1\\)$`),
    );
    expect(stderr).not.toContain('secret');
  }, 30_000);

  it('LEASEHOLD_DB_WAIT_S=0: no wait, exit 1 at once', async () => {
    const nothing = await freePort();
    const child = startNode(cliPath, ['expiry-worker'], { DATABASE_URL: `postgres://leasehold@127.0.0.1:${nothing}/leasehold`, LEASEHOLD_DB_WAIT_S: '0' });
    expect((await child.exited).code).toBe(1);
    expect(child.stderr()).not.toContain('waiting for the database');
    expect(child.stderr()).toMatch(/^leasehold: the database is unreachable .*LEASEHOLD_DB_WAIT_S=0: not waiting$/m);
  }, 30_000);
});

describe('configuration errors are not waited for: exit 2 at once, saying so', () => {
  beforeAll(async () => {
    server ??= await startEmbeddedPostgres({ dataDir: dir, port });
  }, 60_000);

  it('a wrong password', async () => {
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    const child = startNode(cliPath, ['expiry-worker'], { DATABASE_URL: wrong.toString() });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr().trim()).toMatch(
      new RegExp(`^leasehold: invalid configuration: DATABASE_URL: the server refused the password \\(127\\.0\\.0\\.1:${port}\\): password authentication failed for user "[^"]+" \\[28P01\\]; fix the URL's user, password or database name$`),
    );
    expect(child.stderr()).not.toContain('not-the-password');
  }, 30_000);

  it('a database that does not exist', async () => {
    const missing = new URL(url);
    missing.pathname = '/no_such_database';
    const child = startNode(cliPath, ['start'], { DATABASE_URL: missing.toString(), PORT: '0' });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr().trim().split('\n').at(-1)).toMatch(/^leasehold: invalid configuration: DATABASE_URL: the database does not exist .*"no_such_database" does not exist \[3D000\]/);
  }, 30_000);

  it('target_session_attrs that leasehold cannot work with, named', async () => {
    const child = startNode(cliPath, ['start'], { DATABASE_URL: `postgres://u:secret@127.0.0.1:${port},127.0.0.1:1/db?target_session_attrs=standby` });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr().trim()).toBe(
      'leasehold: invalid configuration: DATABASE_URL: target_session_attrs=standby is not supported: leasehold writes, so it needs read-write (the server that accepts writes now) or any',
    );
  }, 30_000);
});
