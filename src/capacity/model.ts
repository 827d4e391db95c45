import { DAYS_PER_MONTH, EXPIRY_HOLDS_PER_SECOND, MEASURED, SECONDS_PER_DAY } from './constants.js';
import { designCosts, type DesignCost } from './costs.js';
import { accountsReport, firstAccountWorkload, type AccountsReport } from './fleet.js';
import { singleAccount, type AccountsInput } from './accounts.js';
import type { Workload } from './input.js';
import type { PriceTable } from './prices.js';
import { pricesUsed, type PriceUsed } from './prices-used.js';
import type { BurstReport, RowCounts, RowsReport, StatementRates, StatementsReport, Verdict } from './reports.js';
import { deadlineRisks, type DeadlineRisk } from './deadlines.js';
import { deliveryCapacity } from './rounds.js';
import { statementsReport } from './statements.js';

export type { DeadlineRisk, PriceUsed };
export type { BurstReport, RowCounts, RowsReport, StatementRates, StatementsReport, Verdict };

/**
 * The workload and cost model: pure arithmetic over a validated workload
 * and price table, no I/O. Every figure comes with the formula or the
 * assumption behind it, because a capacity estimate nobody can check is
 * worse than none.
 */

export interface SteadyReport {
  emailsPerSecond: number;
  /** min(limiter rate, delivery capacity). */
  sendRatePerSecond: number;
  pacedBy: 'limiter' | 'workers';
  utilisation: number;
  verdict: 'keeps-up' | 'falls-behind';
}

export interface QuotaReport {
  dailyQuota: number | null;
  emailsPerDay: number;
  /** emailsPerDay / dailyQuota. */
  share: number | null;
  verdict: 'no-quota' | 'within' | 'exceeds';
  note: string;
}

export interface CapacityReport {
  workload: Workload;
  derived: {
    holdsPerDay: number;
    emailsPerSecond: number;
    holdsPerSecond: number;
    emailsPerMonth: number;
    holdsPerMonth: number;
  };
  steady: SteadyReport;
  burst: BurstReport | null;
  quota: QuotaReport;
  /** Each provider account's rate in emails, and the worst burst through them in failover order. */
  accounts: AccountsReport;
  rows: RowsReport;
  statements: StatementsReport;
  costs: DesignCost[];
  /** The table's own notes, and each price the costs used with the page it came from and its date. */
  prices: { region: string; recorded: string; warning: string; used: PriceUsed[] };
  unknowns: string[];
}

export function burstReport(w: Workload, emailsPerRequest = 1): BurstReport | null {
  const { holds, windowSeconds } = w.burst;
  if (holds === 0) return null;
  const limit = w.provider.perSecond;
  const capacity = deliveryCapacity(w, emailsPerRequest);
  const baseline = w.volume.emailsPerDay / SECONDS_PER_DAY;
  const drainRate = Math.min(limit, capacity) - baseline;
  const excess = Math.max(0, holds - w.provider.burst);
  const drainSeconds = drainRate > 0 ? excess / drainRate : null;
  const lastSendAtSeconds = drainSeconds === null ? null : Math.max(windowSeconds, drainSeconds);
  const oldest = drainSeconds === null ? null : Math.max(0, drainSeconds - windowSeconds);
  const verdict: Verdict = oldest === null ? 'never-drains' : oldest <= w.promiseSeconds ? 'meets' : 'misses';
  const expiryCatchUpSeconds = holds / EXPIRY_HOLDS_PER_SECOND;
  return {
    holds,
    windowSeconds,
    limiterPerSecond: limit,
    limiterBurst: w.provider.burst,
    baselinePerSecond: baseline,
    deliveryCapacityPerSecond: capacity,
    pacedBy: capacity < limit ? 'workers' : 'limiter',
    drainRatePerSecond: drainRate,
    drainSeconds,
    lastSendAtSeconds,
    oldestEmailAgeSeconds: oldest,
    promiseSeconds: w.promiseSeconds,
    verdict,
    expiryCatchUpSeconds,
    expiryPromiseSeconds: w.expiryPromiseSeconds,
    expiryVerdict: expiryCatchUpSeconds <= w.expiryPromiseSeconds ? 'meets' : 'misses',
    deadlines: deadlineRisks(w.deadlines, { holds, windowSeconds, limiterBurst: w.provider.burst, drainRatePerSecond: drainRate, drainSeconds }),
    formula:
      'drain = max(0, burst holds - limiter burst) / (min(limit, delivery capacity) - average email rate); ' +
      'oldest age = max(0, drain - burst window), holds falling due evenly over the window and the bucket full when it starts',
  };
}

