import type pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import { intentsChannel, Listener } from '../db/listener.js';
import { migrate as migrateSchema, type MigrateResult } from '../db/migrate.js';
import type { Queryable } from '../db/pool.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { ingestEvents as ingest, type IngestResult } from '../events/ingest.js';
import { addressHash, validateAddress } from '../model/address.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../model/cursor.js';
import type { ProviderEvent } from '../model/event-kinds.js';
import { validateTenant } from '../model/hold-input.js';
import type { Attempt, Intent, IntentState } from '../model/intent-states.js';
import type { Suppression, SuppressionReason } from '../model/suppression-reasons.js';
import type { TenantPolicy, TenantPolicyInput } from '../model/tenant-policy.js';
import { defaultLibraryLogger, type Logger } from '../observability/logger.js';
import { inMigratedSchema } from '../db/schema-errors.js';
import { checkArgument, checkDb, checkLibraryOptions, checkOptions, checkPool, checkString, rules } from '../db/arguments.js';
import { IntentState as IntentStates } from '../model/intent-states.js';
import { SuppressionReason as SuppressionReasons } from '../model/suppression-reasons.js';
import type { Metrics } from '../observability/metrics.js';
import { Operations } from '../ops/operations.js';
import { libraryActor } from '../model/audit-actions.js';
import type { RetentionTables } from '../retention/policy.js';
import { retentionPreview, type RetentionPreview } from '../retention/preview.js';
import type { Clock } from '../runtime/clock.js';
import { attemptsList } from '../tables/attempts.js';
import type { DeliveryControl } from '../tables/delivery-control.js';
import { messagesSummary, type MessageSummary } from '../tables/messages.js';
import { intentsGet, intentsList, type IntentPage } from '../tables/outbox.js';
import type { RateLimitState } from '../tables/rate-limiter.js';
import { suppressionsGet, suppressionsList, type SuppressionPage } from '../tables/suppressions.js';
import type { TenantPolicyPage } from '../tables/tenants.js';

/**
 * The library's free functions, one convention for all of them:
 * `(db, ...arguments, options?)`. `db` is a pg Pool, Client or PoolClient
 * (so every call can run inside the application's own transaction), the
 * arguments are what the call is about (an id, an input object), and the
 * last, optional argument carries `schema` (default `leasehold`), `clock`
 * and `logger`. A `get` returns undefined for a missing row; a change to a
 * missing row throws NotFoundError. `createLeasehold` binds the same calls
 * to one pool and schema.
 */
export interface LibraryOptions {
  /** Schema holding leasehold's tables (default `leasehold`). */
  schema?: string;
  /** Clock for timestamps; default the database's. */
  clock?: Clock;
  /** For the calls that log an event (operator actions, ingestion); default warnings and errors to stderr. */
  logger?: Logger;
  /**
   * Who makes a change, for its audit entry (audit_log, written in the
   * change's transaction): recorded as `library:<actor>`; unset: `library`.
   */
  actor?: string;
}

const schemaOf = (options: LibraryOptions) => options.schema ?? DEFAULTS.schema;

/** Every free function's boundary: its `db` and `options` checked, and a schema without leasehold's tables said as such. */
async function call<T>(db: unknown, options: unknown, work: () => Promise<T>, extra?: Parameters<typeof checkLibraryOptions>[1]): Promise<T> {
  checkDb(db);
  checkLibraryOptions(options, extra);
  return inMigratedSchema(schemaOf((options ?? {}) as LibraryOptions), work);
}

const pageFields = (r: ReturnType<typeof rules>) => ({ limit: r.positiveInt.optional(), cursor: r.z.string('must be a string').optional() });

function operations(db: Queryable, options: LibraryOptions): Operations {
  return new Operations({
    pool: db,
    schema: schemaOf(options),
    initialRate: { perSecond: DEFAULTS.ratePerSecond, burst: DEFAULTS.rateBurst },
    logger: options.logger ?? defaultLibraryLogger(),
    ...(options.clock ? { clock: options.clock } : {}),
    actor: libraryActor(options.actor),
  });
}

