import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenHash } from '../../src/model/api-tokens.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { fixture, startNode, type Child } from '../helpers/processes.js';

// The command from source (tsx): tokens files and SIGHUP are newer than the last build in dist/.
const cli = fixture('cli-source');
const A = 'sighup-token-a-0123456789abcdef';
const B = 'sighup-token-b-0123456789abcdef';

let db: TestDatabase;
let dir: string;
beforeAll(async () => {
  db = await testDatabase('cli_tokens');
  dir = mkdtempSync(path.join(tmpdir(), 'leasehold-tokens-'));
});
afterAll(() => db.close());

const entry = (name: string, role: string, token: string) => `  - { name: ${name}, role: ${role}, sha256: ${tokenHash(token)} }\n`;

/** Poll until `check` holds (the reload happens when the process gets to the signal), bounded by `tries`. */
async function eventually(check: () => Promise<boolean>, tries = 100): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describe('leasehold api with LEASEHOLD_API_TOKENS_FILE', () => {
  it('reloads the file on SIGHUP: a new token works without a restart; a broken file is refused and the old tokens stay', async () => {
    const file = path.join(dir, 'tokens.yaml');
    writeFileSync(file, `tokens:\n${entry('app-a', 'operate', A)}`);
    const child: Child = startNode(cli, ['api', '--host', '127.0.0.1'], { ...db.env, PORT: '0', LEASEHOLD_API_TOKENS_FILE: file, LOG_LEVEL: 'info' });
    try {
      const line = await child.waitForLine(/listening on http/, 60_000);
      const url = line.slice(line.indexOf('http'));
      // No generated token: the file's tokens are the only ones.
      expect(child.stdout()).not.toMatch(/API token/);
      const status = async (token: string) => (await fetch(`${url}/v1/token`, { headers: { authorization: `Bearer ${token}` } })).status;
      expect([await status(A), await status(B)]).toEqual([200, 401]);

      writeFileSync(file, `tokens:\n${entry('app-a', 'operate', A)}${entry('app-b', 'read', B)}`);
      child.process.kill('SIGHUP');
      expect(await eventually(async () => (await status(B)) === 200)).toBe(true);
      expect(await status(A)).toBe(200);
      expect(child.stderr()).toMatch(/"event":"tokens.reloaded".*"tokens":\["app-a","app-b"\]/);

      writeFileSync(file, `tokens:\n${entry('app-a', 'operate', A)}  - { name: app-b, role: read, sha256: not-a-hash }\n`);
      child.process.kill('SIGHUP');
      expect(await eventually(async () => child.stderr().includes('tokens.reload_failed'))).toBe(true);
      expect(child.stderr()).toContain('tokens[1] (app-b).sha256: must be the 64 hex digits');
      expect([await status(A), await status(B)]).toEqual([200, 200]);
      expect(child.stderr()).not.toContain(A);
    } finally {
      child.process.kill('SIGTERM');
    }
    expect((await child.exited).code).toBe(0);
  }, 90_000);

  it('refuses to start with a broken file: exit 2, one line naming the entry and the field', async () => {
    const file = path.join(dir, 'broken.yaml');
    writeFileSync(file, `tokens:\n  - { name: oncall, role: superuser, sha256: ${tokenHash(A)} }\n`);
    const child = startNode(cli, ['api'], { ...db.env, PORT: '0', LEASEHOLD_API_TOKENS_FILE: file });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr().trim().split('\n')).toEqual([
      'leasehold: invalid configuration: LEASEHOLD_API_TOKENS_FILE: tokens[0] (oncall).role: must be one of read, operate, admin',
    ]);
  }, 60_000);

  it('`tokens hash` prints the sha256 to store, reading the token from stdin', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', cli, 'tokens', 'hash'], { input: `${A}\n`, encoding: 'utf8', env: { ...process.env, ...db.env } });
    expect([run.status, run.stdout]).toEqual([0, `${tokenHash(A)}\n`]);
    const short = spawnSync(process.execPath, ['--import', 'tsx', cli, 'tokens', 'hash', 'short'], { encoding: 'utf8' });
    expect(short.status).toBe(2);
  }, 60_000);
});
