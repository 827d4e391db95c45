import pg from 'pg';
import { IntentStateError, NotFoundError, ValidationError } from '../errors.js';
import {
  DEFAULT_PAUSE_REASON,
  PAUSED_BY_OPERATOR,
  validatePauseSeconds,
  validatePolicy,
  type RateLimitPolicy,
} from '../model/delivery-policy.js';
import type { Intent } from '../model/intent-states.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { databaseClock, type Clock } from '../runtime/clock.js';
import { withTransaction, type Queryable } from '../db/pool.js';
import { AuditAction, libraryActor, type AuditActor } from '../model/audit-actions.js';
import { auditInsert, type AuditRecord } from '../tables/audit-log.js';
import { addressHash } from '../model/address.js';
import type { Suppression } from '../model/suppression-reasons.js';
import { suppressionsAdd, suppressionsGet, suppressionsRemove } from '../tables/suppressions.js';
import { deliveryControlGet, deliveryPause, deliveryResume, type DeliveryControl } from '../tables/delivery-control.js';
import { intentsGet, intentsMove, intentsOfHold, intentsPendingByAccount } from '../tables/outbox.js';
import { attemptsLastMinuteByAccount } from '../tables/attempts.js';
import {
  rateLimiterEnsure,
  rateLimiterGet,
  rateLimiterGetMany,
  rateLimiterPause,
  rateLimiterResume,
  rateLimiterSet,
  type AccountPause,
  type RateLimitState,
} from '../tables/rate-limiter.js';
import { DEFAULT_ACCOUNT, type AccountProvider, type Accounts, type QuotaUnit } from '../model/accounts.js';
import { replayIntent } from './replay.js';
import { TenantOperations } from './tenants.js';
import { WebhookOperations } from './webhooks.js';

/**
 * What an operator does to a running fleet: pause, resume, replay, change
 * the rate limit, manage accounts and suppressions, and through `tenants`
 * (ops/tenants.ts) each tenant's policy and pause. One place, so the CLI,
 * the API and the dashboard (through the API) do exactly the same thing and
 * log the same one event per change.
 */

export interface OperationsOptions {
  /** A pool, or a client inside the application's transaction. */
  pool: Queryable;
  schema: string;
  /** The policy a fresh limiter row starts with (LEASEHOLD_RATE_PER_SECOND, LEASEHOLD_RATE_BURST). */
  initialRate: RateLimitPolicy;
  /** The provider accounts (providers/registry.ts accountsFromConfig); default: one, `default`, at `initialRate`. */
  accounts?: Accounts;
  logger?: Logger;
  clock?: Clock;
  /**
   * Who acts: every change writes an audit entry (audit_log) naming it, in
   * the change's own transaction. Default `library`.
   */
  actor?: AuditActor;
}

/** One account as operators see it: `leasehold accounts`, GET /v1/accounts. */
export interface AccountView {
  name: string;
  provider: AccountProvider;
  /** Its place in failover (0: first), or null when it is not in failover (never sent through). */
  failoverIndex: number | null;
  unit: QuotaUnit;
  dailyQuota: number | null;
  rate: RateLimitState;
  pause: AccountPause;
  coolingDown: boolean;
  cooldownUntil: Date | null;
  /** Pending intents on this account (not yet leased ones count on the first in failover). */
  backlog: number;
  /** Attempts finished through it in the last minute, by outcome. */
  lastMinute: Record<string, number>;
}

export class Operations {
  private readonly pool: Queryable;
  private readonly schema: string;
  private readonly initialRate: RateLimitPolicy;
  readonly accounts: Accounts;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly actor: AuditActor;
  /** Each tenant's policy and pause (ops/tenants.ts), audited like every change here. */
  readonly tenants: TenantOperations;
  /** The application's webhooks (ops/webhooks.ts): list, backlog, replay a given-up one, audited. */
  readonly webhooks: WebhookOperations;

  constructor(private readonly options: OperationsOptions) {
    this.pool = options.pool;
    this.schema = options.schema;
    this.initialRate = options.initialRate;
    this.accounts = options.accounts ?? {
      accounts: [{ name: DEFAULT_ACCOUNT, provider: 'sandbox', rate: { ...options.initialRate, unit: 'requests' }, settings: {} }],
      failover: [DEFAULT_ACCOUNT],
    };
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? databaseClock;
    this.actor = options.actor ?? libraryActor();
    this.tenants = new TenantOperations({
      pool: this.pool,
      schema: this.schema,
      clock: this.clock,
      logger: this.logger,
      accountNames: this.accounts.accounts.map((a) => a.name),
      change: (work) => this.audited((ops, audit) => work(ops.pool, audit)),
    });
    this.webhooks = new WebhookOperations({
      pool: this.pool,
      schema: this.schema,
      clock: this.clock,
      logger: this.logger,
      change: (work) => this.audited((ops, audit) => work(ops.pool, audit)),
    });
  }

