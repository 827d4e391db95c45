import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { buildApp } from '../../examples/fastify-booking/src/app.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
let app: ReturnType<typeof buildApp>;
beforeAll(async () => {
  db = await testDatabase('ex_fastify');
  const schemaSql = await readFile(new URL('../../examples/fastify-booking/schema.sql', import.meta.url), 'utf8');
  await db.pool.query(`SET search_path TO ${ident(db.schema)}; ${schemaSql}; RESET search_path`);
  app = buildApp({ pool: db.pool, schema: db.schema });
});
afterAll(async () => {
  await app?.close();
  await db?.close();
});

const count = async (table: string) => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.${table}`)).rows[0]!.n;

describe('examples/fastify-booking', () => {
  it('a booking commits its row and its hold together; a second booking of the slot leaves neither', async () => {
    const first = await app.inject({ method: 'POST', url: '/bookings', payload: { slot: 'mon-10', customerEmail: 'ana@example.com' } });
    expect(first.statusCode, first.body).toBe(201);
    const { booking, hold } = first.json() as { booking: { id: string }; hold: { id: string; status: string } };
    expect(hold.status).toBe('held');
    expect([await count('bookings'), await count('support_reservations')]).toEqual([1, 1]);

    const taken = await app.inject({ method: 'POST', url: '/bookings', payload: { slot: 'mon-10', customerEmail: 'bo@example.com' } });
    expect(taken.statusCode).toBe(409);
    expect([await count('bookings'), await count('support_reservations')]).toEqual([1, 1]);

    const confirmed = await app.inject({ method: 'POST', url: `/bookings/${booking.id}/confirm` });
    expect((confirmed.json() as { hold: { status: string } }).hold.status).toBe('confirmed');
  });
});
