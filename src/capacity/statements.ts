import { DELIVERY_POLL_PER_SECOND, EXPIRY_HOLDS_PER_SECOND, EXPIRY_TICK_MS, SECONDS_PER_DAY, STATEMENTS } from './constants.js';
import type { Workload } from './input.js';
import type { BurstReport, StatementsReport } from './reports.js';
import { inFlightPerWorker, roundLease, roundSeconds, roundSize } from './rounds.js';

/**
 * Database statements per second, on average and at the worst burst,
 * counted from the statements each lane issues per batch or round
 * (constants.ts STATEMENTS, read off the workers).
 */

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
