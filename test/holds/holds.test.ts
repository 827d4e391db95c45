import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelHold, confirmHold, createHold, getHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { HoldNotHeldError, IdempotencyConflictError, NotFoundError, ValidationError } from '../../src/errors.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident, withTransaction } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
const clock = new ManualClock('2030-01-01T12:00:00Z');
beforeAll(async () => {
  db = await testDatabase('holds');
});
afterAll(() => db.close());

const opts = () => ({ schema: db.schema, clock });
let n = 0;
const nextId = () => `hold-${++n}`;
const inMinutes = (m: number) => new Date(clock.now().getTime() + m * 60_000).toISOString();

async function expireDue(): Promise<number> {
  const worker = new ExpiryWorker({ pool: db.pool, schema: db.schema, clock });
  return (await worker.runOnce()).expired.length;
}

async function intentCount(holdId: string): Promise<number> {
  const { rows } = await db.pool.query(`SELECT 1 FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = $1`, [holdId]);
  return rows.length;
}

describe('hold state machine', () => {
  it('held -> confirmed, then every other transition is refused', async () => {
    const id = nextId();
    await createHold(db.pool, { id, customerEmail: 'a@example.com', ttlSeconds: 60 }, opts());
    const confirmed = await confirmHold(db.pool, id, opts());
    expect(confirmed.status).toBe('confirmed');
    expect(confirmed.confirmedAt?.toISOString()).toBe(clock.now().toISOString());
    await expect(confirmHold(db.pool, id, opts())).rejects.toMatchObject({ code: 'hold_not_held', status: 'confirmed' });
    await expect(cancelHold(db.pool, id, opts())).rejects.toBeInstanceOf(HoldNotHeldError);
    clock.advance(120_000);
    expect(await expireDue()).toBe(0);
    expect((await getHold(db.pool, id, opts()))?.status).toBe('confirmed');
    expect(await intentCount(id)).toBe(0);
  });

  it('held -> cancelled, then confirm and expiry are refused and no intent is written', async () => {
    const id = nextId();
    await createHold(db.pool, { id, customerEmail: 'b@example.com', ttlSeconds: 60 }, opts());
    expect((await cancelHold(db.pool, id, opts())).status).toBe('cancelled');
    await expect(confirmHold(db.pool, id, opts())).rejects.toMatchObject({ status: 'cancelled' });
    await expect(cancelHold(db.pool, id, opts())).rejects.toMatchObject({ status: 'cancelled' });
    clock.advance(120_000);
    expect(await expireDue()).toBe(0);
    expect(await intentCount(id)).toBe(0);
  });

  it('held -> expired writes exactly one intent, then confirm and cancel are refused', async () => {
    const id = nextId();
    await createHold(db.pool, { id, customerEmail: 'c@example.com', ttlSeconds: 60 }, opts());
    clock.advance(59_000);
    expect(await expireDue()).toBe(0);
    clock.advance(1_000);
    expect(await expireDue()).toBe(1);
    const hold = (await getHold(db.pool, id, opts()))!;
    expect(hold.status).toBe('expired');
    expect(hold.expiredAt?.toISOString()).toBe(clock.now().toISOString());
    const { rows } = await db.pool.query(`SELECT * FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = $1`, [id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: `reservation-expired:${id}`, state: 'pending', recipient: 'c@example.com', template: 'reservation-expired' });
    await expect(confirmHold(db.pool, id, opts())).rejects.toMatchObject({ status: 'expired' });
    await expect(cancelHold(db.pool, id, opts())).rejects.toMatchObject({ status: 'expired' });
    expect(await expireDue()).toBe(0);
    expect(await intentCount(id)).toBe(1);
  });

  it('the database refuses illegal states written around the library', async () => {
    const id = nextId();
    await createHold(db.pool, { id, customerEmail: 'd@example.com', ttlSeconds: 60 }, opts());
    const t = `${ident(db.schema)}.support_reservations`;
    await expect(db.pool.query(`UPDATE ${t} SET status = 'expired' WHERE id = $1`, [id])).rejects.toThrow(/terminal_timestamps/);
    await expect(db.pool.query(`UPDATE ${t} SET status = 'lost' WHERE id = $1`, [id])).rejects.toThrow(/support_reservations_status/);
    await expect(
      db.pool.query(`UPDATE ${t} SET status = 'confirmed', confirmed_at = now(), expired_at = now() WHERE id = $1`, [id]),
    ).rejects.toThrow(/terminal_timestamps/);
  });

  it('confirm and cancel of an unknown hold are NotFound; get returns undefined', async () => {
    await expect(confirmHold(db.pool, 'nope', opts())).rejects.toBeInstanceOf(NotFoundError);
    await expect(cancelHold(db.pool, 'nope', opts())).rejects.toBeInstanceOf(NotFoundError);
    expect(await getHold(db.pool, 'nope', opts())).toBeUndefined();
  });

  it("a hold created inside the caller's rolled-back transaction never existed", async () => {
    const id = nextId();
    await expect(
      withTransaction(db.pool, async (client) => {
        await createHold(client, { id, customerEmail: 'e@example.com', ttlSeconds: 60 }, opts());
        throw new Error('application failed after creating the hold');
      }),
    ).rejects.toThrow(/application failed/);
    expect(await getHold(db.pool, id, opts())).toBeUndefined();
  });
});

