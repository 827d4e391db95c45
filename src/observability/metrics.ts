import { createRequire } from 'node:module';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ValidationError } from '../errors.js';

// prom-client is loaded when metrics are first created, not when the library is imported.
const require = createRequire(import.meta.url);
const promClient = () => require('prom-client') as typeof import('prom-client');

/**
 * Process-local counters and histograms of the two lanes. Shared state (ages,
 * backlog) is not counted here but read from the database at scrape time
 * (see database gauges), so every instance reports the same truth. Labels
 * never carry a recipient, hold id or intent id.
 */
export interface Metrics {
  registry: Registry;
  holdsExpired: Counter;
  emailsHandedOff: Counter;
  expiryBatchSize: Histogram;
  expiryTransactionSeconds: Histogram;
  expiryLockContention: Gauge;
  /** Holds whose expiry hook call failed by themselves (holds/expire-hook.ts), by reason: `error` (the hook raised) or `timeout`. */
  expireHookFailures: Counter<'reason'>;
  sends: Counter<'outcome' | 'account'>;
  rateLimited: Counter<'account'>;
  leaseExpirations: Counter;
  leasesReclaimed: Counter;
  intentsMissedDeadline: Counter<'kind'>;
  loopLastRoundAge: Gauge<'lane'>;
  /**
   * Watch a lane of this process: its last-round age (LoopWorker.
   * lastRoundAgeSeconds) goes into leasehold_loop_last_round_age_seconds at
   * each scrape, and /healthz reports the lane stalled past `stalledAfterSeconds`.
   */
  watchLane(lane: string, watch: LaneWatch): void;
  /** The watched lanes, now. */
  laneRounds(): Array<{ lane: string; ageSeconds: number; stalledAfterSeconds: number }>;
  attemptsPerIntent: Histogram<'state'>;
  emailsPerRequest: Histogram<'account'>;
  limiterWaitSeconds: Histogram;
  outcomeUnknown: Counter<'account'>;
  retentionPruned: Counter<'table'>;
  retentionErased: Counter<'table'>;
  retentionBatchSeconds: Histogram;
  emailEvents: Counter<'provider' | 'kind'>;
  suppressionsAdded: Counter<'reason'>;
  suppressedSends: Counter;
  webhookRequests: Counter<'provider' | 'result'>;
  /** /v1 calls refused: `unauthorized` (no or unknown token), `expired`, `forbidden` (role or tenant), `locked` (429 after too many failures from one client address). */
  authRefused: Counter<'reason'>;
  /** Client addresses locked out (429) after too many refused tokens in a minute. */
  authLockouts: Counter;
  /** Webhook attempts to the application's endpoints (src/webhooks/), by endpoint name, event type and outcome (delivered, retry, dead). */
  appWebhooks: Counter<'endpoint' | 'type' | 'outcome'>;
}

export interface LaneWatch {
  age: () => number | undefined;
  stalledAfterSeconds: number;
}

/**
 * When a lane counts as stalled: no round finished in ten of its intervals,
 * and at least 30 s, which is longer than any bounded wait inside one round
 * (a query times out after 20 s by default) plus the longest back-off.
 */
export function stalledAfterSeconds(intervalMs: number): number {
  return Math.max(30, (10 * intervalMs) / 1000);
}

