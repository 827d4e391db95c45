import { IntentStateError, NotFoundError } from '../errors.js';
import type { Intent } from '../model/intent-states.js';
import type { Queryable } from '../db/pool.js';
import { messagesDiscardFinished } from '../tables/messages.js';
import { intentsGet, intentsReplay } from '../tables/outbox.js';

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
export async function replayIntent(
  db: Queryable,
  id: string,
  options: { schema?: string; now?: Date | null } = {},
): Promise<Intent> {
  const schema = options.schema ?? 'leasehold';
  await messagesDiscardFinished(db, schema, id);
  const replayed = await intentsReplay(db, schema, id, options.now ?? null);
  const intent = await intentsGet(db, schema, id);
  if (!intent) throw new NotFoundError('intent', id);
  if (!replayed) {
    const message =
      intent.state === 'pending'
        ? `intent ${JSON.stringify(id)} is already pending`
        : `intent ${JSON.stringify(id)} cannot be replayed: its recipient was erased`;
    throw new IntentStateError(id, intent.state, message);
  }
  return intent;
}
