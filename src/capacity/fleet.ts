import { SECONDS_PER_DAY } from './constants.js';
import { emailsPerRequestOf, PROVIDER_MAX_BATCH, type AccountsInput, type AccountsSource, type CapacityAccount } from './accounts.js';
import type { ProviderName, Workload } from './input.js';
import type { Verdict } from './reports.js';

/**
 * Several provider accounts: what each can send, in emails, and how the
 * worst burst drains through them the way the delivery lane routes it
 * (delivery/routing.ts). New intents go to the first account in failover;
 * an account sends only the intents routed to it; intents move on to the
 * next account only while theirs is paused (a provider's or an operator's
 * pause), has spent its daily quota (the limiter counts it per UTC day), or
 * has been cooling down (429)
 * past LEASEHOLD_FAILOVER_AFTER_S. So in normal operation the first
 * account sends everything and the others stand by: the accounts' summed
 * rate is a ceiling the lane never uses, reported as such.
 *
 * Pure arithmetic; no I/O.
 */

export interface AccountLine {
  name: string;
  provider: ProviderName;
  unit: 'requests' | 'emails';
  role: 'first' | 'backup';
  /** The limiter's rate and burst, in the account's unit. */
  permitsPerSecond: number;
  burstPermits: number;
  /** Emails one provider request carries, as the lane sends them: the account's batch, else the provider's maximum (1 without a batch API). */
  emailsPerRequest: number;
  /** 'batch': the account's batch; 'default': none given, the provider's maximum. */
  emailsPerRequestFrom: 'batch' | 'default';
  /** The provider's documented maximum per request (1: no batch API). */
  providerMaxBatch: number;
  /** Provider requests per second at the full rate. */
  requestsPerSecond: number;
  /** requests: permits/s x emails per request; emails: permits/s. */
  emailsPerSecond: number;
  /** The limiter burst in emails. */
  burstEmails: number;
  dailyQuota: number | null;
  /** dailyQuota / 86,400: the most a sustained load can average. */
  quotaEmailsPerSecond: number | null;
  /** min(emails/s, quota emails/s). */
  sustainedEmailsPerSecond: number;
  /** How long the account can send at its full rate before a fresh daily quota is used up. */
  fullRateQuotaSeconds: number | null;
  /** Quota left when the burst starts: the first account has carried a day's average demand (the worst case: a burst late in the UTC day), a backup nothing. */
  quotaLeftAtBurst: number | null;
  /** Share of the worst burst it sends in normal operation (null: no burst). */
  normalShare: number | null;
  /** The worst burst on this account if every account before it in failover has stopped (null: the first account, or no burst). */
  takeover: Takeover | null;
}

export interface DrainStage {
  account: string;
  /** Emails of the burst this account sends. */
  emails: number;
  /** Its limiter burst in emails: sent at once, its bucket full when it starts. */
  burstEmails: number;
  /** min(emails/s, delivery capacity in emails/s). */
  sendRatePerSecond: number;
  pacedBy: 'limiter' | 'workers';
  /** sendRate - average demand (which keeps arriving, and goes to the same account). */
  drainRatePerSecond: number;
  /** max(0, emails - burst emails) / drain rate; null: never drains. */
  seconds: number | null;
  /** The account's daily quota ran out before the burst did: the limiter stops granting it and the rest moves to the next account. */
  quotaRunsOut: boolean;
}

export interface DrainChain {
  /** The accounts that send the burst, in order, with what each sends. */
  stages: DrainStage[];
  /** Sum of the stages' seconds; null when it never drains or quotas run out before it does. */
  drainSeconds: number | null;
  lastSendAtSeconds: number | null;
  /** max(0, drain - burst window). */
  oldestEmailAgeSeconds: number | null;
  /** Emails left when every account's quota is used up: they wait for a quota to reset. */
  unsentEmails: number;
  verdict: Verdict | 'quota-exhausted';
}

export interface Takeover extends DrainChain {
  /** The accounts before it in failover, all stopped in this scenario. */
  stopped: string[];
  /** When the takeover follows a 429 cooldown, intents move only LEASEHOLD_FAILOVER_AFTER_S after it began: the oldest age then. */
  afterCooldown: { oldestEmailAgeSeconds: number | null; verdict: Verdict | 'quota-exhausted' };
}

