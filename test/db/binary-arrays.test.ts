import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { boolArray, float8Array, int4Array, textArray } from '../../src/db/binary-arrays.js';
import { createPool } from '../../src/db/pool.js';

let pool: pg.Pool;
beforeAll(() => {
  pool = createPool({ connectionString: inject('databaseUrl'), max: 2 });
});
afterAll(() => pool.end());

/** What the server makes of one parameter, cast to `type`. */
async function roundTrip(parameter: unknown, type: string): Promise<unknown> {
  const { rows } = await pool.query<{ a: unknown }>(`SELECT $1::${type} AS a`, [parameter]);
  return rows[0]!.a;
}

// Every character the text literal has to escape or that its parser treats specially.
const AWKWARD = ['', 'plain', 'a"b', 'back\\slash', '{,}', 'NULL', ' spaced ', 'line\nbreak\ttab', 'Grüße, 日本語 ✓ 🎉', '<a href="x">&amp;</a>'];

describe('binary array parameters', () => {
  it('text[]: every element arrives as written, nulls as NULL, the same as the text literal gives', async () => {
    const values = [...AWKWARD, null, undefined, 'x'.repeat(100_000)];
    const expected = values.map((v) => v ?? null);
    expect(await roundTrip(textArray(values), 'text[]')).toEqual(expected);
    expect(await roundTrip(values, 'text[]')).toEqual(expected);
    const { rows } = await pool.query<{ n: number; bytes: number }>(
      `SELECT count(*)::int AS n, sum(octet_length(t))::int AS bytes FROM unnest($1::text[]) t`,
      [textArray(AWKWARD)],
    );
    expect(rows[0]).toEqual({ n: AWKWARD.length, bytes: AWKWARD.reduce((n, s) => n + Buffer.byteLength(s), 0) });
  });

  it('int[], float8[] and bool[]: values, bounds and nulls', async () => {
    expect(await roundTrip(int4Array([0, 1, -1, 2_147_483_647, -2_147_483_648, null]), 'int[]')).toEqual([0, 1, -1, 2_147_483_647, -2_147_483_648, null]);
    expect(await roundTrip(float8Array([0, 0.1, -2.5e300, 1234.5, Number.POSITIVE_INFINITY, null]), 'float8[]')).toEqual([
      0, 0.1, -2.5e300, 1234.5, Number.POSITIVE_INFINITY, null,
    ]);
    expect(await roundTrip(boolArray([true, false, null, undefined]), 'bool[]')).toEqual([true, false, null, null]);
  });

  it('empty arrays of each type', async () => {
    expect(await roundTrip(textArray([]), 'text[]')).toEqual([]);
    expect(await roundTrip(int4Array([]), 'int[]')).toEqual([]);
    expect(await roundTrip(float8Array([]), 'float8[]')).toEqual([]);
    expect(await roundTrip(boolArray([]), 'bool[]')).toEqual([]);
  });

  it('columns unnested side by side, as the lanes send a round', async () => {
    const { rows } = await pool.query<{ id: string; n: number; ok: boolean; d: number }>(
      `SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::float8[]) AS r(id, n, ok, d)`,
      [textArray(['a', 'b"', null]), int4Array([1, null, 3]), boolArray([true, false, null]), float8Array([0.5, null, 2])],
    );
    expect(rows).toEqual([
      { id: 'a', n: 1, ok: true, d: 0.5 },
      { id: 'b"', n: null, ok: false, d: null },
      { id: null, n: 3, ok: null, d: 2 },
    ]);
  });

  it('refuses, naming the element, what the column type cannot hold', () => {
    expect(() => int4Array([1, 1.5])).toThrow('int[] element 1 is 1.5, not a 32-bit integer');
    expect(() => int4Array([2_147_483_648])).toThrow('int[] element 0 is 2147483648, not a 32-bit integer');
    expect(() => textArray([3 as unknown as string])).toThrow('text[] element 0 is a number, not a string');
    expect(() => boolArray(['yes' as unknown as boolean])).toThrow('bool[] element 0 is a string, not a boolean');
    expect(() => float8Array(['1' as unknown as number])).toThrow('float8[] element 0 is a string, not a number');
  });

  it('the server refuses a NUL in text, as it does in a text literal', async () => {
    await expect(roundTrip(textArray(['ok', 'nul\u0000here']), 'text[]')).rejects.toThrow('invalid byte sequence for encoding "UTF8": 0x00');
    await expect(roundTrip(['ok', 'nul\u0000here'], 'text[]')).rejects.toThrow('invalid byte sequence for encoding "UTF8": 0x00');
  });

  it('the server refuses an array cast to another element type', async () => {
    await expect(roundTrip(textArray(['1']), 'int[]')).rejects.toThrow('binary data has array element type 25 (text) instead of expected 23 (integer)');
  });
});
