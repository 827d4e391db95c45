import { readFile } from 'node:fs/promises';
import { createPool, migrate } from '../../../src/index.js';
import { buildApp, quoted } from './app.js';

// DATABASE_URL=postgres://... npm start   (then: curl -XPOST localhost:3000/bookings -H 'content-type: application/json' -d '{"slot":"mon-10","customerEmail":"ana@example.com"}')
const schema = process.env.LEASEHOLD_SCHEMA ?? 'leasehold';
const pool = createPool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
await migrate(pool, { schema });
await pool.query(`SET search_path TO ${quoted(schema)}; ${await readFile(new URL('../schema.sql', import.meta.url), 'utf8')}`);
const app = buildApp({ pool, schema });
await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
