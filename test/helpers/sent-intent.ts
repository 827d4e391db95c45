import type pg from 'pg';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';

/**
 * A hold that expired and whose email a provider accepted with `receipt`:
 * the state a provider event refers to. Time is moved by backdating the
 * hold, not by waiting.
 */
export async function sentIntent(
  pool: pg.Pool,
  schema: string,
  holdId: string,
  options: { receipt: string; email?: string; provider?: string },
): Promise<string> {
  const s = ident(schema);
  await createHold(pool, { id: holdId, customerEmail: options.email ?? `${holdId}@example.com`, ttlSeconds: 600 }, { schema });
  await pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '2 seconds' WHERE id = $1`, [holdId]);
  await new ExpiryWorker({ pool, schema }).runOnce();
  const intentId = `reservation-expired:${holdId}`;
  await recordAcceptance(pool, schema, intentId, options.receipt, options.provider ?? 'sandbox');
  return intentId;
}

/** The delivery lane's record of an acceptance: the attempt with its receipt, the intent sent. */
export async function recordAcceptance(pool: pg.Pool, schema: string, intentId: string, receipt: string, provider = 'sandbox'): Promise<void> {
  const s = ident(schema);
  await pool.query(
    `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, receipt, duration_ms)
     SELECT $1, coalesce(max(attempt), 0) + 1, gen_random_uuid(), $3, now(), now(), 'accepted', $2, 5 FROM ${s}.email_attempts WHERE intent_id = $1`,
    [intentId, receipt, provider],
  );
  await pool.query(
    `UPDATE ${s}.email_outbox SET state = 'sent', attempts = attempts + 1, sent_at = now(), finished_at = now(), receipt = $2 WHERE id = $1`,
    [intentId, receipt],
  );
}