export function steadyReport(w: Workload, emailsPerRequest = 1): SteadyReport {
  const emailsPerSecond = w.volume.emailsPerDay / SECONDS_PER_DAY;
  const capacity = deliveryCapacity(w, emailsPerRequest);
  const sendRate = Math.min(w.provider.perSecond, capacity);
  const utilisation = emailsPerSecond / sendRate;
  return {
    emailsPerSecond,
    sendRatePerSecond: sendRate,
    pacedBy: capacity < w.provider.perSecond ? 'workers' : 'limiter',
    utilisation,
    verdict: utilisation < 1 ? 'keeps-up' : 'falls-behind',
  };
}

export function quotaReport(w: Workload): QuotaReport {
  const quota = w.provider.dailyQuota ?? null;
  // Quotas count accepted messages, not attempts.
  const emails = w.volume.emailsPerDay;
  if (quota === null) {
    return {
      dailyQuota: null,
      emailsPerDay: emails,
      share: null,
      verdict: 'no-quota',
      note: 'no daily quota given (--daily-quota); the provider may still enforce one',
    };
  }
  const share = emails / quota;
  return {
    dailyQuota: quota,
    emailsPerDay: emails,
    share,
    verdict: share <= 1 ? 'within' : 'exceeds',
    note:
      share <= 1
        ? `emails use ${(share * 100).toFixed(0)}% of the daily quota`
        : `over quota by ${Math.ceil(emails - quota)} a day: the provider refuses the rest, delivery pauses and the backlog grows every day`,
  };
}

export function rowsReport(w: Workload): RowsReport {
  const emails = w.volume.emailsPerDay;
  const holds = emails / w.volume.expiredShare;
  const attempts = emails * w.deployment.attemptsPerEmail;
  const bloat = w.storage.bloatFactor;
  const b = MEASURED.bytesPerRow;
  const bytes = (holds * b.hold + emails * b.intent + attempts * b.attempt) * bloat;
  const days = w.retentionDays;
  return {
    perDay: { holds, intents: emails, attempts, bytes },
    atRetention: { days, holds: holds * days, intents: emails * days, attempts: attempts * days, bytes: bytes * days },
    liveHolds: (holds / SECONDS_PER_DAY) * w.holdWindowSeconds,
    bytesPerRow: { ...b },
    bloatFactor: bloat,
    assumption:
      `rows x bytes measured per row on a migrated schema (hold ${b.hold}, intent ${b.intent}, attempt ${b.attempt} B, indexes included) x ${bloat} for update churn; ` +
      `kept ${days} days (leasehold prune); held holds and pending intents are too few to matter`,
  };
}

