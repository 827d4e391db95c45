/**
 * The one narrow interface every email provider sits behind. The delivery
 * lane owns timing, retries and state; an adapter only sends one message and
 * classifies the provider's answer into exactly one of five outcomes.
 */

/** What is sent: rendered identically on every attempt of an intent. */
export interface EmailMessage {
  intentId: string;
  holdId: string;
  /**
   * Key for provider-side deduplication: the intent id, or the intent id with
   * a replay suffix when an operator deliberately sends again.
   */
  idempotencyKey: string;
  to: string;
  from: string;
  /** Where replies go, when the template names an address. */
  replyTo?: string;
  subject: string;
  text: string;
  html: string;
  /** Includes X-Leasehold-Intent-Id so duplicates can be recognised by the recipient's side. */
  headers: Record<string, string>;
  /** Provider tags/metadata (intent id, template); never the recipient. */
  tags: Record<string, string>;
}

export interface SendContext {
  /** 1-based attempt number of this intent. */
  attempt: number;
  /**
   * Some earlier attempt of this intent (any, not only the latest; since its
   * last replay) ended without a clear answer (timeout, 5xx, a worker killed
   * mid-send): the message may already be with the provider. Adapters
   * that cannot deduplicate by key look it up first (Postmark by metadata).
   */
  previousOutcomeUnknown: boolean;
  /** Aborted at the send timeout (always shorter than the lease). */
  signal: AbortSignal;
}

interface Detail {
  /** HTTP status or SMTP reply code, when there was one. */
  providerStatus?: number;
  /** The provider's error name or code (e.g. `rate_limit_exceeded`, `406`, `MessageRejected`). */
  providerCode?: string;
}

export type SendResult =
  /** The provider took the message: the intent is sent and the receipt stored. */
  | ({ kind: 'accepted'; receipt: string; /** Found by lookup instead of sent again. */ reconciled?: boolean } & Detail)
  /** Too fast: retry after retryAfterMs; does not use up the attempt budget; the shared limiter cools down. */
  | ({ kind: 'rate_limited'; retryAfterMs: number; reason: string } & Detail)
  /** The message itself is refused (bad/suppressed recipient): terminal, never retried. */
  | ({
      kind: 'rejected';
      reason: string;
      /** The provider says the address is inactive (Postmark 406): it joins the suppression list. */
      suppress?: boolean;
    } & Detail)
  /** Transient failure: back off and retry, counting against max attempts. */
  | ({
      kind: 'failed';
      reason: string;
      /** The request may have reached the provider. */
      outcomeUnknown: boolean;
      /**
       * The request provably never left (connection refused, DNS, TLS): the
       * intent may move to the next account in failover. Only set where the
       * adapter can tell (Resend's SDK cannot: a refused connection and a
       * lost answer look alike there, so both are outcome-unknown).
       */
      neverSent?: boolean;
    } & Detail)
  /** Not the message's fault (bad key, unverified sender, suspended, quota): pause the account (its intents move on to the next in failover). */
  | ({ kind: 'paused'; reason: string; /** The pause lifts itself after this long (quota reset). */ resumeAfterMs?: number } & Detail);


/** One message of a batch, with what its own history says. */
export interface BatchMember {
  message: EmailMessage;
  /** 1-based attempt number of this member's intent. */
  attempt: number;
  /** As SendContext.previousOutcomeUnknown, for this member. */
  previousOutcomeUnknown: boolean;
}

export interface BatchContext {
  /** The batch's stable id (recorded before the request; the same on every resend of this batch). */
  batchId: string;
  /**
   * The request's idempotency key (`batch-<batchId>`), for a provider that
   * deduplicates batches on one (Resend): a resend of the batch carries the
   * same key and the same members in the same order, so the same bytes.
   */
  idempotencyKey: string;
  /** Aborted at the send timeout (always shorter than the lease). */
  signal: AbortSignal;
}

/**
 * A member's outcome: one of the five, or `unsent`: the provider refused
 * the whole request because of another member (strict validation), so this
 * one was not sent and goes again in a new batch.
 */
export type BatchMemberResult = SendResult | { kind: 'unsent'; reason: string; providerStatus?: number; providerCode?: string };

export interface BatchResult {
  /** One per member, in the members' order. */
  results: BatchMemberResult[];
  /**
   * The batch's idempotency key can no longer settle it (the provider
   * answered 409: another body under this key, or the same key still in
   * flight): the members leave the batch and go singly, and an acceptance
   * after this is flagged a possible duplicate.
   */
  keyUnusable?: boolean;
}

/** An HTTP provider's API host (EmailGateway.endpoint). */
export interface HttpEndpoint {
  address: string;
  port: number;
  method: 'POST';
}

/** The endpoint of a provider's base URL. */
export function httpEndpoint(baseUrl: string): HttpEndpoint {
  const url = new URL(baseUrl);
  return { address: url.hostname, port: url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443, method: 'POST' };
}

export interface EmailGateway {
  /** `sandbox`, `resend`, `postmark`, `ses`, `smtp`. */
  readonly name: string;
  /**
   * True when the provider deduplicates on `idempotencyKey`, so a retry after
   * an ambiguous outcome cannot deliver twice (within the provider's window).
   */
  readonly idempotent: boolean;
  send(message: EmailMessage, context: SendContext): Promise<SendResult>;
  /**
   * The provider's documented maximum of emails per request (Resend 100,
   * Postmark 500); absent or 1: no batch API, one `send` per email.
   */
  readonly maxBatch?: number;
  /**
   * True when the provider deduplicates a whole batch on
   * BatchContext.idempotencyKey (Resend, for 24 h): a batch whose outcome is
   * unknown is then resent only whole, under the same key, with the same
   * members in the same order. False (Postmark): each member of an unknown
   * batch is looked up on its own before it is sent again.
   */
  readonly batchIdempotent?: boolean;
  /** How long the provider keeps a batch's key (Resend: 24 h); past it a pinned batch's members go singly, flagged. */
  readonly batchKeyLifetimeMs?: number;
  /**
   * Where an HTTP provider's requests go (its host and port), for the send
   * span's `server.address` and `http.*` attributes; absent where the
   * adapter cannot tell (an SDK choosing its regional endpoint, SMTP).
   */
  readonly endpoint?: HttpEndpoint;
  /** Send 2..maxBatch messages in one request; one result per member. */
  sendBatch?(members: BatchMember[], context: BatchContext): Promise<BatchResult>;
  close?(): Promise<void>;
}
