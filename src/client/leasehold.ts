import type pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import type { MigrateResult } from '../db/migrate.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../delivery/worker.js';
import { cancelHold, confirmHold, createHold, extendHold, getHold, type CreateHoldResult, type HoldDefaults } from '../holds/holds.js';
import { ExpiryWorker, type ExpiryWorkerOptions } from '../holds/expiry-worker.js';
import type { CreateHoldInput, ExtendHoldInput } from '../model/hold-input.js';
import type { Hold } from '../model/hold-states.js';
import type { Attempt, Intent, IntentState } from '../model/intent-states.js';
import type { Suppression, SuppressionReason } from '../model/suppression-reasons.js';
import type { TenantPolicy, TenantPolicyInput } from '../model/tenant-policy.js';
import { defaultLibraryLogger, type Logger } from '../observability/logger.js';
import type { Clock } from '../runtime/clock.js';
import type { DeliveryControl } from '../tables/delivery-control.js';
import type { MessageSummary } from '../tables/messages.js';
import type { IntentPage } from '../tables/outbox.js';
import type { RateLimitState } from '../tables/rate-limiter.js';
import type { SuppressionPage } from '../tables/suppressions.js';
import type { TenantPolicyPage } from '../tables/tenants.js';
import * as fn from './functions.js';
import { checkArgument, checkOptions, checkPool, rules } from '../db/arguments.js';

export interface LeaseholdOptions {
  pool: pg.Pool;
  /** Default `leasehold`. */
  schema?: string;
  /** Default: warnings and errors to stderr; `silentLogger` for none, `createLogger()` for every event. */
  logger?: Logger;
  /** Default: the database's clock. */
  clock?: Clock;
  /** Who makes the changes, for their audit entries (`library:<actor>`); default `library`. */
  actor?: string;
  /** What a hold gets when its request does not say: a reminder (`remindBeforeSeconds`), a confirmation email (`notifyOnConfirm`); default neither. */
  holdDefaults?: HoldDefaults;
  /** Expiry and confirmation emails still unsent this many seconds after their moment are not sent (end `missed_deadline`); default no deadline. Give the expiry lane the same (`expiryWorker({ noticeDeadlineSeconds })`). */
  noticeDeadlineSeconds?: number | null;
}

/** What `createLeasehold` returns: the free functions bound to one pool, schema, logger and clock. */
export interface Leasehold {
  readonly pool: pg.Pool;
  readonly schema: string;
  migrate(): Promise<MigrateResult>;
  holds: {
    create(input: CreateHoldInput): Promise<CreateHoldResult>;
    get(id: string): Promise<Hold | undefined>;
    confirm(id: string): Promise<Hold>;
    cancel(id: string): Promise<Hold>;
    /** A later deadline: `{ expiresAt }` or `{ ttlSeconds }` from now; the same one again is a no-op. */
    extend(id: string, to: ExtendHoldInput): Promise<Hold>;
  };
  intents: {
    get(id: string): Promise<Intent | undefined>;
    list(filter?: { state?: IntentState; tenant?: string; limit?: number; cursor?: string }): Promise<IntentPage>;
    attempts(intentId: string): Promise<Attempt[]>;
    message(intentId: string): Promise<MessageSummary | undefined>;
    replay(id: string): Promise<Intent>;
  };
  delivery: {
    get(): Promise<DeliveryControl>;
    pause(pause?: { reason?: string; forSeconds?: number }): Promise<DeliveryControl>;
    resume(): Promise<DeliveryControl>;
    rateLimit(): Promise<RateLimitState>;
    setRateLimit(change: { perSecond?: number; burst?: number }): Promise<RateLimitState>;
  };
  suppressions: {
    add(email: string, options?: { detail?: string }): Promise<Suppression>;
    get(email: string): Promise<Suppression | undefined>;
    /** NotFoundError when the address was not suppressed. */
    remove(email: string): Promise<Suppression>;
    list(filter?: { reason?: SuppressionReason; limit?: number; cursor?: string }): Promise<SuppressionPage>;
  };
  /** Tenant policies (cap, weight, account, sender): stored and validated, not yet enforced by the delivery lane. */
  tenants: {
    get(tenant: string): Promise<TenantPolicy | undefined>;
    list(page?: { limit?: number; cursor?: string }): Promise<TenantPolicyPage>;
    /** `accounts`: the configured account names, to check `account` against (the library does not read your accounts file). */
    put(tenant: string, policy: TenantPolicyInput, options?: { accounts?: readonly string[] }): Promise<{ policy: TenantPolicy; created: boolean }>;
    delete(tenant: string): Promise<TenantPolicy>;
  };
  /** An expiry lane on this pool and schema (not started: call `start()`, and `stop()` on shutdown). */
  expiryWorker(options?: Omit<ExpiryWorkerOptions, 'pool' | 'schema'>): ExpiryWorker;
  /** A delivery lane on this pool and schema (not started). `wakeOnNotify(worker, { connectionString })` makes it send at once after an expiry. */
  deliveryWorker(options: Omit<DeliveryWorkerOptions, 'pool' | 'schema'>): DeliveryWorker;
}

