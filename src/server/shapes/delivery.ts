import { z } from 'zod';
import type { AccountPause, RateLimitState } from '../../tables/rate-limiter.js';
import type { DeliveryControl } from '../../tables/delivery-control.js';
import { NullableTimestamp, Timestamp, type SameKeys } from './common.js';

/** The answers of delivery control: the fleet's pause, an account's pause, and a limiter's policy and state. */

const pauseFields = {
  paused: z.boolean().describe('in force now (a pause whose pausedUntil passed is not)'),
  reason: z.string().nullable(),
  pausedBy: z.string().nullable().describe('`operator`, or what paused it (a provider, `templates`)'),
  pausedAt: NullableTimestamp,
  pausedUntil: NullableTimestamp.describe('it lifts itself then; null: until resumed'),
};

/** `POST /v1/delivery/pause`: the fleet-wide pause (tables/delivery-control.ts DeliveryControl). */
export const DeliveryControlShape = z.object(pauseFields).meta({ id: 'DeliveryControl', description: 'the fleet-wide pause' });

/** `GET /v1/delivery`, `POST /v1/delivery/resume`: the fleet's pause and the accounts paused on their own. */
export const DeliveryShape = DeliveryControlShape.extend({
  pausedAccounts: z.array(z.string()).describe('accounts in failover whose own pause is in force (every one: nothing is sent)'),
}).meta({ id: 'Delivery', description: 'the fleet-wide pause, and the accounts in failover paused on their own' });

/** An account's own pause (tables/rate-limiter.ts AccountPause); the fleet's is DeliveryControl. */
export const AccountPauseShape = z.object(pauseFields).meta({ id: 'AccountPause', description: "an account's own pause (the fleet's is /v1/delivery)" });

/** `GET/PUT /v1/rate-limit`, `PUT /v1/accounts/{name}/rate-limit`: an account's limiter (tables/rate-limiter.ts RateLimitState). */
export const RateLimitShape = z
  .object({
    perSecond: z.number().describe('permits refilled per second'),
    burst: z.number().int().describe('most permits at once'),
    tokens: z.number().describe('permits available now'),
    cooldownUntil: NullableTimestamp.describe('the end of the latest cooldown a provider asked for (in force while it is in the future)'),
    cooldownSince: NullableTimestamp.describe('when the cooldown in force began (null: none in force)'),
    coolingForMs: z.number().describe('how long the cooldown in force has lasted (0: none)'),
    quotaUsedToday: z.number().int().describe('emails granted today (UTC), counted against a daily quota'),
    pause: AccountPauseShape,
    updatedAt: Timestamp,
    source: z
      .enum(['configuration', 'operator'])
      .describe(
        'who set the limit in force: `configuration` (LEASEHOLD_RATE_PER_SECOND/LEASEHOLD_RATE_BURST or the accounts file, applied at a start when it changed) or `operator` (a change at run time, in force until the configuration changes)',
      ),
    setBy: z.string().nullable().describe('the operator (a token name, cli:<os user>, library...) or the configuration variable; null: not known'),
    setAt: NullableTimestamp.describe('when the limit in force was set; null: not known'),
    configured: z
      .object({ perSecond: z.number().describe('the configured rate'), burst: z.number().int().describe('the configured burst') })
      .nullable()
      .describe('the configuration last applied (an operator\'s limit may differ from it); null: none known yet'),
  })
  .meta({ id: 'RateLimit', description: "an account's limiter policy and its state now" });

const _control: SameKeys<z.output<typeof DeliveryControlShape>, DeliveryControl> = true;
const _delivery: SameKeys<z.output<typeof DeliveryShape>, DeliveryControl & { pausedAccounts: string[] }> = true;
const _pause: SameKeys<z.output<typeof AccountPauseShape>, AccountPause> = true;
const _rate: SameKeys<z.output<typeof RateLimitShape>, RateLimitState> = true;
void [_control, _delivery, _pause, _rate];
