import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident, withClient } from '../../src/db/pool.js';
import { migrateBefore } from '../helpers/migrations.js';

/**
 * Migrations 0036 and 0037: the hot rows' format CHECKs, and create_hold's
 * own tests of the id and the tenant, as unbounded regular expressions with
 * the length checked apart. Upgraded on a schema with rows in it: nothing
 * rewritten, every name kept, and each new rule accepting exactly what the
 * old one did.
 */
let pool: pg.Pool;
const schema = `format_checks_${randomBytes(4).toString('hex')}`;
const s = ident(schema);

const relfilenode = async (table: string) =>
  (await pool.query<{ n: string }>(`SELECT pg_relation_filenode($1::regclass)::text AS n`, [`${schema}.${table}`])).rows[0]!.n;

/** The rules as they stood before 0036 (0001, 0020, 0026). */
const OLD = {
  id: `~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'`,
  tenant: `~ '^([A-Za-z0-9][A-Za-z0-9._:-]{0,127})?$'`,
  traceparent: `~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'`,
};

const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const PROBES = [
  '', 'a', 'A', '0', '-', '.a', 'a-', 'a.b:c_d-e', 'acme corp', 'acme/1', 'é', 'aé', 'a\tb', 'a\nb',
  'a'.repeat(127), 'a'.repeat(128), 'a'.repeat(129), `a${'-'.repeat(127)}`, `a${'-'.repeat(128)}`, `-${'a'.repeat(127)}`,
  TRACE, TRACE.toUpperCase(), TRACE.replace('-01', '-1'), TRACE.replace('-b7', 'b7-'), `${TRACE}0`, TRACE.slice(1),
  TRACE.replace('0af7', '0af-'), '00-0af7651916cd43dd8448eb211c80319cb-7ad6b7169203331-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
];

beforeAll(async () => {
  pool = createPool({ connectionString: inject('databaseUrl'), max: 2, queryTimeoutMs: 0 });
  await migrateBefore(pool, schema, 36);
  await pool.query(`INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, tenant, traceparent, request_hash) VALUES ('before', 'ana@example.com', now() + interval '1 hour', 'acme', $1, '')`, [TRACE]);
});

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {});
  await pool.end();
});

/** Whether the table takes `value` in `column` (the row inserted and rolled back). */
async function accepts(table: 'support_reservations' | 'email_outbox', column: 'id' | 'tenant' | 'traceparent', value: string): Promise<boolean> {
  return withClient(pool, async (client) => {
    await client.query('BEGIN');
    try {
      if (table === 'support_reservations') {
        const row: Record<string, string | null> = { id: 'probe', tenant: '', traceparent: null, [column]: value };
        await client.query(
          `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash, tenant, traceparent) VALUES ($1, 'ana@example.com', now(), '', $2, $3)`,
          [row['id'], row['tenant'], row['traceparent']],
        );
      } else {
        await client.query(`INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, available_at, tenant) VALUES ('probe', 'before', 'ana@example.com', 'reservation-expired', now(), $1)`, [value]);
      }
      return true;
    } catch (error) {
      // 23514 check_violation; anything else (a NUL or bad byte never reaches the check) fails the test.
      if ((error as { code?: string }).code === '23514') return false;
      throw error;
    } finally {
      await client.query('ROLLBACK');
    }
  });
}