describe('creating holds', () => {
  it('is idempotent on a client-supplied id and refuses the same id with other content', async () => {
    const id = nextId();
    const body = { id, customerEmail: 'f@example.com', expiresAt: inMinutes(20), metadata: { slot: 'mon-10:00' } };
    const first = await createHold(db.pool, body, opts());
    const again = await createHold(db.pool, { ...body }, opts());
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.hold).toEqual(first.hold);
    await expect(createHold(db.pool, { ...body, customerEmail: 'g@example.com' }, opts())).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    await expect(createHold(db.pool, { ...body, metadata: { slot: 'tue' } }, opts())).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
  });

  it('answers a retry after the deadline with the existing hold: idempotency is decided before the clock', async () => {
    // A clock of its own: moving it must not move the other tests' clock.
    const own = new ManualClock('2030-06-01T12:00:00Z');
    const options = { schema: db.schema, clock: own };
    const id = nextId();
    const body = { id, customerEmail: 'late@example.com', expiresAt: '2030-06-01T12:20:00Z', metadata: { slot: 'wed' } };
    const first = await createHold(db.pool, body, options);
    own.advance(60 * 60_000); // the response was lost; the client retries an hour later
    const again = await createHold(db.pool, { ...body }, options);
    expect(again).toEqual({ hold: first.hold, created: false });
    // The same instant written another way is the same request.
    expect((await createHold(db.pool, { ...body, expiresAt: '2030-06-01T14:20:00+02:00' }, options)).created).toBe(false);
    await expect(createHold(db.pool, { ...body, metadata: { slot: 'thu' } }, options)).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(createHold(db.pool, { ...body, id: nextId() }, options)).rejects.toMatchObject({ field: 'expiresAt' });
  });

  it('generates an id when none is given, and ttlSeconds counts from the clock', async () => {
    const { hold } = await createHold(db.pool, { customerEmail: 'h@example.com', ttlSeconds: 1200 }, opts());
    expect(hold.id).toMatch(/^hold_[0-9a-f-]{36}$/);
    expect(hold.expiresAt.getTime() - clock.now().getTime()).toBe(1_200_000);
  });

  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['malformed email', { customerEmail: 'not-an-email', ttlSeconds: 60 }, 'customerEmail'],
    ['missing email', { ttlSeconds: 60 }, 'customerEmail'],
    ['expiry in the past', { customerEmail: 'x@example.com', expiresAt: '2029-12-31T00:00:00Z' }, 'expiresAt'],
    ['expiry absurdly far', { customerEmail: 'x@example.com', expiresAt: '2031-01-01T00:00:00Z' }, 'expiresAt'],
    ['expiry without zone', { customerEmail: 'x@example.com', expiresAt: '2030-01-01T13:00:00' }, 'expiresAt'],
    ['both expiresAt and ttl', { customerEmail: 'x@example.com', ttlSeconds: 5, expiresAt: '2030-01-01T13:00:00Z' }, 'expiresAt'],
    ['neither expiresAt nor ttl', { customerEmail: 'x@example.com' }, 'expiresAt'],
    ['ttl zero', { customerEmail: 'x@example.com', ttlSeconds: 0 }, 'ttlSeconds'],
    ['ttl over 30 days', { customerEmail: 'x@example.com', ttlSeconds: 2_592_001 }, 'ttlSeconds'],
    ['ttl fractional', { customerEmail: 'x@example.com', ttlSeconds: 1.5 }, 'ttlSeconds'],
    ['oversized metadata', { customerEmail: 'x@example.com', ttlSeconds: 60, metadata: { blob: 'x'.repeat(20_000) } }, 'metadata'],
    ['metadata not an object', { customerEmail: 'x@example.com', ttlSeconds: 60, metadata: [1, 2] }, 'metadata'],
    ['bad id characters', { id: 'a b/c', customerEmail: 'x@example.com', ttlSeconds: 60 }, 'id'],
    ['id too long', { id: 'a'.repeat(129), customerEmail: 'x@example.com', ttlSeconds: 60 }, 'id'],
    ['unknown field', { customerEmail: 'x@example.com', ttlSeconds: 60, colour: 'red' }, 'colour'],
    ['bad tenant characters', { customerEmail: 'x@example.com', ttlSeconds: 60, tenant: 'acme corp' }, 'tenant'],
    ['tenant too long', { customerEmail: 'x@example.com', ttlSeconds: 60, tenant: 'a'.repeat(129) }, 'tenant'],
    ['tenant not a string', { customerEmail: 'x@example.com', ttlSeconds: 60, tenant: 7 }, 'tenant'],
  ];
  it.each(bad)('rejects %s with a ValidationError naming the field', async (_name, input, field) => {
    const error = await createHold(db.pool, input as never, opts()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
  });

  it('rejects a malformed hold id on confirm with a ValidationError', async () => {
    await expect(confirmHold(db.pool, "x'; drop table", opts())).rejects.toMatchObject({ field: 'id' });
  });
});

