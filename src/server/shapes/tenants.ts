import { z } from 'zod';
import type { TenantPolicy } from '../../model/tenant-policy.js';
import type { TenantBacklog, TenantPause } from '../../tables/tenants.js';
import { NullableTimestamp, page, Timestamp, type SameKeys } from './common.js';

/** The answers about tenants: a policy (model/tenant-policy.ts), a pause, and a backlog (tables/tenants.ts). */

export const TenantPolicyShape = z
  .object({
    tenant: z.string().describe("'' is the empty tenant"),
    perSecond: z.number().nullable().describe('the cap on its sends per second; null: no cap'),
    burst: z.number().int().nullable().describe('most sends at once under the cap; null: no cap'),
    weight: z.number().int().describe("its share of an account's permits against other tenants"),
    account: z.string().nullable().describe('the account its email goes through; null: failover as usual'),
    from: z.string().nullable().describe("its sender; null: the templates'"),
    replyTo: z.string().nullable().describe("its reply-to; null: the templates'"),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'TenantPolicy' });

export const TenantBacklogShape = z
  .object({
    tenant: z.string(),
    backlog: z.number().int().describe('pending intents'),
    oldestAgeSeconds: z.number().describe('age of its oldest pending intent'),
    sentLastMinute: z.number().int().describe('its emails accepted in the last minute'),
    paused: z.boolean(),
    pauseReason: z.string().nullable(),
  })
  .meta({ id: 'TenantBacklog' });

export const TenantPauseShape = z
  .object({
    tenant: z.string(),
    paused: z.boolean(),
    reason: z.string().nullable(),
    pausedAt: NullableTimestamp.describe('when the pause in force began (a second pause keeps the first time and reason)'),
  })
  .meta({ id: 'TenantPause' });

/** `GET /v1/tenants`: a page of policies, and the tenants with the largest backlogs. */
export const TenantPoliciesShape = page('policies', TenantPolicyShape).extend({
  backlog: z.array(TenantBacklogShape).describe('the `top` tenants with email waiting, largest backlog first'),
});

const _policy: SameKeys<z.output<typeof TenantPolicyShape>, TenantPolicy> = true;
const _backlog: SameKeys<z.output<typeof TenantBacklogShape>, TenantBacklog> = true;
const _pause: SameKeys<z.output<typeof TenantPauseShape>, TenantPause> = true;
void [_policy, _backlog, _pause];
