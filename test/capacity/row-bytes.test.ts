import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MEASURED } from '../../src/capacity/constants.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { measureRows, type RowMeasurement } from '../helpers/capacity-measure.js';

/**
 * The byte constants the capacity model uses were measured by this
 * procedure. If a migration changes the rows enough to move them, this
 * fails: re-measure (LEASEHOLD_CAPACITY_PRINT=1 npx vitest run
 * test/capacity/row-bytes.test.ts) and update src/capacity/constants.ts.
 *
 * It runs in a database of its own: VACUUM FULL keeps dead row versions
 * that any open transaction in the same database might still see, and the
 * other test files' transactions would otherwise be counted as row size
 * (seen: intent 868 B instead of 680 during a full `npm test`; with a
 * snapshot held open on purpose, 1,466 B in a shared database and 713 B in
 * its own). Needs CREATEDB on an external LEASEHOLD_TEST_DATABASE_URL.
 */

const SCHEMA = 'leasehold';
let admin: pg.Pool;
let pool: pg.Pool;
let database: string;
let measured: RowMeasurement;

beforeAll(async () => {
  const url = inject('databaseUrl');
  admin = createPool({ connectionString: url, max: 1 });
  database = `capacity_rows_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const own = new URL(url);
  own.pathname = `/${database}`;
  pool = createPool({ connectionString: own.toString(), max: 20 });
  await migrate(pool, SCHEMA);
  measured = await measureRows(pool, SCHEMA, 2000);
  if (process.env.LEASEHOLD_CAPACITY_PRINT) process.stdout.write(JSON.stringify(measured, null, 2) + '\n');
});

afterAll(async () => {
  await pool?.end();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  await admin.end();
});

describe('measured row sizes still describe the schema', () => {
  it.each(['hold', 'intent', 'attempt'] as const)('%s bytes per row within a quarter of the constant', (row) => {
    const constant = MEASURED.bytesPerRow[row];
    expect(measured.bytesPerRow[row]).toBeGreaterThan(constant * 0.75);
    expect(measured.bytesPerRow[row]).toBeLessThan(constant * 1.25);
  });

  it.each(['logBytesPerExpiredHold', 'logBytesPerApiLine'] as const)('%s within a quarter of the constant', (key) => {
    expect(measured[key]).toBeGreaterThan(MEASURED[key] * 0.75);
    expect(measured[key]).toBeLessThan(MEASURED[key] * 1.25);
  });
});
