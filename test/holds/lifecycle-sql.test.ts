import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHold, extendHold } from '../../src/holds/holds.js';
import { ident, withClient } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The hold's life through the SQL functions of migrations/0024
 * (create_hold with ttl_seconds and a reminder, confirm_hold, cancel_hold,
 * extend_hold), as an application without the library calls them.
 */
let db: TestDatabase;
let s: string;
beforeAll(async () => {
  db = await testDatabase('lifesql');
  s = ident(db.schema);
});
afterAll(() => db.close());

async function sqlError(sql: string, params: unknown[] = []): Promise<{ code: string; message: string; column?: string }> {
  try {
    await db.pool.query(sql, params);
  } catch (error) {
    return error as { code: string; message: string; column?: string };
  }
  throw new Error('expected the statement to fail');
}

const intents = async (holdId: string) =>
  (await db.pool.query(`SELECT template, state FROM ${s}.email_outbox WHERE reservation_id = $1 ORDER BY template`, [holdId])).rows;

describe('create_hold with ttl_seconds', () => {
  it('is safe to run again in a new transaction: the same id and inputs are the same hold', async () => {
    const call = `SELECT id, expires_at FROM ${s}.create_hold(id => 'sql-ttl', customer_email => 'ana@example.com', ttl_seconds => 1200)`;
    const first = (await db.pool.query(call)).rows[0];
    await new Promise((r) => setTimeout(r, 20)); // now() moves between transactions
    const again = (await db.pool.query(call)).rows[0];
    expect(again).toEqual(first);
    // The library's ttlSeconds request is the same request.
    const { created } = await createHold(db.pool, { id: 'sql-ttl', customerEmail: 'ana@example.com', ttlSeconds: 1200 }, { schema: db.schema });
    expect(created).toBe(false);
    const other = await sqlError(`SELECT ${s}.create_hold(id => 'sql-ttl', customer_email => 'ana@example.com', ttl_seconds => 60)`);
    expect(other.code).toBe('23505');
  });

  it('takes no id (one is generated), and refuses both or neither of expires_at and ttl_seconds', async () => {
    const { rows } = await db.pool.query(`SELECT id FROM ${s}.create_hold(customer_email => 'ana@example.com', ttl_seconds => 60)`);
    expect(rows[0].id).toMatch(/^hold_/);
    const both = await sqlError(`SELECT ${s}.create_hold(customer_email => 'a@example.com', ttl_seconds => 60, expires_at => now() + interval '1 hour')`);
    expect(both).toMatchObject({ code: '22023', column: 'expires_at' });
    const neither = await sqlError(`SELECT ${s}.create_hold(customer_email => 'a@example.com')`);
    expect(neither).toMatchObject({ code: '22023', column: 'expires_at' });
    const badTtl = await sqlError(`SELECT ${s}.create_hold(customer_email => 'a@example.com', ttl_seconds => 0)`);
    expect(badTtl).toMatchObject({ code: '22023', column: 'ttl_seconds' });
    const badRemind = await sqlError(`SELECT ${s}.create_hold(customer_email => 'a@example.com', ttl_seconds => 60, remind_before_seconds => -1)`);
    expect(badRemind).toMatchObject({ code: '22023', column: 'remind_before_seconds' });
  });

  it('writes the reminder in the same transaction (a rollback keeps neither), and the reminder choice is part of the request', async () => {
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      await client.query(`SELECT ${s}.create_hold(id => 'sql-rolled', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 300)`);
      expect(await (async () => (await client.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE reservation_id = 'sql-rolled'`)).rows[0].n)()).toBe(1);
      await client.query('ROLLBACK');
    });
    expect(await intents('sql-rolled')).toEqual([]);
    await db.pool.query(`SELECT ${s}.create_hold(id => 'sql-remind', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 300)`);
    const { rows } = await db.pool.query(
      `SELECT o.id, o.state, o.send_by = r.expires_at AS by_expiry, r.expires_at - o.available_at AS before
         FROM ${s}.email_outbox o JOIN ${s}.support_reservations r ON r.id = o.reservation_id WHERE r.id = 'sql-remind'`,
    );
    expect(rows).toEqual([{ id: 'reservation-reminder:sql-remind', state: 'pending', by_expiry: true, before: { minutes: 5 } }]);
    const otherRemind = await sqlError(`SELECT ${s}.create_hold(id => 'sql-remind', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 60)`);
    expect(otherRemind.code).toBe('23505');
  });
});

describe('confirm_hold, cancel_hold and extend_hold', () => {
  it('confirm_hold voids the reminder and writes the confirmation the hold asked for, with the notice deadline', async () => {
    await db.pool.query(
      `SELECT ${s}.create_hold(id => 'sql-confirm', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 300, notify_on_confirm => true)`,
    );
    const { rows } = await db.pool.query(`SELECT status FROM ${s}.confirm_hold('sql-confirm', notice_deadline_seconds => 120)`);
    expect(rows).toEqual([{ status: 'confirmed' }]);
    expect(await intents('sql-confirm')).toEqual([
      { template: 'reservation-confirmed', state: 'pending' },
      { template: 'reservation-reminder', state: 'voided' },
    ]);
    const { rows: deadline } = await db.pool.query(
      `SELECT send_by - available_at AS window FROM ${s}.email_outbox WHERE id = 'reservation-confirmed:sql-confirm'`,
    );
    expect(deadline[0].window).toEqual({ minutes: 2 });
    const again = await sqlError(`SELECT ${s}.confirm_hold('sql-confirm')`);
    expect(again.code).toBe('55000');
    expect(again.message).toMatch(/is confirmed, not held/);
    const cancel = await sqlError(`SELECT ${s}.cancel_hold('sql-confirm')`);
    expect(cancel.code).toBe('55000');
    const missing = await sqlError(`SELECT ${s}.confirm_hold('no-such-hold')`);
    expect(missing.code).toBe('P0002');
  });

  it('cancel_hold voids the reminder and writes no email', async () => {
    await db.pool.query(`SELECT ${s}.create_hold(id => 'sql-cancel', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 300, notify_on_confirm => true)`);
    await db.pool.query(`SELECT ${s}.cancel_hold('sql-cancel')`);
    expect(await intents('sql-cancel')).toEqual([{ template: 'reservation-reminder', state: 'voided' }]);
  });

  it('extend_hold moves the deadline and the reminder, is a no-op for the same deadline, and refuses an earlier one', async () => {
    await db.pool.query(`SELECT ${s}.create_hold(id => 'sql-extend', customer_email => 'ana@example.com', ttl_seconds => 600, remind_before_seconds => 300)`);
    // A whole-second deadline, so that the Date read back (milliseconds) is the stored one (microseconds).
    const { rows } = await db.pool.query(`SELECT expires_at FROM ${s}.extend_hold('sql-extend', expires_at => date_trunc('second', now()) + interval '1 hour')`);
    const to = rows[0].expires_at as Date;
    const { rows: reminder } = await db.pool.query(
      `SELECT send_by, $1::timestamptz - available_at AS before FROM ${s}.email_outbox WHERE id = 'reservation-reminder:sql-extend'`,
      [to],
    );
    expect(reminder).toEqual([{ send_by: to, before: { minutes: 5 } }]);
    expect((await db.pool.query(`SELECT expires_at FROM ${s}.extend_hold('sql-extend', expires_at => $1)`, [to])).rows[0].expires_at).toEqual(to);
    const earlier = await sqlError(`SELECT ${s}.extend_hold('sql-extend', expires_at => now() + interval '30 minutes')`);
    expect(earlier).toMatchObject({ code: '22023', column: 'expires_at' });
    const neither = await sqlError(`SELECT ${s}.extend_hold('sql-extend')`);
    expect(neither).toMatchObject({ code: '22023', column: 'expires_at' });
    const { rows: ext } = await db.pool.query(`SELECT count(*)::int AS n FROM ${s}.hold_extensions WHERE hold_id = 'sql-extend'`);
    expect(ext[0].n).toBe(1);
    // The library and the SQL function are one implementation: the library sees the same rule.
    await expect(extendHold(db.pool, 'sql-extend', { ttlSeconds: 60 }, { schema: db.schema })).rejects.toMatchObject({ field: 'ttlSeconds' }); // named as it was sent
  });
});
