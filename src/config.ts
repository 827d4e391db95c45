import { isIP } from 'node:net';
import type { z } from 'zod';
import { MAX_BURST, PER_SECOND_RULE, isValidPerSecond } from './model/delivery-policy.js';
import { ConfigError, ValidationError } from './errors.js';
import { checkEraseWithinRetention, DEFAULT_RETENTION, MAX_PRUNE_BATCH, parseErasePiiAfterDays, parseRetentionDays, type RetentionPolicy } from './model/retention-policy.js';
import { validLocale, validTimeZone } from './model/locale.js';
import { onFirstUse } from './zod.js';
import { describeZodError, editDistance } from './model/zod-issues.js';
import { DEFAULT_AUDIT_RETENTION_DAYS } from './model/audit-actions.js';
import { DEFAULTS } from './defaults.js';
import { parseDatabaseUrl } from './model/database-url.js';

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
const schema = onFirstUse((z) => {
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
      .describe("The shared limiter's initial rate, per second (0.001 to 1,000,000). Changes made at run time persist in the database."),
    LEASEHOLD_RATE_BURST: int(1, MAX_BURST).default(DEFAULTS.rateBurst)
      .describe("The shared limiter's initial burst."),
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
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')
      .describe("The pino log level."),
  });
});

/** The environment's schema, for the generated reference (scripts/docs/configuration.ts renders docs/configuration.md from it). */
export const configSchema = schema;

type Env = z.infer<ReturnType<typeof schema>>;

// Never echoed in an error line: that would put a secret (the token, a
// database password) in logs and terminals.
const SECRET_VARIABLES = new Set(['LEASEHOLD_API_TOKEN', 'DATABASE_URL', 'LEASEHOLD_LISTEN_URL']);

export interface Config {
  databaseUrl: string | undefined;
  /** The delivery lane's LISTEN connection; unset: the database's own URL. */
  listenUrl: string | undefined;
  /** false: no LISTEN at all, delivery workers poll (every DEFAULTS.deliveryPollMs). */
  listen: boolean;
  /** Most pooled connections per service process; unset: DEFAULTS.poolSizeLanes or poolSizeApi. */
  poolSize: number | undefined;
  /** Bounds on every wait for the database (db/pool.ts connectionBounds). */
  dbConnectTimeoutMs: number;
  /** How long a starting process waits for the database, in seconds (Infinity: forever, 0: not at all); unset: the command's own default (db/wait.ts). */
  dbWaitS: number | undefined;
  dbQueryTimeoutMs: number;
  dataDir: string;
  schema: string;
  port: number;
  /** Interface the HTTP API listens on. */
  host: string;
  apiToken: string | undefined;
  /** Named tokens with roles (LEASEHOLD_API_TOKENS_FILE); read at start and reloaded on SIGHUP. */
  apiTokensFile: string | undefined;
  /** Refused tokens per client address a minute before a lockout, and its length. */
  authFailuresPerMinute: number;
  authLockoutS: number;
  /** Provider accounts (src/model/accounts.ts); unset: one account, `default`, from EMAIL_PROVIDER and its variables. */
  accountsFile: string | undefined;
  /** An intent moves on from an account that has been cooling down (429) longer than this. */
  failoverAfterS: number;
  /** What a permit of the env account's limiter stands for (LEASEHOLD_RATE_UNIT). */
  rateUnit: 'requests' | 'emails';
  /** Emails per provider request on the env account (LEASEHOLD_SEND_BATCH); absent: the provider's maximum. */
  sendBatch?: number;
  /** Tenants exported with a label (LEASEHOLD_TENANT_METRICS=top:N); absent: none. */
  tenantMetricsTop?: number;
  /** A hold created without `remindBeforeSeconds` gets a reminder this long before expiry (LEASEHOLD_REMIND_BEFORE_S); null: none. */
  remindBeforeSeconds: number | null;
  /** A hold created without `notifyOnConfirm` gets a confirmation email (LEASEHOLD_NOTIFY_ON_CONFIRM). */
  notifyOnConfirm: boolean;
  /** Expiry and confirmation emails still unsent this long after their moment are not sent (LEASEHOLD_NOTICE_DEADLINE_S); null: no deadline. */
  noticeDeadlineSeconds: number | null;
  emailProvider: Env['EMAIL_PROVIDER'];
  emailFrom: string;
  ratePerSecond: number;
  rateBurst: number;
  expiryIntervalMs: number;
  expiryBatch: number;
  leaseMs: number;
  deliveryBatch: number;
  deliveryConcurrency: number;
  /** Provider call timeout; always shorter than the lease. */
  sendTimeoutMs: number;
  maxAttempts: number;
  expiryPromiseS: number;
  emailPromiseS: number;
  /** What is deleted when, and when personal data is erased (src/retention/policy.ts). */
  retention: RetentionPolicy;
  logLevel: Env['LOG_LEVEL'];
  /** Message templates; unset: the ones shipped in the package. */
  templatesDir: string | undefined;
  /** Locale and time zone for holds whose metadata names none. */
  defaultLocale: string;
  defaultTimeZone: string;
  /** The raw environment, for provider adapters reading their own variables. */
  env: Readonly<Record<string, string | undefined>>;
}

