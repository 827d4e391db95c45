import { describe, expect, it } from 'vitest';
import { EXPIRY_HOLDS_PER_SECOND, HOURS_PER_MONTH, MEASURED } from '../../src/capacity/constants.js';
import { burstReport, capacityModel, quotaReport, rowsReport, steadyReport } from '../../src/capacity/model.js';
import { deliveryCapacity, inFlightPerWorker, roundLease } from '../../src/capacity/rounds.js';
import { prices, workload } from '../helpers/capacity.js';

/**
 * The model's arithmetic on cases worked out by hand. Provider latency is
 * set where it matters: a delivery round takes latency + 4 ms (measured
 * overhead), so 200 ms gives 0.204 s rounds.
 */

const burst = (w: Parameters<typeof workload>[0]) => {
  const report = burstReport(workload(w));
  if (!report) throw new Error('expected a burst report');
  return report;
};

describe('worst burst', () => {
  it('all at once: drain = (burst holds - limiter burst) / rate, and the last email is that old', () => {
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 }, provider: { perSecond: 14, burst: 14 } });
    expect(b.drainSeconds).toBeCloseTo(4986 / 14, 9); // 356.14 s
    expect(b.lastSendAtSeconds).toBeCloseTo(4986 / 14, 9);
    expect(b.oldestEmailAgeSeconds).toBeCloseTo(4986 / 14, 9);
    expect(b.verdict).toBe('meets'); // under the default 900 s promise
    expect(b.pacedBy).toBe('limiter');
  });

  it('average demand keeps arriving and takes its share of the rate', () => {
    // 86,400 emails a day = 1/s; 11/s limit leaves 10/s for the burst.
    const b = burst({ volume: { emailsPerDay: 86_400 }, burst: { holds: 1010 }, provider: { perSecond: 11, burst: 10 } });
    expect(b.baselinePerSecond).toBe(1);
    expect(b.drainRatePerSecond).toBe(10);
    expect(b.drainSeconds).toBe(100);
  });

  it('spread over a window: the oldest age is the drain time less the window', () => {
    // 100 holds over 5 s (20/s) against 10/s burst 10: the 100th arrives at
    // t = 5 s and leaves when 10 + 10 t = 100, at t = 9 s: 4 s old.
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 100, windowSeconds: 5 }, provider: { perSecond: 10, burst: 10 } });
    expect(b.drainSeconds).toBe(9);
    expect(b.lastSendAtSeconds).toBe(9);
    expect(b.oldestEmailAgeSeconds).toBe(4);
  });

  it('arriving slower than the rate: nothing waits, the last leaves when it arrives', () => {
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 100, windowSeconds: 20 }, provider: { perSecond: 10, burst: 10 } });
    expect(b.lastSendAtSeconds).toBe(20);
    expect(b.oldestEmailAgeSeconds).toBe(0);
  });

  it('a burst no bigger than the bucket drains at once', () => {
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 8 }, provider: { perSecond: 1, burst: 10 } });
    expect(b.drainSeconds).toBe(0);
    expect(b.oldestEmailAgeSeconds).toBe(0);
  });

  it('past the promise: misses', () => {
    // (10,000 - 10) / 10 = 999 s > 900 s.
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 10_000 }, provider: { perSecond: 10, burst: 10 } });
    expect(b.oldestEmailAgeSeconds).toBe(999);
    expect(b.verdict).toBe('misses');
    const relaxed = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 10_000 }, provider: { perSecond: 10, burst: 10 }, promiseSeconds: 1000 });
    expect(relaxed.verdict).toBe('meets');
  });

  it('average demand at or above the rate: never drains', () => {
    const w = { volume: { emailsPerDay: 86_400 * 10 }, burst: { holds: 100 }, provider: { perSecond: 10, burst: 10 } };
    const b = burst(w);
    expect(b.drainSeconds).toBeNull();
    expect(b.oldestEmailAgeSeconds).toBeNull();
    expect(b.verdict).toBe('never-drains');
    expect(steadyReport(workload(w)).verdict).toBe('falls-behind');
  });

  it('too few workers for the rate: the workers pace the drain', () => {
    // 1 worker x min(50, 8) per round / 0.204 s = 39.2/s, under a 100/s limit.
    const w = workload({ volume: { emailsPerDay: 0 }, burst: { holds: 4010 }, provider: { perSecond: 100, burst: 10, latencyMs: 200 }, deployment: { workers: 1 } });
    expect(deliveryCapacity(w)).toBeCloseTo(8 / 0.204, 9);
    const b = burstReport(w)!;
    expect(b.pacedBy).toBe('workers');
    expect(b.drainSeconds).toBeCloseTo(4000 / (8 / 0.204), 9); // 102 s
  });

  it('batches: a round leases a batch per free slot, at most the larger of its size and one batch (delivery/legs.ts)', () => {
    // Defaults: min(batch 50, concurrency 8) = 8 slots a round, one round per worker.
    const w = workload({ volume: { emailsPerDay: 0 }, provider: { latencyMs: 200 }, deployment: { workers: 1 } });
    expect(roundLease(w)).toEqual({ emails: 8, requests: 8 });
    // A batch of 100: max(8, 100) = 100 emails in one request, so one request in flight.
    expect(roundLease(w, 100)).toEqual({ emails: 100, requests: 1 });
    expect(inFlightPerWorker(w, 100)).toEqual({ requests: 1, emails: 100 });
    expect(deliveryCapacity(w, 100)).toBeCloseTo(100 / 0.204, 9);
    // A batch of 3 under the round size: 8 emails in ceil(8 / 3) = 3 requests.
    expect(roundLease(w, 3)).toEqual({ emails: 8, requests: 3 });
    expect(deliveryCapacity(w, 3)).toBeCloseTo(8 / 0.204, 9);
    // Rounds of 8 overlapping up to concurrency 32 (4 of them): 4 requests of 100 in flight.
    const wide = workload({ volume: { emailsPerDay: 0 }, provider: { latencyMs: 200 }, deployment: { workers: 1, deliveryBatch: 8, deliveryConcurrency: 32 } });
    expect(inFlightPerWorker(wide, 100)).toEqual({ requests: 4, emails: 400 });
    expect(inFlightPerWorker(wide)).toEqual({ requests: 32, emails: 32 });
    expect(deliveryCapacity(wide, 100)).toBeCloseTo(400 / 0.204, 9);
  });

  it('the expiry lane takes the burst at the measured throughput', () => {
    const b = burst({ volume: { emailsPerDay: 0 }, burst: { holds: 77_470 } });
    expect(b.expiryCatchUpSeconds).toBeCloseTo(77_470 / EXPIRY_HOLDS_PER_SECOND, 9); // 2 s
    expect(b.expiryVerdict).toBe('meets');
  });

  it('deadlines: which kinds the worst burst makes miss theirs, and how many of its emails', () => {
    // 1,010 at once, burst 10, 10/s: the k-th email (k > 10) leaves at (k - 10) / 10 s.
    const w = { volume: { emailsPerDay: 0 }, burst: { holds: 1010 }, provider: { perSecond: 10, burst: 10 }, deployment: { workers: 50 } };
    const b = burst({ ...w, deadlines: { noticeSeconds: 60, reminderSeconds: 200 } });
    expect(b.drainSeconds).toBeCloseTo(100, 9);
    // Waits over 60 s: k - 10 > 600, so the emails from k = 611 on: 400 of them.
    expect(b.deadlines).toEqual([
      { kind: 'reservation-expired', deadlineSeconds: 60, verdict: 'misses', missedEmails: 400 },
      { kind: 'reservation-reminder', deadlineSeconds: 200, verdict: 'meets', missedEmails: 0 },
    ]);
    // Spread over a 90 s window the same burst waits at most 10 s: every deadline met.
    expect(burst({ ...w, burst: { holds: 1010, windowSeconds: 90 }, deadlines: { noticeSeconds: 60 } }).deadlines).toEqual([
      { kind: 'reservation-expired', deadlineSeconds: 60, verdict: 'meets', missedEmails: 0 },
    ]);
    // No deadlines configured: nothing to report.
    expect(burst(w).deadlines).toEqual([]);
  });

  it('no burst given: no burst report', () => {
    expect(burstReport(workload({ volume: { emailsPerDay: 10 } }))).toBeNull();
  });
});

