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
  | ({ kind: 'rejected'; reason: string } & Detail)
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


export interface EmailGateway {
  /** `sandbox`, `resend`, `postmark`, `ses`, `smtp`. */
  readonly name: string;
  /**
   * True when the provider deduplicates on `idempotencyKey`, so a retry after
   * an ambiguous outcome cannot deliver twice (within the provider's window).
   */
  readonly idempotent: boolean;
  send(message: EmailMessage, context: SendContext): Promise<SendResult>;
  close?(): Promise<void>;
}