/** LEASEHOLD_* variables read outside the schema above: by the test suite, the benchmarks and opt-in checks. */
const OTHER_VARIABLES = [
  'LEASEHOLD_TEST_DATABASE_URL',
  'LEASEHOLD_BENCH_DATABASE_URL',
  'LEASEHOLD_CAPACITY_PRINT',
  'LEASEHOLD_NETNS_TEST',
  'LEASEHOLD_TEST_MISSING_PACKAGE',
];

/**
 * LEASEHOLD_* variables in `env` that nothing reads, each with the known
 * name it is closest to (when within three edits): a mistyped name is
 * otherwise silently ignored, and its default silently used.
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): Array<{ name: string; didYouMean?: string }> {
  const known = [...Object.keys(schema().shape), ...OTHER_VARIABLES].filter((k) => k.startsWith('LEASEHOLD_'));
  return Object.keys(env)
    .filter((name) => name.startsWith('LEASEHOLD_') && !known.includes(name))
    .sort()
    .map((name) => {
      const [best] = known.map((k) => ({ k, d: editDistance(name, k) })).sort((x, y) => x.d - y.d);
      return best && best.d <= 3 ? { name, didYouMean: best.k } : { name };
    });
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new ValidationError('env', 'must be an object of environment variables, like process.env');
  // Empty strings mean "unset", as in most shells' `VAR= cmd`.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = schema().safeParse(cleaned);
  if (!parsed.success) {
    const { path, message } = describeZodError(parsed.error, { schema: schema(), input: cleaned });
    const variable = String(path[0] ?? 'environment');
    const got = SECRET_VARIABLES.has(variable) ? '' : ` (got ${JSON.stringify(cleaned[variable] ?? null)})`;
    throw new ConfigError(variable, `${message}${got}`);
  }
  const e = parsed.data;
  const sendTimeoutMs = e.LEASEHOLD_SEND_TIMEOUT_MS ?? DEFAULTS.sendTimeoutMs(e.LEASEHOLD_LEASE_MS);
  if (sendTimeoutMs >= e.LEASEHOLD_LEASE_MS) {
    throw new ConfigError(
      'LEASEHOLD_SEND_TIMEOUT_MS',
      `must be shorter than LEASEHOLD_LEASE_MS (${e.LEASEHOLD_LEASE_MS}), or a lease could expire mid-send`,
    );
  }
  for (const variable of ['DATABASE_URL', 'LEASEHOLD_LISTEN_URL'] as const) checkDatabaseUrl(variable, e[variable]);
  return {
    databaseUrl: e.DATABASE_URL,
    listenUrl: e.LEASEHOLD_LISTEN_URL,
    listen: e.LEASEHOLD_LISTEN === 'on',
    poolSize: e.LEASEHOLD_POOL_SIZE,
    dbConnectTimeoutMs: e.LEASEHOLD_DB_CONNECT_TIMEOUT_MS,
    dbQueryTimeoutMs: e.LEASEHOLD_DB_QUERY_TIMEOUT_MS,
    dbWaitS: e.LEASEHOLD_DB_WAIT_S === undefined ? undefined : e.LEASEHOLD_DB_WAIT_S === 'forever' ? Infinity : Number(e.LEASEHOLD_DB_WAIT_S),
    dataDir: e.LEASEHOLD_DATA_DIR,
    schema: e.LEASEHOLD_SCHEMA,
    port: e.PORT,
    host: e.LEASEHOLD_HOST,
    apiToken: e.LEASEHOLD_API_TOKEN,
    apiTokensFile: e.LEASEHOLD_API_TOKENS_FILE,
    authFailuresPerMinute: e.LEASEHOLD_AUTH_FAILURES_PER_MINUTE,
    authLockoutS: e.LEASEHOLD_AUTH_LOCKOUT_S,
    accountsFile: e.LEASEHOLD_ACCOUNTS_FILE,
    failoverAfterS: e.LEASEHOLD_FAILOVER_AFTER_S,
    emailProvider: e.EMAIL_PROVIDER,
    emailFrom: e.EMAIL_FROM,
    ratePerSecond: e.LEASEHOLD_RATE_PER_SECOND,
    rateBurst: e.LEASEHOLD_RATE_BURST,
    rateUnit: e.LEASEHOLD_RATE_UNIT,
    ...(e.LEASEHOLD_TENANT_METRICS !== 'off' ? { tenantMetricsTop: Number(e.LEASEHOLD_TENANT_METRICS.slice(4)) } : {}),
    remindBeforeSeconds: e.LEASEHOLD_REMIND_BEFORE_S === 'off' ? null : Number(e.LEASEHOLD_REMIND_BEFORE_S),
    notifyOnConfirm: e.LEASEHOLD_NOTIFY_ON_CONFIRM === 'on',
    noticeDeadlineSeconds: e.LEASEHOLD_NOTICE_DEADLINE_S === 'off' ? null : Number(e.LEASEHOLD_NOTICE_DEADLINE_S),
    ...(e.LEASEHOLD_SEND_BATCH !== undefined ? { sendBatch: e.LEASEHOLD_SEND_BATCH } : {}),
    expiryIntervalMs: e.LEASEHOLD_EXPIRY_INTERVAL_MS,
    expiryBatch: e.LEASEHOLD_EXPIRY_BATCH,
    leaseMs: e.LEASEHOLD_LEASE_MS,
    deliveryBatch: e.LEASEHOLD_DELIVERY_BATCH,
    deliveryConcurrency: e.LEASEHOLD_DELIVERY_CONCURRENCY,
    sendTimeoutMs,
    maxAttempts: e.LEASEHOLD_MAX_ATTEMPTS,
    expiryPromiseS: e.LEASEHOLD_EXPIRY_PROMISE_S,
    emailPromiseS: e.LEASEHOLD_EMAIL_PROMISE_S,
    retention: retentionFromEnv(e),
    logLevel: e.LOG_LEVEL,
    templatesDir: e.LEASEHOLD_TEMPLATES_DIR,
    defaultLocale: e.LEASEHOLD_DEFAULT_LOCALE,
    defaultTimeZone: e.LEASEHOLD_DEFAULT_TIME_ZONE,
    env,
  };
}

/**
 * A database URL's hosts and target_session_attrs (model/database-url.ts),
 * checked at start: a value leasehold cannot work with stops it with exit 2
 * instead of failing every connection. The error names the parameter,
 * never the URL (it may carry a password).
 */
