import { Resend, type CreateBatchEmailOptions } from 'resend';
import { classifyResendError } from './classify-resend.js';
import { httpEndpoint, type BatchContext, type BatchMember, type BatchResult, type EmailGateway, type EmailMessage, type HttpEndpoint, type SendContext, type SendResult } from './gateway.js';
import { tagSafe } from './provider-common.js';
import { resendBatchResults } from './resend-batch.js';

export interface ResendGatewayOptions {
  apiKey: string;
  /** Defaults to https://api.resend.com. */
  baseUrl?: string;
}

/** Emails per `POST /emails/batch`: "up to 100" (https://resend.com/docs/api-reference/emails/send-batch-emails). */
export const RESEND_MAX_BATCH = 100;
/** How long Resend keeps an idempotency key (https://resend.com/docs/dashboard/emails/idempotency-keys). */
export const RESEND_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

/**
 * One message as Resend's API takes it, for `/emails` and `/emails/batch`
 * alike. Only the message goes in, so a resend of the same messages in the
 * same order is the same bytes, which Resend's idempotency replay relies
 * on (a stored message's headers always come back in jsonb's order, and
 * the tags are built in a fixed order).
 */
export function resendEmail(message: EmailMessage): CreateBatchEmailOptions {
  return {
    from: message.from,
    to: message.to,
    ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    subject: message.subject,
    text: message.text,
    html: message.html,
    headers: message.headers,
    tags: Object.entries(message.tags).map(([name, value]) => ({ name: tagSafe(name), value: tagSafe(value) })),
  };
}

/**
 * Resend through the official SDK. The SDK is enough here: it returns the
 * response headers with every error (so `retry-after` / `ratelimit-reset`
 * are readable), forwards an AbortSignal (`signal` is one of its request
 * options, passed on to fetch, for `batch.send` too), and sets the
 * Idempotency-Key header. What it hides is why a fetch threw (refused vs.
 * timed out), which does not matter with an idempotency key: both are
 * retried safely.
 *
 * Resend keeps an idempotency key for 24 hours
 * (https://resend.com/docs/dashboard/emails/idempotency-keys), so a retry
 * after an ambiguous outcome within that window cannot deliver twice. The
 * same holds for a whole batch under its key (resend-batch.ts reads the
 * batch's answer).
 */
export class ResendGateway implements EmailGateway {
  readonly name = 'resend';
  readonly idempotent = true;
  readonly maxBatch = RESEND_MAX_BATCH;
  readonly batchIdempotent = true;
  readonly batchKeyLifetimeMs = RESEND_KEY_LIFETIME_MS;
  readonly endpoint: HttpEndpoint;
  private readonly client: Resend;

  constructor(options: ResendGatewayOptions) {
    this.endpoint = httpEndpoint(options.baseUrl ?? 'https://api.resend.com');
    this.client = new Resend(options.apiKey, { baseUrl: (options.baseUrl ?? 'https://api.resend.com').replace(/\/+$/, '') });
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    const response = await this.client.emails.send(resendEmail(message), {
      idempotencyKey: message.idempotencyKey,
      signal: context.signal,
    });
    if (response.data?.id) {
      return { kind: 'accepted', receipt: response.data.id, providerStatus: 200 };
    }
    const error = response.error;
    return classifyResendError({
      status: error?.statusCode ?? null,
      name: error?.name,
      message: error?.message,
      headers: response.headers,
      aborted: context.signal.aborted,
    });
  }

  /**
   * One request for all members, in their order, under the batch's key and
   * in strict validation mode: either every email is queued or none is, so
   * a resend of the whole batch under the same key settles it.
   */
  async sendBatch(members: BatchMember[], context: BatchContext): Promise<BatchResult> {
    if (members.length === 0) return { results: [] };
    if (members.length > RESEND_MAX_BATCH) {
      throw new RangeError(`a Resend batch holds at most ${RESEND_MAX_BATCH} emails, not ${members.length}`);
    }
    const response = await this.client.batch.send(
      members.map((member) => resendEmail(member.message)),
      { idempotencyKey: context.idempotencyKey, batchValidation: 'strict', signal: context.signal },
    );
    return resendBatchResults(
      { data: response.data, error: response.error, headers: response.headers },
      members.length,
      context.signal.aborted,
    );
  }
}
