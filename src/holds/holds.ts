import type { Queryable } from '../db/pool.js';
import { HoldNotHeldError, IdempotencyConflictError, NotFoundError } from '../errors.js';
import type { Clock } from '../runtime/clock.js';
import { holdFromRow, holdsGet, holdsGetForRetry, holdsInsert, holdsSettle, type HoldInsert, type HoldRow } from '../tables/holds.js';
import type { Hold } from '../model/hold-states.js';
import { checkExpiresAt, validateCreateHold, validateHoldId, type CreateHoldInput, type ValidHold } from '../model/hold-input.js';

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

export interface CreateHoldResult {
  hold: Hold;
  /** False when this was an idempotent retry of an earlier create. */
  created: boolean;
}

const schemaOf = (options: HoldOptions) => options.schema ?? 'leasehold';

/**
 * Create a hold. With a client-supplied `id` it is idempotent: the same id
 * with the same request returns the existing hold (`created: false`); the
 * same id with a different request (another tenant included) throws
 * IdempotencyConflictError. `tenant` is optional ('' by default, the empty
 * tenant) and its hold's intent carries it. Bad input throws
 * ValidationError naming the field.
 */
export async function createHold(db: Queryable, input: CreateHoldInput, options: HoldOptions = {}): Promise<CreateHoldResult> {
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
}

/** The same id again: the same request gets the hold it created, another request a conflict. */
function existingHold(existing: HoldRow & { same_request: boolean }, valid: ValidHold): CreateHoldResult {
  if (!existing.same_request) throw new IdempotencyConflictError(valid.id);
  return { hold: holdFromRow(existing), created: false };
}

/** The hold, or undefined when there is none with this id (like every `get` of the library). */
export async function getHold(db: Queryable, id: string, options: HoldOptions = {}): Promise<Hold | undefined> {
  const row = await holdsGet(db, schemaOf(options), validateHoldId(id));
  return row ? holdFromRow(row) : undefined;
}

async function settle(db: Queryable, id: string, to: 'confirmed' | 'cancelled', options: HoldOptions): Promise<Hold> {
  const schema = schemaOf(options);
  const holdId = validateHoldId(id);
  const row = await holdsSettle(db, schema, holdId, to, options.clock?.now() ?? null);
  if (row) return holdFromRow(row);
  const current = await holdsGet(db, schema, holdId);
  if (!current) throw new NotFoundError('hold', holdId);
  throw new HoldNotHeldError(holdId, current.status);
}

/** held -> confirmed. Throws HoldNotHeldError if it already left held (e.g. expired first). */
export function confirmHold(db: Queryable, id: string, options: HoldOptions = {}): Promise<Hold> {
  return settle(db, id, 'confirmed', options);
}

/** held -> cancelled. No email is sent for a cancelled hold. */
export function cancelHold(db: Queryable, id: string, options: HoldOptions = {}): Promise<Hold> {
  return settle(db, id, 'cancelled', options);
}
