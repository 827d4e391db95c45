import type { Queryable } from '../db/pool.js';
import { messagesGetMany, messagesStore, type StoredMessage } from '../tables/messages.js';
import type { AttemptResult, LeasedIntent } from '../tables/outbox.js';
import { idempotencyKeyFor } from '../model/intent-states.js';
import type { EmailMessage } from '../providers/gateway.js';
import type { Templates } from '../templates/templates.js';
import { TemplateRenderError } from '../templates/render.js';
import { type RenderedMessage } from '../model/message.js';

/**
 * The delivery lane's side of templates. A leased intent is rendered once,
 * at its first lease, and the result is stored (email_messages); every
 * later attempt (after a failure, a rate limit, a crashed worker) sends the
 * stored message, so all attempts carry the same bytes even if the
 * templates changed in between. The lease brings each intent's snapshot (or
 * the hold facts to render from); when anything was rendered, one statement
 * per round stores the new ones (and one more reads any stored first elsewhere).
 */
export type PreparedMessage = { ok: true; message: StoredMessage } | { ok: false; error: TemplateRenderError };

export async function prepareMessages(
  db: Queryable,
  schema: string,
  templates: Templates,
  intents: LeasedIntent[],
  options: {
    from: string;
    /** The render moment: what a reminder says is left ("in 5 minutes") is counted from it. */
    now: Date;
  },
): Promise<Map<string, PreparedMessage>> {
  const prepared = new Map<string, PreparedMessage>();
  const rendered: Array<RenderedMessage & { intentId: string }> = [];
  for (const intent of intents) {
    if (intent.message) {
      prepared.set(intent.id, { ok: true, message: intent.message });
      continue;
    }
    try {
      const message = templates.render(intent.template, {
        intentId: intent.id,
        holdId: intent.holdId,
        metadata: intent.metadata ?? {},
        expiresAt: intent.holdExpiresAt,
        expiredAt: intent.holdExpiredAt,
        confirmedAt: intent.holdConfirmedAt,
        now: options.now,
        from: options.from,
        tenant: intent.tenant,
      });
      // A tenant's own sender (tenant_policies, brought by the lease) outranks the template's: stored so, every attempt sends it.
      const sender = intent.sender;
      rendered.push({
        ...message,
        ...(sender?.from ? { from: sender.from } : {}),
        ...(sender?.replyTo ? { replyTo: sender.replyTo } : {}),
        intentId: intent.id,
      });
    } catch (error) {
      if (!(error instanceof TemplateRenderError)) throw error;
      prepared.set(intent.id, { ok: false, error });
    }
  }
  if (rendered.length > 0) {
    const ids = rendered.map((m) => m.intentId);
    let stored = await messagesStore(db, schema, rendered);
    if (stored.length < ids.length) {
      // Another worker stored its rendering first: the first stored wins.
      const seen = new Set(stored.map((m) => m.intentId));
      stored = [...stored, ...(await messagesGetMany(db, schema, ids.filter((id) => !seen.has(id))))];
    }
    for (const message of stored) prepared.set(message.intentId, { ok: true, message });
  }
  for (const intent of intents) {
    if (!prepared.has(intent.id)) throw new Error(`no message could be prepared for intent ${JSON.stringify(intent.id)}`);
  }
  return prepared;
}

/** The stored message as the gateway sends it: only the recipient and the idempotency key come from the intent. */
export function emailMessageFor(intent: Pick<LeasedIntent, 'id' | 'holdId' | 'recipient' | 'replays'>, stored: StoredMessage): EmailMessage {
  return {
    intentId: intent.id,
    holdId: intent.holdId,
    idempotencyKey: idempotencyKeyFor(intent.id, intent.replays),
    to: intent.recipient,
    from: stored.from,
    ...(stored.replyTo !== null ? { replyTo: stored.replyTo } : {}),
    subject: stored.subject,
    text: stored.text,
    html: stored.html,
    headers: stored.headers,
    tags: { intent_id: intent.id, template: stored.template },
  };
}

/**
 * A message that could not be rendered is never sent and never retried:
 * `rejected` when only this hold's data is the problem, `paused` (fleet-wide,
 * the intent stays pending) when the template itself is broken and every
 * message of it would fail.
 */
export function templateFailure(intent: Pick<LeasedIntent, 'id' | 'attempts'>, token: string, error: TemplateRenderError): AttemptResult {
  return {
    id: intent.id,
    token,
    attempt: intent.attempts,
    outcome: error.broken ? 'paused' : 'rejected',
    receipt: null,
    error: (error.broken ? `${error.message} (fix the template and restart the delivery workers, then resume)` : error.message).slice(0, 1000),
    delayMs: 0,
    providerStatus: null,
    providerCode: TEMPLATE_ERROR_CODE,
    outcomeUnknown: false,
    durationMs: 0,
    duplicateRisk: false,
  };
}

/** providerCode of attempts that ended at rendering, before any provider was called. */
export const TEMPLATE_ERROR_CODE = 'template_error';
