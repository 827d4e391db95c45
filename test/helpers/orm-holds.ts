import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldNotHeldError, IdempotencyConflictError, NotFoundError, ValidationError } from '../../src/errors.js';
import { ident } from '../../src/db/pool.js';
import type { CreateHoldResult } from '../../src/holds/holds.js';
import type { Hold } from '../../src/model/hold-states.js';
import type { ConfirmHoldArgs, CreateHoldArgs, ExtendHoldArgs, HoldCallOptions } from '../../src/integrations/calls.js';
import { testDatabase, type TestDatabase } from './database.js';

/** One ORM's side of the shared story: its transaction, its own row, and leasehold's helpers for it. */
export interface OrmUnderTest<Tx> {
  /** Runs `work` in one of the ORM's transactions; a throw rolls it back. */
  transaction(work: (tx: Tx) => Promise<void>): Promise<void>;
  /** The application's own row, written through the ORM. */
  insertBooking(tx: Tx, booking: { id: string; holdId: string }): Promise<void>;
  createHold(tx: Tx, input: CreateHoldArgs, options: HoldCallOptions): Promise<CreateHoldResult>;
  confirmHold(tx: Tx, id: string, options: HoldCallOptions & ConfirmHoldArgs): Promise<Hold>;
  cancelHold(tx: Tx, id: string, options: HoldCallOptions): Promise<Hold>;
  extendHold(tx: Tx, id: string, change: ExtendHoldArgs, options: HoldCallOptions): Promise<Hold>;
  close(): Promise<void>;
}

/**
 * The story every ORM helper passes against real PostgreSQL: the booking
 * (a table of the application's, in the test's schema) and the hold with
 * its reminder intent commit together or roll back together, and the SQL
 * functions' errors arrive as the library's.
 */
