import type { Queryable } from '../db/pool.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../runtime/clock.js';
import type { TickResult } from '../runtime/loop.js';
import { intentsSweepDeadlines, type SweptIntent } from '../tables/outbox.js';

/** Most intents one sweep ends; a full sweep runs again at once. */
export const SWEEP_BATCH = 500;

/**
 * Ends the intents whose deadline passed unsent (send_by, migration 0024):
 * a reminder still waiting when its hold expired, or an expiry or
 * confirmation notice held back past LEASEHOLD_NOTICE_DEADLINE_S by a
 * pause, the rate limit or backoff. The lease never hands one out; this
 * gives it its terminal state (`missed_deadline`, or `voided` for a
 * reminder whose hold was settled while it was in flight), counts it
 * (leasehold_intents_missed_deadline_total{kind}) and logs it. Every
 * delivery worker runs one; what it does is idempotent.
 */
export class DeadlineSweeper {
  constructor(
    private readonly options: {
      db: () => Queryable;
      schema: string;
      logger: Logger;
      metrics?: Metrics | undefined;
      clock?: Clock | undefined;
    },
  ) {}

  /** One sweep: the intents it ended. */
  async sweep(): Promise<SweptIntent[]> {
    const { schema, logger, metrics } = this.options;
    const swept = await intentsSweepDeadlines(this.options.db(), schema, this.options.clock?.now() ?? null, SWEEP_BATCH);
    for (const intent of swept) {
      if (intent.state === 'missed_deadline') metrics?.intentsMissedDeadline.inc({ kind: intent.template });
      logger.warn(
        { event: intent.state === 'voided' ? 'delivery.voided' : 'delivery.missed_deadline', intentId: intent.id, holdId: intent.holdId, kind: intent.template },
        intent.state === 'voided' ? 'a reminder came back unsent after its hold was settled: voided, never sent' : 'an email missed its deadline: never sent',
      );
    }
    return swept;
  }

  async tick(): Promise<TickResult> {
    const swept = await this.sweep();
    return { full: swept.length === SWEEP_BATCH };
  }
}
