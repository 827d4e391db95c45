import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { createPool, migrate } from '../../../src/index.js';
import { PrismaClient } from '../generated/client.js';
import { book } from './book.js';

// npm run generate && DATABASE_URL=postgres://... npm start
const schema = process.env.LEASEHOLD_SCHEMA ?? 'leasehold';
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const pool = createPool({ connectionString: url });
await migrate(pool, { schema });
// The bookings table from SQL: `prisma migrate` needs Prisma's schema engine (see README).
await pool.query(`SET search_path TO "${schema.replace(/"/g, '""')}"; ${await readFile(new URL('../schema.sql', import.meta.url), 'utf8')}`);
await pool.end();
const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }, { schema }) });
console.log(await book(prisma, { slot: `slot-${Date.now()}`, customerEmail: 'ana@example.com' }, schema));
await prisma.$disconnect();
