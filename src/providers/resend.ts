import { Resend } from 'resend';
import { classifyResendError } from './classify-resend.js';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from './gateway.js';
import { tagSafe } from './provider-common.js';

export interface ResendGatewayOptions {
  apiKey: string;
  /** Defaults to https://api.resend.com. */
  baseUrl?: string;
}

/**
 * Resend through the official SDK. The SDK is enough here: it returns the
 * response headers with every error (so `retry-after` / `ratelimit-reset`
 * are readable), forwards an AbortSignal, and sets the Idempotency-Key
 * header. What it hides is why a fetch threw (refused vs. timed out), which
 * does not matter with an idempotency key: both are retried safely.
 *
 * Resend keeps an idempotency key for 24 hours
 * (https://resend.com/docs/dashboard/emails/idempotency-keys), so a retry
 * after an ambiguous outcome within that window cannot deliver twice.
 */
export class ResendGateway implements EmailGateway {
  readonly name = 'resend';
  readonly idempotent = true;
  private readonly client: Resend;

  constructor(options: ResendGatewayOptions) {
    this.client = new Resend(options.apiKey, { baseUrl: (options.baseUrl ?? 'https://api.resend.com').replace(/\/+$/, '') });
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    const response = await this.client.emails.send(
      {
        from: message.from,
        to: message.to,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        subject: message.subject,
        text: message.text,
        html: message.html,
        headers: message.headers,
        tags: Object.entries(message.tags).map(([name, value]) => ({ name: tagSafe(name), value: tagSafe(value) })),
      },
      { idempotencyKey: message.idempotencyKey, signal: context.signal },
    );
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
}
