import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { ident, withClient } from '../../src/db/pool.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { IdempotencyConflictError } from '../../src/errors.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/** The SQL entry point (migrations/0011_create_hold.sql), as an application in another language uses it. */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('sqlentry');
  s = ident(db.schema);
});
afterAll(() => db.close());

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

async function holdRow(id: string) {
  const { rows } = await db.pool.query(`SELECT * FROM ${s}.support_reservations WHERE id = $1`, [id]);
  return rows[0];
}

async function sqlError(sql: string, params: unknown[]): Promise<{ code: string; message: string; column?: string; constraint?: string }> {
  try {
    await db.pool.query(sql, params);
  } catch (error) {
    return error as { code: string; message: string; column?: string; constraint?: string };
  }
  throw new Error('expected the statement to fail');
}

describe('create_hold(id, customer_email, expires_at, metadata)', () => {
  it('creates nothing when the caller rolls back its transaction', async () => {
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      const { rows } = await client.query(`SELECT * FROM ${s}.create_hold('rolled-back', 'ana@example.com', $1, '{"slot":"10:00"}')`, [inMinutes(20)]);
      expect(rows[0]).toMatchObject({ id: 'rolled-back', status: 'held', metadata: { slot: '10:00' } });
      await client.query('ROLLBACK');
    });
    expect(await holdRow('rolled-back')).toBeUndefined();
  });

  it('a committed hold expires and the expiry worker creates its intent', async () => {
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      // Called with a search_path that does not include the schema: the function is pinned to its own.
      await client.query('SET LOCAL search_path TO public');
      await client.query(`SELECT ${s}.create_hold('committed', 'ana@example.com', now() + interval '2 seconds', '{}')`);
      await client.query('COMMIT');
    });
    expect(await holdRow('committed')).toMatchObject({ status: 'held', customer_email: 'ana@example.com' });
    const clock = new ManualClock(Date.now() + 60_000);
    const run = await new ExpiryWorker({ pool: db.pool, schema: db.schema, clock }).runOnce();
    expect(run.expired.map((h) => h.id)).toContain('committed');
    const { rows } = await db.pool.query(`SELECT id, state, recipient FROM ${s}.email_outbox WHERE reservation_id = 'committed'`);
    expect(rows).toEqual([{ id: 'reservation-expired:committed', state: 'pending', recipient: 'ana@example.com' }]);
  });

  it('is idempotent: the same request returns the hold, another one raises 23505', async () => {
    const at = inMinutes(30);
    const first = await db.pool.query(`SELECT * FROM ${s}.create_hold('idem', 'ana@example.com', $1, '{"a":1,"b":[1,2]}')`, [at]);
    // The same instant written in another zone and the same metadata with keys in another order.
    const sameInstant = new Date(at).toISOString().replace('Z', '+00:00');
    const again = await db.pool.query(`SELECT * FROM ${s}.create_hold('idem', 'ana@example.com', $1, '{"b":[1,2],  "a":1}')`, [sameInstant]);
    expect(again.rows[0].created_at).toEqual(first.rows[0].created_at);
    const conflict = await sqlError(`SELECT ${s}.create_hold('idem', 'bob@example.com', $1, '{"a":1,"b":[1,2]}')`, [at]);
    expect(conflict).toMatchObject({ code: '23505', column: 'id', constraint: 'support_reservations_pkey' });
    expect(conflict.message).toBe('id: hold "idem" already exists with different content');
    // A retry after the deadline passed is still the same request, not "must be in the future".
    // (Backdated: a hold created a while ago whose request named an instant now past.)
    await db.pool.query(
      `UPDATE ${s}.support_reservations
          SET expires_at = now() - interval '1 minute',
              request_hash = ${s}.hold_request_hash(customer_email, now() - interval '1 minute', NULL, metadata)
        WHERE id = 'idem'`,
    );
    const past = (await holdRow('idem')).expires_at as Date;
    const late = await db.pool.query(`SELECT * FROM ${s}.create_hold('idem', 'ana@example.com', $1, '{"a":1,"b":[1,2]}')`, [past]);
    expect(late.rows[0].id).toBe('idem');
  });

  it('agrees with createHold: a retry through the other path is recognised', async () => {
    const at = inMinutes(40);
    const { hold } = await createHold(db.pool, { id: 'from-ts', customerEmail: 'ana@example.com', expiresAt: at, metadata: { b: 2, a: 1 } }, { schema: db.schema });
    const viaSql = await db.pool.query(`SELECT * FROM ${s}.create_hold('from-ts', 'ana@example.com', $1, '{"a":1,"b":2}')`, [at]);
    expect(viaSql.rows[0].created_at).toEqual(hold.createdAt);
    await expect(createHold(db.pool, { id: 'from-ts', customerEmail: 'ana@example.com', expiresAt: inMinutes(41) }, { schema: db.schema })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );

    await db.pool.query(`SELECT ${s}.create_hold('from-sql', 'ana@example.com', $1, '{"x":"y"}')`, [at]);
    const viaTs = await createHold(db.pool, { id: 'from-sql', customerEmail: 'ana@example.com', expiresAt: at, metadata: { x: 'y' } }, { schema: db.schema });
    expect(viaTs.created).toBe(false);
    await expect(
      createHold(db.pool, { id: 'from-sql', customerEmail: 'ana@example.com', expiresAt: at, metadata: { x: 'z' } }, { schema: db.schema }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
  });

  it('still recognises a hold created with the older TypeScript hash', async () => {
    const at = inMinutes(50);
    const { hold } = await createHold(db.pool, { id: 'legacy', customerEmail: 'ana@example.com', expiresAt: at }, { schema: db.schema });
    // As createHold stored it before migration 0011 (validate.ts's requestHash).
    const { validateCreateHold } = await import('../../src/model/hold-input.js');
    const legacy = validateCreateHold({ id: 'legacy', customerEmail: 'ana@example.com', expiresAt: at }).requestHash;
    await db.pool.query(`UPDATE ${s}.support_reservations SET request_hash = $1 WHERE id = 'legacy'`, [legacy]);
    const again = await createHold(db.pool, { id: 'legacy', customerEmail: 'ana@example.com', expiresAt: at }, { schema: db.schema });
    expect(again).toMatchObject({ created: false, hold: { id: hold.id } });
  });

  it('generates an id when none is given', async () => {
    const { rows } = await db.pool.query(`SELECT id FROM ${s}.create_hold(NULL, 'ana@example.com', $1)`, [inMinutes(5)]);
    expect(rows[0].id).toMatch(/^hold_[0-9a-f-]{36}$/);
  });

  it.each([
    ['id', ['bad id!', 'a@example.com', 5, '{}'], 'id: must be 1-128 characters'],
    ['customer_email', ['e1', null, 5, '{}'], 'customer_email: is required'],
    ['customer_email', ['e2', 'not-an-address', 5, '{}'], 'customer_email: must be an email address'],
    ['customer_email', ['e3', `${'a'.repeat(250)}@example.com`, 5, '{}'], 'customer_email: must be at most 254 characters'],
    ['expires_at', ['e4', 'a@example.com', null, '{}'], 'expires_at: is required'],
    ['expires_at', ['e5', 'a@example.com', -1, '{}'], 'expires_at: must be in the future'],
    ['expires_at', ['e6', 'a@example.com', 31 * 24 * 60, '{}'], 'expires_at: must be within 30 days'],
    ['metadata', ['e7', 'a@example.com', 5, '[1]'], 'metadata: must be a JSON object'],
    ['metadata', ['e8', 'a@example.com', 5, JSON.stringify({ big: 'x'.repeat(17_000) })], 'metadata: must be at most 16384 bytes'],
    ['metadata', ['e9', 'a@example.com', 5, '{"a":'.repeat(33) + '1' + '}'.repeat(33)], 'metadata: must not be nested more than 32 levels'],
  ] as const)('refuses a bad %s with SQLSTATE 22023 naming it', async (column, [id, email, minutes, metadata], message) => {
    const expiresAt = minutes === null ? null : inMinutes(minutes);
    const error = await sqlError(`SELECT ${s}.create_hold($1, $2, $3, $4::jsonb)`, [id, email, expiresAt, metadata]);
    expect(error).toMatchObject({ code: '22023', column });
    expect(error.message.startsWith(message)).toBe(true);
    expect(await holdRow(id)).toBeUndefined();
  });

  it('accepts metadata nested exactly as deep as the API does (32 levels), and not deeper', async () => {
    const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    const { validateCreateHold } = await import('../../src/model/hold-input.js');
    const viaApi = (levels: number) => () => validateCreateHold({ customerEmail: 'a@example.com', ttlSeconds: 5, metadata: JSON.parse(nested(levels)) });
    await db.pool.query(`SELECT ${s}.create_hold('deep-ok', 'a@example.com', $1, $2::jsonb)`, [inMinutes(5), nested(32)]);
    expect(viaApi(32)).not.toThrow();
    const error = await sqlError(`SELECT ${s}.create_hold('too-deep', 'a@example.com', $1, $2::jsonb)`, [inMinutes(5), nested(33)]);
    expect(error.code).toBe('22023');
    expect(viaApi(33)).toThrow(/nested/);
  });
});

