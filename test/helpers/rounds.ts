import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { AttemptOutcome } from '../../src/model/intent-states.js';
import { intentsLease, intentsRecord, type AttemptResult, type LeasedIntent } from '../../src/tables/outbox.js';

/** A provider's answer for a leased intent, as the worker hands it to intentsRecord. */
export const attemptResult = (intent: LeasedIntent, token: string, outcome: AttemptOutcome): AttemptResult => ({
  id: intent.id,
  token,
  attempt: intent.attempts,
  outcome,
  receipt: outcome === 'accepted' ? `receipt-${intent.id}-${intent.attempts}` : null,
  error: outcome === 'accepted' ? null : outcome,
  delayMs: 0,
  providerStatus: null,
  providerCode: null,
  outcomeUnknown: false,
  durationMs: 1,
  duplicateRisk: false,
});

/** Lease up to `limit` and record `outcomeOf(i)` for each, as one worker round does, without sending anything; returns how many were leased. */
export async function leaseAndRecord(
  pool: pg.Pool,
  schema: string,
  limit: number,
  outcomeOf: (i: number, intent: LeasedIntent) => AttemptOutcome,
  options: { maxAttempts?: number; now?: Date | null } = {},
): Promise<number> {
  const token = randomUUID();
  const now = options.now ?? null;
  const leased = await intentsLease(pool, schema, { limit, leaseMs: 30_000, token, provider: 'test', now });
  await intentsRecord(pool, schema, leased.map((intent, i) => attemptResult(intent, token, outcomeOf(i, intent))), {
    maxAttempts: options.maxAttempts ?? 3,
    now,
  });
  return leased.length;
}