/**
 * leasehold for one application: `createLeasehold({ pool })`, then
 * `lh.holds.create(...)`, `lh.holds.get(id)`, `lh.delivery.pause()`, and
 * the lanes as `lh.expiryWorker()` / `lh.deliveryWorker({ gateway })`.
 * Inside your own transaction, use the free functions with your client
 * (`createHold(client, input, { schema })`): the same calls, one
 * convention.
 */
export function createLeasehold(options: LeaseholdOptions): Leasehold {
  checkArgument('options', rules().z.object({}, 'must be an object like { pool, schema }'), options);
  checkPool((options as { pool?: unknown }).pool, 'options.pool');
  checkOptions('options', options, (r) => ({
    pool: r.z.unknown(),
    schema: r.schema.optional(),
    logger: r.logger.optional(),
    clock: r.clock.optional(),
    actor: r.z.string('must be a string').optional(),
    holdDefaults: r.z
      .strictObject({ remindBeforeSeconds: r.positiveInt.nullable().optional(), notifyOnConfirm: r.z.boolean('must be true or false').optional() }, 'must be an object')
      .optional(),
    noticeDeadlineSeconds: r.positive.nullable().optional(),
  }));
  const { pool } = options;
  const schema = options.schema ?? DEFAULTS.schema;
  const logger = options.logger ?? defaultLibraryLogger();
  const opts: fn.LibraryOptions = { schema, logger, ...(options.clock ? { clock: options.clock } : {}), ...(options.actor ? { actor: options.actor } : {}) };
  const holdOpts = { schema, ...(options.clock ? { clock: options.clock } : {}) };
  const lane = { schema, logger, ...(options.clock ? { clock: options.clock } : {}) };
  return {
    pool,
    schema,
    migrate: () => fn.migrate(pool, opts),
    holds: {
      create: (input) => createHold(pool, input, { ...holdOpts, ...(options.holdDefaults ? { defaults: options.holdDefaults } : {}) }),
      get: (id) => getHold(pool, id, holdOpts),
      confirm: (id) => confirmHold(pool, id, { ...holdOpts, noticeDeadlineSeconds: options.noticeDeadlineSeconds ?? null }),
      cancel: (id) => cancelHold(pool, id, holdOpts),
      extend: (id, to) => extendHold(pool, id, to, holdOpts),
    },
    intents: {
      get: (id) => fn.getIntent(pool, id, opts),
      list: (filter) => fn.listIntents(pool, filter, opts),
      attempts: (intentId) => fn.listAttempts(pool, intentId, opts),
      message: (intentId) => fn.getMessage(pool, intentId, opts),
      replay: (id) => fn.replayIntent(pool, id, opts),
    },
    delivery: {
      get: () => fn.getDeliveryControl(pool, opts),
      pause: (pause) => fn.pauseDelivery(pool, pause, opts),
      resume: () => fn.resumeDelivery(pool, opts),
      rateLimit: () => fn.getRateLimit(pool, opts),
      setRateLimit: (change) => fn.setRateLimit(pool, change, opts),
    },
    suppressions: {
      add: (email, add) => fn.addSuppression(pool, email, { ...opts, ...add }),
      get: (email) => fn.getSuppression(pool, email, opts),
      remove: (email) => fn.removeSuppression(pool, email, opts),
      list: (filter) => fn.listSuppressions(pool, filter, opts),
    },
    tenants: {
      get: (tenant) => fn.getTenantPolicy(pool, tenant, opts),
      list: (page) => fn.listTenantPolicies(pool, page, opts),
      put: (tenant, policy, put) => fn.putTenantPolicy(pool, tenant, policy, { ...opts, ...put }),
      delete: (tenant) => fn.deleteTenantPolicy(pool, tenant, opts),
    },
    expiryWorker: (worker = {}) => {
      checkArgument('options', rules().z.object({}, 'must be an object'), worker);
      return new ExpiryWorker({ ...lane, ...(options.noticeDeadlineSeconds != null ? { noticeDeadlineSeconds: options.noticeDeadlineSeconds } : {}), ...worker, pool });
    },
    deliveryWorker: (worker) => {
      checkArgument('options', rules().z.object({}, 'must be an object like { gateway }'), worker);
      return new DeliveryWorker({ ...lane, ...worker, pool });
    },
  };
}
