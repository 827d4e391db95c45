import type { Queryable } from '../db/pool.js';
import type { AttemptResult } from '../tables/outbox.js';
import { addressHash } from '../model/address.js';
import { reasonWords, type Suppression } from '../model/suppression-reasons.js';
import { suppressionsFind } from '../tables/suppressions.js';

/**
 * The delivery lane's check before it sends (invariant 12: a suppressed
 * recipient is never sent to). One statement for the whole leased batch:
 * the recipients' hashes compared with `= ANY`.
 */
export async function suppressedIntents(
  db: Queryable,
  schema: string,
  intents: Array<{ id: string; recipient: string }>,
): Promise<Map<string, Suppression>> {
  if (intents.length === 0) return new Map();
  const hashes = intents.map((i) => addressHash(i.recipient));
  const found = await suppressionsFind(db, schema, hashes);
  const out = new Map<string, Suppression>();
  intents.forEach((intent, n) => {
    const suppression = found.get(hashes[n]!);
    if (suppression) out.set(intent.id, suppression);
  });
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
