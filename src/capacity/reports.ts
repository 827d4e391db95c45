/** The row and statement figures of a capacity report, shared by the model and the cost lines; the burst verdict, shared with the accounts model. */

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
