import { createHash } from 'node:crypto';
import { ServerClient } from 'postmark';
import { classifyPostmarkError } from './classify-postmark.js';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from './gateway.js';
import { isAbortError, neverSent } from './provider-common.js';

export interface PostmarkGatewayOptions {
  serverToken: string;
  /** Defaults to https://api.postmarkapp.com. */
  baseUrl?: string;
  /** Defaults to `outbound`, the default transactional stream. */
  messageStream?: string;
}

/** Metadata keys stamped on every message (Postmark: keys up to 20 chars, values up to 80). */
export const POSTMARK_METADATA = { intentId: 'intent_id', idempotencyKey: 'idempotency_key' } as const;

/**
 * Postmark metadata values are limited to 80 characters; intent ids can be
 * longer (hold ids go up to 128). A long value is replaced by its SHA-256,
 * the same way when sending and when searching, so lookups still match.
 */
export function postmarkMetadataValue(value: string): string {
  return value.length <= 80 ? value : `sha256-${createHash('sha256').update(value).digest('hex')}`;
}

/** How many search hits to inspect when reconciling (an intent is normally found once). */
const LOOKUP_COUNT = 50;

interface Transport {
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** The raw error the last fetch threw (the client keeps only its message). */
  thrown: unknown;
}

/**
 * Postmark through the official client (v5, fetch based). The client alone
 * would hide two things classification needs, so it is given a custom
 * `fetch` (a documented client option): it adds our send-timeout signal
 * (the client only has its own fixed timeout) and keeps the raw error of a
 * failed fetch, which tells "connection refused: never sent" from "timed out:
 * maybe sent".
 *
 * Postmark has no idempotency key. Each message carries the intent id and
 * the idempotency key as Metadata; after an ambiguous attempt the adapter
 * first searches outbound messages by metadata
 * (https://postmarkapp.com/developer/api/messages-api#outbound-message-search)
 * and, if the message is there, reports it accepted instead of sending again.
 */
export class PostmarkGateway implements EmailGateway {
  readonly name = 'postmark';
  readonly idempotent = false;
  private readonly useHttps: boolean;
  private readonly requestHost: string;
  private consecutiveRateLimits = 0;

  constructor(private readonly options: PostmarkGatewayOptions) {
    const url = new URL(options.baseUrl ?? 'https://api.postmarkapp.com');
    this.useHttps = url.protocol === 'https:';
    this.requestHost = `${url.host}${url.pathname.replace(/\/+$/, '')}`;
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    const transport = this.transport(context.signal);
    const client = new ServerClient(this.options.serverToken, {
      useHttps: this.useHttps,
      requestHost: this.requestHost,
      // Our signal decides; the client's own timeout (seconds) only backstops it.
      timeout: 600,
      fetch: transport.fetch,
    });

    if (context.previousOutcomeUnknown) {
      const found = await this.lookup(client, transport, message);
      if (found.kind !== 'not-found') return found.result;
    }

    try {
      const response = await client.sendEmail({
        From: message.from,
        To: message.to,
        ...(message.replyTo ? { ReplyTo: message.replyTo } : {}),
        Subject: message.subject,
        TextBody: message.text,
        HtmlBody: message.html,
        Headers: Object.entries(message.headers).map(([Name, Value]) => ({ Name, Value })),
        Metadata: {
          [POSTMARK_METADATA.intentId]: postmarkMetadataValue(message.intentId),
          [POSTMARK_METADATA.idempotencyKey]: postmarkMetadataValue(message.idempotencyKey),
        },
        Tag: message.tags.template,
        MessageStream: this.options.messageStream ?? 'outbound',
        TrackOpens: false,
      });
      this.consecutiveRateLimits = 0;
      if (response.MessageID) return { kind: 'accepted', receipt: response.MessageID, providerStatus: 200 };
      return { kind: 'failed', reason: 'Postmark: answer without a MessageID', outcomeUnknown: true, providerStatus: 200 };
    } catch (error) {
      return this.classify(error, transport, context.signal);
    }
  }

  /** Search for an earlier delivery of this very message (same intent and idempotency key). */
  private async lookup(
    client: ServerClient,
    transport: Transport,
    message: EmailMessage,
  ): Promise<{ kind: 'found' | 'error'; result: SendResult } | { kind: 'not-found' }> {
    try {
      const page = await client.getOutboundMessages({
        count: LOOKUP_COUNT,
        offset: 0,
        [`metadata_${POSTMARK_METADATA.intentId}`]: postmarkMetadataValue(message.intentId),
      });
      // A replay of the intent uses a new idempotency key and must really send.
      const key = postmarkMetadataValue(message.idempotencyKey);
      const hit = (page.Messages ?? []).find((m) => (m.Metadata?.[POSTMARK_METADATA.idempotencyKey] ?? key) === key);
      if (!hit) return { kind: 'not-found' };
      return { kind: 'found', result: { kind: 'accepted', receipt: hit.MessageID, reconciled: true, providerStatus: 200 } };
    } catch (error) {
      // Not knowing is not a licence to send again: report and retry later.
      const result = this.classify(error, transport, undefined);
      if (result.kind === 'failed') {
        return { kind: 'error', result: { ...result, reason: `reconcile lookup failed, not resent: ${result.reason}`, outcomeUnknown: true } };
      }
      return { kind: 'error', result };
    }
  }

  private classify(error: unknown, transport: Transport, signal: AbortSignal | undefined): SendResult {
    const e = error as { statusCode?: unknown; code?: unknown; message?: unknown };
    const status = typeof e.statusCode === 'number' && e.statusCode > 0 ? e.statusCode : null;
    if (status === 429) this.consecutiveRateLimits++;
    const result = classifyPostmarkError({
      status,
      errorCode: typeof e.code === 'number' ? e.code : undefined,
      message: status === null ? undefined : typeof e.message === 'string' ? e.message : undefined,
      neverSent: status === null && neverSent(transport.thrown),
      consecutiveRateLimits: this.consecutiveRateLimits,
    });
    if (status === null && (signal?.aborted || isAbortError(transport.thrown)) && result.kind === 'failed') {
      return { ...result, reason: 'Postmark: send timed out (the message may have been accepted)' };
    }
    return result;
  }

  private transport(signal: AbortSignal): Transport {
    const transport: Transport = {
      thrown: undefined,
      fetch: async (input, init) => {
        const signals = [signal, ...(init?.signal ? [init.signal] : [])];
        try {
          return await fetch(input, { ...init, signal: AbortSignal.any(signals) });
        } catch (error) {
          transport.thrown = error;
          throw error;
        }
      },
    };
    return transport;
  }
}
