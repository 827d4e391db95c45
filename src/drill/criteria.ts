/**
 * The drill's verdict, as a pure function of what it observed: the samples
 * of /v1/status taken every second and the stories of the drill's own holds.
 * Every time here is in seconds since the drill started, on one clock (the
 * drill converts the database's timestamps to it, see clock offset in run.ts).
 */

export interface DrillPolicy {
  perSecond: number;
  burst: number;
}

export interface DrillPromises {
  expiryPromiseS: number;
  emailPromiseS: number;
}

/** One reading of GET /v1/status. */
export interface DrillSample {
  t: number;
  paused: boolean;
  backlog: number;
  oldestPendingAgeS: number;
  dueHolds: number;
  oldestDueAgeS: number;
}

export interface DrillAttempt {
  /** When the attempt opened (it opens in the statement that leases it, right after its permit). */
  startedAt: number;
  outcome: string | null;
}

/** One drill hold's story, from GET /v1/holds/:id. */
export interface DrillHold {
  id: string;
  expiresAt: number;
  expiredAt: number | null;
  acceptedAt: number | null;
  attempts: DrillAttempt[];
}

export interface DrillObservations {
  policy: DrillPolicy;
  promises: DrillPromises;
  holdWindowS: number;
  /** The pause took effect (the API answered). */
  pausedAt: number;
  /** The resume request was sent. */
  resumedAt: number;
  /** Pending intents (the deployment's whole backlog) just before the resume. */
  backlogAtResume: number;
  samples: DrillSample[];
  holds: DrillHold[];
}

/**
 * How long the backlog should take to drain at the policy: the bucket's
 * burst goes at once, the rest at perSecond.
 */
export function predictedDrainSeconds(backlog: number, policy: DrillPolicy): number {
  return Math.max(0, backlog - policy.burst) / policy.perSecond;
}

/**
 * Slack on the predicted drain: the one-second sampling, the delivery lane's
 * wake-up after the resume (it polls a paused limiter once a second) and a
 * provider round trip. Ten percent on top covers a slow machine.
 */
export function drainAllowanceSeconds(predictedS: number): number {
  return predictedS * 1.1 + 3;
}

/**
 * The most sends whose start falls in any half-open window [t, t + windowS),
 * over every such window (enough to check the ones starting at a send).
 */
export function maxSendsInWindow(times: number[], windowS: number): { count: number; from: number | null } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let from: number | null = null;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    if (j < i) j = i;
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowS) j++;
    if (j - i > best) {
      best = j - i;
      from = sorted[i]!;
    }
  }
  return { count: best, from };
}

export type CriterionName = 'expiry-on-time' | 'silent-while-paused' | 'no-burst' | 'recovered' | 'all-delivered';

export interface Criterion {
  name: CriterionName;
  /** What must hold, in the report's words. */
  rule: string;
  passed: boolean;
  /** What was measured. */
  observed: string;
}

export interface DrillVerdict {
  passed: boolean;
  criteria: Criterion[];
  predictedDrainS: number;
  allowedDrainS: number;
  /** Seconds after the resume when the oldest pending age was first back within the promise; null if never. */
  recoveredAfterS: number | null;
  /** Most sends in any 1 s window, and the bound burst + perSecond. */
  maxSendsPerWindow: number;
  sendLimitPerWindow: number;
  /** Highest oldest pending age seen, against the email promise. */
  peakOldestPendingAgeS: number;
}

// Attempts started this long before the resume request count as sent while
// paused. The database's timestamps are converted to the drill's clock with
// an error up to half a request's round trip; a quarter second covers it.
const CLOCK_TOLERANCE_S = 0.25;

const fmt = (n: number) => (Math.round(n * 10) / 10).toFixed(1);

