// The environment's schema: every variable leasehold reads, its rule and
// its description (scripts/docs/configuration.ts renders
// docs/configuration.md from it). config.ts parses the environment with it
// and adds the rules between variables.
import { isIP } from 'node:net';
import type { z } from 'zod';
import { MAX_BURST, PER_SECOND_RULE, isValidPerSecond } from './model/delivery-policy.js';
import { DEFAULT_RETENTION, MAX_PRUNE_BATCH } from './model/retention-policy.js';
import { validLocale, validTimeZone } from './model/locale.js';
import { onFirstUse } from './zod.js';
import { DEFAULT_AUDIT_RETENTION_DAYS } from './model/audit-actions.js';
import { DEFAULTS } from './defaults.js';
import { HOOK_NAME, HOOK_NAME_RULE } from './model/expire-hook-name.js';
import { webhookSecretProblem, webhookUrlProblem } from './model/webhook-events.js';

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Schema names PostgreSQL keeps for itself: `pg_*` (pg_catalog, pg_toast,
 * pg_temp_N; CREATE SCHEMA refuses the prefix) and information_schema (which
 * it would accept, mixing leasehold's tables into the SQL-standard views).
 */
export function isReservedSchemaName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith('pg_') || lower === 'information_schema';
}

/** An address to listen on: an IP literal (127.0.0.1, ::1, 0.0.0.0) or a host name (localhost). */
export function isListenHost(value: string): boolean {
  return isIP(value) !== 0 || HOST_NAME.test(value);
}

export const LISTEN_HOST_MESSAGE = 'must be an IP address or a host name, e.g. 127.0.0.1, 0.0.0.0 or ::1';

/**
 * Every environment variable leasehold reads, with its default. Parsing
 * fails on the first bad variable with a ConfigError naming it; the CLI
 * prints that one line and exits 2.
 */
