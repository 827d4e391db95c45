import { ConfigError, ValidationError } from '../errors.js';
import type { Accounts, QuotaUnit } from '../model/accounts.js';
import { FLAGS, type ProviderName, type Workload, type WorkloadField } from './input.js';

/**
 * The provider accounts the capacity model sends through: those of an
 * accounts file (--accounts-file, or LEASEHOLD_ACCOUNTS_FILE by default), in
 * failover order, or else one account made of the workload's provider
 * fields (today's single-account model, unchanged). Only what sets an
 * account's throughput is kept: provider, rate and its unit, daily quota,
 * batch. Pure; the file is parsed in accounts-file.ts.
 */

/**
 * Emails one provider request can carry: the gateways' `maxBatch`
 * (providers/resend.ts RESEND_MAX_BATCH, providers/postmark.ts
 * POSTMARK_MAX_BATCH), 1 where a gateway has no batch API. Copied, not
 * imported, so the model loads no provider SDK; a test holds them equal.
 */
export const PROVIDER_MAX_BATCH: Record<ProviderName, number> = {
  sandbox: 1,
  resend: 100,
  postmark: 500,
  // One message per SendEmail call, one per SMTP transaction.
  ses: 1,
  smtp: 1,
};

/** Why the delivery lane refuses `batch` on a `provider` account, in DeliveryWorker's words; null: it takes it. */
export function batchProblem(provider: ProviderName, batch: number): string | null {
  const max = PROVIDER_MAX_BATCH[provider];
  if (batch <= max) return null;
  const why = max === 1 ? `${provider} has no batch API: use 1` : `${provider} takes at most ${max} emails per request`;
  return `${why}; the delivery lane refuses to start with it`;
}

/** Emails per request on an account, as the lane sends them: its batch, else the provider's maximum. A batch the lane refuses is an error naming it. */
export function emailsPerRequestOf(a: CapacityAccount): number {
  const batch = a.batch ?? PROVIDER_MAX_BATCH[a.provider];
  const problem = batchProblem(a.provider, batch);
  if (problem) throw new ValidationError(`accounts.${a.name}.batch`, problem);
  return batch;
}

export interface CapacityAccount {
  name: string;
  provider: ProviderName;
  /** What one limiter permit stands for: a provider request or an email. */
  unit: QuotaUnit;
  perSecond: number;
  burst: number;
  dailyQuota?: number;
  /** Emails per provider request (1: batching off); absent: the provider's maximum (PROVIDER_MAX_BATCH). */
  batch?: number;
}

export type AccountsSource = 'flags' | '--accounts-file' | 'LEASEHOLD_ACCOUNTS_FILE';

export interface AccountsInput {
  /** Where the accounts came from: an accounts file, or the provider fields (flags, --file, configuration). */
  source: AccountsSource;
  file: string | null;
  /** The accounts that send, in failover order. */
  accounts: CapacityAccount[];
  /** Accounts in the file but not in `failover`: no intent is ever routed to them. */
  notInFailover: string[];
  /** LEASEHOLD_FAILOVER_AFTER_S: how long an account cools down (429) before its intents move on. */
  failoverAfterSeconds: number;
  /** How the accounts were chosen, for the report. */
  notes: string[];
}

/** The workload fields an account sets (the provider's latency stays the workload's). */
export const ACCOUNT_FIELDS = ['provider.name', 'provider.perSecond', 'provider.burst', 'provider.dailyQuota'] as const satisfies readonly WorkloadField[];

/** Which of ACCOUNT_FIELDS a raw (unvalidated) workload sets. */
export function accountFieldsIn(raw: unknown): WorkloadField[] {
  const provider = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).provider : undefined;
  if (typeof provider !== 'object' || provider === null) return [];
  return ACCOUNT_FIELDS.filter((field) => (provider as Record<string, unknown>)[field.slice('provider.'.length)] !== undefined);
}

export type AccountsChoice = { file: string; source: Exclude<AccountsSource, 'flags'>; notes: string[] } | { file: null; source: 'flags'; notes: string[] };

/**
 * Which accounts to model.
 * - --accounts-file: its accounts; provider flags beside it are an error
 *   (they would be ignored), provider fields of --file are replaced.
 * - LEASEHOLD_ACCOUNTS_FILE: its accounts, unless the provider fields were
 *   given (flags or --file): those describe one account, as before.
 * - neither: one account from the provider fields and the configuration.
 */
