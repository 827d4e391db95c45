import { createHash } from 'node:crypto';
import { ServerClient, type Message, type Models } from 'postmark';
import { classifyPostmarkError } from './classify-postmark.js';
import {
  httpEndpoint,
  type BatchContext,
  type BatchMember,
  type BatchMemberResult,
  type BatchResult,
  type EmailGateway,
  type EmailMessage,
  type HttpEndpoint,
  type SendContext,
  type SendResult,
} from './gateway.js';
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

/** Messages per `POST /email/batch`: "up to 500" (https://postmarkapp.com/developer/api/email-api#send-batch-emails). */
export const POSTMARK_MAX_BATCH = 500;

/** Reconcile lookups of one batch in flight at once (each is one search request). */
const LOOKUP_CONCURRENCY = 4;

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
  readonly maxBatch = POSTMARK_MAX_BATCH;
  /** No key for a batch either: each member of an unknown batch is looked up on its own. */
  readonly batchIdempotent = false;
  readonly endpoint: HttpEndpoint;
  private readonly useHttps: boolean;
  private readonly requestHost: string;
  private consecutiveRateLimits = 0;

  constructor(private readonly options: PostmarkGatewayOptions) {
    const url = new URL(options.baseUrl ?? 'https://api.postmarkapp.com');
    this.endpoint = httpEndpoint(url.href);
    this.useHttps = url.protocol === 'https:';
    this.requestHost = `${url.host}${url.pathname.replace(/\/+$/, '')}`;
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    const transport = this.transport(context.signal);
    const client = this.client(transport);

    if (context.previousOutcomeUnknown) {
      const found = await this.lookup(client, transport, message);
      if (found.kind !== 'not-found') return found.result;
    }

    try {
      const response = await client.sendEmail(this.postmarkMessage(message));
      this.consecutiveRateLimits = 0;
      if (response.MessageID) return { kind: 'accepted', receipt: response.MessageID, providerStatus: 200 };
      return { kind: 'failed', reason: 'Postmark: answer without a MessageID', outcomeUnknown: true, providerStatus: 200 };
    } catch (error) {
      return this.classify(error, transport, context.signal);
    }
  }

  /**
   * Members whose history is unknown are first looked up, exactly as a
   * single send looks up (found: reconciled, not sent; the lookup failed:
   * not sent either); the rest go in one `POST /email/batch`, which answers
   * 200 with one result per message in the order sent, each with its own
   * ErrorCode (https://postmarkapp.com/developer/user-guide/send-email-with-api/batch-emails).
   */
  async sendBatch(members: BatchMember[], context: BatchContext): Promise<BatchResult> {
    if (members.length > POSTMARK_MAX_BATCH) {
      throw new RangeError(`a Postmark batch holds at most ${POSTMARK_MAX_BATCH} messages, not ${members.length}`);
    }
    const results: Array<BatchMemberResult | undefined> = new Array(members.length).fill(undefined);
    const unknown = members.flatMap((member, i) => (member.previousOutcomeUnknown ? [i] : []));
    await eachLimited(unknown, LOOKUP_CONCURRENCY, async (i) => {
      const transport = this.transport(context.signal);
      const found = await this.lookup(this.client(transport), transport, members[i]!.message);
      if (found.kind !== 'not-found') results[i] = found.result;
    });

    const sending = members.flatMap((_, i) => (results[i] === undefined ? [i] : []));
    if (sending.length > 0 && context.signal.aborted) {
      // The send timeout ran out during the lookups: nothing more left.
      for (const i of sending) results[i] = { kind: 'unsent', reason: 'Postmark: the send timeout ran out during reconcile lookups; not sent' };
    } else if (sending.length > 0) {
      const transport = this.transport(context.signal);
      try {
        const answers = await this.client(transport).sendEmailBatch(sending.map((i) => this.postmarkMessage(members[i]!.message)));
        const slots = this.slotResults(answers, sending.length);
        sending.forEach((memberIndex, slot) => (results[memberIndex] = slots[slot]));
      } catch (error) {
        // The call itself failed (401, 5xx, refused, timed out): every
        // message in it shares the answer a single send would get.
        const result = this.classify(error, transport, context.signal);
        for (const i of sending) results[i] = { ...result };
      }
    }
    return { results: results.map((result) => result!) };
  }

  /** The batch's per-message answers, classified as the single send classifies the same ErrorCode. */
  private slotResults(answers: Models.MessageSendingResponse[], count: number): SendResult[] {
    if (!Array.isArray(answers) || answers.length !== count) {
      // Postmark took the call but the answer cannot be matched to the
      // messages: any of them may be queued, so all are outcome-unknown.
      const got = Array.isArray(answers) ? answers.length : 0;
      return Array.from({ length: count }, () => ({
        kind: 'failed',
        reason: `Postmark: the batch answer has ${got} results for ${count} messages`,
        outcomeUnknown: true,
        providerStatus: 200,
      }));
    }
    if (answers.some((a) => a?.ErrorCode === 429)) this.consecutiveRateLimits++;
    else if (answers.some((a) => a?.ErrorCode === 0)) this.consecutiveRateLimits = 0;
    return answers.map((answer): SendResult => {
      if (typeof answer?.ErrorCode !== 'number') {
        return { kind: 'failed', reason: 'Postmark: a batch result without an ErrorCode', outcomeUnknown: true, providerStatus: 200 };
      }
      if (answer.ErrorCode === 0) {
        if (answer.MessageID) return { kind: 'accepted', receipt: answer.MessageID, providerStatus: 200 };
        return { kind: 'failed', reason: 'Postmark: answer without a MessageID', outcomeUnknown: true, providerStatus: 200 };
      }
      // The same ErrorCode table as a single send's 422 (406 rejected, so
      // the recorder suppresses the address; 429 rate-limited; ...); the
      // HTTP status recorded is the 200 the batch really answered.
      return classifyPostmarkError({
        status: 200,
        errorCode: answer.ErrorCode,
        message: answer.Message,
        consecutiveRateLimits: this.consecutiveRateLimits,
      });
    });
  }

  /** One message as Postmark takes it, for `/email` and `/email/batch` alike. */
  private postmarkMessage(message: EmailMessage): Message {
    return {
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
    };
  }

  private client(transport: Transport): ServerClient {
    return new ServerClient(this.options.serverToken, {
      useHttps: this.useHttps,
      requestHost: this.requestHost,
      // Our signal decides; the client's own timeout (seconds) only backstops it.
      timeout: 600,
      fetch: transport.fetch,
    });
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

/** Runs `work` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
