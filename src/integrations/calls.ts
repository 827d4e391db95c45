import { LeaseholdError } from '../errors.js';
import { holdFunctionError, type ExtendField } from '../holds/function-errors.js';
import type { Hold, HoldStatus } from '../model/hold-states.js';
import type { CreateHoldResult } from '../holds/holds.js';
import { ident } from '../db/pool.js';
import { holdFromRow, type HoldRow } from '../tables/holds.js';

/**
 * What every ORM helper (leasehold/prisma, /drizzle, /kysely, /knex,
 * /postgres) shares: the call of one of leasehold's SQL functions
 * (create_hold, confirm_hold, cancel_hold, extend_hold: migrations 0011,
 * 0020, 0024), the hold row read back whatever the driver made of its
 * types, and the functions' SQLSTATEs turned into the library's errors. The
 * helpers only differ in how they hand the statement to their ORM's
 * transaction, so the hold commits or rolls back with the application's own
 * rows. Values are always bound parameters; the only text spliced in is the
 * quoted schema and this module's own constants (function, argument names,
 * casts).
 */

export interface HoldCallOptions {
  /** Schema holding leasehold's tables and functions (default `leasehold`). */
  schema?: string;
}

/** create_hold's arguments, named as the library names them. Exactly one of expiresAt and ttlSeconds. */
export interface CreateHoldArgs {
  /** Client-supplied id (idempotent: the same request again returns the same hold); generated (`hold_<uuid>`) when left out. */
  id?: string;
  customerEmail: string;
  expiresAt?: Date | string;
  /** Seconds from the transaction's now(); a retry with the same ttlSeconds is the same request. */
  ttlSeconds?: number;
  metadata?: Record<string, unknown>;
  tenant?: string;
  remindBeforeSeconds?: number;
  notifyOnConfirm?: boolean;
}

/** extend_hold's arguments: exactly one of a later expiresAt and ttlSeconds from now. */
export interface ExtendHoldArgs {
  expiresAt?: Date | string;
  ttlSeconds?: number;
}

export interface ConfirmHoldArgs {
  /** The confirmation email's deadline, for a hold created with notifyOnConfirm (confirm_hold's notice_deadline_seconds). */
  noticeDeadlineSeconds?: number;
}

export type HoldFunction = 'create_hold' | 'confirm_hold' | 'cancel_hold' | 'extend_hold';

/** One call: the function and its named arguments (only those given, so the function's defaults apply to the rest). */
export interface FunctionCall {
  fn: HoldFunction;
  args: ReadonlyArray<{ name: string; cast: string; value: unknown }>;
}

function call(fn: HoldFunction, args: Array<[name: string, cast: string, value: unknown]>): FunctionCall {
  return { fn, args: args.filter(([, , value]) => value !== undefined).map(([name, cast, value]) => ({ name, cast, value })) };
}

/**
 * An instant as ISO 8601 text: every driver passes a string through, while
 * Drizzle's postgres.js driver only takes text for timestamptz, not a Date.
 */
const instant = (v: Date | string | undefined): string | undefined => (v instanceof Date ? v.toISOString() : v);

export function createHoldCall(input: CreateHoldArgs): FunctionCall {
  return call('create_hold', [
    ['id', 'text', input.id],
    ['customer_email', 'text', input.customerEmail],
    ['expires_at', 'timestamptz', instant(input.expiresAt)],
    ['ttl_seconds', 'int', input.ttlSeconds],
    // Sent as text and cast: a driver that asks the server for the
    // parameter's type (postgres.js) would otherwise encode the JSON again.
    ['metadata', 'text::jsonb', input.metadata === undefined ? undefined : JSON.stringify(input.metadata)],
    ['tenant', 'text', input.tenant],
    ['remind_before_seconds', 'int', input.remindBeforeSeconds],
    ['notify_on_confirm', 'boolean', input.notifyOnConfirm],
  ]);
}

export function confirmHoldCall(id: string, options: ConfirmHoldArgs = {}): FunctionCall {
  return call('confirm_hold', [
    ['id', 'text', id],
    ['notice_deadline_seconds', 'int', options.noticeDeadlineSeconds],
  ]);
}

export function cancelHoldCall(id: string): FunctionCall {
  return call('cancel_hold', [['id', 'text', id]]);
}

