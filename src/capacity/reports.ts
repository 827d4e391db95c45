/** The row and statement figures of a capacity report, shared by the model and the cost lines; the burst and its verdict, shared with the accounts model and the statement counts. */
import type { DeadlineRisk } from './deadlines.js';

/** An email burst against the promise: its oldest email within it, past it, or never sent because the rate never catches up. */
export type Verdict = 'meets' | 'misses' | 'never-drains';

export interface RowCounts {
  holds: number;
  intents: number;
  attempts: number;
}

export interface RowsReport {
  perDay: RowCounts & { bytes: number };
  atRetention: RowCounts & { days: number; bytes: number };
  /** Holds in `held` at any moment (holds per second x hold window). */
  liveHolds: number;
  /** Measured bytes per row (compact) and the bloat factor applied on top. */
  bytesPerRow: { hold: number; intent: number; attempt: number };
  bloatFactor: number;
  assumption: string;
}

export interface StatementRates {
  expiry: number;
  delivery: number;
  application: number;
  total: number;
}

export interface StatementsReport {
  average: StatementRates;
  /**
   * The worst burst at its peak (null without one): expiry while its holds
   * fall due (for expirySeconds), delivery while it drains (for seconds).
   */
  burst: (StatementRates & { expirySeconds: number; seconds: number | null }) | null;
  assumptions: string[];
}

/** The worst burst: how long it drains against the promise, and what paces it. */
export interface BurstReport {
  holds: number;
  windowSeconds: number;
  limiterPerSecond: number;
  limiterBurst: number;
  /** The average email rate that keeps arriving while the burst drains. */
  baselinePerSecond: number;
  /** What the delivery workers can send at the assumed provider latency. */
  deliveryCapacityPerSecond: number;
  pacedBy: 'limiter' | 'workers';
  /** Rate left for the burst: min(limit, capacity) - baseline. */
  drainRatePerSecond: number;
  /** (burst holds - limiter burst) / drain rate; null when it never drains. */
  drainSeconds: number | null;
  /** When the burst's last email leaves, from the burst's start: max(window, drain). */
  lastSendAtSeconds: number | null;
  /** Oldest pending email at the worst moment: max(0, drain - window). */
  oldestEmailAgeSeconds: number | null;
  promiseSeconds: number;
  verdict: Verdict;
  /** Expiry lane: the whole burst at the measured throughput. */
  expiryCatchUpSeconds: number;
  expiryPromiseSeconds: number;
  expiryVerdict: 'meets' | 'misses';
  /** Each kind whose emails carry a deadline: would the burst's emails make it (LEASEHOLD_NOTICE_DEADLINE_S, LEASEHOLD_REMIND_BEFORE_S)? */
  deadlines: DeadlineRisk[];
  formula: string;
}