describe('tenants', () => {
  it("createHold stores the tenant (default the empty tenant's) and the expiry lane carries it to the intent", async () => {
    const acme = nextId();
    const plain = nextId();
    expect((await createHold(db.pool, { id: acme, customerEmail: 'a@example.com', ttlSeconds: 60, tenant: 'acme' }, opts())).hold.tenant).toBe('acme');
    expect((await createHold(db.pool, { id: plain, customerEmail: 'a@example.com', ttlSeconds: 60 }, opts())).hold.tenant).toBe('');
    expect((await getHold(db.pool, acme, opts()))?.tenant).toBe('acme');
    clock.advance(61_000);
    await expireDue();
    const { rows } = await db.pool.query(
      `SELECT reservation_id, tenant FROM ${ident(db.schema)}.email_outbox WHERE reservation_id = ANY ($1) ORDER BY tenant`,
      [[acme, plain]],
    );
    expect(rows).toEqual([
      { reservation_id: plain, tenant: '' },
      { reservation_id: acme, tenant: 'acme' },
    ]);
  });

  it('the same id with another tenant is another request', async () => {
    const id = nextId();
    await createHold(db.pool, { id, customerEmail: 'a@example.com', ttlSeconds: 60, tenant: 'acme' }, opts());
    expect((await createHold(db.pool, { id, customerEmail: 'a@example.com', ttlSeconds: 60, tenant: 'acme' }, opts())).created).toBe(false);
    await expect(createHold(db.pool, { id, customerEmail: 'a@example.com', ttlSeconds: 60, tenant: 'globex' }, opts())).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    await expect(createHold(db.pool, { id, customerEmail: 'a@example.com', ttlSeconds: 60 }, opts())).rejects.toBeInstanceOf(IdempotencyConflictError);
  });
});
