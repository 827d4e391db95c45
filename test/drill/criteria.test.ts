import { describe, expect, it } from 'vitest';
import {
  drainAllowanceSeconds,
  evaluateDrill,
  maxSendsInWindow,
  predictedDrainSeconds,
  type CriterionName,
  type DrillHold,
  type DrillObservations,
  type DrillSample,
} from '../../src/drill/criteria.js';

/**
 * The drill's verdict as a pure function: one run that passes, and for each
 * criterion a run that breaks exactly it. Times are seconds since the start.
 * 12 holds due at t=10.2, paused until t=20 (their age then, 9.5 s, past
 * the 8 s email promise); 5/s with a burst of 2 drains
 * them in (12 - 2) / 5 = 2 s, allowed 2 * 1.1 + 3 = 5.2 s.
 */

const RESUME = 20;

function holds(): DrillHold[] {
  return Array.from({ length: 12 }, (_, i) => {
    // Two at once (the burst), then one every 0.2 s: 5/s.
    const startedAt = i < 2 ? RESUME + 0.3 : RESUME + 0.3 + (i - 1) * 0.2;
    return { id: `drill-${i}`, expiresAt: 10.2, expiredAt: 10.5, acceptedAt: startedAt + 0.05, attempts: [{ startedAt, outcome: 'accepted' }] };
  });
}

function samples(): DrillSample[] {
  return Array.from({ length: 30 }, (_, k) => {
    const t = k + 1;
    const paused = t < RESUME;
    const backlog = t < 11 ? 0 : paused ? 12 : Math.max(0, 12 - 5 * (t - RESUME));
    return { t, paused, backlog, oldestPendingAgeS: backlog > 0 ? t - 10.5 : 0, dueHolds: 0, oldestDueAgeS: 0 };
  });
}

function passing(): DrillObservations {
  return {
    policy: { perSecond: 5, burst: 2 },
    promises: { expiryPromiseS: 5, emailPromiseS: 8 },
    holdWindowS: 10,
    pausedAt: 0.2,
    resumedAt: RESUME,
    backlogAtResume: 12,
    samples: samples(),
    holds: holds(),
  };
}

const failed = (o: DrillObservations): CriterionName[] =>
  evaluateDrill(o)
    .criteria.filter((c) => !c.passed)
    .map((c) => c.name);