export interface AccountsReport {
  source: AccountsSource;
  file: string | null;
  /** The accounts' names in failover order. */
  failover: string[];
  notInFailover: string[];
  accounts: AccountLine[];
  /** Every account at its full rate at once: NOT what the lane does (only the first sends in normal operation). */
  combined: { emailsPerSecond: number; sustainedEmailsPerSecond: number; note: string };
  /** The worst burst in normal operation: the first account, and the next ones only as each one's daily quota runs out. */
  normal: DrainChain | null;
  failoverAfterSeconds: number;
  assumptions: string[];
  notes: string[];
}

function line(a: CapacityAccount, role: AccountLine['role'], emailsPerDay: number): Omit<AccountLine, 'normalShare' | 'takeover'> {
  const emailsPerRequest = emailsPerRequestOf(a);
  const emailsPerSecond = a.unit === 'requests' ? a.perSecond * emailsPerRequest : a.perSecond;
  const quota = a.dailyQuota ?? null;
  const quotaEmailsPerSecond = quota === null ? null : quota / SECONDS_PER_DAY;
  return {
    name: a.name,
    provider: a.provider,
    unit: a.unit,
    role,
    permitsPerSecond: a.perSecond,
    burstPermits: a.burst,
    emailsPerRequest,
    emailsPerRequestFrom: a.batch === undefined ? 'default' : 'batch',
    providerMaxBatch: PROVIDER_MAX_BATCH[a.provider],
    requestsPerSecond: a.unit === 'requests' ? a.perSecond : a.perSecond / emailsPerRequest,
    emailsPerSecond,
    burstEmails: a.unit === 'requests' ? a.burst * emailsPerRequest : a.burst,
    dailyQuota: quota,
    quotaEmailsPerSecond,
    sustainedEmailsPerSecond: quotaEmailsPerSecond === null ? emailsPerSecond : Math.min(emailsPerSecond, quotaEmailsPerSecond),
    fullRateQuotaSeconds: quota === null ? null : quota / emailsPerSecond,
    quotaLeftAtBurst: quota === null ? null : role === 'first' ? Math.max(0, quota - emailsPerDay) : quota,
  };
}

const verdictOf = (oldest: number | null, unsent: number, promise: number): Verdict | 'quota-exhausted' =>
  unsent > 0 ? 'quota-exhausted' : oldest === null ? 'never-drains' : oldest <= promise ? 'meets' : 'misses';

/**
 * The burst through `chain` in order: each account sends what its quota
 * leaves (all of it without a quota) at min(its rate, delivery capacity)
 * less the average demand, its bucket full at the start; when its quota
 * is spent (the limiter counts it per UTC day) the rest moves to the next.
 */
function drain(chain: Array<Omit<AccountLine, 'normalShare' | 'takeover'>>, w: Workload, capacityOf: DeliveryCapacity): DrainChain {
  const baseline = w.volume.emailsPerDay / SECONDS_PER_DAY;
  let remaining = w.burst.holds;
  let total: number | null = 0;
  const stages: DrainStage[] = [];
  for (const a of chain) {
    if (remaining <= 0 || total === null) break;
    const capacity = capacityOf(a.emailsPerRequest);
    const sendRate = Math.min(a.emailsPerSecond, capacity);
    const drainRate = sendRate - baseline;
    const emails = Math.min(remaining, a.quotaLeftAtBurst ?? Infinity);
    const seconds = drainRate > 0 ? Math.max(0, emails - a.burstEmails) / drainRate : null;
    stages.push({
      account: a.name,
      emails,
      burstEmails: a.burstEmails,
      sendRatePerSecond: sendRate,
      pacedBy: capacity < a.emailsPerSecond ? 'workers' : 'limiter',
      drainRatePerSecond: drainRate,
      seconds,
      quotaRunsOut: emails < remaining,
    });
    remaining -= emails;
    total = seconds === null ? null : total + seconds;
  }
  const unsent = total === null ? 0 : remaining;
  const drainSeconds = unsent > 0 ? null : total;
  const window = w.burst.windowSeconds;
  const oldest = drainSeconds === null ? null : Math.max(0, drainSeconds - window);
  return {
    stages,
    drainSeconds,
    lastSendAtSeconds: drainSeconds === null ? null : Math.max(window, drainSeconds),
    oldestEmailAgeSeconds: oldest,
    unsentEmails: unsent,
    verdict: verdictOf(oldest, unsent, w.promiseSeconds),
  };
}