describe('a plain INSERT of the contract columns', () => {
  it('works without request_hash, and create_hold recognises the same request', async () => {
    const at = inMinutes(10);
    await db.pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, metadata) VALUES ('plain', 'ana@example.com', $1, '{"k":"v"}')`,
      [at],
    );
    const row = await holdRow('plain');
    expect(row).toMatchObject({ status: 'held', metadata: { k: 'v' } });
    expect(row.request_hash).toMatch(/^v2:[0-9a-f]{64}$/);
    const again = await db.pool.query(`SELECT * FROM ${s}.create_hold('plain', 'ana@example.com', $1, '{"k":"v"}')`, [at]);
    expect(again.rows[0].created_at).toEqual(row.created_at);
    // Conflicts between plain INSERTs are detected by id alone: the primary key.
    const duplicate = await sqlError(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at) VALUES ('plain', 'ana@example.com', $1)`,
      [at],
    );
    expect(duplicate.code).toBe('23505');
  });

  it('without metadata too (its default applies before the fingerprint)', async () => {
    await db.pool.query(`INSERT INTO ${s}.support_reservations (id, customer_email, expires_at) VALUES ('plain-2', 'ana@example.com', now() + interval '1 hour')`);
    expect((await holdRow('plain-2')).request_hash).toMatch(/^v2:/);
  });
});

