/**
 * The capacity workload's flags, apart from its rules (input.ts): the CLI
 * lists them in its help without loading zod.
 */

/** Flags (as the CLI spells them) for each field, so an error names both. */
export const FLAGS = {
  'volume.emailsPerDay': '--emails-per-day',
  'volume.expiredShare': '--expired-share',
  'burst.holds': '--burst-holds',
  'burst.windowSeconds': '--burst-window',
  holdWindowSeconds: '--hold-window',
  retentionDays: '--retention-days',
  promiseSeconds: '--promise',
  expiryPromiseSeconds: '--expiry-promise',
  'provider.name': '--provider',
  'provider.perSecond': '--per-second',
  'provider.burst': '--burst',
  'provider.dailyQuota': '--daily-quota',
  'provider.latencyMs': '--latency-ms',
  'deployment.workers': '--workers',
  'deployment.deliveryBatch': '--delivery-batch',
  'deployment.deliveryConcurrency': '--delivery-concurrency',
  'deployment.expiryBatch': '--expiry-batch',
  'deployment.expiryIntervalMs': '--expiry-interval-ms',
  'deployment.attemptsPerEmail': '--attempts-per-email',
  'deadlines.noticeSeconds': '--notice-deadline',
  'deadlines.reminderSeconds': '--remind-before',
  'storage.bloatFactor': '--bloat-factor',
  'observability.logRetentionDays': '--log-retention-days',
  freeTiers: '--free-tiers',
} as const;

export type WorkloadField = keyof typeof FLAGS;
