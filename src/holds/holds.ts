import type { Queryable } from '../db/pool.js';
import { HoldNotHeldError, IdempotencyConflictError, NotFoundError } from '../errors.js';
import { holdFunctionError, type ExtendField } from './function-errors.js';
import { inMigratedSchema } from '../db/schema-errors.js';
import { checkDb, checkOptions } from '../db/arguments.js';
import type { Clock } from '../runtime/clock.js';
import { activeTraceparent, validTraceparent } from '../observability/tracing.js';
import { holdFromRow, holdsExtend, holdsGet, holdsGetForRetry, holdsInsert, holdsSettle, type HoldInsert, type HoldRow } from '../tables/holds.js';
import type { Hold } from '../model/hold-states.js';
import {
  checkExpiresAt,
  validateCreateHold,
  validateExtendHold,
  validateHoldId,
  type CreateHoldInput,
  type ExtendHoldInput,
  type ValidHold,
} from '../model/hold-input.js';

/**
 * The hold API for applications. Every function takes any `pg` Pool, Client
 * or PoolClient, so a caller can create or confirm a hold inside its own
 * transaction (the hold commits or rolls back with the caller's work).
 */
export interface HoldOptions {
  /** Schema holding leasehold's tables (default `leasehold`). */
  schema?: string;
  /** Clock for timestamps and validation; default is the database clock. */
  clock?: Clock;
}

/** What a hold gets when its request does not say (the service's LEASEHOLD_REMIND_BEFORE_S and LEASEHOLD_NOTIFY_ON_CONFIRM). */
export interface HoldDefaults {
  /** Seconds before expiry to send a reminder; default none. */
  remindBeforeSeconds?: number | null;
  /** Send a confirmation email on confirm; default false. */
  notifyOnConfirm?: boolean;
}

export interface ConfirmOptions extends HoldOptions {
  /** The confirmation email's deadline, seconds after the confirmation (LEASEHOLD_NOTICE_DEADLINE_S); default none. */
  noticeDeadlineSeconds?: number | null;
}

/** How a hold is created: its defaults, and the trace it belongs to. */
export interface CreateOptions extends HoldOptions {
  defaults?: HoldDefaults;
  /**
   * The W3C traceparent to store on the hold (e.g. the API's `traceparent`
   * request header); one that is not valid is ignored, as W3C Trace
   * Context says. Absent or ignored: the span active now, if any
   * (observability/tracing.ts); null: none.
   */
  traceparent?: string | null;
}

export interface CreateHoldResult {
  hold: Hold;
  /** False when this was an idempotent retry of an earlier create. */
  created: boolean;
}

const schemaOf = (options: HoldOptions) => options.schema ?? 'leasehold';

/** Every option of the hold functions (module-level: the schema is built once, db/arguments.ts). */
const holdOptionFields: Parameters<typeof checkOptions>[2] = (r) => ({
  schema: r.schema.optional(),
  clock: r.clock.optional(),
  defaults: r.z.object({}, 'must be an object').optional(),
  traceparent: r.z.string('must be a string').nullable().optional(),
  noticeDeadlineSeconds: r.positive.nullable().optional(),
});

/** The hold functions' boundary: `db` and `options` checked (db/arguments.ts), a schema without the tables said as SchemaNotMigratedError. */
function boundary<T>(db: unknown, options: unknown, work: () => Promise<T>): Promise<T> {
  checkDb(db);
  checkOptions('options', options, holdOptionFields);
  return inMigratedSchema(schemaOf((options ?? {}) as HoldOptions), work);
}

/**
 * Create a hold. With a client-supplied `id` it is idempotent: the same id
 * with the same request returns the existing hold (`created: false`); the
 * same id with a different request (another tenant included) throws
 * IdempotencyConflictError. `tenant` is optional ('' by default, the empty
 * tenant) and its hold's intent carries it. Bad input throws
 * ValidationError naming the field.
 */
