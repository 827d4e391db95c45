import type { Queryable } from '../db/pool.js';
import { STATUS_READ_TIMEOUT_MS, withTimeout } from '../runtime/timeout.js';
import type { Logger } from '../observability/logger.js';
import { laneStats, type LaneStats } from './stats.js';

/**
 * Health as an operator means it: not "the process is up" but "both lanes
 * keep their promises". A quiet worker whose oldest item keeps ageing is
 * failing, so the ages are compared against LEASEHOLD_EXPIRY_PROMISE_S and
 * LEASEHOLD_EMAIL_PROMISE_S; a paused delivery lane is reported with its
 * reason; an unreachable database is reported rather than hanging.
 */

export type HealthReasonCode =
  | 'database_unreachable'
  | 'expiry_promise_broken'
  | 'email_promise_broken'
  | 'delivery_paused'
  | 'lane_stalled'
  /** Some provider accounts in failover are paused: the others carry their intents (degraded, still serving). */
  | 'account_paused';

export interface HealthReason {
  code: HealthReasonCode;
  message: string;
}

export interface HealthReport {
  /** degraded: delivery goes on, on fewer accounts (HTTP 200); unavailable: a promise is broken or nothing can send (503). */
  status: 'ok' | 'degraded' | 'unavailable';
  reasons: HealthReason[];
  /** The numbers behind the verdict; absent when the database could not be read. */
  expiry?: { dueHolds: number; oldestDueAgeSeconds: number; promiseSeconds: number };
  delivery?: { backlog: number; oldestPendingAgeSeconds: number; promiseSeconds: number; paused: boolean; pausedAccounts: string[] };
}

export interface HealthOptions {
  db: Queryable;
  schema: string;
  promises: { expiryPromiseS: number; emailPromiseS: number };
  /** Give up on the database after this long (default 3000 ms). */
  timeoutMs?: number;
  /** Where the cause of an unreachable database is written (the report itself does not carry it). */
  logger?: Logger;
  /** This process's lanes and the age of their last finished round (Metrics.laneRounds). */
  lanes?: LaneRounds;
  /** The provider accounts in failover (default: the one account, `default`). */
  failover?: readonly string[];
}

export type LaneRounds = Array<{ lane: string; ageSeconds: number; stalledAfterSeconds: number }>;

/**
 * A lane of this process that has not finished a round for far longer than
 * it ever sleeps: its loop is stuck (a round that never ends), whatever the
 * database says. Judged apart from the database, so it is reported even
 * when the database cannot be read.
 */
function stalledLanes(lanes: LaneRounds = []): HealthReason[] {
  return lanes
    .filter((l) => l.ageSeconds > l.stalledAfterSeconds)
    .map((l) => ({
      code: 'lane_stalled' as const,
      message: `the ${l.lane} lane of this process has not finished a round for ${l.ageSeconds.toFixed(0)}s (stalled after ${l.stalledAfterSeconds}s)`,
    }));
}

export function judgeHealth(stats: LaneStats, promises: HealthOptions['promises'], lanes?: LaneRounds): HealthReport {
  const reasons: HealthReason[] = stalledLanes(lanes);
  const { expiry, delivery, control } = stats;
  if (expiry.oldestDueAgeSeconds > promises.expiryPromiseS) {
    reasons.push({
      code: 'expiry_promise_broken',
      message: `oldest due hold is ${expiry.oldestDueAgeSeconds.toFixed(1)}s past its deadline (promise ${promises.expiryPromiseS}s; ${expiry.dueHolds} due)`,
    });
  }
  if (delivery.oldestPendingAgeSeconds > promises.emailPromiseS) {
    reasons.push({
      code: 'email_promise_broken',
      message: `oldest pending email is ${delivery.oldestPendingAgeSeconds.toFixed(1)}s old (promise ${promises.emailPromiseS}s; backlog ${delivery.backlog})`,
    });
  }
  if (control.paused) {
    reasons.push({ code: 'delivery_paused', message: `delivery is paused: ${control.reason ?? 'no reason given'}` });
  }
  const { failover, paused } = stats.accounts;
  let degraded = false;
  if (paused.length > 0 && paused.length >= failover.length) {
    const first = stats.limiter?.pause;
    const which =
      failover.length === 1
        ? `${first?.reason ?? 'no reason given'} (account ${failover[0]}, paused by ${first?.pausedBy ?? 'unknown'})`
        : `every account in failover is paused (${paused.join(', ')})`;
    reasons.push({ code: 'delivery_paused', message: `delivery is paused: ${which}` });
  } else if (paused.length > 0) {
    degraded = true;
    reasons.push({ code: 'account_paused', message: `paused accounts: ${paused.join(', ')}; ${failover.filter((a) => !paused.includes(a)).join(', ')} carry their intents` });
  }
  const broken = reasons.some((r) => r.code !== 'account_paused');
  return {
    status: broken ? 'unavailable' : degraded ? 'degraded' : 'ok',
    reasons,
    expiry: { ...expiry, promiseSeconds: promises.expiryPromiseS },
    delivery: {
      backlog: delivery.backlog,
      oldestPendingAgeSeconds: delivery.oldestPendingAgeSeconds,
      promiseSeconds: promises.emailPromiseS,
      paused: control.paused,
      pausedAccounts: paused,
    },
  };
}

export async function checkHealth(options: HealthOptions): Promise<HealthReport> {
  let stats: LaneStats;
  try {
    stats = await withTimeout(laneStats(options.db, options.schema, options.failover), options.timeoutMs ?? STATUS_READ_TIMEOUT_MS);
  } catch (error) {
    // /healthz is open to anyone who can reach it, and a driver error names
    // the database's host and port (connect ECONNREFUSED 10.0.0.5:5432):
    // the report says what is wrong, the log says why.
    const e = error as { message?: string; code?: string };
    options.logger?.warn(
      { event: 'health.database_unreachable', error: { message: e?.message ?? String(error), code: e?.code } },
      'health check could not read the database',
    );
    return {
      status: 'unavailable',
      reasons: [{ code: 'database_unreachable', message: 'the database is unreachable or did not answer in time' }, ...stalledLanes(options.lanes)],
    };
  }
  return judgeHealth(stats, options.promises, options.lanes);
}