export const configSchema = onFirstUse((z) => {
  const int = (min: number, max: number) => {
    const message = `must be a whole number from ${min} to ${max}`;
    return z.coerce.number({ error: message }).int(message).min(min, message).max(max, message);
  };
  return z.object({
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional()
      .describe("The PostgreSQL server to use. Unset: an embedded PostgreSQL with its data under `LEASEHOLD_DATA_DIR`. Several hosts in libpq's form (`postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write`): every connection goes to the one that accepts writes ([scaling](scaling.md#on-an-ha-postgresql-multi-host-urls))."),
    // A session connection for the delivery lane's LISTEN, when DATABASE_URL
    // goes through a transaction-mode pooler (PgBouncer), where LISTEN is lost.
    LEASEHOLD_LISTEN_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional()
      .describe("A direct or session-mode connection for each delivery lane's LISTEN session, when `DATABASE_URL` goes through a transaction-mode pooler. Unset: `DATABASE_URL`."),
    LEASEHOLD_LISTEN: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on')
      .describe("`off`: no LISTEN session, delivery workers poll every second. `on`: LISTEN, checked with a test NOTIFY; where it never arrives, one `listener.unavailable` warning and polling."),
    LEASEHOLD_POOL_SIZE: int(2, 1000).optional()
      .describe("Most pooled connections of a service process. Unset: 12 for a process running a lane, 10 for `api`. A delivery lane adds one LISTEN session outside the pool."),
    LEASEHOLD_DB_CONNECT_TIMEOUT_MS: int(100, 600_000).default(DEFAULTS.dbConnectTimeoutMs)
      .describe("Opening a database connection, or waiting for a free pooled one, gives up after this long."),
    LEASEHOLD_DB_WAIT_S: z
      .string()
      .regex(/^(forever|0|[1-9]\d{0,7})$/, 'must be a whole number of seconds (0: do not wait) or forever')
      .optional()
      .describe(`How long a starting process waits for its database (down, restarting, failing over), in seconds, before it exits 1; \`forever\`, or \`0\` not to wait. It logs once that it waits and why, and once when it connects. Unset: forever for \`start\`, \`api\` and the workers, ${DEFAULTS.dbWaitCommandS} s for every other command. A wrong password or database name is not waited for: exit 2 at once.`),
    LEASEHOLD_DB_QUERY_TIMEOUT_MS: int(1000, 3_600_000).default(DEFAULTS.dbQueryTimeoutMs)
      .describe("A query with no answer fails after this long, timed by the client (so it fires when the server is unreachable), and its connection is dropped. Migrations are exempt."),
    LEASEHOLD_DATA_DIR: z.string().min(1).default('./.leasehold')
      .describe("The embedded PostgreSQL cluster and its generated password (only when `DATABASE_URL` is unset)."),
    LEASEHOLD_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lowercase SQL identifier (letters, digits, underscore)')
      .refine((name) => !isReservedSchemaName(name), 'must not be a PostgreSQL system schema (pg_* or information_schema)')
      .default(DEFAULTS.schema)
      .describe("The schema holding leasehold's tables (not `pg_*` or `information_schema`). Only `migrate` and the services create it."),
    PORT: int(0, 65535).default(8787)
      .describe("The HTTP API's port."),
    // Loopback unless the operator chooses to expose the API (and its open
    // /healthz, /metrics and dashboard) on other interfaces.
    LEASEHOLD_HOST: z.string().refine(isListenHost, LISTEN_HOST_MESSAGE).default('127.0.0.1')
      .describe("The interface the HTTP API listens on (`--host` on `start` and `api` overrides it). `0.0.0.0` or `::` exposes the API, with its open `/healthz`, `/metrics` and dashboard, on every interface."),
    // The token travels in `Authorization: Bearer <token>`, where whitespace
    // ends it and only ASCII arrives intact: any other token could never match.
    LEASEHOLD_API_TOKEN: z
      .string()
      .min(16, 'must be at least 16 characters')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without whitespace (it is sent in an Authorization: Bearer header)')
      .optional()
      .describe("Bearer token for `/v1`: one `admin` token named `env`, at least 16 printable ASCII characters without whitespace. Unset (and no tokens file): generated at start and printed once."),
    // Named tokens with roles (model/api-tokens.ts); read at start and on SIGHUP.
    LEASEHOLD_API_TOKENS_FILE: z.string().min(1).optional()
      .describe("YAML file of named tokens with roles, stored as SHA-256 hashes. Read at start and on SIGHUP; a broken file is refused in one line naming the entry and the field."),
    LEASEHOLD_AUTH_FAILURES_PER_MINUTE: int(1, 100_000).default(DEFAULTS.authFailuresPerMinute)
      .describe("Refused tokens from one client address within a minute before it is answered 429."),
    LEASEHOLD_AUTH_LOCKOUT_S: int(1, 86_400).default(DEFAULTS.authLockoutS)
      .describe("How long a client address that reached `LEASEHOLD_AUTH_FAILURES_PER_MINUTE` is answered 429, in seconds."),
    LEASEHOLD_ACCOUNTS_FILE: z.string().min(1).optional()
      .describe("YAML file of provider accounts and their `failover` order. Set, it replaces `EMAIL_PROVIDER`, the provider variables and `LEASEHOLD_RATE_*`."),
    LEASEHOLD_FAILOVER_AFTER_S: int(1, 86_400).default(DEFAULTS.failoverAfterS)
      .describe("An account cooling down (429) longer than this, in seconds, sends its intents on to the next account in failover."),
    EMAIL_PROVIDER: z.enum(['sandbox', 'resend', 'postmark', 'ses', 'smtp']).default('sandbox')
      .describe("The provider of the one account, `default`, when there is no accounts file."),
    EMAIL_FROM: z.string().min(3).default(DEFAULTS.emailFrom)
      .describe("The sender, unless the template's `meta.json` (or a tenant policy) names one."),
    LEASEHOLD_RATE_PER_SECOND: z.coerce.number({ error: PER_SECOND_RULE }).refine(isValidPerSecond, PER_SECOND_RULE).default(DEFAULTS.ratePerSecond)
      .describe("The shared limiter's rate, per second (0.001 to 1,000,000). A delivery process applies it at start when it changed since it was last applied (audited); an operator's change at run time stays in force until then. See docs/operations.md, where the rate limit comes from."),
    LEASEHOLD_RATE_BURST: int(1, MAX_BURST).default(DEFAULTS.rateBurst)
      .describe("The shared limiter's burst, applied as LEASEHOLD_RATE_PER_SECOND is."),
    LEASEHOLD_RATE_UNIT: z.enum(['requests', 'emails'], { error: 'must be requests or emails' }).default('requests')
      .describe("What one permit of that limiter stands for: a provider request (`requests`: a batch costs one) or an email (`emails`)."),
    LEASEHOLD_SEND_BATCH: int(1, 10_000).optional()
      .describe("Emails per provider request. Unset: the provider's maximum (Resend 100, Postmark 500; SES, SMTP and the sandbox have no batch API: 1). `1` turns batching off."),
    LEASEHOLD_TENANT_METRICS: z
      .string()
      .regex(/^(off|top:([1-9]\d{0,2}|1000))$/, 'must be off or top:N (N from 1 to 1000)')
      .default('off')
      .describe("`top:N`: `/metrics` exports the N tenants with the largest backlogs with a `tenant` label. Off by default, since a label per tenant is unbounded."),
    // The hold's life (migration 0024): seconds, or off.
    LEASEHOLD_REMIND_BEFORE_S: z
      .string()
      .regex(/^(off|[1-9]\d{0,6})$/, 'must be off or a whole number of seconds (1 to 2592000)')
      .refine((v) => v === 'off' || Number(v) <= 2_592_000, 'must be off or a whole number of seconds (1 to 2592000)')
      .default('off')
      .describe("Seconds: a hold created without `remindBeforeSeconds` gets a reminder this long before it expires."),
    LEASEHOLD_NOTIFY_ON_CONFIRM: z.enum(['on', 'off'], { error: 'must be on or off' }).default('off')
      .describe("`on`: a hold created without `notifyOnConfirm` gets a confirmation email when it is confirmed."),
    LEASEHOLD_NOTICE_DEADLINE_S: z
      .string()
      .regex(/^(off|[1-9]\d{0,6})$/, 'must be off or a whole number of seconds (1 to 2592000)')
      .refine((v) => v === 'off' || Number(v) <= 2_592_000, 'must be off or a whole number of seconds (1 to 2592000)')
      .default('off')
      .describe("Seconds: expiry and confirmation emails still unsent this long after the expiry or confirmation are not sent (they end `missed_deadline`)."),
    // The application's hook inside the expiry transaction (holds/expire-hook.ts).
    LEASEHOLD_EXPIRE_HOOK: z
      .string()
      .regex(HOOK_NAME, HOOK_NAME_RULE)
      .optional()
      .describe("`<schema>.<function>`: a SQL function taking `text[]` (the ids of the holds), called inside the expiry transaction after the holds expired and their intents were written, and inside confirm, cancel and extend made through the API. Must exist at start (else exit 2). See [application events](application-events.md)."),
    LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS: int(10, 600_000).default(DEFAULTS.expireHookTimeoutMs)
      .describe("The expiry hook's `statement_timeout`: a call slower than this counts as failing. Must be shorter than `LEASEHOLD_DB_QUERY_TIMEOUT_MS`."),
    LEASEHOLD_EXPIRY_INTERVAL_MS: int(10, 3_600_000).default(DEFAULTS.expiryIntervalMs)
      .describe("The expiry worker's longest sleep."),
    LEASEHOLD_EXPIRY_BATCH: int(1, 100_000).default(DEFAULTS.expiryBatch)
      .describe("Holds per expiry transaction."),
    LEASEHOLD_LEASE_MS: int(1000, 3_600_000).default(DEFAULTS.leaseMs)
      .describe("How long a delivery worker's lease on an intent lasts."),
    LEASEHOLD_DELIVERY_BATCH: int(1, 10_000).default(DEFAULTS.deliveryBatch)
      .describe("Most intents per lease (one round); on an account sending batches, at least one full batch."),
    LEASEHOLD_DELIVERY_CONCURRENCY: int(1, 1000).default(DEFAULTS.deliveryConcurrency)
      .describe("Most provider requests in flight per delivery process. A round leases at most min(batch, free slots) intents (on a batching account up to a batch per free slot) and sends them all at once; with concurrency above the batch, up to 4 rounds overlap. 100 in flight covers a real provider (100-300 ms a call) up to about 300-1,000 sends/s per process; for a provider limit in the thousands raise both this and `LEASEHOLD_DELIVERY_BATCH`."),
    LEASEHOLD_HAND_OFF: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on')
      .describe("`on`: a process running both lanes leases each expiry batch's email to its own delivery lane in the expiry statement, when that lane can send it at once (one account, no older email waiting, no tenant policy for the batch), so it is sent right after the commit. `off`: every email waits for a delivery round's lease ([architecture](architecture.md#the-hand-off))."),
    LEASEHOLD_SEND_TIMEOUT_MS: int(100, 3_600_000).optional()
      .describe("The provider call's timeout; must be shorter than the lease. Unset: min(10000, `LEASEHOLD_LEASE_MS` / 2)."),
    LEASEHOLD_MAX_ATTEMPTS: int(1, 1000).default(DEFAULTS.maxAttempts)
      .describe("Failed attempts before an intent is `dead` (rate limits do not count)."),
    LEASEHOLD_EXPIRY_PROMISE_S: int(1, 31_536_000).default(60)
      .describe("The expiry lane's promise, in seconds: health and alerts compare the oldest due hold's age against it."),
    LEASEHOLD_EMAIL_PROMISE_S: int(1, 31_536_000).default(900)
      .describe("The delivery lane's promise, in seconds: health and alerts compare the oldest pending email's age against it."),
    // Whole days or `off`; read by the retention policy's own rule below.
    LEASEHOLD_RETENTION_DAYS: z.string().default(String(DEFAULT_RETENTION.retentionDays))
      .describe("Whole days or `off`: finished stories (hold, intents, attempts) are deleted this many days after they end; `off` keeps them."),
    LEASEHOLD_ERASE_PII_AFTER_DAYS: z.string().default(String(DEFAULT_RETENTION.erasePiiAfterDays))
      .describe("Whole days (0 to `LEASEHOLD_RETENTION_DAYS`) or `off`: personal data is erased this many days after a story ends; `off` never erases by age."),
    LEASEHOLD_AUDIT_RETENTION_DAYS: z.string().default(String(DEFAULT_AUDIT_RETENTION_DAYS))
      .describe("Whole days (1 to 3650) or `off`: audit log entries are deleted this many days old; `off` keeps them."),
    LEASEHOLD_PRUNE_INTERVAL_MS: int(1000, 86_400_000).default(DEFAULT_RETENTION.intervalMs)
      .describe("The prune worker's longest sleep."),
    LEASEHOLD_PRUNE_BATCH: int(1, MAX_PRUNE_BATCH).default(DEFAULT_RETENTION.batchSize)
      .describe("Stories per retention transaction."),
    LEASEHOLD_TEMPLATES_DIR: z.string().min(1).optional()
      .describe("The message templates' directory. Unset: the templates shipped in the package."),
    LEASEHOLD_DEFAULT_LOCALE: z
      .string()
      .refine((v) => validLocale(v) !== undefined, 'must be a locale this Node can format (e.g. en, en-GB, de)')
      .default('en')
      .describe("The locale for holds whose `metadata.locale` is missing or not one Intl can format; its template must exist."),
    LEASEHOLD_DEFAULT_TIME_ZONE: z
      .string()
      .refine((v) => validTimeZone(v) !== undefined, 'must be an IANA time zone (e.g. UTC, Europe/Berlin)')
      .default('UTC')
      .describe("The IANA time zone for holds whose `metadata.timeZone` is missing or unknown."),
    // Webhooks to the application (src/webhooks/, docs/application-events.md).
    LEASEHOLD_WEBHOOK_URL: z.string().refine((v) => !webhookUrlProblem(v), 'must be an absolute http:// or https:// URL without credentials').optional()
      .describe("An endpoint (named `default`) that receives every application event (`hold.expired`, `email.accepted`, ...) as a signed Standard Webhooks POST. Needs `LEASEHOLD_WEBHOOK_SECRET`."),
    LEASEHOLD_WEBHOOK_SECRET: z.string().refine((v) => !webhookSecretProblem(v), 'must be a Standard Webhooks secret: whsec_ followed by base64 of 24 to 64 bytes').optional()
      .describe("The `whsec_...` secret `LEASEHOLD_WEBHOOK_URL`'s requests are signed with (`webhook-signature: v1,<HMAC-SHA256>`)."),
    LEASEHOLD_WEBHOOKS_FILE: z.string().min(1).optional()
      .describe("YAML file of more webhook endpoints, each with its `url`, `secret` (a `${VAR}` reference), `types`, `tenants`, `rate` and `concurrency`."),
    LEASEHOLD_WEBHOOK_TIMEOUT_MS: int(100, 600_000).default(DEFAULTS.webhookTimeoutMs)
      .describe("A webhook request with no answer within this long counts as failed and is retried."),
    LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S: int(60, 31_536_000).default(DEFAULTS.webhookGiveUpAfterS)
      .describe("A webhook event still undelivered this many seconds after it was written is given up (`dead`); `leasehold webhooks replay` sends it again."),
    LEASEHOLD_WEBHOOK_CONCURRENCY: int(1, 100).default(DEFAULTS.webhookConcurrency)
      .describe("Most requests in flight to `LEASEHOLD_WEBHOOK_URL` at once (the endpoints file sets its own per endpoint)."),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')
      .describe("The pino log level."),
  });
});


/** The parsed environment, before config.ts turns it into a Config. */
export type Env = z.infer<ReturnType<typeof configSchema>>;
