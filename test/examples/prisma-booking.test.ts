import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import type { Hold } from '../../src/model/hold-states.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { importGenerated, prismaGenerate } from '../helpers/prisma.js';

/**
 * examples/prisma-booking against real PostgreSQL. Its client is generated
 * first (test/helpers/prisma.ts says why that works without Prisma's binary
 * host, and why `prisma migrate` does not); the example's modules are
 * imported at run time, since they import the generated client.
 */
const example = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/prisma-booking');

interface Prisma {
  $disconnect(): Promise<void>;
}
type Book = (prisma: Prisma, input: { slot: string; customerEmail: string }, schema: string) => Promise<{ booking: { id: string; holdId: string }; hold: Hold }>;
type Cancel = (prisma: Prisma, bookingId: string, schema: string) => Promise<Hold>;

let db: TestDatabase;
let prisma: Prisma;
let book: Book;
let cancel: Cancel;
beforeAll(async () => {
  db = await testDatabase('ex_prisma');
  await db.pool.query(`SET search_path TO ${ident(db.schema)}; ${await readFile(path.join(example, 'schema.sql'), 'utf8')}; RESET search_path`);
  await prismaGenerate(path.join(example, 'prisma/schema.prisma'));
  const { PrismaClient } = await importGenerated<{ PrismaClient: new (options: { adapter: PrismaPg }) => Prisma }>(path.join(example, 'generated'));
  ({ book, cancel } = (await import(path.join(example, 'src/book.ts'))) as { book: Book; cancel: Cancel });
  prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 2 }, { schema: db.schema }) });
});
afterAll(async () => {
  await prisma?.$disconnect();
  await db?.close();
});

const count = async (table: string) => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(db.schema)}.${table}`)).rows[0]!.n;

describe('examples/prisma-booking', () => {
  it('books a slot and its hold together; a second booking of the slot leaves neither; cancelling cancels the hold', async () => {
    const { booking, hold } = await book(prisma, { slot: 'tue-9', customerEmail: 'ana@example.com' }, db.schema);
    expect(hold).toMatchObject({ id: booking.holdId, status: 'held', metadata: { slot: 'tue-9' } });
    await expect(book(prisma, { slot: 'tue-9', customerEmail: 'bo@example.com' }, db.schema)).rejects.toThrow(/Unique constraint/);
    expect([await count('bookings'), await count('support_reservations')]).toEqual([1, 1]);
    expect((await cancel(prisma, booking.id, db.schema)).status).toBe('cancelled');
    expect(await count('bookings')).toBe(0);
  });
});