export async function createHold(
  db: Queryable,
  input: CreateHoldInput,
  options: CreateOptions = {},
): Promise<CreateHoldResult> {
  return boundary(db, options, async () => {
    const now = options.clock?.now() ?? null;
    const valid = validateCreateHold(input);
    const schema = schemaOf(options);
    const request: HoldInsert = {
      id: valid.id,
      customerEmail: valid.customerEmail,
      expiresAt: valid.expiresAt ?? null,
      ttlSeconds: valid.ttlSeconds ?? null,
      metadata: valid.metadata,
      tenant: valid.tenant,
      remindBeforeSeconds: valid.remindBeforeSeconds === undefined ? (options.defaults?.remindBeforeSeconds ?? null) : valid.remindBeforeSeconds,
      notifyOnConfirm: valid.notifyOnConfirm ?? options.defaults?.notifyOnConfirm ?? false,
      // The thread its expire, lease, send, record and event spans link back to.
      traceparent: options.traceparent === null ? null : (validTraceparent(options.traceparent) ?? activeTraceparent() ?? null),
    };
    try {
      checkExpiresAt(valid, now ?? new Date());
    } catch (error) {
      // Idempotency is decided before the clock: a client whose response was
      // lost retries the same body, perhaps after its expiresAt passed, and
      // must get the hold it created rather than "must be in the future". Only
      // a request that would create something is held to the deadline.
      if (!valid.clientId) throw error;
      const existing = await holdsGetForRetry(db, schema, request, valid.requestHash);
      if (!existing) throw error;
      return existingHold(existing, valid);
    }
    const inserted = await holdsInsert(db, schema, request, now);
    if (inserted) return { hold: holdFromRow(inserted), created: true };
    const existing = await holdsGetForRetry(db, schema, request, valid.requestHash);
    if (!existing) throw new IdempotencyConflictError(valid.id);
    return existingHold(existing, valid);
  });
}

/** The same id again: the same request gets the hold it created, another request a conflict. */
function existingHold(existing: HoldRow & { same_request: boolean }, valid: ValidHold): CreateHoldResult {
  if (!existing.same_request) throw new IdempotencyConflictError(valid.id);
  return { hold: holdFromRow(existing), created: false };
}

/** The hold, or undefined when there is none with this id (like every `get` of the library). */
export async function getHold(db: Queryable, id: string, options: HoldOptions = {}): Promise<Hold | undefined> {
  return boundary(db, options, async () => {
    const row = await holdsGet(db, schemaOf(options), validateHoldId(id));
    return row ? holdFromRow(row) : undefined;
  });
}

/**
 * A change through the hold functions (migrations/0024_hold_lifecycle.sql):
 * nothing changed is an unknown hold (NotFoundError) or one no longer held
 * (HoldNotHeldError, its status read again); their 22023 is a bad field
 * (for an extension, named as the caller sent it: `extendedBy`).
 */
async function holdChange(
  db: Queryable,
  schema: string,
  holdId: string,
  change: () => Promise<HoldRow | undefined>,
  extendedBy?: ExtendField,
): Promise<Hold> {
  let row: HoldRow | undefined;
  try {
    row = await change();
  } catch (error) {
    const { code, message, column } = error as { code?: string; message?: string; column?: string };
    const translated = code === '22023' && message ? holdFunctionError({ code, message, ...(column ? { column } : {}) }, extendedBy) : undefined;
    throw translated ?? error;
  }
  if (row) return holdFromRow(row);
  const current = await holdsGet(db, schema, holdId);
  if (!current) throw new NotFoundError('hold', holdId);
  throw new HoldNotHeldError(holdId, current.status);
}

/**
 * held -> confirmed. Throws HoldNotHeldError if it already left held (e.g.
 * expired first). Its pending reminder is voided, and a hold created with
 * `notifyOnConfirm` gets its confirmation email, in the same statement.
 */
export async function confirmHold(db: Queryable, id: string, options: ConfirmOptions = {}): Promise<Hold> {
  return boundary(db, options, async () => {
    const schema = schemaOf(options);
    const holdId = validateHoldId(id);
    return holdChange(db, schema, holdId, () =>
      holdsSettle(db, schema, holdId, 'confirmed', options.clock?.now() ?? null, options.noticeDeadlineSeconds ?? null),
    );
  });
}

/** held -> cancelled. No email is sent for a cancelled hold; its pending reminder is voided. */
export async function cancelHold(db: Queryable, id: string, options: HoldOptions = {}): Promise<Hold> {
  return boundary(db, options, async () => {
    const schema = schemaOf(options);
    const holdId = validateHoldId(id);
    return holdChange(db, schema, holdId, () => holdsSettle(db, schema, holdId, 'cancelled', options.clock?.now() ?? null));
  });
}

/**
 * Move a held hold's deadline later: `{ expiresAt }` (a later instant) or
 * `{ ttlSeconds }` (from now). Only while it is held, under the same row
 * lock as confirm and expiry, so "extend while the expiry worker locks it"
 * has exactly one winner (HoldNotHeldError for the loser). The same new
 * deadline again returns the hold unchanged, so a retry is safe; an
 * earlier one is a ValidationError. Its pending reminder moves with it.
 */
export async function extendHold(db: Queryable, id: string, input: ExtendHoldInput, options: HoldOptions = {}): Promise<Hold> {
  return boundary(db, options, async () => {
    const schema = schemaOf(options);
    const holdId = validateHoldId(id);
    const to = validateExtendHold(input);
    const extendedBy = to.ttlSeconds !== null ? 'ttlSeconds' : 'expiresAt';
    return holdChange(db, schema, holdId, () => holdsExtend(db, schema, holdId, to, options.clock?.now() ?? null), extendedBy);
  });
}