describe('daily quota', () => {
  it('within and over', () => {
    expect(quotaReport(workload({ volume: { emailsPerDay: 40_000 }, provider: { dailyQuota: 50_000 } }))).toMatchObject({ share: 0.8, verdict: 'within' });
    const over = quotaReport(workload({ volume: { emailsPerDay: 60_000 }, provider: { dailyQuota: 50_000 } }));
    expect(over).toMatchObject({ share: 1.2, verdict: 'exceeds' });
    expect(over.note).toMatch(/10000 a day/);
    expect(quotaReport(workload({ volume: { emailsPerDay: 1 } })).verdict).toBe('no-quota');
  });
});

describe('rows and storage', () => {
  it('rows per day follow the volume, bytes are rows x measured size x bloat, kept for the retention', () => {
    const rows = rowsReport(
      workload({ volume: { emailsPerDay: 1000, expiredShare: 0.5 }, deployment: { attemptsPerEmail: 1.1 }, retentionDays: 30, holdWindowSeconds: 1200 }),
    );
    expect(rows.perDay).toMatchObject({ holds: 2000, intents: 1000 });
    expect(rows.perDay.attempts).toBeCloseTo(1100, 9);
    const b = MEASURED.bytesPerRow;
    const perDay = (2000 * b.hold + 1000 * b.intent + 1100 * b.attempt) * 1.3;
    expect(rows.perDay.bytes).toBeCloseTo(perDay, 6);
    expect(rows.atRetention).toMatchObject({ days: 30, holds: 60_000, intents: 30_000 });
    expect(rows.atRetention.bytes).toBeCloseTo(perDay * 30, 4);
    // 2,000 holds a day, each held 20 minutes: 2000 / 86400 * 1200 = 27.8 held at once.
    expect(rows.liveHolds).toBeCloseTo((2000 / 86_400) * 1200, 9);
  });

  it('with the constants measured after migration 0034: 20,000 emails a day at 40% expiring is about 60.7 MiB a day', () => {
    const rows = rowsReport(workload({ volume: { emailsPerDay: 20_000, expiredShare: 0.4 } }));
    // (50,000 x 422 + 20,000 x 975 + 20,000 x 422) x 1.3 = 63,752,000 B.
    expect(rows.perDay.bytes).toBe((50_000 * 422 + 20_000 * 975 + 20_000 * 422) * 1.3);
  });
});