describe('migration 0036 on a schema with rows', () => {
  it('rewrites neither table and keeps every constraint name', async () => {
    const before = { holds: await relfilenode('support_reservations'), outbox: await relfilenode('email_outbox') };
    expect((await migrate(pool, schema)).applied.slice(0, 2)).toEqual(['0036_format_checks_unbounded', '0037_create_hold_checks_unbounded']);
    expect(await relfilenode('support_reservations')).toBe(before.holds);
    expect(await relfilenode('email_outbox')).toBe(before.outbox);
    const { rows } = await pool.query<{ conname: string }>(
      `SELECT conname FROM pg_constraint WHERE connamespace = $1::regnamespace AND contype = 'c' AND conname IN
         ('support_reservations_id_format', 'support_reservations_tenant_format', 'support_reservations_traceparent', 'email_outbox_tenant_format') ORDER BY conname`,
      [schema],
    );
    expect(rows.map((r) => r.conname)).toEqual(['email_outbox_tenant_format', 'support_reservations_id_format', 'support_reservations_tenant_format', 'support_reservations_traceparent']);
  });

  it('each table takes exactly what the old rule took', async () => {
    const cases = [
      ['support_reservations', 'id', OLD.id],
      ['support_reservations', 'tenant', OLD.tenant],
      ['support_reservations', 'traceparent', OLD.traceparent],
      ['email_outbox', 'tenant', OLD.tenant],
    ] as const;
    for (const [table, column, rule] of cases) {
      const { rows } = await pool.query<{ s: string; ok: boolean }>(`SELECT p AS s, p ${rule} AS ok FROM unnest($1::text[]) p`, [PROBES]);
      const expected = rows.map((r) => [r.s, r.ok]);
      const got = [];
      for (const probe of PROBES) got.push([probe, await accepts(table, column, probe)]);
      expect(got, `${table}.${column}`).toEqual(expected);
      // Both answers occur, so the comparison means something.
      expect(new Set(expected.map(([, ok]) => ok))).toEqual(new Set([true, false]));
    }
  });

  it("create_hold's tests are replaced, and refuse exactly what the old ones refused, with the same error", async () => {
    const { rows: def } = await pool.query<{ d: string }>(
      `SELECT pg_get_functiondef($1::regprocedure) AS d`,
      [`${schema}.create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean)`],
    );
    expect(def[0]!.d).not.toContain('{0,127}');
    expect(def[0]!.d).toContain("octet_length(hold_id) > 128");
    // Each accepted probe creates a hold (the tenant's under an id of its own).
    for (const [column, rule, call] of [
      ['id', OLD.id, `SELECT ${s}.create_hold(id => $1, customer_email => 'ana@example.com', expires_at => now() + interval '1 hour')`],
      ['tenant', OLD.tenant, `SELECT ${s}.create_hold(id => 'probe-' || md5($1), customer_email => 'ana@example.com', expires_at => now() + interval '1 hour', tenant => $1)`],
    ] as const) {
      for (const probe of PROBES) {
        const { rows } = await pool.query<{ ok: boolean }>(`SELECT $1::text ${rule} AS ok`, [probe]);
        const error = await pool.query(call, [probe]).then(() => undefined, (e: { code?: string; column?: string }) => e);
        const refused = error !== undefined && error.code === '22023' && error.column === column;
        expect([column, probe, refused]).toEqual([column, probe, !rows[0]!.ok]);
      }
    }
  });

  it('0037 leaves a create_hold changed by hand as it is, and a missing one alone', async () => {
    const other = `format_checks_hand_${randomBytes(4).toString('hex')}`;
    const o = ident(other);
    const fn = `${other}.create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean)`;
    const definition = async () => (await pool.query<{ d: string }>(`SELECT pg_get_functiondef($1::regprocedure) AS d`, [fn])).rows[0]!.d;
    try {
      await migrateBefore(pool, other, 37);
      // An operator's own rule: ids of at most 64 characters.
      // (A function as the replacement: `$'` in a replacement string means the text after the match.)
      await pool.query((await definition()).replace(`hold_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'`, () => `hold_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$'`));
      expect(await migrate(pool, other)).toMatchObject({ applied: expect.arrayContaining(['0037_create_hold_checks_unbounded']) });
      expect(await definition()).toContain('{0,63}');
      await expect(pool.query(`SELECT ${o}.create_hold(id => $1, customer_email => 'ana@example.com', expires_at => now() + interval '1 hour')`, ['a'.repeat(100)])).rejects.toMatchObject({ code: '22023', column: 'id' });

      // Gone altogether: 0037 runs, and does nothing.
      await pool.query(`DELETE FROM ${o}.migrations WHERE id = 37`);
      await pool.query(`DROP FUNCTION ${fn}`);
      expect((await migrate(pool, other)).applied).toContain('0037_create_hold_checks_unbounded');
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${o} CASCADE`);
    }
  });

  it('still takes a hold without a traceparent', async () => {
    await pool.query(`INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash) VALUES ('no-trace', 'ana@example.com', now(), '')`);
    const { rows } = await pool.query(`SELECT traceparent FROM ${s}.support_reservations WHERE id = 'no-trace'`);
    expect(rows).toEqual([{ traceparent: null }]);
  });
});
