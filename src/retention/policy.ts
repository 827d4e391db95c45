import { ValidationError } from '../errors.js';
import { onFirstUse } from '../zod.js';
import { describeZodError } from '../model/zod-issues.js';
import { sendableAddress } from '../model/address.js';

/**
 * The retention policy and the tables it reaches, as data. Pure: no database
 * here. The statements that act on it are in queries.ts.
 *
 * The unit of retention is a hold's *story*: the hold, its email intent (one
 * for an expired hold, none for a confirmed or cancelled one) and every row
 * keyed by that intent (attempts today). A story is deleted, or has its
 * personal data erased, as a whole, in one statement, children before
 * parents, so a replay or a late receipt never finds half a story. Its age
 * is the later of the hold's end and its email's end; a story whose email is
 * still pending is never touched (invariant 12).
 */

// ---------------------------------------------------------------------------
// The tables, as data. Adding a table is one entry in one of the two lists.

/**
 * What erasure does to one column:
 * - `null`: the whole value is personal data (an address); set it NULL.
 * - `scrub-text`: free text that may quote addresses (a provider error);
 *   every address in it becomes `[erased]`, the rest of the text stays.
 * - `scrub-json`: the same inside a jsonb value (keys and strings).
 * - `marker`: a fingerprint derived from personal data; replaced by the
 *   fixed string `erased`.
 */
export type ColumnErasure = 'null' | 'scrub-text' | 'scrub-json' | 'marker';

/** A table whose rows belong to one intent (`intent_id` -> email_outbox.id) and so to its story. */
export interface StoryChildTable {
  table: string;
  /**
   * Erasure: `delete` removes the row (derived copies of personal data, such
   * as a rendered message), otherwise column -> what happens to it.
   */
  erase: 'delete' | Record<string, ColumnErasure>;
  /**
   * Columns holding an address on their own. `erase --email` also matches
   * them directly (trimmed, case-insensitive), which reaches rows whose
   * intent_id is NULL.
   */
  addressColumns?: string[];
}

/**
 * A table with an age of its own, not tied to a story (provider events for
 * no known intent, suppressions). Its owner adds the two indexes named in
 * docs/operations.md: `(age) WHERE applies` and
 * `(age) WHERE applies AND <first null column> IS NOT NULL`.
 */
export interface StandaloneTable {
  table: string;
  /** Primary key column: batches lock and change rows by it. */
  key: string;
  /** Timestamp column giving a row's age. */
  age: string;
  /** SQL condition on the row (alias `t`) for the rows this entry governs, e.g. `t.intent_id IS NULL`. */
  applies: string;
  /** Delete after the retention; false for rows that must outlive it (suppressions). */
  prune: boolean;
  /**
   * Column -> erasure. At least one `null` column: it is what marks a row as
   * erased. Empty for a table that stores no personal data (provider events
   * keep no address): retention only deletes its rows.
   */
  erase: Record<string, ColumnErasure>;
  addressColumns?: string[];
  /** Column holding the hex sha256 of the trimmed, lowercased address (suppressions.address_hash). */
  addressHashColumn?: string;
}

export interface RetentionTables {
  storyChildren: readonly StoryChildTable[];
  standalone: readonly StandaloneTable[];
}

/**
 * Every table retention reaches besides support_reservations and
 * email_outbox (whose statements are written out in queries.ts).
 *
 * When migrations 0006 and 0008 land, add:
 *   storyChildren: { table: 'email_messages', erase: 'delete' }
 *   storyChildren: { table: 'email_events', erase: { recipient: 'null' }, addressColumns: ['recipient'] }
 *   standalone:    { table: 'email_events', key: 'id', age: 'occurred_at', applies: 't.intent_id IS NULL',
 *                    prune: true, erase: { recipient: 'null' }, addressColumns: ['recipient'] }
 *   standalone:    { table: 'suppressions', key: 'address_hash', age: 'created_at', applies: 'true',
 *                    prune: false, erase: { address: 'null' }, addressColumns: ['address'],
 *                    addressHashColumn: 'address_hash' }
 * (test/retention/extension.test.ts runs exactly these against stand-in tables.)
 */