/** Create or bring the schema up to date (forward-only migrations under an advisory lock). Needs a pool: it takes its own transactions. */
export async function migrate(pool: pg.Pool, options: LibraryOptions = {}): Promise<MigrateResult> {
  checkPool(pool);
  checkLibraryOptions(options);
  return migrateSchema(pool, schemaOf(options));
}

// Intents: the email a hold's expiry creates.

export function getIntent(db: Queryable, id: string, options: LibraryOptions = {}): Promise<Intent | undefined> {
  return call(db, options, () => (checkString('id', id), intentsGet(db, schemaOf(options), id)));
}

/**
 * Newest first, keyset-paged (`cursor` from the previous page's
 * `nextCursor`), optionally of one state and of one tenant (`''`: the empty
 * tenant's; a tenant that breaks the id rule throws ValidationError).
 */
export async function listIntents(
  db: Queryable,
  filter: { state?: IntentState; tenant?: string; limit?: number; cursor?: string } = {},
  options: LibraryOptions = {},
): Promise<IntentPage> {
  return call(db, options, () => {
    checkOptions('filter', filter, (r) => ({ ...pageFields(r), state: r.z.enum(Object.values(IntentStates)).optional(), tenant: r.z.string('must be a string').optional() }));
    const { tenant, ...rest } = filter;
    return intentsList(db, schemaOf(options), {
      ...rest,
      ...(tenant !== undefined ? { tenant: validateTenant(tenant) } : {}),
      limit: filter.limit ?? DEFAULT_PAGE_LIMIT,
    });
  });
}

/** Every send attempt of an intent, oldest first (empty for an unknown intent). */
export function listAttempts(db: Queryable, intentId: string, options: LibraryOptions = {}): Promise<Attempt[]> {
  return call(db, options, () => (checkString('intentId', intentId), attemptsList(db, schemaOf(options), intentId)));
}

/** The stored rendering of an intent's message (subject, template version), or undefined before its first send. */
export async function getMessage(db: Queryable, intentId: string, options: LibraryOptions = {}): Promise<MessageSummary | undefined> {
  return call(db, options, async () => (checkString('intentId', intentId), (await messagesSummary(db, schemaOf(options), intentId)) ?? undefined));
}

/** Send a finished intent (sent, rejected, dead) again; see Operations.replay. */
export function replayIntent(db: Queryable, id: string, options: LibraryOptions = {}): Promise<Intent> {
  return call(db, options, () => (checkString('id', id), operations(db, options).replay(id)));
}

// Delivery control: fleet-wide pause and rate limit.

export function getDeliveryControl(db: Queryable, options: LibraryOptions = {}): Promise<DeliveryControl> {
  return call(db, options, () => operations(db, options).delivery());
}

/** Pause delivery fleet-wide; with `forSeconds` it lifts itself. */
export function pauseDelivery(db: Queryable, pause: { reason?: string; forSeconds?: number } = {}, options: LibraryOptions = {}): Promise<DeliveryControl> {
  return call(db, options, () => {
    checkOptions('pause', pause, (r) => ({ reason: r.z.string('must be a string').optional(), forSeconds: r.positive.optional() }));
    return operations(db, options).pause(pause);
  });
}

export async function resumeDelivery(db: Queryable, options: LibraryOptions = {}): Promise<DeliveryControl> {
  return call(db, options, async () => (await operations(db, options).resume()).after);
}

export function getRateLimit(db: Queryable, options: LibraryOptions = {}): Promise<RateLimitState> {
  return call(db, options, () => operations(db, options).rateLimit());
}

/** Either half alone keeps the other half of the current policy. */
export function setRateLimit(db: Queryable, change: { perSecond?: number; burst?: number }, options: LibraryOptions = {}): Promise<RateLimitState> {
  return call(db, options, () => {
    checkArgument('change', rules().z.strictObject({ perSecond: rules().positive.optional(), burst: rules().positiveInt.optional() }, 'must be an object like { perSecond, burst }'), change);
    return operations(db, options).setRateLimit(change);
  });
}

