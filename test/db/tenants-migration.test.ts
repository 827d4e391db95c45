import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident } from '../../src/db/pool.js';
import { migrateBefore as migrateUpTo } from '../helpers/migrations.js';

/**
 * Upgrading a schema with holds in it to migration 0020 (tenants): the
 * existing rows become the empty tenant's without a rewrite, create_hold
 * keeps its callers (and the privileges granted on it), and a retry of a
 * hold created before the upgrade is still recognised.
 */
let pool: pg.Pool;
const schema = `tenants_upgrade_${randomBytes(4).toString('hex')}`;
const app = `lh_app_${randomBytes(4).toString('hex')}`;
const stranger = `lh_stranger_${randomBytes(4).toString('hex')}`;
const s = ident(schema);

const migrateBefore = (upTo: number) => migrateUpTo(pool, schema, upTo);

const relfilenode = async (table: string) =>
  (await pool.query<{ n: string }>(`SELECT pg_relation_filenode($1::regclass)::text AS n`, [`${schema}.${table}`])).rows[0]!.n;

let before: { holds: string; outbox: string };
const at = new Date(Date.now() + 3600_000).toISOString();

beforeAll(async () => {
  pool = createPool({ connectionString: inject('databaseUrl'), max: 4, queryTimeoutMs: 0 });
  await migrateBefore(20);
  await pool.query(`SELECT ${s}.create_hold('before-held', 'ana@example.com', $1, '{"slot":1}')`, [at]);
  await pool.query(
    `INSERT INTO ${s}.support_reservations (id, customer_email, status, expires_at, expired_at) VALUES ('before-expired', 'bo@example.com', 'expired', now(), now())`,
  );
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, available_at) VALUES ('reservation-expired:before-expired', 'before-expired', 'bo@example.com', 'reservation-expired', now())`,
  );
  // An operator who let only the application's role call create_hold.
  await pool.query(`CREATE ROLE ${app} NOLOGIN`);
  await pool.query(`CREATE ROLE ${stranger} NOLOGIN`);
  await pool.query(`REVOKE ALL ON FUNCTION ${s}.create_hold(text, text, timestamptz, jsonb) FROM PUBLIC`);
  await pool.query(`GRANT EXECUTE ON FUNCTION ${s}.create_hold(text, text, timestamptz, jsonb) TO ${app}`);
  before = { holds: await relfilenode('support_reservations'), outbox: await relfilenode('email_outbox') };
  // 0020 first; later migrations (0021 tenant policies, ...) follow it.
  expect((await migrate(pool, schema)).applied[0]).toBe('0020_tenants');
});

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {});
  await pool.query(`DROP ROLE IF EXISTS ${app}`).catch(() => {});
  await pool.query(`DROP ROLE IF EXISTS ${stranger}`).catch(() => {});
  await pool.end();
});

describe('migration 0020 on a schema with rows', () => {
  it("makes every existing hold and intent the empty tenant's, without rewriting either table", async () => {
    const holds = await pool.query(`SELECT id, tenant FROM ${s}.support_reservations ORDER BY id`);
    expect(holds.rows).toEqual([
      { id: 'before-expired', tenant: '' },
      { id: 'before-held', tenant: '' },
    ]);
    expect((await pool.query(`SELECT tenant FROM ${s}.email_outbox`)).rows).toEqual([{ tenant: '' }]);
    expect(await relfilenode('support_reservations')).toBe(before.holds);
    expect(await relfilenode('email_outbox')).toBe(before.outbox);
    // The checks were added without a scan (NOT VALID) and still apply to new rows.
    const { rows } = await pool.query(
      `SELECT conname, convalidated FROM pg_constraint WHERE conname IN ('support_reservations_tenant_format', 'email_outbox_tenant_format') AND connamespace = $1::regnamespace ORDER BY conname`,
      [schema],
    );
    expect(rows).toEqual([
      { conname: 'email_outbox_tenant_format', convalidated: false },
      { conname: 'support_reservations_tenant_format', convalidated: false },
    ]);
  });

  it('keeps one create_hold, callable as before, and recognises a retry of a hold created before the upgrade', async () => {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'create_hold' AND pronamespace = $1::regnamespace`, [schema]);
    expect(rows[0].n).toBe(1);
    const retry = await pool.query(`SELECT * FROM ${s}.create_hold('before-held', 'ana@example.com', $1, '{"slot":1}')`, [at]);
    expect(retry.rows[0]).toMatchObject({ id: 'before-held', tenant: '' });
    const named = await pool.query(`SELECT * FROM ${s}.create_hold(id => 'after', customer_email => 'cy@example.com', expires_at => $1, tenant => 'acme')`, [at]);
    expect(named.rows[0]).toMatchObject({ id: 'after', tenant: 'acme' });
  });

  it('grants the new create_hold what was granted on the old one, and nothing more (through 0020 and 0024, which each replace it)', async () => {
    const can = async (role: string) =>
      (
        await pool.query<{ ok: boolean }>(`SELECT has_function_privilege($1, $2::regprocedure, 'EXECUTE') AS ok`, [
          role,
          `${schema}.create_hold(text, text, timestamptz, jsonb, text, integer, integer, boolean)`,
        ])
      ).rows[0]!.ok;
    expect(await can(app)).toBe(true);
    expect(await can(stranger)).toBe(false);
  });
});
