/**
 * Errors a caller can act on. Each carries a stable `code` and the HTTP
 * status the API answers with (`status`), so a new kind of error is mapped
 * where it is defined, not in the server; validation errors name the field
 * so an API can answer 400 with it and a CLI can print it.
 */
export class LeaseholdError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** HTTP status for the API: 4xx for what the caller can fix, 5xx for what the service must. */
    readonly httpStatus: number = 500,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad input: `field` names what was wrong (dot path for nested fields). */
export class ValidationError extends LeaseholdError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('validation_error', `${field}: ${message}`, 400);
  }
}

export class NotFoundError extends LeaseholdError {
  /** `hint`: what the caller may have meant, appended to the message (e.g. `did you mean reservation-expired:slot-1?`). */
  constructor(what: string, id: string, hint?: string) {
    super('not_found', `${what} ${JSON.stringify(id)} does not exist${hint ? `; ${hint}` : ''}`, 404);
  }
}

/** Same client-supplied id reused with different content. */
export class IdempotencyConflictError extends LeaseholdError {
  constructor(id: string) {
    super('idempotency_conflict', `hold ${JSON.stringify(id)} already exists with different content`, 409);
  }
}

/** A transition was asked of a hold that already left `held`. */
export class HoldNotHeldError extends LeaseholdError {
  constructor(
    readonly holdId: string,
    readonly status: string,
  ) {
    super('hold_not_held', `hold ${JSON.stringify(holdId)} is ${status}, not held`, 409);
  }
}

/** A transition was asked of an intent in a state that does not allow it. */
export class IntentStateError extends LeaseholdError {
  constructor(
    readonly intentId: string,
    readonly state: string,
    message: string,
  ) {
    super('intent_state', message, 409);
  }
}

/**
 * A command that only reads (status, trace, the operator commands) found no
 * leasehold tables, or an older set: it refuses rather than migrating, so a
 * mistyped LEASEHOLD_SCHEMA creates nothing. The fix is `leasehold migrate`.
 */
export class SchemaNotMigratedError extends LeaseholdError {
  constructor(message: string) {
    super('schema_not_migrated', message, 503);
  }
}

/** Invalid configuration: `variable` names the environment variable. */
export class ConfigError extends LeaseholdError {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super('config_error', `${variable}: ${message}`, 500);
  }
}

/** A migration file could not be read or applied; the schema is left as the last good migration made it. */
export class MigrationError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('migration_failed', message, 500, options);
  }
}

/** The shared rate limiter's row is missing: nothing ran rateLimiterEnsure (service start-up does). */
export class LimiterMissingError extends LeaseholdError {
  constructor(schema: string, account = 'default') {
    super('limiter_missing', `the rate limiter row of account ${JSON.stringify(account)} is missing in schema ${schema}; start the service (or call rateLimiterEnsure) first`, 503);
  }
}

/** Errors that mean the connection or server went away, not a bad query. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string') {
    // 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now,
    // class 08 connection exceptions. 25006 read_only_sql_transaction: the
    // server no longer takes writes (after a failover the old primary comes
    // back as a standby, "cannot execute LISTEN during recovery"), so the
    // connection is as good as lost: dropped, and the next one goes to the
    // host that takes writes now (db/hosts.ts).
    if (e.code.startsWith('08') || e.code === '57P01' || e.code === '57P02' || e.code === '57P03' || e.code === '25006') return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'].includes(e.code)) return true;
  }
  const message = e?.message ?? '';
  // 'Query read timeout': pg's query_timeout fired; the connection still
  // carries the unanswered query, so it is as good as lost.
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|Query read timeout/i.test(message);
}

/** The configured templates do not render: the service refuses to start (`leasehold templates check` tells more). */
export class TemplatesBrokenError extends LeaseholdError {
  constructor(message: string) {
    super('templates_broken', message, 500);
  }
}

/**
 * An optional dependency (a provider's SDK, the embedded PostgreSQL
 * binaries) is not installed. npm installs optional dependencies by default;
 * this appears after `npm install --omit=optional` or a failed platform
 * install. `packageName` is what to install.
 */
export class MissingPackageError extends LeaseholdError {
  constructor(
    readonly packageName: string,
    neededFor: string,
    install: string = packageName,
    options?: ErrorOptions,
  ) {
    super(
      'missing_package',
      `${neededFor} needs the package ${packageName}, which is not installed (an optional dependency of leasehold): run npm install ${install}`,
      500,
      options,
    );
  }
}
