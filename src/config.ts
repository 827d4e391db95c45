import { ConfigError, ValidationError } from './errors.js';
import { checkEraseWithinRetention, parseErasePiiAfterDays, parseRetentionDays, type RetentionPolicy } from './model/retention-policy.js';
import { describeZodError, editDistance } from './model/zod-issues.js';
import { DEFAULTS } from './defaults.js';
import { parseDatabaseUrl } from './model/database-url.js';
import { configSchema as schema, type Env } from './config-schema.js';

// Never echoed in an error line: that would put a secret (the token, a
// database password) in logs and terminals.
const SECRET_VARIABLES = new Set(['LEASEHOLD_API_TOKEN', 'DATABASE_URL', 'LEASEHOLD_LISTEN_URL', 'LEASEHOLD_WEBHOOK_SECRET']);

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
  /** LEASEHOLD_EXPIRE_HOOK: `<schema>.<function>` taking text[]; unset: no hook. */
  expireHook: string | undefined;
  /** The hook's statement_timeout (LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS). */
  expireHookTimeoutMs: number;
  expiryIntervalMs: number;
  expiryBatch: number;
  leaseMs: number;
  deliveryBatch: number;
  deliveryConcurrency: number;
  /** The expiry lane hands its batches' email to the delivery lane of its process (delivery/hand-off.ts). */
  handOff: boolean;
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
  /** The webhook endpoint of the environment (`default`): both or neither. */
  webhookUrl: string | undefined;
  webhookSecret: string | undefined;
  /** More endpoints (LEASEHOLD_WEBHOOKS_FILE), read by webhooks/endpoints.ts. */
  webhooksFile: string | undefined;
  webhookTimeoutMs: number;
  webhookGiveUpAfterS: number;
  webhookConcurrency: number;
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
  if (e.LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS >= e.LEASEHOLD_DB_QUERY_TIMEOUT_MS) {
    throw new ConfigError(
      'LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS',
      `must be shorter than LEASEHOLD_DB_QUERY_TIMEOUT_MS (${e.LEASEHOLD_DB_QUERY_TIMEOUT_MS}), or the connection is dropped before the hook's timeout fires`,
    );
  }
  if (e.LEASEHOLD_WEBHOOK_URL !== undefined && e.LEASEHOLD_WEBHOOK_SECRET === undefined) {
    throw new ConfigError('LEASEHOLD_WEBHOOK_SECRET', 'is required when LEASEHOLD_WEBHOOK_URL is set (every webhook is signed)');
  }
  if (e.LEASEHOLD_WEBHOOK_SECRET !== undefined && e.LEASEHOLD_WEBHOOK_URL === undefined) {
    throw new ConfigError('LEASEHOLD_WEBHOOK_URL', 'is required when LEASEHOLD_WEBHOOK_SECRET is set');
  }
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
    expireHook: e.LEASEHOLD_EXPIRE_HOOK,
    expireHookTimeoutMs: e.LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS,
    expiryIntervalMs: e.LEASEHOLD_EXPIRY_INTERVAL_MS,
    expiryBatch: e.LEASEHOLD_EXPIRY_BATCH,
    leaseMs: e.LEASEHOLD_LEASE_MS,
    deliveryBatch: e.LEASEHOLD_DELIVERY_BATCH,
    deliveryConcurrency: e.LEASEHOLD_DELIVERY_CONCURRENCY,
    handOff: e.LEASEHOLD_HAND_OFF === 'on',
    sendTimeoutMs,
    maxAttempts: e.LEASEHOLD_MAX_ATTEMPTS,
    expiryPromiseS: e.LEASEHOLD_EXPIRY_PROMISE_S,
    emailPromiseS: e.LEASEHOLD_EMAIL_PROMISE_S,
    retention: retentionFromEnv(e),
    logLevel: e.LOG_LEVEL,
    templatesDir: e.LEASEHOLD_TEMPLATES_DIR,
    defaultLocale: e.LEASEHOLD_DEFAULT_LOCALE,
    defaultTimeZone: e.LEASEHOLD_DEFAULT_TIME_ZONE,
    webhookUrl: e.LEASEHOLD_WEBHOOK_URL,
    webhookSecret: e.LEASEHOLD_WEBHOOK_SECRET,
    webhooksFile: e.LEASEHOLD_WEBHOOKS_FILE,
    webhookTimeoutMs: e.LEASEHOLD_WEBHOOK_TIMEOUT_MS,
    webhookGiveUpAfterS: e.LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S,
    webhookConcurrency: e.LEASEHOLD_WEBHOOK_CONCURRENCY,
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