export function createMetrics(registry?: Registry): Metrics {
  if (registry !== undefined && typeof (registry as { registerMetric?: unknown } | null)?.registerMetric !== 'function') {
    throw new ValidationError('registry', 'must be a prom-client Registry');
  }
  const { Counter, Gauge, Histogram, Registry } = promClient();
  registry ??= new Registry();
  const r = [registry];
  const lanes = new Map<string, LaneWatch>();
  const laneRounds = () =>
    [...lanes].flatMap(([lane, watch]) => {
      const ageSeconds = watch.age();
      return ageSeconds === undefined ? [] : [{ lane, ageSeconds, stalledAfterSeconds: watch.stalledAfterSeconds }];
    });
  return {
    registry,
    watchLane: (lane, watch) => void lanes.set(lane, watch),
    laneRounds,
    holdsExpired: new Counter({
      name: 'leasehold_holds_expired_total',
      help: 'Holds moved from held to expired by this process (each with its intent).',
      registers: r,
    }),
    emailsHandedOff: new Counter({
      name: 'leasehold_emails_handed_off_total',
      help: "Emails leased to this process's delivery lane in their expiry statement (the hand-off), sent from the commit without a lease statement of their own.",
      registers: r,
    }),
    expiryBatchSize: new Histogram({
      name: 'leasehold_expiry_batch_size',
      help: 'Holds expired per expiry run.',
      buckets: [0, 1, 5, 10, 50, 100, 250, 500, 1000, 5000],
      registers: r,
    }),
    expiryTransactionSeconds: new Histogram({
      name: 'leasehold_expiry_transaction_seconds',
      help: 'Duration of one expiry transaction (lock, expire, insert intents, commit).',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: r,
    }),
    expiryLockContention: new Gauge({
      name: 'leasehold_expiry_lock_contention',
      help: 'Due holds skipped at the last non-full expiry run because another worker held their lock.',
      registers: r,
    }),
    expireHookFailures: new Counter({
      name: 'leasehold_expire_hook_failures_total',
      help: 'Holds whose expiry hook (LEASEHOLD_EXPIRE_HOOK or onExpired) failed by itself, each left held and retried with back-off; by reason (error, timeout). leasehold_expire_hook_failing_holds is how many wait now.',
      labelNames: ['reason'],
      registers: r,
    }),
    sends: new Counter({
      name: 'leasehold_email_sends_total',
      help: 'Send attempts by outcome (accepted, rate_limited, rejected, failed, paused) and provider account.',
      labelNames: ['outcome', 'account'],
      registers: r,
    }),
    rateLimited: new Counter({
      name: 'leasehold_email_rate_limited_total',
      help: 'Attempts the provider answered with a rate limit, by provider account.',
      labelNames: ['account'],
      registers: r,
    }),
    leaseExpirations: new Counter({
      name: 'leasehold_email_lease_expirations_total',
      help: 'Intents re-leased after a previous lease expired (a worker died or stalled).',
      registers: r,
    }),
    leasesReclaimed: new Counter({
      name: 'leasehold_email_leases_reclaimed_total',
      help: 'Leases this process took back from a delivery worker that was gone (its presence lock free), before they expired.',
      registers: r,
    }),
    intentsMissedDeadline: new Counter({
      name: 'leasehold_intents_missed_deadline_total',
      help: 'Intents never sent because their deadline (send_by) passed first: a reminder still waiting when its hold expired, or a notice held back past LEASEHOLD_NOTICE_DEADLINE_S; by kind.',
      labelNames: ['kind'],
      registers: r,
    }),
    loopLastRoundAge: new Gauge({
      name: 'leasehold_loop_last_round_age_seconds',
      help: "Seconds since this process's lane last finished a round (with work, idle or failed), by lane; grows without bound when a lane has stopped working.",
      labelNames: ['lane'],
      registers: r,
      collect() {
        this.reset();
        for (const { lane, ageSeconds } of laneRounds()) this.set({ lane }, ageSeconds);
      },
    }),
    emailsPerRequest: new Histogram({
      name: 'leasehold_emails_per_request',
      help: 'Emails one provider request carried (1: a single send; more: a batch), by account. Its _count is the requests made.',
      labelNames: ['account'],
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500],
      registers: r,
    }),
    attemptsPerIntent: new Histogram({
      name: 'leasehold_email_attempts_per_intent',
      help: 'Attempts an intent took, observed when it reaches a terminal state.',
      labelNames: ['state'],
      buckets: [1, 2, 3, 5, 8, 10, 15, 25],
      registers: r,
    }),
    limiterWaitSeconds: new Histogram({
      name: 'leasehold_limiter_wait_seconds',
      help: 'Time a delivery worker waited on the shared rate limiter before it got permits.',
      buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: r,
    }),
    outcomeUnknown: new Counter({
      name: 'leasehold_email_outcome_unknown_total',
      help: 'Attempts whose request may have reached the provider without an answer (timeout, 5xx), by provider account.',
      labelNames: ['account'],
      registers: r,
    }),
    retentionPruned: new Counter({
      name: 'leasehold_retention_pruned_rows_total',
      help: 'Rows deleted by the retention policy, by table.',
      labelNames: ['table'],
      registers: r,
    }),
    retentionErased: new Counter({
      name: 'leasehold_retention_erased_rows_total',
      help: 'Rows whose personal data was erased (by age or on request), by table.',
      labelNames: ['table'],
      registers: r,
    }),
    retentionBatchSeconds: new Histogram({
      name: 'leasehold_retention_batch_seconds',
      help: 'Duration of one retention batch transaction (delete or erase).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: r,
    }),
    emailEvents: new Counter({
      name: 'leasehold_email_events_total',
      help: 'Provider events stored (duplicates not counted), by provider and kind (delivered, bounced, complained, delayed, failed).',
      labelNames: ['provider', 'kind'],
      registers: r,
    }),
    suppressionsAdded: new Counter({
      name: 'leasehold_suppressions_added_total',
      help: 'Addresses suppressed by this process, by reason (hard_bounce, complaint, manual).',
      labelNames: ['reason'],
      registers: r,
    }),
    suppressedSends: new Counter({
      name: 'leasehold_email_suppressed_total',
      help: 'Intents rejected before sending because the recipient is suppressed (the provider was not called).',
      registers: r,
    }),
    webhookRequests: new Counter({
      name: 'leasehold_webhook_requests_total',
      help: 'Provider webhook requests by provider and result (accepted, unauthorized, not_configured, invalid, unavailable).',
      labelNames: ['provider', 'result'],
      registers: r,
    }),
    authRefused: new Counter({
      name: 'leasehold_api_auth_refused_total',
      help: 'Calls to /v1 refused by reason (unauthorized, expired, forbidden, locked); no label carries a token or a client address.',
      labelNames: ['reason'],
      registers: r,
    }),
    authLockouts: new Counter({
      name: 'leasehold_api_auth_lockouts_total',
      help: 'Client addresses answered 429 for a while after too many refused tokens in a minute.',
      registers: r,
    }),
    appWebhooks: new Counter({
      name: 'leasehold_app_webhook_attempts_total',
      help: "Webhook attempts to the application's endpoints by endpoint name (never its URL), event type and outcome (delivered, retry, dead).",
      labelNames: ['endpoint', 'type', 'outcome'],
      registers: r,
    }),
  };
}