describe('create_hold(..., tenant => ...)', () => {
  it("without a tenant the hold is the empty tenant's: every earlier call form still works", async () => {
    const at = inMinutes(20);
    await db.pool.query(`SELECT ${s}.create_hold('t-three', 'ana@example.com', $1)`, [at]);
    await db.pool.query(`SELECT ${s}.create_hold('t-four', 'ana@example.com', $1, '{"a":1}')`, [at]);
    await db.pool.query(
      `SELECT ${s}.create_hold(metadata => '{}'::jsonb, expires_at => $1, customer_email => 'ana@example.com', id => 't-named')`,
      [at],
    );
    for (const id of ['t-three', 't-four', 't-named']) expect((await holdRow(id)).tenant, id).toBe('');
  });

  it('takes the tenant by name (without metadata too) or as the fifth argument, and NULL as the empty tenant', async () => {
    const at = inMinutes(20);
    const named = await db.pool.query(
      `SELECT * FROM ${s}.create_hold(id => 't-acme', customer_email => 'ana@example.com', expires_at => $1, tenant => 'acme')`,
      [at],
    );
    expect(named.rows[0]).toMatchObject({ id: 't-acme', tenant: 'acme', status: 'held', metadata: {} });
    await db.pool.query(`SELECT ${s}.create_hold('t-fifth', 'ana@example.com', $1, '{"k":1}', 'globex')`, [at]);
    expect(await holdRow('t-fifth')).toMatchObject({ tenant: 'globex', metadata: { k: 1 } });
    await db.pool.query(`SELECT ${s}.create_hold('t-null', 'ana@example.com', $1, tenant => NULL)`, [at]);
    expect((await holdRow('t-null')).tenant).toBe('');
  });

  it('the tenant is part of the request: the same one again returns the hold, another raises 23505', async () => {
    const at = inMinutes(25);
    const call = `SELECT * FROM ${s}.create_hold('t-idem', 'ana@example.com', $1, tenant => $2)`;
    const first = await db.pool.query(call, [at, 'acme']);
    const again = await db.pool.query(call, [at, 'acme']);
    expect(again.rows[0].created_at).toEqual(first.rows[0].created_at);
    for (const other of ['globex', '']) {
      const conflict = await sqlError(call, [at, other]);
      expect(conflict, other).toMatchObject({ code: '23505', column: 'id', constraint: 'support_reservations_pkey' });
    }
    // And across the paths: createHold with the same tenant is the same request.
    const viaTs = await createHold(db.pool, { id: 't-idem', customerEmail: 'ana@example.com', expiresAt: at, tenant: 'acme' }, { schema: db.schema });
    expect(viaTs).toMatchObject({ created: false, hold: { tenant: 'acme' } });
    await expect(createHold(db.pool, { id: 't-idem', customerEmail: 'ana@example.com', expiresAt: at }, { schema: db.schema })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
  });

  it.each([['acme corp'], ['-acme'], ['a'.repeat(129)], ['acme/eu']])('refuses the tenant %j with SQLSTATE 22023 naming it', async (tenant) => {
    const error = await sqlError(`SELECT ${s}.create_hold('t-bad', 'ana@example.com', $1, tenant => $2)`, [inMinutes(5), tenant]);
    expect(error).toMatchObject({ code: '22023', column: 'tenant' });
    expect(error.message.startsWith('tenant: must be empty or 1-128 characters')).toBe(true);
    expect(await holdRow('t-bad')).toBeUndefined();
  });

  it('a committed hold of a tenant expires into an intent of the same tenant', async () => {
    await db.pool.query(`SELECT ${s}.create_hold('t-expires', 'ana@example.com', now() + interval '2 seconds', tenant => 'initech')`);
    const clock = new ManualClock(Date.now() + 60_000);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema, clock }).runOnce();
    const { rows } = await db.pool.query(`SELECT id, tenant, state FROM ${s}.email_outbox WHERE reservation_id = 't-expires'`);
    expect(rows).toEqual([{ id: 'reservation-expired:t-expires', tenant: 'initech', state: 'pending' }]);
  });

  it('a plain INSERT names a tenant or gets the empty one; the table refuses a tenant that breaks the rule', async () => {
    await db.pool.query(`INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, tenant) VALUES ('t-plain', 'ana@example.com', now() + interval '1 hour', 'acme')`);
    expect((await holdRow('t-plain')).tenant).toBe('acme');
    const bad = await sqlError(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, tenant) VALUES ('t-plain-bad', 'ana@example.com', now() + interval '1 hour', 'a b')`,
      [],
    );
    expect(bad).toMatchObject({ code: '23514', constraint: 'support_reservations_tenant_format' });
    const intent = await sqlError(`UPDATE ${s}.email_outbox SET tenant = ' ' WHERE reservation_id = 't-expires'`, []);
    expect(intent).toMatchObject({ code: '23514', constraint: 'email_outbox_tenant_format' });
  });
});