// Suppressions: addresses that are never sent to.

/** Suppress an address (reason `manual`); one already suppressed keeps its first entry, which is returned. */
export async function addSuppression(db: Queryable, email: string, options: LibraryOptions & { detail?: string } = {}): Promise<Suppression> {
  return call(
    db,
    options,
    async () => {
      const address = validateAddress(email, 'email');
      return (await operations(db, options).addSuppression(address, options.detail ?? null)).suppression;
    },
    (r) => ({ detail: r.z.string('must be a string').optional() }),
  );
}

export function getSuppression(db: Queryable, email: string, options: LibraryOptions = {}): Promise<Suppression | undefined> {
  return call(db, options, () => suppressionsGet(db, schemaOf(options), addressHash(validateAddress(email, 'email'))));
}

/**
 * Lift a suppression. An address that was not suppressed is a change to a
 * missing row: NotFoundError, as every change of the library (named by the
 * address's hash, so an application that logs the error logs no address).
 */
export async function removeSuppression(db: Queryable, email: string, options: LibraryOptions = {}): Promise<Suppression> {
  return call(db, options, async () => {
    const hash = addressHash(validateAddress(email, 'email'));
    const removed = await operations(db, options).removeSuppression(hash);
    if (!removed) throw new NotFoundError('suppression', hash);
    return removed;
  });
}

export function listSuppressions(
  db: Queryable,
  filter: { reason?: SuppressionReason; limit?: number; cursor?: string } = {},
  options: LibraryOptions = {},
): Promise<SuppressionPage> {
  return call(db, options, () => {
    checkOptions('filter', filter, (r) => ({ ...pageFields(r), reason: r.z.enum(Object.values(SuppressionReasons)).optional() }));
    return suppressionsList(db, schemaOf(options), { ...filter, limit: filter.limit ?? DEFAULT_PAGE_LIMIT });
  });
}

// Tenant policies: a tenant's cap, weight, account and sender (stored and validated; not yet enforced by the delivery lane).

/** A tenant's policy, or undefined when it has none (`''`: the empty tenant's; a tenant that breaks the id rule throws ValidationError). */
export function getTenantPolicy(db: Queryable, tenant: string, options: LibraryOptions = {}): Promise<TenantPolicy | undefined> {
  return call(db, options, () => (checkString('tenant', tenant), operations(db, options).tenants.policy(tenant)));
}

