import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';

/**
 * LEASEHOLD_EXPIRE_HOOK names a function that must exist and take text[]:
 * a start with any other name stops with exit 2 and one line naming the
 * variable, before any hold is touched (a real `leasehold` process).
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_hook');
  await db.pool.query(`CREATE FUNCTION ${ident(db.schema)}.takes_int(n int) RETURNS void LANGUAGE sql AS 'SELECT 1'`);
});
afterAll(() => db.close());

describe('a bad LEASEHOLD_EXPIRE_HOOK at start', () => {
  it.each([
    ['a function that does not exist', () => `${db.schema}.no_such_function`, /LEASEHOLD_EXPIRE_HOOK: no function .*no_such_function\(text\[\]\)/],
    ['a function taking something other than text[]', () => `${db.schema}.takes_int`, /LEASEHOLD_EXPIRE_HOOK: no function .*takes_int\(text\[\]\)/],
    ['a name that is not schema.function', () => 'release_slots; DROP TABLE x', /LEASEHOLD_EXPIRE_HOOK: must be <schema>\.<function>/],
  ])('%s: exit 2 naming the variable', async (_what, name, message) => {
    const result = await runCli(['expiry-worker'], { ...db.env, LEASEHOLD_EXPIRE_HOOK: name() });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
