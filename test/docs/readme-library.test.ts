import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { startNode } from '../helpers/processes.js';

/**
 * The README's "Using it as a library" snippet, run as written (against a
 * database of its own, since it uses the default schema): it creates and
 * confirms a hold, rolls back on an error, and ends its pool so the
 * process exits.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

let db: TestDatabase;
let url: string;
const database = `readme_${randomBytes(4).toString('hex')}`;
beforeAll(async () => {
  db = await testDatabase('readme');
  await db.pool.query(`CREATE DATABASE ${database}`);
  const parsed = new URL(db.url);
  parsed.pathname = `/${database}`;
  url = parsed.toString();
});
afterAll(async () => {
  await db.pool.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await db.close();
});

async function snippet(): Promise<string> {
  const readme = await readFile(path.join(root, 'README.md'), 'utf8');
  const heading = readme.indexOf('### Using it as a library');
  expect(heading, "README.md has no '### Using it as a library' section").toBeGreaterThanOrEqual(0);
  const code = /```ts\n([\s\S]*?)```/.exec(readme.slice(heading))?.[1];
  expect(code, "README.md's library section has no ```ts block").toBeDefined();
  return code!.replace("from 'leasehold'", `from '${pathToFileURL(path.join(root, 'dist/src/index.js')).href}'`);
}

async function run(code: string) {
  const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  // Inside the package, so `pg` resolves from its node_modules.
  const file = path.join(root, 'dist', `readme-snippet-${randomBytes(4).toString('hex')}.mjs`);
  await writeFile(file, js);
  try {
    const child = startNode(file, [], { DATABASE_URL: url });
    const exit = await child.exited;
    return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
  } finally {
    await rm(file, { force: true });
  }
}

describe('README library snippet', () => {
  it('creates and confirms the hold, then ends its pool (the process exits by itself)', async () => {
    const result = await run(await snippet());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^hold slot-42 expires at \d{4}-/);
    const pool = createPool({ connectionString: url });
    try {
      const { rows } = await pool.query(`SELECT status FROM leasehold.support_reservations WHERE id = 'slot-42'`);
      expect(rows).toEqual([{ status: 'confirmed' }]);
    } finally {
      await pool.end();
    }
  });

  it('rolls back the application’s own writes when creating the hold fails', async () => {
    const pool = createPool({ connectionString: url });
    try {
      await pool.query('CREATE TABLE IF NOT EXISTS public.bookings (id text)');
      const code = (await snippet())
        .replace('// ... your own writes, on `client` ...', "await client.query(`INSERT INTO public.bookings VALUES ('b-1')`);")
        .replace("id: 'slot-42'", "id: 'slot-43'")
        .replace('ttlSeconds: 1200', 'ttlSeconds: 0');
      expect(code).toContain('public.bookings');
      const result = await run(code);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('ttlSeconds');
      expect((await pool.query('SELECT * FROM public.bookings')).rows).toEqual([]);
      expect((await pool.query(`SELECT * FROM leasehold.support_reservations WHERE id = 'slot-43'`)).rows).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
