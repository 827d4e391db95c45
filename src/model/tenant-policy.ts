import type { z } from 'zod';
import { ValidationError } from '../errors.js';
import { storableText } from '../text.js';
import { onFirstUse } from '../zod.js';
import { ACCOUNT_NAME } from './accounts.js';
import { MAX_SENDER_LENGTH, SENDER_PATTERN, SENDER_RULE } from './address.js';
import { BURST_RULE, isValidPerSecond, MAX_BURST, PER_SECOND_RULE } from './delivery-policy.js';
import { toValidationError } from './hold-input.js';

/**
 * A tenant's policy: a row of `tenant_policies`, written
 * at run time through `PUT /v1/tenants/:tenant`, `leasehold tenants set` or
 * `putTenantPolicy`, because tenants come and go while the fleet runs. Every
 * field is optional; `{}` is a valid policy ("no cap, weight 1, the
 * templates' sender"), and a tenant without a row is treated the same.
 *
 * - `perSecond`, `burst`: a token bucket capping the tenant's sends below
 *   its account's rate, by the account limiter's own rules. A cap is both or
 *   neither: `burst` alone is refused (a burst of what rate?), and
 *   `perSecond` alone gets `defaultBurst(perSecond)`.
 * - `weight` (1..1000, default 1): the tenant's share of an account's
 *   permits against other tenants with due email.
 * - `account`: route the tenant's email through this provider account.
 * - `from`, `replyTo`: override the templates' sender and reply-to.
 */

export const MIN_WEIGHT = 1;
export const MAX_WEIGHT = 1000;
export const DEFAULT_WEIGHT = 1;
export const WEIGHT_RULE = `must be a whole number from ${MIN_WEIGHT} to ${MAX_WEIGHT}`;
export const ACCOUNT_NAME_RULE = 'must be an account name: lowercase letters, digits, - and _ (at most 63), starting with a letter or digit';

/**
 * The burst of a cap given without one: one second's worth of sends, and
 * at least 1 (a bucket smaller than one permit never grants). The same
 * shape as the shipped default rate (10/s, burst 10).
 */
export const defaultBurst = (perSecond: number): number => Math.min(MAX_BURST, Math.max(1, Math.ceil(perSecond)));

/** A tenant's policy as stored and answered; `null`: not set. */
export interface TenantPolicy {
  tenant: string;
  perSecond: number | null;
  burst: number | null;
  weight: number;
  account: string | null;
  from: string | null;
  replyTo: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a PUT stores: the policy's fields, resolved (burst defaulted). */
export type TenantPolicyFields = Omit<TenantPolicy, 'tenant' | 'createdAt' | 'updatedAt'>;

/**
 * The body of `PUT /v1/tenants/:tenant` and the input of `putTenantPolicy`.
 * A field left out or null is not set; an unknown field is refused by name.
 */
export const tenantPolicySchema = onFirstUse((z) => {
  const sender = () => storableText().max(MAX_SENDER_LENGTH, `must be at most ${MAX_SENDER_LENGTH} characters`).regex(SENDER_PATTERN, SENDER_RULE);
  return z
    .object({
      perSecond: z
        .number({ error: PER_SECOND_RULE })
        .refine(isValidPerSecond, PER_SECOND_RULE)
        .nullish()
        .describe(`cap on the tenant's sends per second (${PER_SECOND_RULE.replace(/^must be /, '')})`),
      burst: z
        .number({ error: BURST_RULE })
        .int(BURST_RULE)
        .min(1, BURST_RULE)
        .max(MAX_BURST, BURST_RULE)
        .nullish()
        .describe('most sends at once under the cap; needs perSecond (default: perSecond rounded up, at least 1)'),
      weight: z
        .number({ error: WEIGHT_RULE })
        .int(WEIGHT_RULE)
        .min(MIN_WEIGHT, WEIGHT_RULE)
        .max(MAX_WEIGHT, WEIGHT_RULE)
        .nullish()
        .describe(`share of an account's permits against other tenants (default ${DEFAULT_WEIGHT})`),
      account: storableText().regex(ACCOUNT_NAME, ACCOUNT_NAME_RULE).nullish().describe('a configured provider account to send the tenant\'s email through'),
      from: sender().nullish().describe("sender overriding the templates' (address or \"Name <address>\")"),
      replyTo: sender().nullish().describe("reply-to overriding the templates'"),
    })
    .strict();
});

export type TenantPolicyInput = z.input<ReturnType<typeof tenantPolicySchema>>;

/**
 * Validate a policy (undefined, as an absent body, is `{}`) and resolve it
 * to what is stored. `accounts`: the configured account names, where the
 * caller knows them (the API and the CLI do; a library caller may pass
 * them); an account not among them is a ValidationError naming `account`.
 */
export function validateTenantPolicy(input: unknown, accounts?: readonly string[]): TenantPolicyFields {
  const parsed = tenantPolicySchema().safeParse(input ?? {});
  if (!parsed.success) throw toValidationError(parsed.error, '', { schema: tenantPolicySchema(), input: input ?? {} });
  const v = parsed.data;
  const perSecond = v.perSecond ?? null;
  if (perSecond === null && v.burst != null) throw new ValidationError('burst', 'needs perSecond (a cap is a rate and a burst)');
  const account = v.account ?? null;
  if (account !== null && accounts !== undefined && !accounts.includes(account)) {
    throw new ValidationError('account', `must be a configured account (${accounts.join(', ')})`);
  }
  return {
    perSecond,
    burst: perSecond === null ? null : (v.burst ?? defaultBurst(perSecond)),
    weight: v.weight ?? DEFAULT_WEIGHT,
    account,
    from: v.from ?? null,
    replyTo: v.replyTo ?? null,
  };
}