describe('monthly cost', () => {
  const table = prices();
  const byId = (report: ReturnType<typeof capacityModel>, id: string) => report.costs.find((d) => d.id === id)!;
  const lineOf = (report: ReturnType<typeof capacityModel>, id: string, item: string) => byId(report, id).lines.find((l) => l.item === item)!;

  it('three designs, every line with an assumption, totals are the sum of their lines', () => {
    const report = capacityModel(workload({ volume: { emailsPerDay: 20_000, expiredShare: 0.4 }, provider: { name: 'ses' } }), table);
    expect(report.costs.map((d) => d.id)).toEqual(['leasehold', 'timer-per-hold', 'managed-queue']);
    for (const design of report.costs) {
      expect(design.lines.length).toBeGreaterThan(5);
      for (const line of design.lines) expect(line.assumption.length).toBeGreaterThan(10);
      expect(design.monthlyUsd).toBeCloseTo(design.lines.reduce((sum, l) => sum + l.usd, 0), 9);
      for (const item of ['scheduler invocations', 'queue operations', 'logs ingested', 'logs retained']) {
        expect(design.lines.some((l) => l.item === item)).toBe(true);
      }
      expect(design.lines.some((l) => l.item.startsWith('email'))).toBe(true);
    }
  });

  it('this design: an instance all month, storage at its minimum, one line per worker-hour', () => {
    const report = capacityModel(workload({ volume: { emailsPerDay: 1000 }, deployment: { workers: 2 } }), table);
    expect(lineOf(report, 'leasehold', 'database instance').usd).toBeCloseTo(HOURS_PER_MONTH * table.prices.postgres_instance_hour.usd, 9);
    const storage = lineOf(report, 'leasehold', 'database storage');
    expect(storage.quantity).toBe(table.prices.postgres_storage_gb_month.minimumQuantity);
    expect(lineOf(report, 'leasehold', 'workers').quantity).toBe(2 * HOURS_PER_MONTH);
    expect(lineOf(report, 'leasehold', 'scheduler invocations').usd).toBe(0);
  });

  it('one timer per hold fires once per expiring hold; the managed design scans once a minute', () => {
    const report = capacityModel(workload({ volume: { emailsPerDay: 10_000, expiredShare: 0.5 } }), table);
    const emailsPerMonth = 10_000 * (HOURS_PER_MONTH / 24);
    expect(lineOf(report, 'timer-per-hold', 'scheduler invocations').quantity).toBeCloseTo(emailsPerMonth, 6);
    expect(lineOf(report, 'timer-per-hold', 'hold state writes').quantity).toBeCloseTo(emailsPerMonth * 2 * 2, 6); // 2 holds per email, 2 writes each
    expect(lineOf(report, 'managed-queue', 'scheduler invocations').quantity).toBe((HOURS_PER_MONTH * 3600) / 60); // 43,800
    expect(lineOf(report, 'managed-queue', 'queue polling while idle').quantity).toBe((5 * HOURS_PER_MONTH * 3600) / 20);
  });

  it('email plans: the monthly fee covers the included emails, the rest are priced per 1,000', () => {
    // 100,000 a month on a 50,000-included plan.
    const perDay = 100_000 / (HOURS_PER_MONTH / 24);
    const report = capacityModel(workload({ volume: { emailsPerDay: perDay }, provider: { name: 'resend' } }), table);
    const plan = table.email.resend;
    const expected = plan.monthlyUsd + ((100_000 - plan.includedPerMonth) * plan.usdPerThousandOver) / 1000;
    for (const design of report.costs) expect(design.lines.find((l) => l.price === 'email')!.usd).toBeCloseTo(expected, 6);
  });

  it('free tiers are off by default and, when on, are spent once per price across lines', () => {
    const w = { volume: { emailsPerDay: 10_000 } };
    const paid = capacityModel(workload(w), table);
    expect(lineOf(paid, 'managed-queue', 'scanner requests').usd).toBeGreaterThan(0);
    const free = capacityModel(workload({ ...w, freeTiers: true }), table);
    // 43,800 scanner requests fit in the 1M free Lambda requests; the senders get what is left.
    expect(lineOf(free, 'managed-queue', 'scanner requests').usd).toBe(0);
    const senders = lineOf(free, 'managed-queue', 'sender requests');
    const freeLeft = table.prices.lambda_request.freePerMonth! - 43_800;
    expect(senders.usd).toBeCloseTo(Math.max(0, senders.quantity - freeLeft) * table.prices.lambda_request.usd, 9);
    expect(lineOf(free, 'timer-per-hold', 'scheduler invocations').usd).toBe(0); // under 14M
  });
});

describe('what the model says it cannot know', () => {
  it('names the provider limits, egress and human cost', () => {
    const report = capacityModel(workload({ volume: { emailsPerDay: 10 } }), prices());
    const text = report.unknowns.join('\n');
    expect(text).toMatch(/limits/);
    expect(text).toMatch(/egress/);
    expect(text).toMatch(/Human cost/);
    expect(text).toMatch(/sandbox/); // the default provider has no email price
  });
});
