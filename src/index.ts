/**
 * leasehold as a library. One convention: `createLeasehold({ pool, schema })`
 * binds every call to your pool (`lh.holds.create(input)`,
 * `lh.holds.get(id)`, `lh.delivery.pause()`), and the same calls exist as
 * free functions taking `(db, ...arguments, options?)` with your own `pg`
 * client, so holds can be created or confirmed inside your application's
 * transaction. A `get` returns undefined for a missing row; an action on a
 * missing row (remove, confirm, cancel, extend, replay, delete) throws
 * NotFoundError. A wrong argument throws ValidationError naming it (`db`,
 * `options.schema`), and a schema without leasehold's tables
 * SchemaNotMigratedError.
 *
 * The HTTP API and dashboard are in `leasehold/server`, so importing this
 * entry loads neither Fastify nor any provider SDK (those load on first use),
 * and of the other dependencies only pg: zod and pino also wait for first use
 * (test/architecture/entry-imports.test.ts).
 */
export { loadConfig, type Config } from './config.js';
export { DEFAULTS } from './defaults.js';
export {
  LeaseholdError,
  ValidationError,
  NotFoundError,
  IdempotencyConflictError,
  HoldNotHeldError,
  IntentStateError,
  ConfigError,
  SchemaNotMigratedError,
  MissingPackageError,
  ExpireHookError,
} from './errors.js';
export { createLeasehold, type Leasehold, type LeaseholdOptions } from './client/leasehold.js';
export {
  migrate,
  getIntent,
  listIntents,
  listAttempts,
  getMessage,
  replayIntent,
  getDeliveryControl,
  pauseDelivery,
  resumeDelivery,
  getRateLimit,
  setRateLimit,
  addSuppression,
  getSuppression,
  removeSuppression,
  listSuppressions,
  getTenantPolicy,
  listTenantPolicies,
  putTenantPolicy,
  deleteTenantPolicy,
  ingestEvents,
  previewRetention,
  wakeOnNotify,
  type LibraryOptions,
} from './client/functions.js';
export {
  createHold,
  getHold,
  confirmHold,
  cancelHold,
  extendHold,
  type HoldOptions,
  type HoldDefaults,
  type ConfirmOptions,
  type CreateOptions,
  type CreateHoldResult,
} from './holds/holds.js';
export type { CreateHoldInput, ExtendHoldInput } from './model/hold-input.js';
export { HoldStatus, intentIdForHold, type Hold } from './model/hold-states.js';
export { IntentState, type Intent, type Attempt } from './model/intent-states.js';
export type { IntentPage } from './tables/outbox.js';
export type { MigrateResult } from './db/migrate.js';
export type { DeliveryControl } from './tables/delivery-control.js';
export type { RateLimitState } from './tables/rate-limiter.js';
export type { MessageSummary } from './tables/messages.js';
export type { SuppressionPage } from './tables/suppressions.js';
export type { TenantPolicyPage } from './tables/tenants.js';
export type { TenantPolicy, TenantPolicyInput } from './model/tenant-policy.js';
export { type RateLimitPolicy } from './model/delivery-policy.js';
export { createPool, withClient, withTransaction, type Queryable } from './db/pool.js';
export { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.js';
export { ExpiryWorker, type ExpiryWorkerOptions, type ExpiryEvents, type HoldExpiredEvent, type ExpiryRun } from './holds/expiry-worker.js';
export type { OnExpired, ExpiredHoldInfo, FailedHold } from './holds/expire-hook.js';
export type { HookFailure } from './tables/hook-failures.js';
export { DeliveryWorker, type DeliveryWorkerOptions, type DeliveryRun } from './delivery/worker.js';
export type { DeliveryEvents, IntentSentEvent, IntentRejectedEvent, IntentDeadEvent } from './delivery/events.js';
export { ManualClock, databaseClock, type Clock } from './runtime/clock.js';
export { Faults, type FaultPoint, type FaultHook } from './runtime/faults.js';
export { createLogger, silentLogger, defaultLibraryLogger, type Logger } from './observability/logger.js';
export { createMetrics, type Metrics } from './observability/metrics.js';
export { RETENTION_TABLES, type RetentionTables, type StoryChildTable, type StandaloneTable } from './retention/policy.js';
export { DEFAULT_RETENTION, type RetentionPolicy } from './model/retention-policy.js';
export { Pruner, type PrunerOptions, type PruneRound, type PruneRun } from './retention/prune.js';
export { PruneWorker } from './retention/prune-worker.js';
export { eraseAddress, eraseTenant, type EraseOptions, type TenantEraseOptions, type TenantErasure } from './retention/erase.js';
export type { AddressErasure } from './retention/address-erasure.js';
export type { RetentionPreview } from './retention/preview.js';
export type { EmailGateway, EmailMessage, SendContext, SendResult } from './providers/gateway.js';
export { SandboxGateway, type SandboxOptions } from './providers/sandbox.js';
export { createGateway } from './providers/registry.js';
export { loadTemplates, Templates, MESSAGE_KINDS, type TemplatesOptions } from './templates/templates.js';
export { TemplateRenderError, INTENT_HEADER, type RenderInput } from './templates/render.js';
export { type RenderedMessage } from './model/message.js';
export { describeProblem, type TemplateFiles, type TemplateProblem } from './templates/source.js';
export { EventKind, BounceType, emailOutcome, type ProviderEvent, type EmailEvent, type EmailOutcome } from './model/event-kinds.js';
export type { IngestResult } from './events/ingest.js';
export { SuppressionReason, type Suppression } from './model/suppression-reasons.js';
export { addressHash, normalizeAddress } from './model/address.js';
