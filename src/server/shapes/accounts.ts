import { z } from 'zod';
import { ACCOUNT_PROVIDERS, type QuotaUnit } from '../../model/accounts.js';
import type { AccountView } from '../../ops/operations.js';
import { NullableTimestamp, type SameKeys } from './common.js';
import { AccountPauseShape, RateLimitShape } from './delivery.js';

/** The answers about provider accounts (ops/operations.ts AccountView). */

const UNITS = ['requests', 'emails'] as const satisfies readonly QuotaUnit[];

export const AccountShape = z
  .object({
    name: z.string(),
    provider: z.enum(ACCOUNT_PROVIDERS),
    failoverIndex: z.number().int().nullable().describe('its place in failover (0: first); null: not in failover'),
    unit: z.enum(UNITS).describe('what one permit stands for: a provider request or an email'),
    dailyQuota: z.number().int().nullable().describe('most emails a day, where the provider sets one (null: none)'),
    rate: RateLimitShape,
    pause: AccountPauseShape.describe("the account's own pause (the fleet's is /v1/delivery)"),
    coolingDown: z.boolean().describe('a provider asked it to slow down and the cooldown is in force'),
    cooldownUntil: NullableTimestamp,
    backlog: z.number().int().describe('pending intents on it (not yet leased ones count on the first in failover)'),
    lastMinute: z.record(z.string(), z.number().int()).describe('attempts finished through it in the last minute, by outcome'),
  })
  .meta({ id: 'Account' });

/** `GET /v1/accounts`. */
export const AccountsShape = z.object({
  failover: z.array(z.string()).describe('the failover order: account names, the first is sent through first'),
  accounts: z.array(AccountShape).describe('every configured account, in the order of the accounts file'),
});

const _account: SameKeys<z.output<typeof AccountShape>, AccountView> = true;
const _unit: [QuotaUnit] extends [(typeof UNITS)[number]] ? true : false = true;
void [_account, _unit];