  /** The same operations on behalf of `actor` (the API makes one per request: token name and request id). */
  as(actor: AuditActor): Operations {
    return new Operations({ ...this.options, accounts: this.accounts, actor });
  }

  /**
   * A change and its audit entry in one transaction: on a pool, a
   * transaction of its own; on a client, the caller's (an application's
   * transaction, or autocommit statements on a client outside one).
   */
  private async audited<T>(work: (ops: Operations, audit: (record: AuditRecord) => Promise<void>) => Promise<T>): Promise<T> {
    const run = (db: Queryable) => {
      const ops = db === this.pool ? this : new Operations({ ...this.options, pool: db, accounts: this.accounts, actor: this.actor });
      return work(ops, (record) => auditInsert(db, this.schema, this.actor, record, this.clock.now()));
    };
    return this.pool instanceof pg.Pool ? withTransaction(this.pool, run) : run(this.pool);
  }

  /** The fleet's pause, and the accounts in failover whose own pause is in force. */
  async delivery(): Promise<DeliveryControl & { pausedAccounts: string[] }> {
    const control = await deliveryControlGet(this.pool, this.schema, this.clock.now());
    const states = await rateLimiterGetMany(this.pool, this.schema, this.accounts.failover, this.clock.now());
    return { ...control, pausedAccounts: this.accounts.failover.filter((name) => states.get(name)?.pause.paused) };
  }

  /** Pause delivery fleet-wide; with `forSeconds` it lifts itself. An operator's pause outranks any provider's. */
  async pause(options: { reason?: string; forSeconds?: number } = {}): Promise<DeliveryControl> {
    const reason = options.reason ?? DEFAULT_PAUSE_REASON;
    const { forSeconds } = options;
    validatePauseSeconds(forSeconds);
    const control = await this.audited(async (ops, audit) => {
      const before = await deliveryControlGet(ops.pool, ops.schema, ops.clock.now());
      const after = await deliveryPause(ops.pool, ops.schema, {
        reason,
        by: PAUSED_BY_OPERATOR,
        now: ops.clock.now(),
        ...(forSeconds !== undefined ? { untilMs: forSeconds * 1000 } : {}),
      });
      await audit({ action: AuditAction.deliveryPause, target: 'fleet', before, after });
      return after;
    });
    this.logger.info(
      { event: 'delivery.paused', reason: control.reason, by: PAUSED_BY_OPERATOR, until: control.pausedUntil },
      'delivery paused',
    );
    return control;
  }

  /** Lift every pause: the fleet's and each account's. Returns the fleet's state before and after, and the accounts resumed. */
  async resume(): Promise<{ before: DeliveryControl; after: DeliveryControl; accounts: string[] }> {
    const { before, after, accounts } = await this.audited(async (ops, audit) => {
      const before = await ops.delivery();
      await deliveryResume(ops.pool, ops.schema, ops.clock.now());
      const accounts = await rateLimiterResume(ops.pool, ops.schema, null, ops.clock.now());
      const after = await ops.delivery();
      await audit({ action: AuditAction.deliveryResume, target: 'fleet', before, after, detail: { accounts } });
      return { before, after, accounts };
    });
    this.logger.info({ event: 'delivery.resumed', by: PAUSED_BY_OPERATOR, wasPaused: before.paused, accounts }, 'delivery resumed');
    return { before, after, accounts };
  }

  /** The first account in failover: the one /v1/rate-limit and `leasehold rate-limit` act on. */
  get firstAccount(): string {
    return this.accounts.failover[0]!;
  }

  /** The named account, or NotFoundError (404) listing the configured ones. */
  private account(name: string) {
    const account = this.accounts.accounts.find((a) => a.name === name);
    if (!account) throw new NotFoundError('account', name);
    return account;
  }

