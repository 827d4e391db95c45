import {
  DAYS_PER_MONTH,
  DELIVERY_POLL_PER_SECOND,
  DELIVERY_ROUND_OVERHEAD_MS,
  EXPIRY_HOLDS_PER_SECOND,
  EXPIRY_TICK_MS,
  MEASURED,
  SECONDS_PER_DAY,
  STATEMENTS,
} from './constants.js';
import { roundEmails, roundSize as roundSizeOf, roundsInFlight } from '../model/delivery-policy.js';
import { designCosts, type DesignCost } from './costs.js';
import { accountsReport, firstAccountWorkload, type AccountsReport } from './fleet.js';
import { singleAccount, type AccountsInput } from './accounts.js';
import type { Workload } from './input.js';
import type { PriceTable } from './prices.js';
import { pricesUsed, type PriceUsed } from './prices-used.js';
import type { RowCounts, RowsReport, StatementRates, StatementsReport, Verdict } from './reports.js';
import { deadlineRisks, type DeadlineRisk } from './deadlines.js';

export type { DeadlineRisk, PriceUsed };
export type { RowCounts, RowsReport, StatementRates, StatementsReport, Verdict };

/**
 * The workload and cost model: pure arithmetic over a validated workload
 * and price table, no I/O. Every figure comes with the formula or the
 * assumption behind it, because a capacity estimate nobody can check is
 * worse than none.
 */

export interface BurstReport {
  holds: number;
  windowSeconds: number;
  limiterPerSecond: number;
  limiterBurst: number;
  /** The average email rate that keeps arriving while the burst drains. */
  baselinePerSecond: number;
  /** What the delivery workers can send at the assumed provider latency. */
  deliveryCapacityPerSecond: number;
  pacedBy: 'limiter' | 'workers';
  /** Rate left for the burst: min(limit, capacity) - baseline. */
  drainRatePerSecond: number;
  /** (burst holds - limiter burst) / drain rate; null when it never drains. */
  drainSeconds: number | null;
  /** When the burst's last email leaves, from the burst's start: max(window, drain). */
  lastSendAtSeconds: number | null;
  /** Oldest pending email at the worst moment: max(0, drain - window). */
  oldestEmailAgeSeconds: number | null;
  promiseSeconds: number;
  verdict: Verdict;
  /** Expiry lane: the whole burst at the measured throughput. */
  expiryCatchUpSeconds: number;
  expiryPromiseSeconds: number;
  expiryVerdict: 'meets' | 'misses';
  /** Each kind whose emails carry a deadline: would the burst's emails make it (LEASEHOLD_NOTICE_DEADLINE_S, LEASEHOLD_REMIND_BEFORE_S)? */
  deadlines: DeadlineRisk[];
  formula: string;
}

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

/** Intents one delivery round leases: the worker caps the batch at its concurrency. */
export const roundSize = (w: Workload): number => roundSizeOf(w.deployment.deliveryBatch, w.deployment.deliveryConcurrency);

/**
 * What one delivery round leases on an account carrying `emailsPerRequest`
 * per request, as delivery/legs.ts does: a send slot is a request, a round
 * reserves roundSize slots and leases up to a batch per slot, but no more
 * than the larger of roundSize and one batch. Without batching: roundSize
 * emails in as many requests.
 */
export function roundLease(w: Workload, emailsPerRequest = 1): { emails: number; requests: number } {
  const k = roundSize(w);
  const emails = roundEmails(k, k, emailsPerRequest);
  return { emails, requests: Math.ceil(emails / Math.max(1, emailsPerRequest)) };
}

/**
 * What one worker keeps in flight: its rounds overlap (model/delivery-policy.ts
 * roundsInFlight), their requests never more than its concurrency, each
 * carrying its round's share of emails.
 */
export function inFlightPerWorker(w: Workload, emailsPerRequest = 1): { requests: number; emails: number } {
  const round = roundLease(w, emailsPerRequest);
  const rounds = roundsInFlight(w.deployment.deliveryBatch, w.deployment.deliveryConcurrency);
  const requests = Math.min(w.deployment.deliveryConcurrency, rounds * round.requests);
  return { requests, emails: (requests * round.emails) / round.requests };
}

/** Seconds one round takes: the provider call plus the round's own statements. */
const roundSeconds = (w: Workload): number => (w.provider.latencyMs + DELIVERY_ROUND_OVERHEAD_MS) / 1000;

/**
 * Emails/s the delivery workers can send at the assumed latency: the emails
 * they keep in flight / round time, on an account carrying
 * `emailsPerRequest` per provider request (its batch; 1 without batching).
 */
