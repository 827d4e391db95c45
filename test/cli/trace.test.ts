import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimeline } from '../../src/cli/commands/trace.js';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { createHold } from '../../src/holds/holds.js';
import { holdTimeline } from '../../src/read/timeline.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * What `trace` prints, formatted in process from the timeline the command
 * reads (the command itself runs in test/cli/ops.test.ts, as a child process).
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_trace');
});
afterAll(() => db.close());

describe('trace and the tenant', () => {
  it("names the hold's tenant on a line of its own, and its intent carries the same tenant", async () => {
    await createHold(db.pool, { id: 'tr-acme', customerEmail: 'a@example.com', ttlSeconds: 600, tenant: 'acme' }, { schema: db.schema });
    await db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = 'tr-acme'`);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    const timeline = await holdTimeline(db.pool, db.schema, 'tr-acme');
    expect(timeline.hold.tenant).toBe('acme');
    expect(timeline.intent?.tenant).toBe('acme');
    const lines = formatTimeline(timeline);
    expect(lines[0]).toBe('hold tr-acme: expired');
    expect(lines.filter((line) => /^\s+tenant\s+acme$/.test(line))).toHaveLength(1);
  });

  it('prints no tenant line for the empty tenant', async () => {
    await createHold(db.pool, { id: 'tr-plain', customerEmail: 'a@example.com', ttlSeconds: 600 }, { schema: db.schema });
    const timeline = await holdTimeline(db.pool, db.schema, 'tr-plain');
    expect(timeline.hold.tenant).toBe('');
    expect(formatTimeline(timeline).some((line) => /^\s+tenant\b/.test(line))).toBe(false);
  });
});
