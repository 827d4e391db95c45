import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { IntentStateError, NotFoundError } from '../errors.js';
import { messagesDiscardFinished } from './messages.js';
import { intentsGet } from './outbox-read.js';
import type { Intent } from '../model/intent-states.js';

/**
 * Send an intent again, on purpose, without touching its hold: a finished
 * intent (sent, rejected or dead) goes back to pending with a fresh attempt
 * budget. Its replay count changes the provider idempotency key
 * (`<id>#replay-<n>`), so a provider that deduplicates still sends it.
 * A pending intent is refused: it is already going to be sent. So is an
 * intent whose recipient was erased (retention): there is nobody to send to.
 *
 * A replay is the one time a message may change: its stored rendering is
 * dropped first (only while the intent is finished, so no pending intent
 * ever loses its snapshot mid-retries), and the next send renders it again
 * from the templates of that moment.
 */
export async function replayIntent(db: Queryable, id: string, options: { schema?: string } = {}): Promise<Intent> {
  const schema = options.schema ?? 'leasehold';
  await messagesDiscardFinished(db, schema, id);
  const { rowCount } = await db.query(
    `UPDATE ${ident(schema)}.email_outbox SET
       state = 'pending', available_at = now(), failed_attempts = 0, replays = replays + 1,
       finished_at = NULL, sent_at = NULL, receipt = NULL, last_error = NULL, possible_duplicate = false,
       -- The new round has its own key: an ambiguous attempt of the old one says
       -- nothing about whether this deliberate resend is already with the provider.
       outcome_unknown_seen = false
     WHERE id = $1 AND state <> 'pending' AND recipient IS NOT NULL`,
    [id],
  );
  const intent = await intentsGet(db, schema, id);
  if (!intent) throw new NotFoundError('intent', id);
  if (rowCount === 0) {
    const message =
      intent.state === 'pending'
        ? `intent ${JSON.stringify(id)} is already pending`
        : `intent ${JSON.stringify(id)} cannot be replayed: its recipient was erased`;
    throw new IntentStateError(id, intent.state, message);
  }
  return intent;
}

/** The key providers deduplicate on for the current round of an intent. */
export function idempotencyKeyFor(intentId: string, replays: number): string {
  return replays === 0 ? intentId : `${intentId}#replay-${replays}`;
}
