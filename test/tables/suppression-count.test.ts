import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { addressHash } from '../../src/model/address.js';
import { eraseAddress } from '../../src/retention/erase.js';
import { suppressionCountGet } from '../../src/tables/suppression-count.js';
import { suppressionsAdd, suppressionsRemove } from '../../src/tables/suppressions.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/** suppression_count is written only by the triggers of migration 0013; it must equal count(*) after every change. */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('suppression_count');
});
afterAll(() => db.close());

async function expectExact(): Promise<number> {
  const counted = await suppressionCountGet(db.pool, db.schema);
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.suppressions`);
  expect(counted).toBe(rows[0]!.n);
  return counted;
}

const add = (addresses: string[]) =>
  suppressionsAdd(db.pool, db.schema, addresses.map((address) => ({ address, reason: 'manual' as const, detail: null, provider: null })));

describe('the suppression count stays exact', () => {
  it('through adds (an address already suppressed adds nothing), erasure and removal', async () => {
    expect(await expectExact()).toBe(0);
    await add(['a@example.com', 'b@example.com', 'c@example.com']);
    await add(['a@example.com', 'd@example.com']);
    expect(await expectExact()).toBe(4);
    await eraseAddress(db.pool, 'b@example.com', { schema: db.schema });
    expect(await expectExact()).toBe(4);
    await suppressionsRemove(db.pool, db.schema, addressHash('c@example.com'));
    await suppressionsRemove(db.pool, db.schema, addressHash('c@example.com'));
    expect(await expectExact()).toBe(3);
  });

  it('with many adds and removals at once', async () => {
    const addresses = Array.from({ length: 400 }, (_, i) => `many-${i}@example.com`);
    await Promise.all(Array.from({ length: 8 }, (_, w) => add(addresses.filter((_, i) => i % 8 === w || i % 5 === w))));
    await Promise.all(addresses.filter((_, i) => i % 3 === 0).map((a) => suppressionsRemove(db.pool, db.schema, addressHash(a))));
    expect(await expectExact()).toBe(3 + 400 - 134);
  });

  it('TRUNCATE empties the count', async () => {
    await db.pool.query(`TRUNCATE ${ident(db.schema)}.suppressions`);
    expect(await expectExact()).toBe(0);
  });
});