export function extendHoldCall(id: string, change: ExtendHoldArgs): FunctionCall {
  return call('extend_hold', [
    ['id', 'text', id],
    ['expires_at', 'timestamptz', instant(change.expiresAt)],
    ['ttl_seconds', 'int', change.ttlSeconds],
  ]);
}

export const schemaOf = (options: HoldCallOptions): string => options.schema ?? 'leasehold';

/**
 * The statement as text with numbered placeholders (`$1`, node-postgres,
 * postgres.js, Prisma, Kysely) or `?` (Knex), and its values in order:
 * `SELECT * FROM "leasehold".create_hold(id => $1::text, ...)`.
 */
export function statement(c: FunctionCall, schema: string, placeholder: (n: number) => string = (n) => `$${n}`): { text: string; values: unknown[] } {
  const args = c.args.map((a, i) => `${a.name} => ${placeholder(i + 1)}::${a.cast}`).join(', ');
  const { before, after } = selectAround(c, schema);
  return { text: `${before}${ident(schema)}.${c.fn}(${args})${after}`, values: c.args.map((a) => a.value) };
}

/**
 * The SELECT around a call: its row, and for create_hold whether this call
 * made the hold (`created`, the library's `{ hold, created }`), which the
 * function itself does not return. The statement's snapshot is taken before
 * the function runs, so the hold is new if that snapshot did not have it
 * (a retry in the same transaction did) and it carries this transaction's
 * now() (a concurrent create of the same id that committed first does not).
 */
export function selectAround(c: FunctionCall, schema: string): { before: string; after: string } {
  if (c.fn !== 'create_hold') return { before: 'SELECT * FROM ', after: '' };
  return {
    before: `SELECT h.*, (h.created_at = now() AND NOT EXISTS (SELECT 1 FROM ${ident(schema)}.support_reservations r WHERE r.id = h.id)) AS created FROM `,
    after: ' h',
  };
}

/** The rows of whatever a driver returned: node-postgres' `{ rows }`, or postgres.js' and Prisma's array. */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result)) return result as Record<string, unknown>[];
  const rows = (result as { rows?: unknown } | null)?.rows;
  if (Array.isArray(rows)) return rows as Record<string, unknown>[];
  throw new TypeError('leasehold: the query returned neither rows nor an array of rows');
}

const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
/** A column by its name, or camelCased (Kysely's CamelCasePlugin, postgres.js' `transform: postgres.camel`). */
const column = (row: Record<string, unknown>, name: string): unknown => (name in row ? row[name] : row[camel(name)]);

const toDate = (v: unknown): Date | null => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(String(v)));
const toNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * The returned support_reservations row as the library's Hold. Drivers
 * differ: Drizzle's postgres.js driver leaves timestamps as text, a client
 * without a jsonb parser leaves metadata as text, a camelCasing plugin
 * renames the columns; all of them read the same here.
 */
export function holdFromDriverRow(row: Record<string, unknown>): Hold {
  const metadata = column(row, 'metadata');
  const normal: HoldRow = {
    id: String(column(row, 'id')),
    customer_email: (column(row, 'customer_email') as string | null) ?? null,
    status: column(row, 'status') as HoldStatus,
    expires_at: toDate(column(row, 'expires_at'))!,
    created_at: toDate(column(row, 'created_at'))!,
    confirmed_at: toDate(column(row, 'confirmed_at')),
    cancelled_at: toDate(column(row, 'cancelled_at')),
    expired_at: toDate(column(row, 'expired_at')),
    metadata: (typeof metadata === 'string' ? JSON.parse(metadata) : metadata ?? {}) as Record<string, unknown>,
    request_hash: column(row, 'request_hash') as string,
    erased_at: toDate(column(row, 'erased_at')),
    tenant: (column(row, 'tenant') as string | undefined) ?? '',
    remind_before_seconds: toNumber(column(row, 'remind_before_seconds')),
    notify_on_confirm: Boolean(column(row, 'notify_on_confirm')),
    traceparent: (column(row, 'traceparent') as string | null | undefined) ?? null,
  };
  return holdFromRow(normal);
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * The database's error inside whatever wraps it: Drizzle's along `cause`,
 * Prisma's in `meta.driverAdapterError.cause` (code or originalCode, message, column) or,
 * without a driver adapter, `meta` { code, message }. The innermost one
 * wins, since a wrapper's own code (Prisma's P2010) looks like a SQLSTATE.
 */
