import { Webhook } from 'standardwebhooks';
import type { WebhookEndpoint } from '../model/webhook-events.js';
import { parseRetryAfter } from './retry.js';

/**
 * One POST of one event to one endpoint, signed per the Standard Webhooks
 * specification: `webhook-id` (the event's id, the same on every retry),
 * `webhook-timestamp` (this attempt's Unix seconds) and `webhook-signature`
 * (`v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` under the
 * secret), by the `standardwebhooks` package receivers verify with.
 *
 * Bounded: the request is aborted after `timeoutMs`, connecting included,
 * and the answer's body is not read beyond what closing it takes, so a slow
 * or chatty endpoint costs one of its own in-flight slots for at most that
 * long. Never throws: every way it can end is a result.
 */

export interface SendResult {
  /** The endpoint answered 2xx. */
  ok: boolean;
  /** Its HTTP status; null: no answer (timeout, refused, reset). */
  status: number | null;
  /** Its Retry-After, as a wait in ms, when it sent a readable one. */
  retryAfterMs?: number;
  /** What went wrong, for the event's last_error and the log (never the URL: it may carry a token in its path). */
  error: string | null;
  durationMs: number;
}

export interface SendOptions {
  timeoutMs: number;
  /** The signing time: the wall clock (receivers reject a timestamp far from theirs). */
  now?: () => Date;
  fetch?: typeof fetch;
}

const signers = new WeakMap<WebhookEndpoint, Webhook>();
const signerOf = (endpoint: WebhookEndpoint): Webhook => {
  let signer = signers.get(endpoint);
  if (!signer) signers.set(endpoint, (signer = new Webhook(endpoint.secret)));
  return signer;
};

/** The body, as bytes are sent: JSON of the stored payload (its key order fixed by jsonb), the same on every attempt. */
export const webhookBody = (payload: unknown): string => JSON.stringify(payload);

export async function sendWebhook(endpoint: WebhookEndpoint, event: { id: string; payload: unknown }, options: SendOptions): Promise<SendResult> {
  const body = webhookBody(event.payload);
  const at = (options.now ?? (() => new Date()))();
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'leasehold-webhooks',
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signerOf(endpoint).sign(event.id, at, body),
  };
  const started = performance.now();
  const duration = () => Math.round(performance.now() - started);
  try {
    const response = await (options.fetch ?? fetch)(endpoint.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    // Not read: only its status matters, and a slow body must not hold the slot.
    await response.body?.cancel().catch(() => {});
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), at);
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      status: response.status,
      ...(retryAfterMs !== undefined && !ok ? { retryAfterMs } : {}),
      error: ok ? null : `HTTP ${response.status}`,
      durationMs: duration(),
    };
  } catch (error) {
    return { ok: false, status: null, error: describeFailure(error, options.timeoutMs), durationMs: duration() };
  }
}

/** A failed request in a few words: timeout, refused, reset, a DNS failure. */
function describeFailure(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const code = e?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code) return `request failed: ${code}`;
  return `request failed: ${e?.cause?.message ?? e?.message ?? String(error)}`;
}
