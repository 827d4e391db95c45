/**
 * leasehold as a library. The hold functions take your own `pg` client, so
 * holds can be created or confirmed inside your application's transaction.
 */
export { loadConfig, type Config } from './config.js';
export {
  LeaseholdError,
  ValidationError,
  NotFoundError,
  IdempotencyConflictError,
  HoldNotHeldError,
  IntentStateError,
  ConfigError,
  SchemaNotMigratedError,
} from './errors.js';
export { createPool, withClient, withTransaction, type Queryable } from './db/pool.js';
export { migrate } from './db/migrate.js';
export { openDatabase, type Database } from './db/database.js';
export { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.js';
export { HoldStatus, intentIdForHold, type Hold } from './model/hold-states.js';
export { createHold, getHold, confirmHold, cancelHold, type HoldOptions, type CreateHoldResult } from './holds/holds.js';
export type { CreateHoldInput } from './model/hold-input.js';
export { ExpiryWorker, type ExpiryWorkerOptions } from './holds/expiry-worker.js';
export { ManualClock, databaseClock, type Clock } from './runtime/clock.js';
export { Faults, type FaultPoint, type FaultHook } from './runtime/faults.js';
export { createLogger, type Logger } from './observability/logger.js';
export { createMetrics, type Metrics } from './observability/metrics.js';
export { DeliveryWorker, type DeliveryWorkerOptions, type DeliveryRun } from './delivery/worker.js';
export { deliveryPause, deliveryResume, deliveryControlGet, type DeliveryControl } from './tables/delivery-control.js';
export { rateLimiterGet, rateLimiterSet } from './tables/rate-limiter.js';
export { type RateLimitPolicy } from './model/delivery-policy.js';
export { IntentState, type Intent, type Attempt } from './model/intent-states.js';
export { attemptsList } from './tables/attempts.js';
export { intentsGet, intentsList } from './tables/outbox.js';
export { replayIntent } from './ops.js';
export { RETENTION_TABLES, type RetentionTables, type StoryChildTable, type StandaloneTable } from './retention/policy.js';
export { DEFAULT_RETENTION, type RetentionPolicy } from './model/retention-policy.js';
export { Pruner, type PrunerOptions, type PruneRound, type PruneRun } from './retention/prune.js';
export { PruneWorker } from './retention/prune-worker.js';
export { eraseAddress, type EraseOptions } from './retention/erase.js';
export { retentionPreview, type RetentionPreview, type AddressErasure } from './retention/queries.js';
export type { EmailGateway, EmailMessage, SendContext, SendResult } from './providers/gateway.js';
export { SandboxGateway, type SandboxOptions } from './providers/sandbox.js';
export { createGateway } from './providers/registry.js';
export { loadTemplates, Templates, TemplateRenderError, INTENT_HEADER, MESSAGE_KINDS, type TemplatesOptions, type RenderInput } from './templates/templates.js';
export { type RenderedMessage } from './model/message.js';
export { describeProblem, type TemplateFiles, type TemplateProblem } from './templates/source.js';
export { messagesSummary, type MessageSummary } from './tables/messages.js';
export { EventKind, BounceType, emailOutcome, type ProviderEvent, type EmailEvent, type EmailOutcome } from './model/event-kinds.js';
export { ingestEvents, type IngestResult } from './events/ingest.js';
export { SuppressionReason, type Suppression } from './model/suppression-reasons.js';
export { addressHash, normalizeAddress } from './model/address.js';
export { suppressionsAdd, suppressionsList, suppressionsRemove, suppressionsFind } from './tables/suppressions.js';