export function describeOrmHolds<Tx>(name: string, connect: (db: TestDatabase) => Promise<OrmUnderTest<Tx>>): void {
  describe(`${name}: holds in the application's own transaction`, () => {
    let db: TestDatabase;
    let orm: OrmUnderTest<Tx>;
    let options: HoldCallOptions;
    const count = async (sql: string, values: unknown[]) => (await db.pool.query<{ n: number }>(sql, values)).rows[0]!.n;
    const story = async (holdId: string) => ({
      bookings: await count(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.bookings WHERE hold_id = $1`, [holdId]),
      holds: await count(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.support_reservations WHERE id = $1`, [holdId]),
      intents: await count(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = $1`, [holdId]),
    });

    beforeAll(async () => {
      db = await testDatabase(name.toLowerCase());
      options = { schema: db.schema };
      await db.pool.query(`CREATE TABLE ${ident(db.schema)}.bookings (id text PRIMARY KEY, hold_id text NOT NULL)`);
      orm = await connect(db);
    });
    afterAll(async () => {
      await orm?.close();
      await db?.close();
    });

    it('commit keeps both rows: the booking, and the hold with its reminder intent', async () => {
      let result: CreateHoldResult | undefined;
      await orm.transaction(async (tx) => {
        await orm.insertBooking(tx, { id: 'b-commit', holdId: 'h-commit' });
        result = await orm.createHold(tx, { id: 'h-commit', customerEmail: 'ana@example.com', ttlSeconds: 600, remindBeforeSeconds: 60, metadata: { seat: '12A' } }, options);
      });
      // The library's shape: the hold, and whether this call made it.
      expect(result!.created).toBe(true);
      const created = result!.hold;
      expect(created).toMatchObject({ id: 'h-commit', status: 'held', customerEmail: 'ana@example.com', metadata: { seat: '12A' }, tenant: '', remindBeforeSeconds: 60 });
      expect(created!.expiresAt).toBeInstanceOf(Date);
      expect(created!.expiresAt.getTime() - created!.createdAt.getTime()).toBe(600_000);
      expect(await story('h-commit')).toEqual({ bookings: 1, holds: 1, intents: 1 });
    });

    it('rollback keeps neither', async () => {
      await expect(
        orm.transaction(async (tx) => {
          await orm.insertBooking(tx, { id: 'b-rollback', holdId: 'h-rollback' });
          await orm.createHold(tx, { id: 'h-rollback', customerEmail: 'bo@example.com', ttlSeconds: 600, remindBeforeSeconds: 60 }, options);
          throw new Error('payment declined');
        }),
      ).rejects.toThrow('payment declined');
      expect(await story('h-rollback')).toEqual({ bookings: 0, holds: 0, intents: 0 });
    });

    it('extend, confirm and cancel inside a transaction commit or roll back with it', async () => {
      const expiresAt = new Date(Date.now() + 10 * 60_000);
      await orm.transaction(async (tx) => {
        await orm.createHold(tx, { id: 'h-settle', customerEmail: 'cy@example.com', expiresAt }, options);
        await orm.createHold(tx, { id: 'h-cancel', customerEmail: 'cy@example.com', expiresAt }, options);
      });
      const later = new Date(expiresAt.getTime() + 5 * 60_000);
      await expect(
        orm.transaction(async (tx) => {
          await orm.insertBooking(tx, { id: 'b-settle', holdId: 'h-settle' });
          expect((await orm.extendHold(tx, 'h-settle', { expiresAt: later }, options)).expiresAt).toEqual(later);
          expect((await orm.confirmHold(tx, 'h-settle', options)).status).toBe('confirmed');
          throw new Error('roll it back');
        }),
      ).rejects.toThrow('roll it back');
      const after = await db.pool.query(`SELECT status, expires_at FROM ${ident(db.schema)}.support_reservations WHERE id = 'h-settle'`);
      expect(after.rows[0]).toEqual({ status: 'held', expires_at: expiresAt });
      expect((await story('h-settle')).bookings).toBe(0);

      let confirmed: Hold | undefined;
      let cancelled: Hold | undefined;
      await orm.transaction(async (tx) => {
        await orm.insertBooking(tx, { id: 'b-settle', holdId: 'h-settle' });
        await orm.extendHold(tx, 'h-settle', { expiresAt: later }, options);
        confirmed = await orm.confirmHold(tx, 'h-settle', options);
        cancelled = await orm.cancelHold(tx, 'h-cancel', options);
      });
      expect(confirmed).toMatchObject({ status: 'confirmed', expiresAt: later });
      expect(confirmed!.confirmedAt).toBeInstanceOf(Date);
      expect(cancelled).toMatchObject({ status: 'cancelled', confirmedAt: null });
      expect((await story('h-settle')).bookings).toBe(1);
    });

    it("the SQL functions' errors arrive as the library's errors", async () => {
      const attempt = async (work: (tx: Tx) => Promise<unknown>) => {
        try {
          await orm.transaction(async (tx) => void (await work(tx)));
        } catch (error) {
          return error;
        }
        throw new Error('expected the call to fail');
      };
      const invalid = await attempt((tx) => orm.createHold(tx, { customerEmail: 'not an address', ttlSeconds: 60 }, options));
      expect(invalid).toBeInstanceOf(ValidationError);
      expect(invalid).toMatchObject({ field: 'customerEmail', message: 'customerEmail: must be an email address' });
      await orm.transaction(async (tx) => void (await orm.createHold(tx, { id: 'h-taken', customerEmail: 'di@example.com', ttlSeconds: 60 }, options)));
      expect(await attempt((tx) => orm.createHold(tx, { id: 'h-taken', customerEmail: 'other@example.com', ttlSeconds: 60 }, options))).toBeInstanceOf(
        IdempotencyConflictError,
      );
      // An extension asked in seconds that would not move the hold later is refused on ttlSeconds, the time in ISO 8601.
      await orm.transaction(async (tx) => void (await orm.createHold(tx, { id: 'h-long', customerEmail: 'di@example.com', ttlSeconds: 3600 }, options)));
      const earlier = await attempt((tx) => orm.extendHold(tx, 'h-long', { ttlSeconds: 10 }, options));
      expect(earlier).toBeInstanceOf(ValidationError);
      expect(earlier).toMatchObject({ field: 'ttlSeconds', message: expect.stringMatching(/current expiresAt \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/) });
      expect(await attempt((tx) => orm.confirmHold(tx, 'h-missing', options))).toBeInstanceOf(NotFoundError);
      const notHeld = await attempt((tx) => orm.confirmHold(tx, 'h-cancel', options));
      expect(notHeld).toBeInstanceOf(HoldNotHeldError);
      expect(notHeld).toMatchObject({ holdId: 'h-cancel', status: 'cancelled' });
      // The same create again is the same hold (idempotent), not an error, and says it made nothing.
      let again: CreateHoldResult | undefined;
      await orm.transaction(async (tx) => void (again = await orm.createHold(tx, { id: 'h-taken', customerEmail: 'di@example.com', ttlSeconds: 60 }, options)));
      expect([again?.hold.id, again?.created]).toEqual(['h-taken', false]);
    });

    it('created is true only for the call that made the hold: a generated id, and not a retry in the same transaction', async () => {
      const results: CreateHoldResult[] = [];
      await orm.transaction(async (tx) => {
        results.push(await orm.createHold(tx, { customerEmail: 'ed@example.com', ttlSeconds: 60 }, options));
        results.push(await orm.createHold(tx, { id: 'h-twice', customerEmail: 'ed@example.com', ttlSeconds: 60 }, options));
        results.push(await orm.createHold(tx, { id: 'h-twice', customerEmail: 'ed@example.com', ttlSeconds: 60 }, options));
      });
      expect(results[0]!.hold.id).toMatch(/^hold_/);
      expect(results.map((r) => r.created)).toEqual([true, true, false]);
      expect(results[2]!.hold).toEqual(results[1]!.hold);
    });
  });
}