  /** Every configured account with its provider, rate, tokens, pause, cooldown, backlog and sends in the last minute. */
  async listAccounts(): Promise<AccountView[]> {
    const names = this.accounts.accounts.map((a) => a.name);
    const now = this.clock.now();
    // Rows are written only when one is missing (a fleet that never started):
    // the dashboard lists every 2 s, and a list should not write.
    let states = await rateLimiterGetMany(this.pool, this.schema, names, now);
    if (states.size < names.length) {
      for (const account of this.accounts.accounts) {
        await rateLimiterEnsure(this.pool, this.schema, { perSecond: account.rate.perSecond, burst: account.rate.burst }, account.name);
      }
      states = await rateLimiterGetMany(this.pool, this.schema, names, now);
    }
    // One after another: `pool` may be an application's client inside its transaction.
    const backlog = await intentsPendingByAccount(this.pool, this.schema, this.accounts.failover, this.firstAccount);
    const recent = await attemptsLastMinuteByAccount(this.pool, this.schema);
    return this.accounts.accounts.map((account): AccountView => {
      const rate = states.get(account.name)!;
      const index = this.accounts.failover.indexOf(account.name);
      return {
        name: account.name,
        provider: account.provider,
        failoverIndex: index >= 0 ? index : null,
        unit: account.rate.unit,
        dailyQuota: account.dailyQuota ?? null,
        rate,
        pause: rate.pause,
        coolingDown: rate.coolingForMs > 0 || (rate.cooldownUntil !== null && rate.cooldownUntil.getTime() > Date.now()),
        cooldownUntil: rate.cooldownUntil,
        backlog: backlog.get(account.name) ?? 0,
        lastMinute: recent.get(account.name) ?? {},
      };
    });
  }

  async getAccount(name: string): Promise<AccountView> {
    this.account(name);
    return (await this.listAccounts()).find((a) => a.name === name)!;
  }

  /** Pause one account: its intents that are not pinned to it move on to the next account in failover. */
  async pauseAccount(name: string, options: { reason?: string; forSeconds?: number } = {}): Promise<AccountView> {
    const account = this.account(name);
    const { forSeconds } = options;
    validatePauseSeconds(forSeconds);
    const pause = await this.audited(async (ops, audit) => {
      await rateLimiterEnsure(ops.pool, ops.schema, { perSecond: account.rate.perSecond, burst: account.rate.burst }, name);
      const before = (await rateLimiterGet(ops.pool, ops.schema, ops.clock.now(), name))?.pause ?? null;
      const pause = await rateLimiterPause(ops.pool, ops.schema, name, {
        reason: options.reason ?? DEFAULT_PAUSE_REASON,
        by: PAUSED_BY_OPERATOR,
        now: ops.clock.now(),
        ...(forSeconds !== undefined ? { untilMs: forSeconds * 1000 } : {}),
      });
      await audit({ action: AuditAction.accountPause, target: name, before, after: pause });
      return pause;
    });
    this.logger.info({ event: 'account.paused', account: name, reason: pause?.reason, by: PAUSED_BY_OPERATOR, until: pause?.pausedUntil }, 'account paused');
    return this.getAccount(name);
  }

  async resumeAccount(name: string): Promise<AccountView> {
    this.account(name);
    const resumed = await this.audited(async (ops, audit) => {
      const before = (await rateLimiterGet(ops.pool, ops.schema, ops.clock.now(), name))?.pause ?? null;
      const resumed = await rateLimiterResume(ops.pool, ops.schema, name, ops.clock.now());
      const after = (await rateLimiterGet(ops.pool, ops.schema, ops.clock.now(), name))?.pause ?? null;
      await audit({ action: AuditAction.accountResume, target: name, before, after });
      return resumed;
    });
    this.logger.info({ event: 'account.resumed', account: name, by: PAUSED_BY_OPERATOR, wasPaused: resumed.length > 0 }, 'account resumed');
    return this.getAccount(name);
  }

  /**
   * Move a pending intent to `account`, even one pinned to its account by an
   * attempt whose outcome is unknown: then the old account may have it
   * already, and an acceptance on the new one is flagged possible_duplicate.
   */
  async moveIntent(intentId: string, account: string): Promise<Intent> {
    if (!this.accounts.failover.includes(account)) {
      throw new ValidationError('account', `must be an account in failover (${this.accounts.failover.join(', ')})`);
    }
    const intent = await this.audited(async (ops, audit) => {
      const before = await intentsGet(ops.pool, ops.schema, intentId);
      const moved = await intentsMove(ops.pool, ops.schema, intentId, account);
      const intent = await intentsGet(ops.pool, ops.schema, intentId);
      if (!intent) throw new NotFoundError('intent', intentId);
      if (!moved) {
        throw new IntentStateError(intentId, intent.state, intent.state === 'pending'
          ? `intent ${JSON.stringify(intentId)} is being sent now (its lease is live); move it when the attempt ends`
          : `intent ${JSON.stringify(intentId)} is ${intent.state}: only a pending intent can move`);
      }
      await audit({ action: AuditAction.intentMove, target: intentId, before: { account: before?.pinnedAccount ?? null }, after: { account } });
      return intent;
    });
    this.logger.warn({ event: 'intent.moved', intentId, holdId: intent.holdId, account, unsettled: intent.pinnedAccount === null }, 'intent moved by an operator');
    return intent;
  }