function databaseError(error: unknown, depth = 0): { code: string; message: string; column?: string } | undefined {
  if (!error || typeof error !== 'object' || depth > 5) return undefined;
  const e = error as Record<string, unknown>;
  const meta = (e.meta && typeof e.meta === 'object' ? e.meta : {}) as Record<string, unknown>;
  for (const inner of [meta.driverAdapterError, e.cause, e.originalError]) {
    const found = databaseError(inner, depth + 1);
    if (found) return found;
  }
  // A driver adapter's error that Prisma classified (a unique violation) keeps the database's code and message as original*.
  if (typeof e.originalCode === 'string' && typeof e.originalMessage === 'string') {
    return { code: e.originalCode, message: e.originalMessage, ...(typeof e.column === 'string' ? { column: e.column } : {}) };
  }
  if (typeof meta.code === 'string' && SQLSTATE.test(meta.code) && typeof meta.message === 'string') return { code: meta.code, message: meta.message };
  if (typeof e.code === 'string' && SQLSTATE.test(e.code) && typeof e.message === 'string') {
    const col = e.column ?? e.column_name;
    return { code: e.code, message: e.message, ...(typeof col === 'string' ? { column: col } : {}) };
  }
  return undefined;
}

/**
 * The SQL functions' errors as the library's (holds/function-errors.ts),
 * with the driver's error as `cause`, wherever the driver wrapped it.
 * Anything else is returned as it was. `extendedBy`: the field an
 * extension was asked with (its refusal names it).
 */
export function leaseholdErrorFrom(error: unknown, extendedBy?: ExtendField): unknown {
  if (error instanceof LeaseholdError) return error;
  const db = databaseError(error);
  const translated = db && holdFunctionError(db, extendedBy);
  return translated ? Object.assign(translated, { cause: error }) : error;
}

/** Run one call through `execute` and read back its row, the errors translated. */
async function runCall(execute: () => PromiseLike<unknown>, extendedBy?: ExtendField): Promise<Record<string, unknown>> {
  let result: unknown;
  try {
    result = await execute();
  } catch (error) {
    throw leaseholdErrorFrom(error, extendedBy);
  }
  const row = rowsOf(result)[0];
  if (!row) throw new TypeError('leasehold: the hold function returned no row');
  return row;
}

/** Run one call through `execute` and read back its hold, the errors translated. */
export async function runHoldCall(execute: () => PromiseLike<unknown>, extendedBy?: ExtendField): Promise<Hold> {
  return holdFromDriverRow(await runCall(execute, extendedBy));
}

/** The four hold functions of one ORM helper, given how it runs a call on its transaction type `T`. */
export interface HoldHelpers<T> {
  /** The library's shape: the hold, and whether this call made it (false: an idempotent retry). */
  createHold(tx: T, input: CreateHoldArgs, options?: HoldCallOptions): Promise<CreateHoldResult>;
  confirmHold(tx: T, id: string, options?: HoldCallOptions & ConfirmHoldArgs): Promise<Hold>;
  cancelHold(tx: T, id: string, options?: HoldCallOptions): Promise<Hold>;
  extendHold(tx: T, id: string, change: ExtendHoldArgs, options?: HoldCallOptions): Promise<Hold>;
}

/**
 * The four hold functions of one ORM helper, given how it executes one
 * call's statement on its transaction type `T` (the schema resolved, the
 * result read back and the errors translated here).
 */
export function holdHelpers<T>(execute: (tx: T, c: FunctionCall, schema: string) => PromiseLike<unknown>): HoldHelpers<T> {
  const run = (tx: T, c: FunctionCall, options: HoldCallOptions, extendedBy?: ExtendField) =>
    runHoldCall(() => execute(tx, c, schemaOf(options)), extendedBy);
  return {
    createHold: async (tx, input, options = {}) => {
      const row = await runCall(() => execute(tx, createHoldCall(input), schemaOf(options)));
      // A driver may answer the boolean as text ('t') or a number; every other column is read by holdFromDriverRow.
      const created = row.created;
      return { hold: holdFromDriverRow(row), created: created === true || created === 't' || created === 'true' || created === 1 };
    },
    confirmHold: (tx, id, options = {}) => run(tx, confirmHoldCall(id, options), options),
    cancelHold: (tx, id, options = {}) => run(tx, cancelHoldCall(id), options),
    extendHold: (tx, id, change, options = {}) =>
      run(tx, extendHoldCall(id, change), options, change.ttlSeconds !== undefined ? 'ttlSeconds' : 'expiresAt'),
  };
}