describe('drill criteria', () => {
  it('a drill that kept every promise passes every criterion', () => {
    const verdict = evaluateDrill(passing());
    expect(verdict.criteria.map((c) => [c.name, c.passed])).toEqual([
      ['expiry-on-time', true],
      ['silent-while-paused', true],
      ['no-burst', true],
      ['recovered', true],
      ['all-delivered', true],
    ]);
    expect(verdict.passed).toBe(true);
    expect(verdict.predictedDrainS).toBe(2);
    expect(verdict.allowedDrainS).toBeCloseTo(5.2);
    expect(verdict.maxSendsPerWindow).toBe(6);
    expect(verdict.sendLimitPerWindow).toBe(7);
    expect(verdict.recoveredAfterS).toBe(3);
  });

  it('a hold that never expired fails expiry-on-time', () => {
    const o = passing();
    o.holds[3] = { ...o.holds[3]!, expiredAt: null, acceptedAt: null, attempts: [] };
    expect(failed(o)).toEqual(['expiry-on-time', 'all-delivered']);
    expect(evaluateDrill(o).criteria[0]!.observed).toContain('1 of 12 holds never expired');
  });

  it('a hold expired later than the expiry promise fails expiry-on-time', () => {
    const o = passing();
    o.holds[0]!.expiredAt = o.holds[0]!.expiresAt + 5.5;
    expect(failed(o)).toEqual(['expiry-on-time']);
  });

  it('a due hold older than the expiry promise while paused fails expiry-on-time', () => {
    const o = passing();
    o.samples[12]!.oldestDueAgeS = 6;
    expect(failed(o)).toEqual(['expiry-on-time']);
    // The same age after the resume is not the paused phase's business.
    const later = passing();
    later.samples[25]!.oldestDueAgeS = 6;
    expect(failed(later)).toEqual([]);
  });

  it('an attempt before the resume fails silent-while-paused', () => {
    const o = passing();
    o.holds[0]!.attempts.unshift({ startedAt: 15, outcome: 'failed' });
    expect(failed(o)).toEqual(['silent-while-paused']);
  });

  it('burst + perSecond sends in one second pass, one more fails no-burst', () => {
    const at = (times: number[]) => {
      const o = passing();
      o.holds = times.map((startedAt, i) => ({ ...o.holds[0]!, id: `b-${i}`, acceptedAt: startedAt, attempts: [{ startedAt, outcome: 'accepted' }] }));
      o.backlogAtResume = times.length;
      return o;
    };
    const seven = Array.from({ length: 7 }, (_, i) => RESUME + 1 + i * 0.14);
    expect(failed(at(seven))).toEqual([]);
    const eight = Array.from({ length: 8 }, (_, i) => RESUME + 1 + i * 0.12);
    expect(failed(at(eight))).toEqual(['no-burst']);
    expect(evaluateDrill(at(eight)).criteria[2]!.observed).toBe('at most 8 sends in one 1 s window (from t=21.0 s)');
  });

  it('rate-limited and failed attempts count against the limit too', () => {
    const o = passing();
    for (const h of o.holds.slice(0, 2)) h.attempts.unshift({ startedAt: RESUME + 0.31, outcome: 'rate_limited' });
    expect(failed(o)).toEqual(['no-burst']);
  });

  it('an oldest age still past the promise after the allowed drain fails recovered', () => {
    const o = passing();
    for (const s of o.samples) if (s.t >= RESUME) s.oldestPendingAgeS = s.t < 26 ? 9 : 0;
    expect(failed(o)).toEqual(['recovered']);
    expect(evaluateDrill(o).recoveredAfterS).toBe(6);
  });

  it('an oldest age that never came back fails recovered', () => {
    const o = passing();
    for (const s of o.samples) if (s.t >= RESUME) s.oldestPendingAgeS = 12;
    expect(failed(o)).toEqual(['recovered']);
    expect(evaluateDrill(o).criteria[3]!.observed).toBe('still 12.0 s old at the last sample');
  });

  it('an email never accepted, or accepted too late, fails all-delivered', () => {
    const lost = passing();
    lost.holds[5]!.acceptedAt = null;
    expect(failed(lost)).toEqual(['all-delivered']);
    const late = passing();
    late.holds[5]!.acceptedAt = RESUME + 6;
    expect(failed(late)).toEqual(['all-delivered']);
  });

  it('a drill that created no holds passes nothing it cannot show', () => {
    const o = passing();
    o.holds = [];
    expect(failed(o)).toEqual(['expiry-on-time', 'all-delivered']);
  });
});

describe('drill arithmetic', () => {
  it('counts sends in half-open one-second windows', () => {
    expect(maxSendsInWindow([], 1)).toEqual({ count: 0, from: null });
    expect(maxSendsInWindow([0, 1, 2], 1).count).toBe(1);
    expect(maxSendsInWindow([0, 0.5, 0.999, 1.0, 1.2], 1)).toEqual({ count: 4, from: 0.5 });
    expect(maxSendsInWindow([0, 0.4, 0.999, 1.0], 1)).toEqual({ count: 3, from: 0 });
    expect(maxSendsInWindow([3, 1.2, 1.1, 1.0, 0.999], 1)).toEqual({ count: 4, from: 0.999 });
  });

  it('predicts the drain: the burst at once, the rest at the rate', () => {
    expect(predictedDrainSeconds(50, { perSecond: 5, burst: 5 })).toBe(9);
    expect(predictedDrainSeconds(3, { perSecond: 5, burst: 5 })).toBe(0);
    expect(drainAllowanceSeconds(0)).toBe(3);
  });
});