export function unknowns(w: Workload, accounts?: AccountsReport): string[] {
  const list = [
    "The provider's real limits: the rate, burst and daily quota your account is granted, and undisclosed throttling (Postmark publishes no rate limit; Resend and SES limits are per account). The model trusts the numbers given.",
    `Provider latency: assumed ${w.provider.latencyMs} ms per send (--latency-ms); it decides how many sends a delivery process keeps in flight.`,
    'The application that creates and confirms holds: its API servers are the same in every design and not costed (in this design `leasehold start` can serve the API itself).',
    'Network egress, NAT gateways, load balancers and cross-AZ traffic: not costed in any design.',
    'Human cost: on-call, incident recovery, replaying or reconciling lost or duplicated emails, and the engineering time to build and run each design. Often the largest line, and not computable here.',
    'Taxes, discounts, savings plans, reserved instances, support plans, and free tiers already used by other workloads in the account.',
    'Metrics and alerting: leasehold exposes Prometheus metrics; where they are scraped, stored and alerted on is your infrastructure.',
    'Your metadata, addresses and ids: row sizes were measured with a small metadata object; large metadata grows the holds table.',
    'High availability: one single-AZ database instance; Multi-AZ, read replicas and cross-region recovery change the database lines.',
    'How often sends are duplicated or rejected in practice, and what a lost or late email costs your business.',
  ];
  if (accounts && accounts.accounts.length > 1) {
    list.unshift(
      'Which account sends: the model puts every email on the first account in failover (the email cost line prices its provider); ' +
        'how often and how long it is paused or cooling down in practice, and so how much the backups carry, is not knowable here.',
    );
  }
  const batching = accounts?.accounts.filter((a) => a.emailsPerRequest > 1) ?? [];
  if (batching.length > 0) {
    list.unshift(
      `How full the batches are: the figures count full batches (${batching.map((a) => `${a.name} ${a.emailsPerRequest}`).join(', ')} emails per request); ` +
        'a round sends what is due, so at low demand a request carries fewer and a requests-unit account sends fewer emails per permit. ' +
        `A batch request may also take longer than the ${w.provider.latencyMs} ms assumed per send.`,
    );
  }
  if (w.provider.name === 'sandbox' || w.provider.name === 'smtp') {
    list.unshift(
      accounts && accounts.source !== 'flags'
        ? `Email price: the first account's provider '${w.provider.name}' has no price in the table; edit the email section of the price table.`
        : `Email price: provider '${w.provider.name}' has no price in the table; choose --provider or edit the email section of the price table.`,
    );
  }
  return list;
}

/** The daily quota of the account that sends (the first in failover), as the accounts file gives it. */
function quotaOfFirst(w: Workload, accounts: AccountsReport): QuotaReport {
  const q = quotaReport(w);
  if (accounts.source === 'flags' || q.dailyQuota !== null) return q;
  return { ...q, note: `the first account (${accounts.accounts[0]!.name}) has no dailyQuota in the accounts file; the provider may still enforce one` };
}

/**
 * The whole report. `accounts` (default: the workload's own single account)
 * are the provider accounts in failover order; the first one, which sends
 * everything in normal operation, sets the provider fields the sending
 * rate, burst, quota and cost lines read, in emails.
 */
export function capacityModel(given: Workload, prices: PriceTable, accounts: AccountsInput = singleAccount(given)): CapacityReport {
  const accountLines = accountsReport(given, accounts, (emailsPerRequest) => deliveryCapacity(given, emailsPerRequest));
  const w = firstAccountWorkload(given, accountLines);
  const perRequest = accountLines.accounts[0]!.emailsPerRequest;
  const emailsPerSecond = w.volume.emailsPerDay / SECONDS_PER_DAY;
  const holdsPerDay = w.volume.emailsPerDay / w.volume.expiredShare;
  const burst = burstReport(w, perRequest);
  const rows = rowsReport(w);
  const statements = statementsReport(w, burst, perRequest);
  return {
    workload: w,
    derived: {
      holdsPerDay,
      emailsPerSecond,
      holdsPerSecond: holdsPerDay / SECONDS_PER_DAY,
      emailsPerMonth: w.volume.emailsPerDay * DAYS_PER_MONTH,
      holdsPerMonth: holdsPerDay * DAYS_PER_MONTH,
    },
    steady: steadyReport(w, perRequest),
    burst,
    quota: quotaOfFirst(w, accountLines),
    accounts: accountLines,
    rows,
    statements,
    costs: designCosts(w, prices, { rows, statements }),
    prices: { region: prices.region, recorded: prices.recorded, warning: prices.warning, used: pricesUsed(w, prices) },
    unknowns: unknowns(w, accountLines),
  };
}
