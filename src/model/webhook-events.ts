/**
 * Webhooks to the application: the event types, the
 * delivery states, and what an endpoint is. Mirrored by the CHECK
 * constraints of migrations/0030_webhooks.sql, whose triggers write the
 * events. model/webhooks-file.ts reads the endpoints file.
 */

/** Every event type, as the `type` of the body and of webhook_events. */
export const WEBHOOK_EVENT_TYPES = [
  'hold.expired',
  'hold.confirmed',
  'hold.cancelled',
  'hold.extended',
  'email.accepted',
  'email.rejected',
  'email.missed_deadline',
  'email.bounced',
  'email.complained',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const WebhookState = {
  /** Waiting to be delivered (or leased: a live lease token and expiry), perhaps after failed attempts. */
  pending: 'pending',
  /** Terminal: the endpoint answered 2xx. */
  delivered: 'delivered',
  /** Given up after the give-up bound; an operator may replay it (back to pending, same webhook-id). */
  dead: 'dead',
} as const;
export type WebhookState = (typeof WebhookState)[keyof typeof WebhookState];
export const WEBHOOK_STATES: readonly WebhookState[] = Object.values(WebhookState);

/** An endpoint as the lane uses it: where, signed with what, and what it wants. */
export interface WebhookEndpoint {
  /** Its name in metrics, webhook_events and the limiter row (`webhook:<name>`); `default` for LEASEHOLD_WEBHOOK_URL. */
  name: string;
  url: string;
  /** A Standard Webhooks secret, `whsec_<base64>`. */
  secret: string;
  /** Only these types; undefined: every type. */
  types?: WebhookEventType[];
  /** Only these tenants' events; undefined: every tenant's. */
  tenants?: string[];
  /** Its own row in the shared limiter. */
  rate: { perSecond: number; burst: number };
  /** Most requests in flight to it at once, so a slow endpoint holds few connections. */
  concurrency: number;
}

/** The name LEASEHOLD_WEBHOOK_URL's endpoint gets. */
export const DEFAULT_WEBHOOK_ENDPOINT = 'default';

export const WEBHOOK_ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const WEBHOOK_ENDPOINT_NAME_RULE = 'must be an endpoint name: lowercase letters, digits, - and _ (at most 63), starting with a letter or digit';

/** The limiter row of an endpoint: a colon no account name may hold, so the two never meet. */
export const webhookLimiterName = (endpoint: string): string => `webhook:${endpoint}`;

/** Why a URL cannot be an endpoint, or undefined. */
export function webhookUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an absolute http:// or https:// URL';
  if (url.username || url.password) return 'must not carry credentials (the signature authenticates the sender)';
  return undefined;
}

/**
 * Why a secret is not a Standard Webhooks secret, or undefined: `whsec_`
 * then base64 of 24 to 64 random bytes (the spec's range), as the
 * receiver's library takes it.
 */
export function webhookSecretProblem(value: string): string | undefined {
  const rule = 'must be a Standard Webhooks secret: whsec_ followed by base64 of 24 to 64 bytes';
  if (!value.startsWith('whsec_')) return rule;
  const body = value.slice('whsec_'.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return rule;
  const bytes = Buffer.from(body, 'base64').length;
  return bytes >= 24 && bytes <= 64 ? undefined : rule;
}
