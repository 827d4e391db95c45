import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHold } from '../../src/holds/holds.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { sentIntent } from '../helpers/sent-intent.js';

/**
 * A command a person runs prints text for a person: its log shows warnings
 * and errors only, unless --verbose. (start, api and the workers keep their
 * structured log at LOG_LEVEL.) LOG_LEVEL is info here, the default, so an
 * info event that leaks into a command's output fails the test.
 */

let db: TestDatabase;
let env: Record<string, string>;
const previewFile = path.join(tmpdir(), `leasehold-human-${process.pid}.html`);
beforeAll(async () => {
  db = await testDatabase('cli_human');
  env = { ...db.env, LOG_LEVEL: 'info' };
  await sentIntent(db.pool, db.schema, 'human-1', { receipt: 'rcpt-human-1' });
  await createHold(db.pool, { id: 'human-2', customerEmail: 'human.two@example.com', ttlSeconds: 600 }, { schema: db.schema });
});
afterAll(async () => {
  await rm(previewFile, { force: true });
  await db.close();
});

interface LogLine {
  level: number;
  event?: string;
}

/** Every line of stdout and stderr that is a JSON log event. */
function logLines(result: CliResult): LogLine[] {
  const found: LogLine[] = [];
  for (const line of `${result.stdout}\n${result.stderr}`.split('\n')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as LogLine).level === 'number') found.push(parsed as LogLine);
  }
  return found;
}

const below = (result: CliResult, level: number) => logLines(result).filter((l) => l.level < level);

// In order: pause before resume, add before remove.
const COMMANDS: string[][] = [
  ['migrate'],
  ['status'],
  ['pause', '--reason', 'human output test', '--for', '60'],
  ['resume'],
  ['rate-limit'],
  ['rate-limit', '--per-second', '7', '--burst', '7'],
  ['replay', 'reservation-expired:human-1'],
  ['accounts'],
  ['accounts', 'pause', 'default', '--reason', 'human output test'],
  ['accounts', 'resume', 'default'],
  ['accounts', 'rate-limit', 'default'],
  ['tenants'],
  ['tenants', 'set', 'acme', '--weight', '2'],
  ['tenants', 'show', 'acme'],
  ['tenants', 'pause', 'acme'],
  ['tenants', 'resume', 'acme'],
  ['tenants', 'delete', 'acme'],
  ['suppressions', 'add', 'suppressed@example.com'],
  ['suppressions', 'list'],
  ['suppressions', 'remove', 'suppressed@example.com'],
  ['trace', 'human-1'],
  ['prune', '--dry-run'],
  ['prune'],
  ['erase', '--email', 'nobody@example.com'],
  ['erase', '--tenant', 'acme'],
  ['templates', 'check'],
  ['templates', 'preview', 'reservation-expired', '--hold', 'human-2', '--out', previewFile],
  ['capacity', '--emails-per-day', '1000'],
  ['audit', '--limit', '5'],
];

describe('human commands print text, and log nothing below a warning', () => {
  it.each(COMMANDS.map((args) => [args.join(' '), args]))('leasehold %s', async (_name, args) => {
    const result = await runCli(args as string[], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).not.toBe('');
    expect(below(result, 40)).toEqual([]);
  });

  it('--verbose brings the info events back, after the command or before it', async () => {
    const after = await runCli(['pause', '--reason', 'verbose test', '--verbose'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(below(after, 40).map((l) => l.event)).toContain('delivery.paused');
    const before = await runCli(['--verbose', 'resume'], env);
    expect(before.code, before.stderr).toBe(0);
    expect(below(before, 40).map((l) => l.event)).toContain('delivery.resumed');
  });

  it('a warning still shows: an unknown variable', async () => {
    const result = await runCli(['status'], { ...env, LEASEHOLD_SCHEME: 'oops' });
    expect(result.code, result.stderr).toBe(0);
    expect(logLines(result).map((l) => [l.level, l.event])).toEqual([[40, 'config.unknown_variable']]);
  });
});

describe('templates preview without --out', () => {
  it('writes into a fresh directory only this user can open, and prints its path', async () => {
    const result = await runCli(['templates', 'preview', 'reservation-expired'], env);
    expect(result.code, result.stderr).toBe(0);
    const file = /^HTML written to (.+)$/m.exec(result.stdout)?.[1];
    expect(file).toBeDefined();
    const dir = path.dirname(file!);
    try {
      expect(path.dirname(dir)).toBe(tmpdir());
      expect(path.basename(dir)).toMatch(/^leasehold-preview-/);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(existsSync(file!)).toBe(true);
      // A second preview gets a directory of its own.
      const again = await runCli(['templates', 'preview', 'reservation-expired'], env);
      const other = /^HTML written to (.+)$/m.exec(again.stdout)?.[1];
      expect(other && path.dirname(other)).not.toBe(dir);
      if (other) await rm(path.dirname(other), { recursive: true, force: true });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('against the embedded server', () => {
  it('says nothing of starting it, unless --verbose', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'leasehold-human-embedded-'));
    const embedded = { LEASEHOLD_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' };
    try {
      const quiet = await runCli(['migrate'], embedded);
      expect(quiet.code, quiet.stderr).toBe(0);
      expect(quiet.stdout).toMatch(/^schema leasehold is at /);
      expect(below(quiet, 40)).toEqual([]);
      const verbose = await runCli(['status', '--verbose'], embedded);
      expect(verbose.code, verbose.stderr).toBe(0);
      expect(below(verbose, 40).map((l) => l.event)).toContain('embedded_postgres.ready');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
