import { parseConfigFile } from './config-file.js';
import { onFirstUse } from '../zod.js';
import { BURST_RULE, isValidPerSecond, MAX_BURST, PER_SECOND_RULE } from './delivery-policy.js';
import { TENANT_PATTERN } from './hold-input.js';
import {
  WEBHOOK_ENDPOINT_NAME,
  WEBHOOK_ENDPOINT_NAME_RULE,
  WEBHOOK_EVENT_TYPES,
  webhookSecretProblem,
  webhookUrlProblem,
  type WebhookEndpoint,
} from './webhook-events.js';

/**
 * The endpoints file, LEASEHOLD_WEBHOOKS_FILE: more endpoints beside the
 * one of LEASEHOLD_WEBHOOK_URL, each with its own event types, tenants,
 * rate and concurrency. Pure, like model/accounts-file.ts: the text and the
 * environment in, the endpoints out, or a ConfigError naming the field
 * (`endpoints[1].secret: ...`). The secret is a `${VAR}` reference, never a
 * literal, so the file can be committed.
 *
 *   endpoints:
 *     - name: slots
 *       url: https://app.example.com/leasehold-events
 *       secret: ${SLOTS_WEBHOOK_SECRET}
 *       types: [hold.expired, hold.confirmed]
 *       tenants: [acme]
 *       rate: { perSecond: 5, burst: 10 }
 *       concurrency: 2
 */

const REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const fileSchema = onFirstUse((z) => {
  const rate = z.strictObject({
    perSecond: z.number({ error: PER_SECOND_RULE }).refine(isValidPerSecond, PER_SECOND_RULE),
    burst: z.number({ error: BURST_RULE }).int(BURST_RULE).min(1, BURST_RULE).max(MAX_BURST, BURST_RULE),
  });
  const endpoint = z.strictObject({
    name: z.string({ error: 'must be a string' }).regex(WEBHOOK_ENDPOINT_NAME, WEBHOOK_ENDPOINT_NAME_RULE),
    url: z.string({ error: 'must be a string' }),
    secret: z.string({ error: 'must be a ${VAR} reference to the environment' }),
    types: z
      .array(z.enum(WEBHOOK_EVENT_TYPES, { error: `must be event types (${WEBHOOK_EVENT_TYPES.join(', ')})` }), { error: 'must be a list of event types' })
      .min(1, 'must name at least one event type (leave it out for every type)')
      .optional(),
    tenants: z
      .array(z.string({ error: 'must be tenants' }).regex(TENANT_PATTERN, 'must be tenants by the rule of a hold id (or "" for the empty tenant)'), { error: 'must be a list of tenants' })
      .min(1, 'must name at least one tenant (leave it out for every tenant)')
      .optional(),
    rate: rate.optional(),
    concurrency: z.number({ error: 'must be a whole number from 1 to 100' }).int('must be a whole number from 1 to 100').min(1, 'must be a whole number from 1 to 100').max(100, 'must be a whole number from 1 to 100').optional(),
  });
  return z.strictObject({
    endpoints: z.array(endpoint, { error: 'must be a list of endpoints' }).min(1, 'must name at least one endpoint'),
  });
});

/** Parse an endpoints file; `env` resolves the `${VAR}` references. */
export function parseWebhookEndpoints(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  /** An endpoint's rate and concurrency where the file gives none (defaults.ts), and the names already in use (the environment's `default`). */
  fallback: { rate: WebhookEndpoint['rate']; concurrency: number; taken: readonly string[] },
  source = 'LEASEHOLD_WEBHOOKS_FILE',
): WebhookEndpoint[] {
  const { taken } = fallback;
  const { data, fail } = parseConfigFile(text, source, fileSchema());
  const seen = new Set(taken);
  return data.endpoints.map((raw, i): WebhookEndpoint => {
    const at = `endpoints[${i}]`;
    if (seen.has(raw.name)) {
      fail(`${at}.name`, `${JSON.stringify(raw.name)} is named twice${taken.includes(raw.name) ? ' (LEASEHOLD_WEBHOOK_URL is the endpoint `default`)' : ''}`);
    }
    seen.add(raw.name);
    const urlProblem = webhookUrlProblem(raw.url);
    if (urlProblem) fail(`${at}.url`, urlProblem);
    const reference = REFERENCE.exec(raw.secret);
    if (!reference) fail(`${at}.secret`, 'is a secret: give it as a ${VAR} reference to the environment, never literally');
    const secret = env[reference![1]!];
    if (secret === undefined || secret === '') fail(`${at}.secret`, `${raw.secret} is not set in the environment`);
    const secretProblem = webhookSecretProblem(secret!);
    if (secretProblem) fail(`${at}.secret`, `${raw.secret} ${secretProblem}`);
    return {
      name: raw.name,
      url: raw.url,
      secret: secret!,
      ...(raw.types ? { types: [...new Set(raw.types)] } : {}),
      ...(raw.tenants ? { tenants: [...new Set(raw.tenants)] } : {}),
      rate: raw.rate ?? fallback.rate,
      concurrency: raw.concurrency ?? fallback.concurrency,
    };
  });
}
