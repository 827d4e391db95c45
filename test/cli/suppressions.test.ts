import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';

/** `leasehold suppressions list|add|remove` as a child process against a real database. */

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_suppressions');
});
afterAll(() => db.close());

const cli = (...args: string[]) => runCli(args, db.env);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('leasehold suppressions', () => {
  // Each step spawns the CLI a few times; on a loaded machine a spawn can take
  // seconds, so the steps are separate tests (in order, sharing the database).
  const SLOW = 180_000;

  it('add suppresses an address by hand; adding it again says so', async () => {
    const added = await cli('suppressions', 'add', 'Ops@Example.com', '--detail', 'asked to stop');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^suppressed: \d{4}-.* ops@example\.com {2}manual {2}asked to stop/);
    expect((await cli('suppressions', 'add', 'ops@example.com')).stdout).toMatch(/^already suppressed: /);
    await cli('suppressions', 'add', 'erased@example.com');
  }, SLOW);

  it('list shows addresses, and an erased entry by its hash', async () => {
    // What erasure does to the row: the address goes, the hash stays.
    await db.pool.query(`UPDATE ${ident(db.schema)}.suppressions SET address = NULL WHERE address = 'erased@example.com'`);
    const listed = await cli('suppressions', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('ops@example.com  manual  asked to stop');
    expect(listed.stdout).toContain(`<erased> sha256:${sha256('erased@example.com')}  manual`);
    const json = JSON.parse((await cli('suppressions', 'list', '--json', '--limit', '1')).stdout);
    expect(json.suppressions).toHaveLength(1);
    expect(typeof json.nextCursor).toBe('string');
  }, SLOW);

  it('remove lifts by address or by hash; removing again fails with exit 1', async () => {
    const removed = await cli('suppressions', 'remove', 'OPS@example.com');
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^no longer suppressed: ops@example\.com \(was manual since /);
    expect((await cli('suppressions', 'remove', sha256('erased@example.com'))).code).toBe(0);
    const again = await cli('suppressions', 'remove', 'ops@example.com');
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe('leasehold: ops@example.com is not suppressed');
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.suppressions`)).rows[0].n).toBe(0);
  }, SLOW);

  it.each([
    [['suppressions', 'add', 'not-an-address'], /email address/],
    [['suppressions', 'remove', 'nope'], /email address/],
    [['suppressions', 'list', '--limit', '0'], /--limit/],
    [['suppressions', 'list', '--reason', 'bored'], /--reason/],
    [['suppressions', 'frobnicate'], /unknown command/],
  ])('%j is a usage error: exit 2', async (args, pattern) => {
    const res = await cli(...args);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(pattern);
  });

  it('--help explains each subcommand', async () => {
    const res = await runCli(['suppressions', '--help'], {});
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Usage: leasehold suppressions/);
    for (const sub of ['list', 'add', 'remove']) expect(res.stdout).toContain(sub);
  });
});
