import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { silentLogger } from '../../src/observability/logger.js';
import { LaneSampler } from '../../src/read/lane-sampler.js';
import { readStatus } from '../../src/read/status.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { LANE_SAMPLE_SLOTS, LANE_SAMPLES_SPAN_S, laneSamplesRecord, laneSamplesSince } from '../../src/tables/lane-samples.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDueHolds } from '../helpers/holds.js';

/**
 * lane_samples is a ring of 360 slots of 10 s: one hour, overwritten in
 * place, never pruned. Times here are moved with explicit clocks, far from
 * the database's now, so no test waits or depends on when it runs.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('lane_samples');
});
afterAll(() => db.close());

const s = () => ident(db.schema);
const rowCount = async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s()}.lane_samples`)).rows[0]!.n;
// The middle of a 10 s slot, in 2026.
const START = Date.parse('2026-03-01T12:00:05Z');
const sample = (backlog: number) => ({ backlog, dueHolds: backlog % 7, oldestPendingAgeSeconds: backlog / 4, oldestDueAgeSeconds: backlog / 8 });

describe('lane_samples', () => {
  it('keeps one sample per 10 s, wraps after an hour, and answers only the window asked', async () => {
    await db.pool.query(`TRUNCATE ${s()}.lane_samples`);
    // An hour and a minute of samples, one every 10 s: the ring holds the last hour.
    const total = LANE_SAMPLE_SLOTS + 6;
    for (let i = 0; i < total; i++) await laneSamplesRecord(db.pool, db.schema, sample(i), new Date(START + i * 10_000));
    expect(await rowCount()).toBe(LANE_SAMPLE_SLOTS);
    const now = new Date(START + (total - 1) * 10_000 + 2_000);
    const hour = await laneSamplesSince(db.pool, db.schema, LANE_SAMPLES_SPAN_S, now);
    expect(hour.now).toBeCloseTo(now.getTime() / 1000, 3);
    // Oldest first; the first six were overwritten by the six an hour later.
    expect(hour.samples.map((x) => x.backlog)).toEqual(Array.from({ length: LANE_SAMPLE_SLOTS }, (_, i) => i + 6));
    expect(hour.samples[0]).toEqual({ t: (START + 60_000) / 1000, ...sample(6) });
    expect(hour.samples.at(-1)).toEqual({ t: (START + (total - 1) * 10_000) / 1000, ...sample(total - 1) });
    // A minute back: the last six.
    const minute = await laneSamplesSince(db.pool, db.schema, 60, now);
    expect(minute.samples.map((x) => x.backlog)).toEqual([360, 361, 362, 363, 364, 365]);
    // Nothing after `now` (a clock behind the one that sampled), nothing from before the hour.
    expect((await laneSamplesSince(db.pool, db.schema, 60, new Date(START + 30_000))).samples).toEqual([]);
    expect((await laneSamplesSince(db.pool, db.schema, 3600, new Date(now.getTime() + 7200_000))).samples).toEqual([]);
  });

  it('keeps the latest sample of a slot: a late write of an earlier reading changes nothing', async () => {
    await db.pool.query(`TRUNCATE ${s()}.lane_samples`);
    await laneSamplesRecord(db.pool, db.schema, sample(5), new Date(START + 3_000));
    await laneSamplesRecord(db.pool, db.schema, sample(4), new Date(START + 1_000));
    const { samples } = await laneSamplesSince(db.pool, db.schema, 60, new Date(START + 10_000));
    expect(samples).toEqual([{ t: (START + 3_000) / 1000, ...sample(5) }]);
    // The same slot an hour on replaces it.
    await laneSamplesRecord(db.pool, db.schema, sample(9), new Date(START + 3_600_000));
    expect(await rowCount()).toBe(1);
  });

  it('refuses a window it cannot answer', async () => {
    for (const seconds of [0, LANE_SAMPLES_SPAN_S + 1, 1.5]) {
      await expect(laneSamplesSince(db.pool, db.schema, seconds)).rejects.toThrow(/seconds must be an integer from 1 to 3600/);
    }
  });

  it('the sampler writes what status computes, in the slot of its clock', async () => {
    await db.pool.query(`TRUNCATE ${s()}.lane_samples`);
    // Three holds due and expired: three emails pending; two more holds due, not yet expired.
    await insertDueHolds(db.pool, db.schema, 3, { prefix: 'sampled', pastSeconds: 40 });
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    await insertDueHolds(db.pool, db.schema, 2, { prefix: 'due', pastSeconds: 25 });
    const clock = new ManualClock(START);
    const sampler = new LaneSampler({ db: db.pool, schema: db.schema, logger: silentLogger, clock });
    const written = await sampler.sampleOnce();
    const status = await readStatus(db.pool, db.schema, { expiryPromiseS: 60, emailPromiseS: 900 });
    expect([written.backlog, written.dueHolds]).toEqual([3, 2]);
    expect([status.stats.delivery.backlog, status.stats.expiry.dueHolds]).toEqual([3, 2]);
    // Ages are read a moment apart: equal to well under a second.
    expect(written.oldestPendingAgeSeconds).toBeGreaterThan(0);
    expect(written.oldestPendingAgeSeconds).toBeCloseTo(status.stats.delivery.oldestPendingAgeSeconds, 0);
    expect(written.oldestDueAgeSeconds).toBeGreaterThanOrEqual(25);
    expect(written.oldestDueAgeSeconds).toBeCloseTo(status.stats.expiry.oldestDueAgeSeconds, 0);
    const { samples } = await laneSamplesSince(db.pool, db.schema, 60, new Date(START + 1_000));
    expect(samples).toEqual([{ t: START / 1000, ...written }]);

    // Ten seconds on, the next slot; twice in one slot, one row.
    clock.advance(10_000);
    await sampler.sampleOnce();
    await sampler.sampleOnce();
    expect(await rowCount()).toBe(2);
  });

  it('the sampler loop samples at once when started and stops cleanly', async () => {
    await db.pool.query(`TRUNCATE ${s()}.lane_samples`);
    const sampler = new LaneSampler({ db: db.pool, schema: db.schema, logger: silentLogger, clock: new ManualClock(START) });
    sampler.start();
    await expect.poll(rowCount, { timeout: 5000 }).toBe(1);
    await sampler.stop();
    await sampler.stop();
    expect(await rowCount()).toBe(1);
  });
});
