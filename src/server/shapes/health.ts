import { z } from 'zod';
import type { HealthReason, HealthReasonCode, HealthReport } from '../../read/health.js';
import type { SameKeys } from './common.js';

/** `GET /healthz` (read/health.ts HealthReport): the same shape at 200 and at 503. */

const REASON_CODES = [
  'database_unreachable',
  'expiry_promise_broken',
  'email_promise_broken',
  'delivery_paused',
  'lane_stalled',
  'account_paused',
] as const satisfies readonly HealthReasonCode[];

const HealthReasonShape = z.object({
  code: z.enum(REASON_CODES).describe('account_paused alone is degraded (200); any other makes it unavailable (503)'),
  message: z.string(),
});

export const HealthReportShape = z
  .object({
    status: z.enum(['ok', 'degraded', 'unavailable']).describe('degraded: delivery goes on, on fewer accounts (200); unavailable: a promise is broken or nothing can send (503)'),
    reasons: z.array(HealthReasonShape).describe('why it is not ok (empty when it is)'),
    expiry: z
      .object({ dueHolds: z.number().int(), oldestDueAgeSeconds: z.number(), promiseSeconds: z.number().describe('LEASEHOLD_EXPIRY_PROMISE_S') })
      .optional()
      .describe('the numbers behind the verdict; absent when the database could not be read'),
    delivery: z
      .object({
        backlog: z.number().int(),
        oldestPendingAgeSeconds: z.number(),
        promiseSeconds: z.number().describe('LEASEHOLD_EMAIL_PROMISE_S'),
        paused: z.boolean().describe('the fleet-wide pause is in force'),
        pausedAccounts: z.array(z.string()).describe('accounts in failover whose own pause is in force'),
      })
      .optional()
      .describe('absent when the database could not be read'),
  })
  .meta({ id: 'HealthReport' });

// Every reason code is listed: one added to HealthReasonCode and not here fails to compile.
const _codes: [Exclude<HealthReasonCode, (typeof REASON_CODES)[number]>] extends [never] ? true : false = true;
const _report: SameKeys<z.output<typeof HealthReportShape>, HealthReport> = true;
const _reason: SameKeys<z.output<typeof HealthReasonShape>, HealthReason> = true;
const _expiry: SameKeys<NonNullable<z.output<typeof HealthReportShape>['expiry']>, NonNullable<HealthReport['expiry']>> = true;
const _delivery: SameKeys<NonNullable<z.output<typeof HealthReportShape>['delivery']>, NonNullable<HealthReport['delivery']>> = true;
void [_codes, _report, _reason, _expiry, _delivery];
