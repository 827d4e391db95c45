import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaPg } from '@prisma/adapter-pg';
import * as leasehold from '../../src/integrations/prisma.js';
import { describeOrmHolds } from '../helpers/orm-holds.js';
import { importGenerated, prismaGenerate } from '../helpers/prisma.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const output = path.resolve(here, '../../node_modules/.cache/leasehold-prisma/integrations');

/** What this test uses of the generated client (its types exist only after generate). */
interface Tx {
  booking: { create(args: { data: { id: string; holdId: string } }): Promise<unknown> };
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}
interface Client extends Tx {
  $transaction<R>(work: (tx: Tx) => Promise<R>): Promise<R>;
  $disconnect(): Promise<void>;
}

describeOrmHolds<Tx>('Prisma', async (db) => {
  await prismaGenerate(path.join(here, 'prisma/schema.prisma'));
  const { PrismaClient } = await importGenerated<{ PrismaClient: new (options: { adapter: PrismaPg }) => Client }>(output);
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 2 }, { schema: db.schema }) });
  return {
    transaction: (work) => prisma.$transaction(work),
    insertBooking: async (tx, b) => void (await tx.booking.create({ data: b })),
    ...leasehold,
    close: () => prisma.$disconnect(),
  };
});
