import { HoldNotHeldError, IdempotencyConflictError, NotFoundError, ValidationError, type LeaseholdError } from '../errors.js';

/** A database error as the hold functions raise it: SQLSTATE, message ("<field>: ..."), and the field in COLUMN. */
export interface FunctionError {
  code: string;
  message: string;
  column?: string;
}

/** What an extension was asked with: its refusal names that field, not always expires_at. */
export type ExtendField = 'expiresAt' | 'ttlSeconds';

/** The library's name for a hold function's argument: `expires_at` is `expiresAt`, as in createHold's input. */
export const libraryField = (sqlField: string): string => sqlField.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The hold SQL functions' refusals (migrations 0011, 0020, 0024) as the
 * library's errors, one mapping for the library (holds/holds.ts) and the
 * ORM helpers (integrations/calls.ts): 22023 ValidationError naming the
 * field as the library names it, 23505 IdempotencyConflictError, P0002
 * NotFoundError, 55000 HoldNotHeldError. Undefined for any other error.
 * (Some drivers put the statement before the message, hence the searches
 * rather than anchored matches at the start.) `extendedBy` is the field an
 * extension was asked with, which its "not later" refusal names.
 */
export function holdFunctionError(db: FunctionError, extendedBy?: ExtendField): LeaseholdError | undefined {
  let m: RegExpMatchArray | null;
  if (db.code === '22023' && (m = db.message.match(/expires_at: must be after the hold's current expires_at \((.*)\)$/s))) {
    return notLater(m[1]!, extendedBy ?? 'expiresAt');
  }
  if (db.code === '22023') {
    m = db.message.match(/([a-z_]+): (.*)$/s);
    const field = db.column ?? m?.[1];
    if (!field) return undefined;
    const at = db.message.lastIndexOf(`${field}: `);
    return new ValidationError(libraryField(field), at >= 0 ? db.message.slice(at + field.length + 2) : db.message);
  }
  if (db.code === '23505' && (m = db.message.match(/id: hold "(.*)" already exists with different content$/s))) return new IdempotencyConflictError(m[1]!);
  if (db.code === 'P0002' && (m = db.message.match(/id: no hold "(.*)"$/s))) return new NotFoundError('hold', m[1]!);
  if (db.code === '55000' && (m = db.message.match(/id: hold "(.*)" is ([a-z_]+), not held$/s))) return new HoldNotHeldError(m[1]!, m[2]!);
  return undefined;
}

/**
 * extend_hold_'s refusal of a deadline earlier than the current one. The
 * function names expires_at and quotes the deadline as PostgreSQL prints it
 * (migration 0024); the caller may have sent ttlSeconds, and reads ISO 8601
 * everywhere else, so both are said the caller's way.
 */
function notLater(current: string, field: ExtendField): ValidationError {
  const at = isoFromPostgres(current) ?? current;
  return field === 'ttlSeconds'
    ? new ValidationError('ttlSeconds', `must reach past the hold's current expiresAt (${at}): extending only moves a hold later`)
    : new ValidationError('expiresAt', `must be after the hold's current expiresAt (${at})`);
}

// A timestamptz as PostgreSQL prints it in the ISO DateStyle (the one node-postgres' own parsers need): `2026-12-03 10:52:06.144713+00`, `+05:30`.
const POSTGRES_TIMESTAMPTZ = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2})(?::(\d{2}))?$/;

/** `2026-12-03 10:52:06.144713+00` as `2026-12-03T10:52:06.144Z` (milliseconds, as the API shows expiresAt); undefined for any other text. */
export function isoFromPostgres(text: string): string | undefined {
  const m = POSTGRES_TIMESTAMPTZ.exec(text.trim());
  if (!m) return undefined;
  const at = new Date(`${m[1]}T${m[2]}${m[3]}:${m[4] ?? '00'}`);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}
