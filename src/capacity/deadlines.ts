import type { Workload } from './input.js';

/**
 * Which kinds of email the worst burst would make miss their deadline
 * (migration 0024: a reminder's is its hold's expiry, notices get
 * LEASEHOLD_NOTICE_DEADLINE_S), and how many of the burst's emails: pure
 * arithmetic over the burst's drain (model.ts burstReport).
 */
export interface DeadlineRisk {
  kind: 'reservation-expired' | 'reservation-reminder';
  deadlineSeconds: number;
  verdict: 'meets' | 'misses';
  /** Emails of the burst still queued past the deadline: never sent (they end missed_deadline). */
  missedEmails: number;
}

/** The burst's drain, as burstReport computed it (drainSeconds null: it never drains). */
export interface Drain {
  holds: number;
  windowSeconds: number;
  limiterBurst: number;
  drainRatePerSecond: number;
  drainSeconds: number | null;
}

/**
 * How many of a burst's emails wait longer than `deadline`: the k-th
 * (k > limiter burst) leaves at (k - burst) / drain and fell due at
 * k * window / holds, so it waits longer once k passes
 * (deadline + burst / drain) / (1 / drain - window / holds).
 */
export function missedByDeadline(b: Drain, deadline: number): number {
  if (b.drainSeconds === null) return b.holds;
  const slope = 1 / b.drainRatePerSecond - b.windowSeconds / b.holds;
  if (slope <= 0) return 0;
  const first = (deadline + b.limiterBurst / b.drainRatePerSecond) / slope;
  // Emails past index `first` wait longer (the one at it waits exactly the deadline).
  return Math.max(0, Math.min(b.holds, b.holds - Math.floor(first + 1e-9)));
}

/** Each configured deadline against the drain: expiry notices (noticeSeconds) and reminders (reminderSeconds). */
export function deadlineRisks(deadlines: Workload['deadlines'], drain: Drain): DeadlineRisk[] {
  const kinds = [
    ['reservation-expired', deadlines.noticeSeconds],
    ['reservation-reminder', deadlines.reminderSeconds],
  ] as const;
  return kinds
    .filter((d): d is readonly [DeadlineRisk['kind'], number] => d[1] !== undefined)
    .map(([kind, deadlineSeconds]) => {
      const missedEmails = missedByDeadline(drain, deadlineSeconds);
      return { kind, deadlineSeconds, verdict: missedEmails === 0 ? 'meets' : 'misses', missedEmails };
    });
}