export function deliveryCapacity(w: Workload, emailsPerRequest = 1): number {
  return (w.deployment.workers * inFlightPerWorker(w, emailsPerRequest).emails) / roundSeconds(w);
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

function expiryTicksPerWorker(w: Workload, duePerSecond: number): number {
  return Math.max(1000 / w.deployment.expiryIntervalMs, Math.min(duePerSecond, 1000 / EXPIRY_TICK_MS));
}

/** What a round leases, for the assumptions. */
function leased(w: Workload, emailsPerRequest: number): string {
  const k = roundSize(w);
  if (emailsPerRequest <= 1) return `min(batch, concurrency) = ${k}`;
  const round = roundLease(w, emailsPerRequest);
  return `a batch of ${emailsPerRequest} per free slot of min(batch, concurrency) = ${k}, at most max(${k}, ${emailsPerRequest}) = ${round.emails} emails in ${round.requests} request(s)`;
}

export function statementsReport(w: Workload, burst: BurstReport | null, emailsPerRequest = 1): StatementsReport {
  const workers = w.deployment.workers;
  const e = w.volume.emailsPerDay / SECONDS_PER_DAY;
  const h = e / w.volume.expiredShare;
  const S = STATEMENTS;

  const application = h * S.holdCreate + (h - e) * S.holdSettle;

  // Every expiry worker wakes when the next hold falls due (at least once per
  // interval); one of them takes it, each pays a short tick.
  const ticks = expiryTicksPerWorker(w, e);
  const expiry = workers * ticks * S.expiryShortTick;
  // Each tick that created intents NOTIFYs every delivery process, which
  // wakes one of its round loops: the one that gets them runs a sending
  // round (a short one: fewer due than permits, so it sleeps again); the
  // others one empty round each. Without a wake-up each polls once a second.
  const wakes = Math.min(e, ticks);
  // An account sending batches takes its permits in a statement before the lease.
  const take = emailsPerRequest > 1 ? S.deliverySeparateTake : 0;
  const perWake = S.deliverySendingRound + take + (workers - 1) * (S.deliveryEmptyRound + take);
  const polls = workers * Math.max(0, DELIVERY_POLL_PER_SECOND - wakes) * (S.deliveryEmptyRound + take);
  const retries = e * (w.deployment.attemptsPerEmail - 1) * (S.deliveryRetryRound + take);
  const delivery = wakes * perWake + polls + retries;
  const average = { expiry, delivery, application, total: expiry + delivery + application };

  let burstRates: StatementsReport['burst'] = null;
  if (burst) {
    let burstExpiry: number;
    let expirySeconds: number;
    if (burst.windowSeconds === 0) {
      expirySeconds = burst.expiryCatchUpSeconds;
      // All due at once: full batches back to back at the measured throughput.
      burstExpiry = (EXPIRY_HOLDS_PER_SECOND / w.deployment.expiryBatch) * S.expiryFullTick;
    } else {
      expirySeconds = burst.windowSeconds;
      const due = burst.holds / burst.windowSeconds + e;
      const t = expiryTicksPerWorker(w, due);
      burstExpiry = due / t >= w.deployment.expiryBatch ? (due / w.deployment.expiryBatch) * S.expiryFullTick : workers * t * S.expiryShortTick;
    }
    // Draining: rounds of k intents; when the limiter paces and fewer permits
    // arrive per round than there are workers, idle workers' takes are refused.
    // In provider requests: a request carries a round's emails / its requests (a full batch, when the batch is at least the round size).
    const round = roundLease(w, emailsPerRequest);
    const rate = (Math.min(burst.limiterPerSecond, burst.deliveryCapacityPerSecond) * round.requests) / round.emails;
    const inFlight = rate * roundSeconds(w);
    const k = Math.min(round.requests, Math.max(1, inFlight / workers));
    const rounds = rate / k;
    const refused = burst.pacedBy === 'limiter' && inFlight < workers ? rate * (workers - inFlight) : 0;
    const burstDelivery = rounds * (S.deliverySendingRound + take) + refused * S.deliveryRefusedTake;
    burstRates = {
      expiry: burstExpiry,
      delivery: burstDelivery,
      application,
      total: burstExpiry + burstDelivery + application,
      expirySeconds,
      seconds: burst.drainSeconds,
    };
  }

  return {
    average,
    burst: burstRates,
    assumptions: [
      `expiry: each of ${workers} worker(s) ticks when the next hold falls due, at least every ${w.deployment.expiryIntervalMs} ms, ` +
        `at most every ${EXPIRY_TICK_MS} ms; a tick is one set-based expire statement, committed on its own, that also looks ahead when the batch was short`,
      `delivery: a round is the lease (which takes its permits from the limiter and gives back what it did not use${take ? '; an account sending batches takes them in a statement before it' : ''}) + messagesStore (first attempts) + intentsRecord ` +
        `(one statement each, however many intents) and leases up to ${leased(w, emailsPerRequest)}, ` +
        `with rounds side by side up to ${inFlightPerWorker(w, emailsPerRequest).requests} requests in flight; at low rates every NOTIFY wakes all ${workers} process(es) and idle ones poll once a second`,
      'burst: holds all due at once expire in full batches at the measured 38,735 holds/s (a fraction of a second); while it drains, a delivery round carries the permits that refilled during one provider call, and idle workers\' limiter takes are refused when permits are scarcer than workers',
      'application: one INSERT per hold (createHold) and one UPDATE per confirmed or cancelled hold; reads by the API, /metrics and the dashboard are not counted',
    ],
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
