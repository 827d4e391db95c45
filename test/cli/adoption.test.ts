import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { createLogger, wantsPrettyLogs } from '../../src/observability/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { cliPath } from '../helpers/processes.js';
import { runCli } from '../helpers/cli.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('adopt');
});
afterAll(() => db.close());

const hasPsql = spawnSync('psql', ['--version']).status === 0;
const hasScript = spawnSync('script', ['--version']).status === 0;

describe('leasehold --version', () => {
  it('prints the package version and exits 0', async () => {
    const { version } = JSON.parse(await readFile(path.join(path.dirname(cliPath), '..', 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v', '-V']) {
      const result = await runCli([flag], {});
      expect(result.code).toBe(0);
      expect(result.stdout.trim()).toBe(version);
    }
  });
});

describe('logs', () => {
  it('are JSON when stderr is not a terminal, readable lines when it is', async () => {
    expect(wantsPrettyLogs({ isTTY: true })).toBe(true);
    expect(wantsPrettyLogs({})).toBe(false);
    // A child process whose stderr is a pipe: one JSON object per line.
    // migrate into a fresh schema, so there is something to log (migrations.applied, an info event: --verbose).
    const piped = await runCli(['migrate', '--verbose'], { ...db.env, LEASEHOLD_SCHEMA: `${db.schema}_json`, LOG_LEVEL: 'info' });
    expect(piped.code).toBe(0);
    const lines = piped.stderr.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.map((line) => JSON.parse(line).event)).toContain('migrations.applied');
    await db.pool.query(`DROP SCHEMA ${ident(`${db.schema}_json`)} CASCADE`);
  });

  it('pretty lines keep the event and its ids, and still redact addresses', async () => {
    let text = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    const logger = createLogger({ level: 'info', destination: sink, pretty: true });
    logger.info({ event: 'hold.expired', holdId: 'slot-42', customerEmail: 'ana@example.com' }, 'hold expired');
    await new Promise((r) => setTimeout(r, 50));
    expect(text).toContain('hold expired');
    expect(text).toContain('hold.expired');
    expect(text).toContain('slot-42');
    expect(text).not.toContain('ana@example.com');
    expect(() => JSON.parse(text.trim())).toThrow();
  });

  it.skipIf(!hasScript)('a real terminal (through script(1)) gets the readable form', async () => {
    // script gives the child a pseudo-terminal for stdout and stderr.
    const command = `${process.execPath} ${cliPath} migrate --verbose`;
    const env = { ...process.env, ...db.env, LEASEHOLD_SCHEMA: `${db.schema}_tty`, LOG_LEVEL: 'info' };
    const result = spawnSync('script', ['-qec', command, '/dev/null'], { env, encoding: 'utf8' });
    await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(`${db.schema}_tty`)} CASCADE`);
    expect(result.status).toBe(0);
    const output = result.stdout.replace(/\u001b\[[0-9;]*m/g, '');
    expect(output).toMatch(/\d\d:\d\d:\d\d\.\d{3}\] INFO/);
    expect(output).toContain('migrations applied');
    expect(output).not.toContain('{"level"');
  });
});

describe('leasehold start / api', () => {
  it.each(['api', 'start'])('`%s` on a port in use fails with one line naming PORT, exit 1', async (command) => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const result = await runCli([command], { ...db.env, PORT: String(port) });
      expect(result.code).toBe(1);
      const last = result.stderr.trim().split('\n').at(-1)!;
      expect(last).toBe(
        `leasehold: cannot listen on 127.0.0.1:${port}: the port is already in use; set PORT to a free port (0 picks one), or stop what is using it`,
      );
    } finally {
      blocker.close();
    }
  });
});

describe('leasehold demo', () => {
  it('the commands it prints at the end work exactly as printed', async () => {
    const schema = `${db.schema}_demo`;
    const demo = await runCli(['demo', '--holds', '5', '--over', '1', '--rate', '50', '--schema', schema], db.env);
    expect(demo.code).toBe(0);
    const hints = demo.stdout.split('\n').filter((line) => /npx leasehold /.test(line));
    expect(hints).toHaveLength(2);
    for (const hint of hints) {
      // "  LEASEHOLD_SCHEMA=x npx leasehold trace demo-1": the environment assignment, then the command.
      const match = /^\s*LEASEHOLD_SCHEMA=(\S+) npx leasehold (.+)$/.exec(hint);
      expect(match, hint).not.toBeNull();
      const result = await runCli(match![2]!.split(' '), { ...db.env, LEASEHOLD_SCHEMA: match![1]! });
      expect(result.code, `${hint}\n${result.stderr}`).toBe(0);
      if (hint.includes('trace')) expect(result.stdout).toContain('hold demo-1: expired');
    }
    await db.pool.query(`DROP SCHEMA ${ident(schema)} CASCADE`);
  });
});

describe('reaching the database', () => {
  it('db-url prints DATABASE_URL when it is set', async () => {
    const result = await runCli(['db-url'], db.env);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(db.url);
  });

  it('db-url says so when the embedded server is not running, and creates nothing', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'leasehold-dburl-'));
    try {
      const result = await runCli(['db-url'], { LEASEHOLD_DATA_DIR: dataDir, DATABASE_URL: '' });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`the embedded PostgreSQL under ${dataDir} is not running`);
      expect(spawnSync('ls', ['-A', dataDir], { encoding: 'utf8' }).stdout).toBe('');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it.skipIf(!hasPsql)('psql runs with LEASEHOLD_SCHEMA on the search_path and passes arguments through', async () => {
    await db.pool.query(
      `INSERT INTO ${ident(db.schema)}.support_reservations (id, customer_email, expires_at) VALUES ('psql-1', 'a@example.com', now() + interval '1 hour')`,
    );
    const result = await runCli(['psql', '--', '-At', '-c', "SELECT id FROM support_reservations WHERE id = 'psql-1'"], db.env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe('psql-1');
    const failing = await runCli(['psql', '--', '-c', 'SELECT * FROM no_such_table'], db.env);
    expect(failing.code).toBe(1);
  });
});
