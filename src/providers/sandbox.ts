import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { ProviderEvent } from '../model/event-kinds.js';
import { TokenBucket } from '../model/token-bucket.js';
import { checkKnownOptions } from '../db/arguments.js';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from './gateway.js';

export interface SandboxOptions {
  /** Simulated provider latency in ms: a number or a [min, max] range. */
  latencyMs?: number | [number, number];
  /** The sandbox's own account limit; over it, it answers rate-limited with a retry-after. */
  rateLimit?: { perSecond: number; burst: number };
  /** Probabilities (0..1) of each non-accepted answer, checked in this order. */
  rejectRate?: number;
  failRate?: number;
  pauseRate?: number;
  /** Append one JSON line per accepted message here (lets crash tests see sends across processes). */
  journalPath?: string;
  /**
   * What the sandbox reports after accepting, like a real provider's
   * webhooks: shares (0..1) of hard bounces and complaints, delivered
   * otherwise, each `delayMs` after acceptance (default 1000). Events go to
   * the sink given to `connectEvents`; with none connected, none are made.
   */
  events?: { bounceRate?: number; complaintRate?: number; delayMs?: number };
  random?: () => number;
}

/** Where the sandbox's events go: the ingestion path the webhooks use. It must handle its own errors. */
export type SandboxEventSink = (events: ProviderEvent[]) => Promise<unknown>;

export interface SandboxRecord {
  receipt: string;
  intentId: string;
  idempotencyKey: string;
  subject: string;
  headers: Record<string, string>;
  acceptedAt: Date;
  attempt: number;
}

/**
 * The default provider: in-process, no network. It behaves like a real one
 * where it matters to the lanes (latency, its own rate limit answering with a
 * retry-after, injectable rejections, failures and account pauses) and keeps
 * what it accepted for tests and the demo to inspect. It does not deduplicate
 * (like SES or SMTP), so a retry after a crash really sends twice.
 */
/** How many acceptances the sandbox keeps in memory (the journal, SANDBOX_JOURNAL, keeps every one). */
export const KEEP_ACCEPTED = 10_000;

export class SandboxGateway implements EmailGateway {
  readonly name = 'sandbox';
  readonly idempotent = false;
  /**
   * The most recent acceptances (at most KEEP_ACCEPTED), for tests and the
   * demo to inspect; `acceptedCount` counts them all. Bounded because the
   * sandbox is also what a long-running service sends through by default.
   */
  readonly accepted: SandboxRecord[] = [];
  private acceptedTotal = 0;
  private readonly bucket: TokenBucket | undefined;
  private readonly random: () => number;
  private sink: SandboxEventSink | undefined;
  private readonly scheduled = new Map<NodeJS.Timeout, ProviderEvent>();
  private readonly emitting = new Set<Promise<void>>();

  /** Every acceptance since this gateway was made. */
  get acceptedCount(): number {
    return this.acceptedTotal;
  }

