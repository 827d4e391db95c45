import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { loadMigrations } from '../../src/db/migrate.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { cliPath, startNode } from '../helpers/processes.js';

let db: TestDatabase;
beforeEach(async () => {
  db = await testDatabase('migrate_proc');
});
afterEach(() => db.close());

describe('migrations', () => {
  it('run concurrently from several processes, applying each migration once', async () => {
    const schema = `${db.schema}_fresh`;
    const env = { ...db.env, LEASEHOLD_SCHEMA: schema };
    const children = Array.from({ length: 4 }, () => startNode(cliPath, ['migrate'], env));
    const exits = await Promise.all(children.map((c) => c.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);
    const { rows } = await db.pool.query<{ id: number }>(`SELECT id FROM ${ident(schema)}.migrations ORDER BY id`);
    const known = await loadMigrations();
    expect(rows.map((r) => r.id)).toEqual(known.map((m) => m.id));
    const last = known.at(-1)!;
    for (const c of children) expect(c.stdout()).toContain(`is at ${last.name} (${known.length} applied)`);
    await db.pool.query(`DROP SCHEMA ${ident(schema)} CASCADE`);
  });
});
