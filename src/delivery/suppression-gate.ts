import type { Queryable } from '../db/pool.js';
import type { AttemptResult, LeasedIntent } from '../tables/outbox.js';
import { addressHash } from '../model/address.js';
import { reasonWords, type Suppression } from '../model/suppression-reasons.js';
import { suppressionsFind } from '../tables/suppressions.js';

/**
 * The delivery lane's check before it sends (invariant 12: a suppressed
 * recipient is never sent to). The lease already looked up every printable
 * ASCII address (tables/suppressions.ts); the rest, if any, are looked up
 * here in one statement, their hashes compared with `= ANY`.
 */
export async function suppressedIntents(
  db: Queryable,
  schema: string,
  intents: Array<Pick<LeasedIntent, 'id' | 'recipient' | 'suppression'>>,
): Promise<Map<string, Suppression>> {
  const out = new Map<string, Suppression>();
  const unchecked: Array<{ id: string; hash: string }> = [];
  for (const intent of intents) {
    if (intent.suppression) out.set(intent.id, intent.suppression);
    else if (intent.suppression === undefined) unchecked.push({ id: intent.id, hash: addressHash(intent.recipient) });
  }
  if (unchecked.length === 0) return out;
  const found = await suppressionsFind(db, schema, unchecked.map((u) => u.hash));
  for (const { id, hash } of unchecked) {
    const suppression = found.get(hash);
    if (suppression) out.set(id, suppression);
  }
  return out;
}

/** The attempt result for a suppressed recipient: rejected, never retried, and the provider was not called. */
export function suppressedAttempt(intent: { id: string; attempts: number }, token: string, suppression: Suppression): AttemptResult {
  return {
    id: intent.id,
    token,
    attempt: intent.attempts,
    outcome: 'rejected',
    receipt: null,
    error: `suppressed: ${reasonWords[suppression.reason]} at ${suppression.createdAt.toISOString()}`,
    delayMs: 0,
    providerStatus: null,
    providerCode: 'suppressed',
    outcomeUnknown: false,
    durationMs: 0,
    duplicateRisk: false,
  };
}