  constructor(private readonly options: SandboxOptions = {}) {
    checkKnownOptions('options', options, (r) => {
      const share = r.z.number('must be a number from 0 to 1').min(0, 'must be a number from 0 to 1').max(1, 'must be a number from 0 to 1').optional();
      return {
        latencyMs: r.z.union([r.nonNegative, r.z.tuple([r.nonNegative, r.nonNegative])], 'must be milliseconds or a [min, max] range').optional(),
        rateLimit: r.z.object({ perSecond: r.positive, burst: r.positiveInt }, 'must be { perSecond, burst }').optional(),
        rejectRate: share,
        failRate: share,
        pauseRate: share,
        journalPath: r.z.string('must be a file path').optional(),
      };
    });
    this.bucket = options.rateLimit ? new TokenBucket(options.rateLimit) : undefined;
    this.random = options.random ?? Math.random;
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    try {
      await this.delay(context.signal);
    } catch {
      // The gateway contract: a timeout is an answer, not an exception. A
      // send still under way may have reached the provider: outcome unknown.
      return { kind: 'failed', reason: 'sandbox send timed out', outcomeUnknown: true, providerCode: 'timeout' };
    }
    if (this.bucket && this.bucket.take(1) === 0) {
      return {
        kind: 'rate_limited',
        retryAfterMs: Math.max(1, this.bucket.waitMs(1)),
        reason: 'sandbox rate limit exceeded',
        providerStatus: 429,
        providerCode: 'rate_limit_exceeded',
      };
    }
    const { rejectRate = 0, failRate = 0, pauseRate = 0 } = this.options;
    if (rejectRate > 0 && this.random() < rejectRate) {
      return { kind: 'rejected', reason: 'sandbox rejected the recipient', providerStatus: 422, providerCode: 'invalid_recipient' };
    }
    if (failRate > 0 && this.random() < failRate) {
      return { kind: 'failed', reason: 'sandbox internal error', outcomeUnknown: false, providerStatus: 500, providerCode: 'internal_error' };
    }
    if (pauseRate > 0 && this.random() < pauseRate) {
      return { kind: 'paused', reason: 'sandbox account suspended', providerStatus: 403, providerCode: 'account_suspended' };
    }
    const record: SandboxRecord = {
      receipt: `sandbox-${randomUUID()}`,
      intentId: message.intentId,
      idempotencyKey: message.idempotencyKey,
      subject: message.subject,
      headers: message.headers,
      acceptedAt: new Date(),
      attempt: context.attempt,
    };
    this.accepted.push(record);
    this.acceptedTotal += 1;
    if (this.accepted.length > KEEP_ACCEPTED) this.accepted.splice(0, this.accepted.length - KEEP_ACCEPTED / 2);
    if (this.options.journalPath) appendFileSync(this.options.journalPath, JSON.stringify(record) + '\n');
    if (this.sink) this.schedule(this.eventFor(record.receipt, message.to));
    return { kind: 'accepted', receipt: record.receipt, providerStatus: 200 };
  }

  /** Report events (delivered, bounced, complained) for what is accepted from now on into `sink`. */
  connectEvents(sink: SandboxEventSink): void {
    this.sink = sink;
  }

  /** Emit every scheduled event now (tests, and close). */
  async flushEvents(): Promise<void> {
    const events = [...this.scheduled.entries()];
    for (const [timer] of events) clearTimeout(timer);
    this.scheduled.clear();
    const now = new Date();
    if (events.length > 0 && this.sink) await this.emit(events.map(([, event]) => ({ ...event, occurredAt: now })));
  }

  /** Report what is still scheduled and wait for reports under way, so a draining process loses none. */
  async close(): Promise<void> {
    await this.flushEvents();
    await Promise.all(this.emitting);
  }

  private eventFor(receipt: string, recipient: string): ProviderEvent {
    const { bounceRate = 0, complaintRate = 0 } = this.options.events ?? {};
    const roll = this.random();
    const base = { provider: 'sandbox' as const, providerEventId: `sandbox-event-${randomUUID()}`, messageId: receipt, occurredAt: new Date(), recipients: [recipient] };
    if (roll < bounceRate) {
      return { ...base, kind: 'bounced', bounceType: 'hard', providerType: 'sandbox/HardBounce', reason: 'sandbox: simulated hard bounce (550 5.1.1 no such user)' };
    }
    if (roll < bounceRate + complaintRate) {
      return { ...base, kind: 'complained', bounceType: null, providerType: 'sandbox/Complaint', reason: 'sandbox: simulated spam complaint' };
    }
    return { ...base, kind: 'delivered', bounceType: null, providerType: 'sandbox/Delivery', reason: null };
  }

  private schedule(event: ProviderEvent): void {
    const delayMs = this.options.events?.delayMs ?? 1000;
    const timer = setTimeout(() => {
      this.scheduled.delete(timer);
      // The time it happened is when it is reported, as with a real provider.
      void this.emit([{ ...event, occurredAt: new Date() }]);
    }, delayMs);
    timer.unref();
    this.scheduled.set(timer, event);
  }

  private async emit(events: ProviderEvent[]): Promise<void> {
    const sending = (async () => {
      try {
        await this.sink?.(events);
      } catch {
        // The sink logs its own failures; an event lost here is what a provider's failed webhook would be.
      }
    })();
    this.emitting.add(sending);
    await sending;
    this.emitting.delete(sending);
  }

  private delay(signal: AbortSignal): Promise<void> {
    const latency = this.options.latencyMs ?? 0;
    const ms = Array.isArray(latency) ? latency[0] + this.random() * (latency[1] - latency[0]) : latency;
    if (ms <= 0) return Promise.resolve();
    if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason ?? new Error('aborted'));
      };
      // The listener goes with the delay: left on the round's signal, it kept
      // the signal and this send alive until the send timeout fired.
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