function checkDatabaseUrl(variable: string, url: string | undefined): void {
  if (url === undefined) return;
  try {
    parseDatabaseUrl(url, variable);
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(variable, error.message.slice(variable.length + 2));
    throw error;
  }
}

/** The retention policy, checked by the same rules as the CLI flags and the API. */
function retentionFromEnv(e: Env): RetentionPolicy {
  const days = 'LEASEHOLD_RETENTION_DAYS';
  const erase = 'LEASEHOLD_ERASE_PII_AFTER_DAYS';
  const policy: RetentionPolicy = {
    retentionDays: asConfig(days, e[days], () => parseRetentionDays(e[days], days)),
    erasePiiAfterDays: asConfig(erase, e[erase], () => parseErasePiiAfterDays(e[erase], erase)),
    batchSize: e.LEASEHOLD_PRUNE_BATCH,
    intervalMs: e.LEASEHOLD_PRUNE_INTERVAL_MS,
    auditRetentionDays: asConfig('LEASEHOLD_AUDIT_RETENTION_DAYS', e.LEASEHOLD_AUDIT_RETENTION_DAYS, () =>
      parseRetentionDays(e.LEASEHOLD_AUDIT_RETENTION_DAYS, 'LEASEHOLD_AUDIT_RETENTION_DAYS'),
    ),
  };
  asConfig(erase, e[erase], () => checkEraseWithinRetention(policy, erase));
  return policy;
}

/** A shared validation rule's ValidationError, as the ConfigError naming the variable. */
function asConfig<T>(variable: string, got: string | undefined, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ValidationError) {
      throw new ConfigError(variable, `${error.message.replace(/^[A-Z_]+: /, '')} (got ${JSON.stringify(got ?? null)})`);
    }
    throw error;
  }
}
