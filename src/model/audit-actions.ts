/**
 * Every action the audit log records (table audit_log, migration 0025),
 * one place, mirrored by the table's CHECK. Each entry says who (a token
 * name, `cli:<os user>`, `library` or `library:<actor>`), what, on which
 * target, with the values before and after where a setting changed. Never
 * a recipient address or a message body: erasure records counts only, a
 * suppression its hash.
 */
export const AuditAction = {
  /** The fleet's pause; before/after: the delivery control. */
  deliveryPause: 'delivery.pause',
  /** Every pause lifted (the fleet's and each account's). */
  deliveryResume: 'delivery.resume',
  /** An account's limiter policy (target: the account); before/after: perSecond, burst. By an operator, or by `configuration` when a start applied a changed configuration (detail: its variable). */
  rateLimitSet: 'rate_limit.set',
  /** One account's own pause and its end (target: the account). */
  accountPause: 'account.pause',
  accountResume: 'account.resume',
  /** A finished intent sent again (target: the intent id). */
  intentReplay: 'intent.replay',
  /** A pending intent moved to another account. */
  intentMove: 'intent.move',
  /** An operator's suppression added or lifted (target: the address's sha256, never the address). */
  suppressionAdd: 'suppression.add',
  suppressionRemove: 'suppression.remove',
  /** A deletion request: counts per table only (target: `address` or the tenant). */
  erasureAddress: 'erasure.address',
  erasureTenant: 'erasure.tenant',
  /** A retention run an operator started (API or CLI); the prune worker's own rounds are not recorded. */
  retentionRun: 'retention.run',
  /** A tenant's policy set or deleted (target: the tenant), its pause and resume. */
  tenantPolicySet: 'tenant.policy_set',
  tenantPolicyDelete: 'tenant.policy_delete',
  tenantPause: 'tenant.pause',
  tenantResume: 'tenant.resume',
  /** A /v1 call refused: no or an unknown token, an expired one, or one without the role or tenant (rate-limited per token name). */
  authRefused: 'auth.refused',
  /** A client address answered 429 after too many refused tokens in a minute (target: the address). */
  authLocked: 'auth.locked',
  /** A given-up application webhook sent again (target: its webhook-id). */
  webhookReplay: 'webhook.replay',
  /** An application webhook endpoint turned off: no more events are written for it (target: its name). */
  webhookEndpointDeactivate: 'webhook_endpoint.deactivate',
} as const;
export type AuditAction = (typeof AuditAction)[keyof typeof AuditAction];
export const AUDIT_ACTIONS: readonly AuditAction[] = Object.values(AuditAction);

/** Who made a change: the audit entry's actor and the request it came in. */
export interface AuditActor {
  /** A token name, `cli:<os user>`, `library`, `library:<name>`, or `configuration` (a start applying its configured rate limit). */
  name: string;
  /** The HTTP request's id (x-request-id), when there was one. */
  requestId?: string | null;
}

/** A library caller's actor: `library`, or `library:<actor>` when it names one. */
export function libraryActor(actor?: string): AuditActor {
  return { name: actor === undefined || actor === '' ? 'library' : `library:${actor.slice(0, 180)}` };
}

export const DEFAULT_AUDIT_RETENTION_DAYS = 365;

/** The actor of a configured rate limit that a start applied (ops/rate-configuration.ts). */
export const CONFIGURATION_ACTOR: AuditActor = { name: 'configuration' };
