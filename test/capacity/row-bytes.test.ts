import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEASURED } from '../../src/capacity/constants.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { measureRows, type RowMeasurement } from './measure.js';

let db: TestDatabase;
let measured: RowMeasurement;
beforeAll(async () => {
  db = await testDatabase('capacity_rows');
  measured = await measureRows(db.pool, db.schema, 2000);
  if (process.env.LEASEHOLD_CAPACITY_PRINT) process.stdout.write(JSON.stringify(measured, null, 2) + '\n');
});
afterAll(() => db.close());

/**
 * The byte constants the capacity model uses were measured by this
 * procedure. If a migration changes the rows enough to move them, this
 * fails: re-measure (LEASEHOLD_CAPACITY_PRINT=1 npx vitest run
 * test/capacity/row-bytes.test.ts) and update src/capacity/constants.ts.
 */
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