export const RETENTION_TABLES: RetentionTables = {
  storyChildren: [
    { table: 'email_attempts', erase: { error: 'scrub-text' } },
    // The rendered message quotes the hold's metadata: personal data, deleted on erasure.
    { table: 'email_messages', erase: 'delete' },
    // Events keep no address (their reason has <address> in its place); scrubbing is a second guard.
    { table: 'email_events', erase: { reason: 'scrub-text' } },
  ],
  standalone: [
    // Events for no known intent age on their own, by the provider's timestamp.
    { table: 'email_events', key: 'id', age: 'occurred_at', applies: 't.intent_id IS NULL', prune: true, erase: {} },
    // Batches (one provider request each) list intent ids only; an open one is still resendable.
    { table: 'email_batches', key: 'id', age: 'created_at', applies: 'NOT t.open', prune: true, erase: {} },
    // Application webhooks (migration 0030) name holds and intents by id only; a finished one ages on its own.
    { table: 'webhook_events', key: 'id', age: 'created_at', applies: "t.state <> 'pending'", prune: true, erase: {} },
    // Suppressions outlive the retention; erasure keeps the hash, so the address stays suppressed.
    {
      table: 'suppressions',
      key: 'address_hash',
      age: 'created_at',
      applies: 'true',
      prune: false,
      erase: { address: 'null' },
      addressColumns: ['address'],
      addressHashColumn: 'address_hash',
    },
    // Not here, on purpose: tenant_policies (migration 0021). A tenant's
    // policy is configuration an operator wrote, not history, so it has no
    // age to prune by and lives until it is deleted; and its addresses
    // (from_address, reply_to) are the tenant business's own senders, not a
    // customer's, so `erase --email` has nothing to take from it.
  ],
};

/** Whether erasure has anything to do in a standalone table. */
export function holdsPersonalData(table: StandaloneTable): boolean {
  return Object.keys(table.erase).length > 0;
}

/** Table names in the order a story is deleted: children, then intents, then holds. */
export function storyTables(tables: RetentionTables = RETENTION_TABLES): string[] {
  return [...tables.storyChildren.map((c) => c.table), 'email_outbox', 'support_reservations'];
}

/** Check the lists are usable (names are spliced into SQL as quoted identifiers). */
export function validateTables(tables: RetentionTables): void {
  const name = /^[a-z_][a-z0-9_]{0,62}$/;
  const names = [
    ...tables.storyChildren.flatMap((t) => [t.table, ...(t.erase === 'delete' ? [] : Object.keys(t.erase)), ...(t.addressColumns ?? [])]),
    ...tables.standalone.flatMap((t) => [
      t.table,
      t.key,
      t.age,
      ...Object.keys(t.erase),
      ...(t.addressColumns ?? []),
      ...(t.addressHashColumn ? [t.addressHashColumn] : []),
    ]),
  ];
  for (const n of names) if (!name.test(n)) throw new Error(`retention table list: ${JSON.stringify(n)} is not a plain identifier`);
  for (const t of tables.standalone) {
    if (holdsPersonalData(t) && !Object.values(t.erase).includes('null')) {
      throw new Error(`retention table list: ${t.table} needs one column erased to null`);
    }
  }
}

// ---------------------------------------------------------------------------
// Addresses

/**
 * An e-mail address inside free text or JSON text (PostgreSQL regular
 * expression). The local part stops at whitespace, quotes, backslashes and
 * brackets, so a replacement inside a JSON string keeps the JSON valid.
 */
export const ADDRESS_IN_TEXT = `[^][:space:]<>"\\\\,;:(){}@/[]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+`;
export const ERASED = '[erased]';
/** What `erase --email` writes into a pending intent it rejects. */
export const ERASED_ON_REQUEST = 'erased on request';

const addressSchema = onFirstUse((z) =>
  z
    .string('must be a string')
    .trim()
    .min(3, 'must be an email address')
    .max(254, 'must be at most 254 characters'),
);

/**
 * Validate an address given for erasure; the comparison is trimmed and
 * case-insensitive, and an internationalized domain is compared in the
 * punycode form holds store it in (model/address.ts sendableAddress).
 */
export function validateErasureAddress(value: unknown, field = 'email'): string {
  const parsed = addressSchema().safeParse(value);
  if (!parsed.success) throw new ValidationError(field, describeZodError(parsed.error, { input: value }).message);
  const sendable = sendableAddress(parsed.data);
  if ('problem' in sendable) throw new ValidationError(field, sendable.problem);
  return sendable.address.toLowerCase();
}
