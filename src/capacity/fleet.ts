import { SECONDS_PER_DAY } from './constants.js';
import { PROVIDER_MAX_BATCH, type AccountsInput, type AccountsSource, type CapacityAccount } from './accounts.js';
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
  /** Emails one provider request carries: 1 while the lane does not batch (LANE_BATCHES); then the file's batch, capped at the provider's maximum. */
  emailsPerRequest: number;
  /** 'batch': given in the file; 'default': none given. */
  emailsPerRequestFrom: 'batch' | 'default';
  /** The file's batch (capped at the provider's maximum), whether or not the lane sends batches yet; null: none given. */
  batchPlanned: number | null;
  /** The provider's documented maximum per request (null: none known). */
  providerMaxBatch: number | null;
  /** The file's batch when it was above the provider's maximum (and so capped). */
  batchCappedFrom: number | null;
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

/**
 * Whether the delivery lane sends several emails per provider request. Not
 * yet: every request carries one email, whatever `batch` says, and the
 * model says what the lane does today, not what it will.
 */
export const LANE_BATCHES = false;

function line(a: CapacityAccount, role: AccountLine['role'], emailsPerDay: number): Omit<AccountLine, 'normalShare' | 'takeover'> {
  const max = PROVIDER_MAX_BATCH[a.provider];
  const planned = a.batch === undefined ? null : max === null ? a.batch : Math.min(a.batch, max);
  const emailsPerRequest = LANE_BATCHES && planned !== null ? planned : 1;
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
    batchPlanned: planned,
    providerMaxBatch: max,
    batchCappedFrom: a.batch !== undefined && max !== null && a.batch > max ? a.batch : null,
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
function drain(chain: Array<Omit<AccountLine, 'normalShare' | 'takeover'>>, w: Workload, sendsPerSecond: number): DrainChain {
  const baseline = w.volume.emailsPerDay / SECONDS_PER_DAY;
  let remaining = w.burst.holds;
  let total: number | null = 0;
  const stages: DrainStage[] = [];
  for (const a of chain) {
    if (remaining <= 0 || total === null) break;
    const capacity = sendsPerSecond * a.emailsPerRequest;
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

/**
 * The accounts report. `w` is the workload as given; `sendsPerSecond` what
 * the delivery workers can send at the assumed latency (model.ts
 * deliveryCapacity), one provider request per send.
 */
export function accountsReport(w: Workload, input: AccountsInput, sendsPerSecond: number): AccountsReport {
  const lines = input.accounts.map((a, i) => line(a, i === 0 ? 'first' : 'backup', w.volume.emailsPerDay));
  const hasBurst = w.burst.holds > 0;
  const normal = hasBurst ? drain(lines, w, sendsPerSecond) : null;
  const after = input.failoverAfterSeconds;
  const accounts: AccountLine[] = lines.map((l, i) => {
    const sent = normal?.stages.find((s) => s.account === l.name)?.emails ?? 0;
    let takeover: Takeover | null = null;
    if (hasBurst && i > 0) {
      const chain = drain(lines.slice(i), w, sendsPerSecond);
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
  for (const a of accounts) {
    if (a.batchCappedFrom !== null) {
      notes.push(`${a.name}: batch ${a.batchCappedFrom} is more than ${a.provider} takes in one request; modelled as ${a.providerMaxBatch}`);
    }
  }
  const batched = accounts.filter((a) => a.batchPlanned !== null && a.batchPlanned > a.emailsPerRequest);
  if (batched.length > 0) {
    notes.push(
      `batching is not built yet: the batch of ${batched.map((a) => `${a.name} (${a.batchPlanned})`).join(', ')} is read but not used; ` +
        `every request carries one email today, and the figures are today's`,
    );
  }
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
      'emails/s: requests-unit accounts permits/s x emails per request, emails-unit accounts permits/s; emails per request is the batch the file gives (capped at the provider maximum: Resend 100, Postmark 500, SES and SMTP 1), else 1',
      'daily quota: a sustained load averages at most quota / 86,400 emails/s; the limiter counts it per UTC day, and at the burst the first account has already used a day\'s average demand of it (the worst case: a burst late in the day), a backup none',
      'normal: the first account sends the burst; only when its daily quota is spent does the rest move to the next account (as when a provider pauses it)',
      `takeover: every account before it has stopped (paused, or cooling down past LEASEHOLD_FAILOVER_AFTER_S = ${after} s) when the burst starts; after a cooldown, the intents move ${after} s after it began`,
      'each account\'s bucket is full when it starts; average demand keeps arriving and goes to the account sending; delivery capacity is the workers\' sends/s x emails per request',
    ],
    notes,
  };
}

/**
 * The workload the rest of the model reads: its provider fields are the
 * first account's in emails (it sends everything in normal operation).
 * Unchanged when the accounts are the workload's own single account.
 */
export function firstAccountWorkload(w: Workload, report: AccountsReport): Workload {
  if (report.source === 'flags') return w;
  const first = report.accounts[0]!;
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
