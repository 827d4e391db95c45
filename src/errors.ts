/**
 * Errors a caller can act on. Each carries a stable `code`; validation errors
 * name the field so an API can answer 400 with it and a CLI can print it.
 */
export class LeaseholdError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad input: `field` names what was wrong (dot path for nested fields). */
export class ValidationError extends LeaseholdError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('validation_error', `${field}: ${message}`);
  }
}

export class NotFoundError extends LeaseholdError {
  constructor(what: string, id: string) {
    super('not_found', `${what} ${JSON.stringify(id)} does not exist`);
  }
}

/** Same client-supplied id reused with different content. */
export class IdempotencyConflictError extends LeaseholdError {
  constructor(id: string) {
    super('idempotency_conflict', `hold ${JSON.stringify(id)} already exists with different content`);
  }
}

/** A transition was asked of a hold that already left `held`. */
export class HoldNotHeldError extends LeaseholdError {
  constructor(
    readonly holdId: string,
    readonly status: string,
  ) {
    super('hold_not_held', `hold ${JSON.stringify(holdId)} is ${status}, not held`);
  }
}

/** A transition was asked of an intent in a state that does not allow it. */
export class IntentStateError extends LeaseholdError {
  constructor(
    readonly intentId: string,
    readonly state: string,
    message: string,
  ) {
    super('intent_state', message);
  }
}

/**
 * A command that only reads (status, trace, the operator commands) found no
 * leasehold tables, or an older set: it refuses rather than migrating, so a
 * mistyped LEASEHOLD_SCHEMA creates nothing. The fix is `leasehold migrate`.
 */
export class SchemaNotMigratedError extends LeaseholdError {
  constructor(message: string) {
    super('schema_not_migrated', message);
  }
}

/** Invalid configuration: `variable` names the environment variable. */
export class ConfigError extends LeaseholdError {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super('config_error', `${variable}: ${message}`);
  }
}
