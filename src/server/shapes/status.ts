import { z } from 'zod';
import { AttemptOutcome, IntentState } from '../../model/intent-states.js';
import type { DeliveryLaneStats, ExpiryLaneStats, LaneStats } from '../../read/stats.js';
import type { StatusReport } from '../../read/status.js';
import type { SendRateBin } from '../../tables/attempts.js';
import type { LaneSampleAt } from '../../tables/lane-samples.js';
import type { AccountGaugeState } from '../../tables/rate-limiter.js';
import type { HookFailure } from '../../tables/hook-failures.js';
import { Timestamp, valuesOf, type SameKeys } from './common.js';
import { DeliveryControlShape, RateLimitShape } from './delivery.js';

/**
 * The answers of `GET /v1/status` (read/status.ts StatusReport: what
 * `leasehold status --json` prints and the dashboard polls),
 * `/v1/status/sends` and `/v1/status/history`.
 */

const count = () => z.number().int().nonnegative();
const seconds = () => z.number();

/** Attempts by outcome; an outcome with none is left out. */
const byOutcome = () => z.partialRecord(z.enum(valuesOf(AttemptOutcome)), count());

const ExpiryLaneShape = z.object({
  dueHolds: count().describe('holds still held past their deadline'),
  oldestDueAgeSeconds: seconds().describe('how long the oldest due hold has waited past its deadline (0: none)'),
  hookFailing: count().describe("held holds waiting on the application's expiry hook, which failed for them (LEASEHOLD_EXPIRE_HOOK); not in dueHolds"),
});

const HookFailureShape = z.object({
  holdId: z.string(),
  attempts: count().describe('failed calls so far'),
  firstFailedAt: Timestamp,
  lastFailedAt: Timestamp,
  retryAt: Timestamp.describe('not expired again before this (back-off doubling per failure)'),
  code: z.string().nullable().describe('SQLSTATE of the last failure (57014: ran past LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS), null for a callback error without one'),
  error: z.string().describe("the database's error (addresses replaced by <address>)"),
});

const DeliveryLaneShape = z.object({
  backlog: count().describe('pending intents (leased and backed-off ones included)'),
  oldestPendingAgeSeconds: seconds().describe('age of the oldest pending intent (0: none)'),
  intentsByState: z
    .object(Object.fromEntries(valuesOf(IntentState).map((state) => [state, count()])) as Record<IntentState, ReturnType<typeof count>>)
    .describe('every intent, by state'),
});

const AccountGaugeShape = z.object({
  account: z.string(),
  perSecond: z.number(),
  burst: count(),
  tokens: z.number().describe('permits available now'),
  paused: z.boolean().describe("the account's own pause is in force"),
  coolingDown: z.boolean().describe("a provider's rate limit cools it down"),
});

export const LaneStatsShape = z
  .object({
    expiry: ExpiryLaneShape,
    delivery: DeliveryLaneShape,
    control: DeliveryControlShape.describe('the fleet-wide pause'),
    limiter: RateLimitShape.optional().describe("the first account's limiter (the one /v1/rate-limit acts on); absent until a worker or the API created it"),
    accounts: z.object({
      failover: z.array(z.string()).describe('the accounts in failover, in order'),
      paused: z.array(z.string()).describe('those of them whose own pause is in force'),
      states: z.array(AccountGaugeShape).describe("each one's limiter (an account without a limiter row yet is not listed)"),
    }),
  })
  .meta({ id: 'LaneStats', description: 'the shared numbers of both lanes, read from the database (the same for every instance)' });

export const StatusReportShape = z
  .object({
    stats: LaneStatsShape,
    sendsLastMinute: byOutcome().describe('attempts finished in the last minute, by outcome'),
    sendsLastHour: byOutcome().describe('attempts finished in the last hour, by outcome'),
    promises: z
      .object({ expiryPromiseS: seconds(), emailPromiseS: seconds() })
      .describe('LEASEHOLD_EXPIRY_PROMISE_S and LEASEHOLD_EMAIL_PROMISE_S: the oldest ages health holds the lanes to'),
    hookFailures: z.array(HookFailureShape).describe('held holds whose expiry hook failed, longest-failing first (at most 20)'),
    healthy: z.boolean().describe('health is not unavailable (degraded counts as healthy: delivery goes on through the other accounts)'),
    health: z.enum(['ok', 'degraded', 'unavailable']).describe('what /healthz would say of the lanes (without its per-process checks)'),
  })
  .meta({ id: 'StatusReport' });

/** `GET /v1/status/sends`. */
export const SendRateShape = z
  .object({
    now: z.number().int().describe("the database's now, in Unix seconds"),
    bins: z
      .array(z.object({ t: z.number().int().describe('the Unix second'), outcomes: byOutcome().describe('attempts started in that second, by outcome') }))
      .describe('the seconds with any finished attempt, oldest first (a second with none is left out)'),
  })
  .meta({ id: 'SendRate' });

/** `GET /v1/status/history`. */
export const LaneHistoryShape = z
  .object({
    now: z.number().describe("the database's now, in Unix seconds (with a fraction)"),
    intervalSeconds: z.number().int().describe('seconds each sample covers (10)'),
    samples: z
      .array(
        z.object({
          t: z.number().describe('when it was sampled, in Unix seconds (with a fraction)'),
          backlog: count(),
          dueHolds: count(),
          oldestPendingAgeSeconds: seconds(),
          oldestDueAgeSeconds: seconds(),
        }),
      )
      .describe('oldest first; a gap is a gap in the sampling (the service was down)'),
  })
  .meta({ id: 'LaneHistory' });

const _status: SameKeys<z.output<typeof StatusReportShape>, StatusReport> = true;
const _stats: SameKeys<z.output<typeof LaneStatsShape>, LaneStats> = true;
const _expiry: SameKeys<z.output<typeof ExpiryLaneShape>, ExpiryLaneStats> = true;
const _delivery: SameKeys<z.output<typeof DeliveryLaneShape>, DeliveryLaneStats> = true;
const _byState: SameKeys<z.output<typeof DeliveryLaneShape>['intentsByState'], DeliveryLaneStats['intentsByState']> = true;
const _hookFailure: SameKeys<z.output<typeof HookFailureShape>, HookFailure> = true;
const _gauge: SameKeys<z.output<typeof AccountGaugeShape>, AccountGaugeState> = true;
const _accounts: SameKeys<z.output<typeof LaneStatsShape>['accounts'], LaneStats['accounts']> = true;
const _bin: SameKeys<z.output<typeof SendRateShape>['bins'][number], SendRateBin> = true;
const _sample: SameKeys<z.output<typeof LaneHistoryShape>['samples'][number], LaneSampleAt> = true;
void [_hookFailure, _status, _stats, _expiry, _delivery, _byState, _gauge, _accounts, _bin, _sample];