/** Every tenant policy, by tenant (the empty tenant first), keyset-paged (`cursor` from the previous page's `nextCursor`). */
export async function listTenantPolicies(db: Queryable, page: { limit?: number; cursor?: string } = {}, options: LibraryOptions = {}): Promise<TenantPolicyPage> {
  return call(db, options, () => {
    checkOptions('page', page, (r) => ({ limit: r.z.unknown().optional(), cursor: r.z.string('must be a string').optional() }));
    const limit = page.limit ?? DEFAULT_PAGE_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) throw new ValidationError('limit', `must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
    return operations(db, options).tenants.policies({ ...page, limit });
  });
}

/**
 * Set a tenant's policy as a whole: `{ perSecond, burst, weight, account,
 * from, replyTo }`, every field optional (`{}`: no cap, weight 1); `burst`
 * needs `perSecond` and defaults to it rounded up. Returns the stored policy
 * and whether the tenant had none. The library does not know your accounts
 * file: pass `accounts` (the configured account names) to have `account`
 * checked against them, as the API and CLI do; without it any well-formed
 * name is stored. Bad input throws ValidationError naming the field.
 */
export function putTenantPolicy(
  db: Queryable,
  tenant: string,
  policy: TenantPolicyInput,
  options: LibraryOptions & { accounts?: readonly string[] } = {},
): Promise<{ policy: TenantPolicy; created: boolean }> {
  return call(
    db,
    options,
    () => (checkString('tenant', tenant), operations(db, options).tenants.setPolicy(tenant, policy, options.accounts ?? null)),
    (r) => ({ accounts: r.z.array(r.z.string('must be a string'), 'must be an array of account names').optional() }),
  );
}

/** Remove a tenant's policy (it then shares its account with no cap); returns it, or throws NotFoundError when it had none. */
export function deleteTenantPolicy(db: Queryable, tenant: string, options: LibraryOptions = {}): Promise<TenantPolicy> {
  return call(db, options, () => (checkString('tenant', tenant), operations(db, options).tenants.deletePolicy(tenant)));
}

/** Store provider events (delivered, bounced, complained) you received yourself; bounces and complaints suppress. */
export function ingestEvents(pool: pg.Pool, events: ProviderEvent[], options: LibraryOptions & { metrics?: Metrics } = {}): Promise<IngestResult> {
  checkPool(pool);
  checkLibraryOptions(options, (r) => ({ metrics: r.z.custom<unknown>((m) => typeof m === 'object' && m !== null, 'must be the metrics of createMetrics()').optional() }));
  checkArgument('events', rules().z.array(rules().z.unknown(), 'must be an array of provider events'), events);
  return inMigratedSchema(schemaOf(options), () =>
    ingest(pool, schemaOf(options), events, {
      logger: options.logger ?? defaultLibraryLogger(),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    }),
  );
}

/**
 * Wake a delivery worker on the expiry lane's NOTIFY, so in-process lanes
 * send within milliseconds of an expiry instead of at the next poll. Holds
 * one connection of its own (LISTEN needs a session, not a pool), reconnects
 * by itself; a missed notification only means the next poll sends.
 */
export function wakeOnNotify(
  worker: { wake(): void },
  options: {
    connectionString: string;
    schema?: string;
    logger?: Logger;
    /**
     * The `notifyPayload` of the expiry worker in this process, which wakes
     * `worker` itself (`onIntentsCommitted`): its NOTIFY is then not a
     * second wake-up (a round that would lease nothing).
     */
    ownPayload?: string;
  },
): { stop(): Promise<void> } {
  checkArgument('worker', rules().z.custom<unknown>((w) => typeof (w as { wake?: unknown } | null)?.wake === 'function', 'must be a worker (an object with a wake function)'), worker);
  checkArgument(
    'options',
    rules().z.strictObject(
      {
        connectionString: rules().z.string(options === undefined ? 'required' : 'must be a string').min(1, 'required'),
        schema: rules().schema.optional(),
        logger: rules().logger.optional(),
        ownPayload: rules().z.string('must be a string').min(1, 'must not be empty: the empty payload is every process that names none').optional(),
      },
      'must be an object like { connectionString }',
    ),
    options,
  );
  const listener = new Listener(
    options.connectionString,
    intentsChannel(options.schema ?? DEFAULTS.schema),
    () => worker.wake(),
    options.logger ?? defaultLibraryLogger(),
    options.ownPayload !== undefined ? { ownPayload: options.ownPayload } : {},
  );
  listener.start();
  return { stop: () => listener.stop() };
}

/** What a retention policy would delete or erase now, without doing it. */
export function previewRetention(
  db: Queryable,
  policy: { retentionDays: number | null; erasePiiAfterDays: number | null },
  options: LibraryOptions & { tables?: RetentionTables } = {},
): Promise<RetentionPreview> {
  return call(
    db,
    options,
    () => {
      const days = rules().z.number('must be a number or null').nonnegative('must be at least 0').nullable();
      checkArgument('policy', rules().z.object({ retentionDays: days, erasePiiAfterDays: days }, 'must be an object like { retentionDays, erasePiiAfterDays }'), policy);
      return retentionPreview(db, schemaOf(options), {
        ...policy,
        now: options.clock?.now() ?? null,
        ...(options.tables ? { tables: options.tables } : {}),
      });
    },
    (r) => ({ tables: r.z.unknown().optional() }),
  );
}
