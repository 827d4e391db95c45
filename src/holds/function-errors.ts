import { HoldNotHeldError, IdempotencyConflictError, NotFoundError, ValidationError, type LeaseholdError } from '../errors.js';

/** A database error as the hold functions raise it: SQLSTATE, message ("<field>: ..."), and the field in COLUMN. */
export interface FunctionError {
  code: string;
  message: string;
  column?: string;
}

/** The library's name for a hold function's argument: `expires_at` is `expiresAt`, as in createHold's input. */
export const libraryField = (sqlField: string): string => sqlField.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The hold SQL functions' refusals (migrations 0011, 0020, 0024) as the
 * library's errors, one mapping for the library (holds/holds.ts) and the
 * ORM helpers (integrations/calls.ts): 22023 ValidationError naming the
 * field as the library names it, 23505 IdempotencyConflictError, P0002
 * NotFoundError, 55000 HoldNotHeldError. Undefined for any other error.
 * (Some drivers put the statement before the message, hence the searches
 * rather than anchored matches at the start.)
 */
export function holdFunctionError(db: FunctionError): LeaseholdError | undefined {
  let m: RegExpMatchArray | null;
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
