import { describe, expect, it } from 'vitest';
import { EXPIRY_HOLDS_PER_SECOND } from '../../src/capacity/constants.js';
import { burstReport } from '../../src/capacity/model.js';
import { statementsReport } from '../../src/capacity/statements.js';
import { workload } from '../helpers/capacity.js';

/**
 * Statements per second, counted by hand from the lanes. Provider latency
 * is set where it matters: a delivery round takes latency + 4 ms (measured
 * overhead), so 200 ms gives 0.204 s rounds.
 */

describe('statements per second', () => {
  it('idle: each worker ticks the expiry lane once an interval (1 statement, its look-ahead inside) and polls delivery once a second (the taking lease, 1)', () => {
    const s = statementsReport(workload({ volume: { emailsPerDay: 0 }, deployment: { workers: 1 } }), null);
    expect(s.average).toEqual({ expiry: 1, delivery: 1, application: 0, total: 2 });
    expect(s.burst).toBeNull();
  });

  it('0.5 emails/s on two workers: hand-counted from the lanes', () => {
    const s = statementsReport(workload({ volume: { emailsPerDay: 43_200 }, deployment: { workers: 2 } }), null);
    // expiry: 2 workers x max(1/s interval, min(0.5, 333)) ticks x 1 statement = 2
    expect(s.average.expiry).toBe(2);
    // delivery: 0.5 wakes/s x (send round 3: the lease taking its permits, the
    //   message stored, the record + the other worker's empty round 1)
    //   + 2 workers x (1 - 0.5) polls/s x 1 = 2 + 1
    expect(s.average.delivery).toBe(3);
    // application: one createHold per hold, every hold expires (no settles)
    expect(s.average.application).toBe(0.5);
    expect(s.average.total).toBe(5.5);
  });

  it('confirmed and cancelled holds add one statement each', () => {
    const s = statementsReport(workload({ volume: { emailsPerDay: 43_200, expiredShare: 0.5 }, deployment: { workers: 1 } }), null);
    expect(s.average.application).toBe(1 + 0.5); // 1 hold/s created, 0.5/s settled
  });

  it('a burst at once: full expiry batches at the measured throughput; delivery rounds carry the permits of one provider call', () => {
    const w = workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 }, provider: { perSecond: 14, burst: 14, latencyMs: 200 }, deployment: { workers: 2 } });
    const s = statementsReport(w, burstReport(w));
    // 38,735 / 500 full ticks a second x 1 statement
    expect(s.burst!.expiry).toBeCloseTo(EXPIRY_HOLDS_PER_SECOND / 500, 9);
    // 14/s x 0.204 s = 2.856 permits per round time, over 2 workers: 1.428 per round;
    // 14 / 1.428 = 9.80 rounds/s x 3 statements; no refusals (permits outnumber workers)
    expect(s.burst!.delivery).toBeCloseTo((14 / ((14 * 0.204) / 2)) * 3, 9);
    expect(s.burst!.seconds).toBeCloseTo(4986 / 14, 9);
  });

  it('a burst in batches: rounds count requests, a request carrying a batch', () => {
    // 200 emails/s in batches of 100 = 2 requests/s; 2 x 0.204 = 0.408 in flight < 2 workers:
    // rounds of one request, 2 a second, each a separate take (a permit carries a batch) and the
    // 3 statements of a round, plus 2 x (2 - 0.408) refused takes.
    const w = workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 }, provider: { perSecond: 200, burst: 200, latencyMs: 200 }, deployment: { workers: 2 } });
    const s = statementsReport(w, burstReport(w, 100), 100);
    expect(s.burst!.delivery).toBeCloseTo(2 * (1 + 3) + 2 * (2 - 0.408), 9);
    expect(s.assumptions.join('\n')).toContain('an account sending batches takes them in a statement before it');
    expect(s.assumptions.join('\n')).toContain('at most max(8, 100) = 100 emails in 1 request(s), with rounds side by side up to 1 requests in flight');
  });

  it('more workers than permits: idle workers are refused', () => {
    const w = workload({ volume: { emailsPerDay: 0 }, burst: { holds: 1000 }, provider: { perSecond: 5, burst: 5, latencyMs: 200 }, deployment: { workers: 4 } });
    const s = statementsReport(w, burstReport(w));
    // 5/s x 0.204 s = 1.02 in flight < 4 workers: rounds of 1 (5/s x 3) plus 5 x (4 - 1.02) refused takes
    expect(s.burst!.delivery).toBeCloseTo(5 * 3 + 5 * (4 - 1.02), 9);
  });
});