  async replay(intentId: string): Promise<Intent> {
    const intent = await this.audited(async (ops, audit) => {
      const before = await intentsGet(ops.pool, ops.schema, intentId);
      if (!before && !intentId.includes(':')) {
        // A hold id where an intent id belongs: name the hold's intents.
        const ofHold = await intentsOfHold(ops.pool, ops.schema, intentId);
        if (ofHold.length > 0) throw new NotFoundError('intent', intentId, `did you mean ${ofHold.map((i) => i.id).join(' or ')}?`);
      }
      const intent = await replayIntent(ops.pool, intentId, { schema: ops.schema, now: ops.clock.now() });
      await audit({
        action: AuditAction.intentReplay,
        target: intentId,
        before: before ? { state: before.state, replays: before.replays } : null,
        after: { state: intent.state, replays: intent.replays },
      });
      return intent;
    });
    this.logger.info({ event: 'intent.replayed', intentId: intent.id, holdId: intent.holdId, replays: intent.replays }, 'intent replayed');
    return intent;
  }

  /**
   * Suppress an address by hand (reason `manual`); one already suppressed
   * keeps its first entry and nothing is recorded. The audit entry names
   * the address's hash, never the address.
   */
  async addSuppression(address: string, detail: string | null = null): Promise<{ suppression: Suppression; created: boolean }> {
    return this.audited(async (ops, audit) => {
      const [created] = await suppressionsAdd(ops.pool, ops.schema, [{ address, reason: 'manual', detail, provider: null }]);
      if (!created) return { suppression: (await suppressionsGet(ops.pool, ops.schema, addressHash(address)))!, created: false };
      await audit({ action: AuditAction.suppressionAdd, target: created.addressHash, after: { reason: created.reason } });
      this.logger.info({ event: 'suppression.added', reason: 'manual', by: 'operator' }, 'address suppressed by an operator');
      return { suppression: created, created: true };
    });
  }

  /** Lift a suppression by the address's hash; undefined when there was none. */
  async removeSuppression(hash: string): Promise<Suppression | undefined> {
    return this.audited(async (ops, audit) => {
      const removed = await suppressionsRemove(ops.pool, ops.schema, hash);
      if (!removed) return undefined;
      await audit({ action: AuditAction.suppressionRemove, target: hash, before: { reason: removed.reason } });
      this.logger.info({ event: 'suppression.removed', reason: removed.reason, by: 'operator' }, 'suppression lifted by an operator');
      return removed;
    });
  }

  /**
   * An account's limiter policy and state (default: the first account in
   * failover); a fleet that never started gets the configured initial policy.
   */
  async rateLimit(account = this.firstAccount): Promise<RateLimitState> {
    const configured = this.account(account);
    const now = this.clock.now();
    const current = await rateLimiterGet(this.pool, this.schema, now, account);
    if (current) return current;
    await rateLimiterEnsure(this.pool, this.schema, { perSecond: configured.rate.perSecond, burst: configured.rate.burst }, account);
    return (await rateLimiterGet(this.pool, this.schema, now, account))!;
  }

  /** Change an account's policy (default: the first in failover); either half alone keeps the other half of the current policy. */
  async setRateLimit(change: { perSecond?: number; burst?: number }, account = this.firstAccount): Promise<RateLimitState> {
    if (change.perSecond === undefined && change.burst === undefined) {
      throw new ValidationError('perSecond', 'give perSecond, burst or both');
    }
    const { policy, state } = await this.audited(async (ops, audit) => {
      const current = await ops.rateLimit(account);
      const policy = validatePolicy({ perSecond: change.perSecond ?? current.perSecond, burst: change.burst ?? current.burst });
      const state = await rateLimiterSet(ops.pool, ops.schema, policy, ops.clock.now(), account, ops.actor.name);
      await audit({
        action: AuditAction.rateLimitSet,
        target: account,
        before: { perSecond: current.perSecond, burst: current.burst },
        after: { perSecond: state.perSecond, burst: state.burst },
      });
      return { policy, state };
    });
    this.logger.info({ event: 'rate_limit.changed', account, ...policy }, 'rate limit changed');
    return state;
  }
}
