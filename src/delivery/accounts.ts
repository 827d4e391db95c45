import { DEFAULTS } from '../defaults.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_ACCOUNT, type QuotaUnit } from '../model/accounts.js';
import type { RateLimitPolicy } from '../model/delivery-policy.js';
import type { EmailGateway } from '../providers/gateway.js';

/** One provider account the lane sends through (model/accounts.ts), with its gateway: as the worker is given it. */
export interface DeliveryAccount {
  name: string;
  gateway: EmailGateway;
  /** Sender for templates that name none; default the worker's `from`. */
  from?: string;
  /** Limiter policy written only if the account's limiter row does not exist yet; default the worker's `initialRate`. */
  initialRate?: RateLimitPolicy;
  /** Most emails a UTC day through this account; once spent, its intents move on to the next account until the day turns. */
  dailyQuota?: number;
  /** Emails per provider request: default the gateway's `maxBatch` (1 where it has no batch API); 1 turns batching off. */
  batch?: number;
  /** What a limiter permit stands for: a provider request (default) or an email. */
  unit?: QuotaUnit;
}

/**
 * An account as every step of a round uses it, resolved once when the
 * worker starts: what the lease, the plan, the budget, the send and the
 * record ask of an account is decided here and nowhere else.
 */
export interface SendingAccount {
  readonly name: string;
  readonly gateway: EmailGateway;
  /** The gateway's name: recorded on each attempt, and who a provider's pause is by. */
  readonly provider: string;
  /** Sender for templates that name none. */
  readonly from: string;
  /** Emails per provider request (1: no batches). */
  readonly batch: number;
  /** What one limiter permit stands for. */
  readonly unit: QuotaUnit;
  /** Emails one permit carries: a batch, where a permit is a request of batches; else 1. */
  readonly perPermit: number;
  /**
   * Sends batches to a provider that deduplicates a batch on its key
   * (EmailGateway.batchIdempotent): open batches are leased whole, before
   * new intents, and an unknown outcome goes again under its own key.
   */
  readonly keyed: boolean;
  /** How long the provider keeps a batch's key (keyed accounts). */
  readonly keyLifetimeMs: number;
  readonly dailyQuota?: number;
  /** Limiter policy written only if the account's limiter row does not exist yet. */
  readonly initialRate: RateLimitPolicy;
}

/** The worker's accounts: every one by name, and the order intents try them in. */
export interface AccountSet {
  readonly all: readonly SendingAccount[];
  readonly byName: ReadonlyMap<string, SendingAccount>;
  /** The accounts intents try, in order. */
  readonly failover: readonly string[];
  /** Accounts outside failover: they send only for tenants routed to them. */
  readonly routedOnly: readonly string[];
}

/** Resolve the worker's accounts (options.gateway: one account named `default`), checking each once. */
export function resolveAccounts(options: {
  gateway?: EmailGateway;
  accounts?: DeliveryAccount[];
  failover?: string[];
  from: string;
  initialRate?: RateLimitPolicy;
}): AccountSet {
  const given = options.accounts ?? (options.gateway ? [{ name: DEFAULT_ACCOUNT, gateway: options.gateway }] : []);
  if (given.length === 0) throw new ValidationError('accounts', 'give a gateway or at least one account');
  const all = given.map((a) => resolveAccount(a, options));
  const byName = new Map(all.map((a) => [a.name, a]));
  if (byName.size !== all.length) throw new ValidationError('accounts', 'account names must be unique');
  const failover = options.failover ?? all.map((a) => a.name);
  const unknown = failover.find((n) => !byName.has(n));
  if (unknown !== undefined) throw new ValidationError('failover', `names ${JSON.stringify(unknown)}, which is not one of the accounts`);
  if (failover.length === 0) throw new ValidationError('failover', 'name at least one account');
  return { all, byName, failover: [...failover], routedOnly: all.map((a) => a.name).filter((n) => !failover.includes(n)) };
}

function resolveAccount(account: DeliveryAccount, worker: { from: string; initialRate?: RateLimitPolicy }): SendingAccount {
  const batch = batchSizeOf(account);
  const unit = account.unit ?? 'requests';
  return {
    name: account.name,
    gateway: account.gateway,
    provider: account.gateway.name,
    from: account.from ?? worker.from,
    batch,
    unit,
    perPermit: batch > 1 && unit === 'requests' ? batch : 1,
    keyed: batch > 1 && account.gateway.batchIdempotent === true,
    keyLifetimeMs: account.gateway.batchKeyLifetimeMs ?? 24 * 3_600_000,
    ...(account.dailyQuota !== undefined ? { dailyQuota: account.dailyQuota } : {}),
    initialRate: account.initialRate ?? worker.initialRate ?? { perSecond: DEFAULTS.ratePerSecond, burst: DEFAULTS.rateBurst },
  };
}

/** An account's emails per request: its `batch`, within what its gateway can send in one. */
function batchSizeOf(account: DeliveryAccount): number {
  const max = account.gateway.sendBatch ? Math.max(1, account.gateway.maxBatch ?? 1) : 1;
  const batch = account.batch ?? max;
  if (!Number.isInteger(batch) || batch < 1) throw new ValidationError(`accounts.${account.name}.batch`, 'must be a whole number of at least 1');
  if (batch > max) {
    throw new ValidationError(
      `accounts.${account.name}.batch`,
      max === 1 ? `${account.gateway.name} has no batch API: use 1` : `${account.gateway.name} takes at most ${max} emails per request`,
    );
  }
  return batch;
}