/** Emails/s the delivery workers can send to an account carrying `emailsPerRequest` per request, at the assumed latency (model.ts deliveryCapacity). */
export type DeliveryCapacity = (emailsPerRequest: number) => number;

/** The accounts report. `w` is the workload as given. */
export function accountsReport(w: Workload, input: AccountsInput, capacityOf: DeliveryCapacity): AccountsReport {
  const lines = input.accounts.map((a, i) => line(a, i === 0 ? 'first' : 'backup', w.volume.emailsPerDay));
  const hasBurst = w.burst.holds > 0;
  const normal = hasBurst ? drain(lines, w, capacityOf) : null;
  const after = input.failoverAfterSeconds;
  const accounts: AccountLine[] = lines.map((l, i) => {
    const sent = normal?.stages.find((s) => s.account === l.name)?.emails ?? 0;
    let takeover: Takeover | null = null;
    if (hasBurst && i > 0) {
      const chain = drain(lines.slice(i), w, capacityOf);
      const late = chain.drainSeconds === null ? null : Math.max(0, after + chain.drainSeconds - w.burst.windowSeconds);
      takeover = {
        ...chain,
        stopped: lines.slice(0, i).map((s) => s.name),
        afterCooldown: { oldestEmailAgeSeconds: late, verdict: verdictOf(late, chain.unsentEmails, w.promiseSeconds) },
      };
    }
    return { ...l, normalShare: hasBurst ? sent / w.burst.holds : null, takeover };
  });

  const notes = [...input.notes];
  if (input.notInFailover.length > 0) notes.push(`${input.notInFailover.join(', ')}: not in failover, so never sent through`);

  return {
    source: input.source,
    file: input.file,
    failover: accounts.map((a) => a.name),
    notInFailover: input.notInFailover,
    accounts,
    combined: {
      emailsPerSecond: accounts.reduce((sum, a) => sum + a.emailsPerSecond, 0),
      sustainedEmailsPerSecond: accounts.reduce((sum, a) => sum + a.sustainedEmailsPerSecond, 0),
      note:
        accounts.length === 1
          ? 'one account'
          : 'a ceiling the lane does not use: new intents go to the first account; ' +
            `the others send only what moves to them while an account before them is paused or cooling down past ${after} s`,
    },
    normal,
    failoverAfterSeconds: after,
    assumptions: [
      'emails per request: the account\'s batch, else the provider\'s maximum (Resend 100, Postmark 500; SES, SMTP and the sandbox have no batch API: 1); batch 1 turns batching off',
      'emails/s: a requests-unit account\'s permit pays for one request whatever its size, so permits/s x emails per request (full batches: with fewer due, a request carries fewer, so this is a ceiling); an emails-unit account\'s permit is one email, so permits/s',
      'daily quota: a sustained load averages at most quota / 86,400 emails/s; the limiter counts it per UTC day, and at the burst the first account has already used a day\'s average demand of it (the worst case: a burst late in the day), a backup none',
      'normal: the first account sends the burst; only when its daily quota is spent does the rest move to the next account (as when a provider pauses it)',
      `takeover: every account before it has stopped (paused, or cooling down past LEASEHOLD_FAILOVER_AFTER_S = ${after} s) when the burst starts; after a cooldown, the intents move ${after} s after it began`,
      'each account\'s bucket is full when it starts; average demand keeps arriving and goes to the account sending; delivery capacity is the emails the workers keep in flight on that account (a round leases up to a batch per free request slot, at most the larger of its round size and one batch) / the round time',
    ],
    notes,
  };
}

/**
 * The workload the rest of the model reads: its provider fields are the
 * first account's in emails (it sends everything in normal operation).
 * Unchanged when the accounts are the workload's own single account and
 * its permits are emails (one per request, or an emails unit).
 */
export function firstAccountWorkload(w: Workload, report: AccountsReport): Workload {
  const first = report.accounts[0]!;
  if (report.source === 'flags' && first.emailsPerSecond === w.provider.perSecond && first.burstEmails === w.provider.burst) return w;
  const { dailyQuota: _drop, ...provider } = w.provider;
  return {
    ...w,
    provider: {
      ...provider,
      name: first.provider,
      perSecond: first.emailsPerSecond,
      burst: first.burstEmails,
      ...(first.dailyQuota !== null ? { dailyQuota: first.dailyQuota } : {}),
    },
  };
}