export function chooseAccounts(options: {
  explicitFile?: string;
  configuredFile?: string;
  /** ACCOUNT_FIELDS set by flags, and by the workload file. */
  flagFields: WorkloadField[];
  fileFields: WorkloadField[];
}): AccountsChoice {
  const { explicitFile, configuredFile, flagFields, fileFields } = options;
  if (explicitFile) {
    const clash = flagFields[0];
    if (clash) {
      throw new ValidationError(
        `${clash} (${FLAGS[clash]})`,
        'each account in --accounts-file sets its provider, rate, burst and daily quota; give the flag or the accounts file, not both',
      );
    }
    const notes = fileFields.length > 0 ? [`${fileFields.join(', ')} from --file replaced by the accounts in --accounts-file`] : [];
    return { file: explicitFile, source: '--accounts-file', notes };
  }
  if (configuredFile) {
    const given = [...new Set([...flagFields, ...fileFields])];
    if (given.length > 0) {
      return {
        file: null,
        source: 'flags',
        notes: [`LEASEHOLD_ACCOUNTS_FILE (${configuredFile}) not modelled: ${given.join(', ')} given, describing one account; pass --accounts-file to model the file`],
      };
    }
    return { file: configuredFile, source: 'LEASEHOLD_ACCOUNTS_FILE', notes: [] };
  }
  return { file: null, source: 'flags', notes: [] };
}

/**
 * The throughput fields of parsed accounts, in failover order. A batch the
 * delivery lane would refuse (above the provider's maximum) is a
 * ConfigError naming the account's field, as the lane names it: the file
 * describes a deployment that cannot start. Accounts outside `failover`
 * are never built by the lane, so their batch is not checked.
 */
export function fromParsedAccounts(
  parsed: Accounts,
  source: Exclude<AccountsSource, 'flags'>,
  file: string,
  failoverAfterSeconds: number,
  notes: string[] = [],
): AccountsInput {
  const byName = new Map(parsed.accounts.map((a) => [a.name, a]));
  const accounts = parsed.failover.map((name): CapacityAccount => {
    const a = byName.get(name)!;
    return {
      name: a.name,
      provider: a.provider,
      unit: a.rate.unit,
      perSecond: a.rate.perSecond,
      burst: a.rate.burst,
      ...(a.dailyQuota !== undefined ? { dailyQuota: a.dailyQuota } : {}),
      ...(a.batch !== undefined ? { batch: a.batch } : {}),
    };
  });
  for (const a of accounts) {
    const problem = a.batch === undefined ? null : batchProblem(a.provider, a.batch);
    if (problem) throw new ConfigError(source, `accounts.${a.name}.batch: ${problem}`);
  }
  const notInFailover = parsed.accounts.map((a) => a.name).filter((name) => !parsed.failover.includes(name));
  return { source, file, accounts, notInFailover, failoverAfterSeconds, notes };
}

export interface SingleAccountOptions {
  /** LEASEHOLD_FAILOVER_AFTER_S (default 60). */
  failoverAfterSeconds?: number;
  notes?: string[];
  /** LEASEHOLD_RATE_UNIT: what a permit stands for (default requests). */
  unit?: QuotaUnit;
  /** LEASEHOLD_SEND_BATCH: emails per request; absent: the provider's maximum. */
  batch?: number;
}

/**
 * One account (`default`, as the registry names the single-provider
 * account) made of the workload's provider fields, with the unit and batch
 * the configuration gives it (LEASEHOLD_RATE_UNIT, LEASEHOLD_SEND_BATCH),
 * as the lane builds it. A batch the lane would refuse is a ConfigError
 * naming LEASEHOLD_SEND_BATCH.
 */
export function singleAccount(w: Workload, options: SingleAccountOptions = {}): AccountsInput {
  const { failoverAfterSeconds = 60, unit = 'requests', batch } = options;
  const provider = w.provider.name;
  const problem = batch === undefined ? null : batchProblem(provider, batch);
  if (problem) throw new ConfigError('LEASEHOLD_SEND_BATCH', problem);
  const account: CapacityAccount = {
    name: 'default',
    provider,
    unit,
    perSecond: w.provider.perSecond,
    burst: w.provider.burst,
    ...(w.provider.dailyQuota !== undefined ? { dailyQuota: w.provider.dailyQuota } : {}),
    ...(batch !== undefined ? { batch } : {}),
  };
  const notes = [...(options.notes ?? [])];
  const perRequest = emailsPerRequestOf(account);
  if (perRequest > 1) {
    const from = batch === undefined ? `the ${provider} maximum; LEASEHOLD_SEND_BATCH=1 turns batching off` : 'LEASEHOLD_SEND_BATCH';
    const permits = unit === 'requests' ? ', so its rate and burst in emails are the given ones x ' + perRequest : '';
    notes.push(`default sends ${perRequest} emails per request (${from}); its permits count ${unit} (LEASEHOLD_RATE_UNIT)${permits}`);
  }
  return {
    source: 'flags',
    file: null,
    accounts: [account],
    notInFailover: [],
    failoverAfterSeconds,
    notes,
  };
}