export function evaluateDrill(o: DrillObservations): DrillVerdict {
  const { policy, promises } = o;
  const criteria: Criterion[] = [];

  // 1. Expiry kept its promise while email was paused: every drill hold was
  // expired within the expiry promise of its deadline, and no sample taken
  // while paused saw a due hold older than the promise.
  const lateness = o.holds.map((h) => (h.expiredAt === null ? Infinity : h.expiredAt - h.expiresAt));
  const notExpired = o.holds.filter((h) => h.expiredAt === null).length;
  const maxLateness = lateness.length ? Math.max(...lateness) : 0;
  const pausedSamples = o.samples.filter((s) => s.t >= o.pausedAt && s.t < o.resumedAt);
  const maxDueAge = Math.max(0, ...pausedSamples.map((s) => s.oldestDueAgeS));
  criteria.push({
    name: 'expiry-on-time',
    rule: `while delivery was paused, every hold expired within the expiry promise (${promises.expiryPromiseS} s) of its deadline`,
    passed: o.holds.length > 0 && notExpired === 0 && maxLateness <= promises.expiryPromiseS && maxDueAge <= promises.expiryPromiseS,
    observed:
      (o.holds.length === 0 ? 'no drill holds were created; ' : '') +
      (notExpired > 0 ? `${notExpired} of ${o.holds.length} holds never expired; ` : '') +
      `latest expiry ${notExpired > 0 ? 'never' : `${fmt(maxLateness)} s`} after the deadline; oldest due hold while paused ${fmt(maxDueAge)} s`,
  });

  // 2. Pausing stops sends: no drill intent was attempted before the resume.
  const attempts = o.holds.flatMap((h) => h.attempts);
  const early = attempts.filter((a) => a.startedAt < o.resumedAt - CLOCK_TOLERANCE_S).length;
  criteria.push({
    name: 'silent-while-paused',
    rule: 'no drill email was attempted while delivery was paused',
    passed: early === 0,
    observed: `${early} attempt${early === 1 ? '' : 's'} before the resume`,
  });

  // 3. No burst beyond the limit: every attempt took a permit, whatever its
  // outcome, so all of them count.
  const sendLimitPerWindow = policy.burst + policy.perSecond;
  const peak = maxSendsInWindow(
    attempts.map((a) => a.startedAt),
    1,
  );
  criteria.push({
    name: 'no-burst',
    rule: `no 1 s window holds more than burst + perSecond = ${policy.burst} + ${policy.perSecond} = ${sendLimitPerWindow} sends`,
    passed: peak.count <= sendLimitPerWindow,
    observed: `at most ${peak.count} sends in one 1 s window` + (peak.from === null ? '' : ` (from t=${fmt(peak.from)} s)`),
  });

  // 4. The oldest pending age came back within the promise in the predicted drain time.
  const predictedDrainS = predictedDrainSeconds(o.backlogAtResume, policy);
  const allowedDrainS = drainAllowanceSeconds(predictedDrainS);
  const after = o.samples.filter((s) => s.t >= o.resumedAt);
  const back = after.find((s) => s.oldestPendingAgeS <= promises.emailPromiseS);
  const recoveredAfterS = back ? back.t - o.resumedAt : null;
  const peakOldestPendingAgeS = Math.max(0, ...o.samples.map((s) => s.oldestPendingAgeS));
  criteria.push({
    name: 'recovered',
    rule:
      `the oldest pending age was back within the email promise (${promises.emailPromiseS} s) within the predicted drain time ` +
      `(${o.backlogAtResume} pending - burst ${policy.burst}) / ${policy.perSecond}/s = ${fmt(predictedDrainS)} s, allowed ${fmt(allowedDrainS)} s`,
    passed: recoveredAfterS !== null && recoveredAfterS <= allowedDrainS,
    observed:
      recoveredAfterS === null
        ? `still ${fmt(after.at(-1)?.oldestPendingAgeS ?? peakOldestPendingAgeS)} s old at the last sample`
        : `back within the promise ${fmt(recoveredAfterS)} s after the resume (peak ${fmt(peakOldestPendingAgeS)} s)`,
  });

  // 5. Nothing lost: every drill hold's email was accepted, the last one within the same allowance.
  const accepted = o.holds.filter((h) => h.acceptedAt !== null);
  const lastAccepted = accepted.length ? Math.max(...accepted.map((h) => h.acceptedAt!)) - o.resumedAt : null;
  criteria.push({
    name: 'all-delivered',
    rule: `every drill hold's email was accepted, the last within ${fmt(allowedDrainS)} s of the resume`,
    passed: o.holds.length > 0 && accepted.length === o.holds.length && lastAccepted !== null && lastAccepted <= allowedDrainS,
    observed: `${accepted.length} of ${o.holds.length} accepted` + (lastAccepted === null ? '' : `, the last ${fmt(lastAccepted)} s after the resume`),
  });

  return {
    passed: criteria.every((c) => c.passed),
    criteria,
    predictedDrainS,
    allowedDrainS,
    recoveredAfterS,
    maxSendsPerWindow: peak.count,
    sendLimitPerWindow,
    peakOldestPendingAgeS,
  };
}
