import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ValidationError } from '../errors.js';
import { afterCursorSql, cursorTimeSql, decodeCursor, pageOf } from '../model/cursor.js';
import { addressHash, normalizeAddress } from '../model/address.js';
import type { Suppression, SuppressionReason } from '../model/suppression-reasons.js';

/** Every statement on the `suppressions` table. Values are always parameters; batches go through arrays. */

interface SuppressionRow {
  address_hash: string;
  address: string | null;
  reason: SuppressionReason;
  detail: string | null;
  provider: string | null;
  created_at: Date;
}

const COLUMNS = 'address_hash, address, reason, detail, provider, created_at';

function fromRow(row: SuppressionRow): Suppression {
  return {
    addressHash: row.address_hash,
    address: row.address,
    reason: row.reason,
    detail: row.detail,
    provider: row.provider,
    createdAt: row.created_at,
  };
}

/**
 * For the outbox's lease statement: the suppression of each leased
 * recipient joined as `su`, its columns prefixed `su_`, so the check before a
 * send costs no statement of its own. The key is computed in SQL only for
 * addresses of printable ASCII, where it provably equals addressHash() (trim
 * is a no-op, and translate() lowercases A-Z whatever the database's
 * collation; lower() would follow it, e.g. Turkish I). `su_checked` says
 * whether it was; the few others are checked in TypeScript.
 */
export const ASCII_ADDRESS = (recipient: string): string => `(${recipient} ~ '^[!-~]+$')`;
const hashInSql = (recipient: string): string =>
  `encode(sha256(convert_to(translate(${recipient}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), 'UTF8')), 'hex')`;
/** The suppressions key of `recipient` computed in SQL, or NULL when it is not printable ASCII (then TypeScript checks it). */
export const suppressionKeyInSql = (recipient: string): string => `CASE WHEN ${ASCII_ADDRESS(recipient)} THEN ${hashInSql(recipient)} END`;
/** Join the suppression of each row's key (`key`: a column holding suppressionKeyInSql). */
export const suppressionsJoinForLease = (s: string, key: string): string => `LEFT JOIN ${s}.suppressions su ON su.address_hash = ${key}`;
export const SUPPRESSION_LEASE_COLUMNS =
  COLUMNS.split(',').map((c) => `su.${c.trim()} AS su_${c.trim()}`).join(', ');

/** The suppression found by the lease (null: none), or undefined when the address was not checked in SQL. */
export function suppressionFromLeaseRow(row: Record<string, unknown>, checked: boolean): Suppression | null | undefined {
  if (!checked) return undefined;
  if (row['su_address_hash'] === null || row['su_address_hash'] === undefined) return null;
  const unprefixed = Object.fromEntries(COLUMNS.split(',').map((c) => [c.trim(), row[`su_${c.trim()}`]])) as unknown as SuppressionRow;
  return fromRow(unprefixed);
}

/** The suppressions among these hashes, in one statement (the delivery lane asks once per round). */
export async function suppressionsFind(db: Queryable, schema: string, hashes: string[]): Promise<Map<string, Suppression>> {
  if (hashes.length === 0) return new Map();
  const { rows } = await db.query<SuppressionRow>(
    `SELECT ${COLUMNS} FROM ${ident(schema)}.suppressions WHERE address_hash = ANY ($1::text[])`,
    [[...new Set(hashes)]],
  );
  return new Map(rows.map((row) => [row.address_hash, fromRow(row)]));
}

export async function suppressionsGet(db: Queryable, schema: string, hash: string): Promise<Suppression | undefined> {
  const { rows } = await db.query<SuppressionRow>(`SELECT ${COLUMNS} FROM ${ident(schema)}.suppressions WHERE address_hash = $1`, [hash]);
  return rows[0] && fromRow(rows[0]);
}

export interface NewSuppression {
  address: string;
  reason: SuppressionReason;
  detail: string | null;
  provider: string | null;
}

/**
 * Suppress addresses; one already suppressed keeps its first reason and
 * date (and stays erased if erasure removed its address). Returns the rows
 * this call created.
 */
export async function suppressionsAdd(db: Queryable, schema: string, entries: NewSuppression[]): Promise<Suppression[]> {
  if (entries.length === 0) return [];
  const addresses = entries.map((e) => normalizeAddress(e.address));
  const { rows } = await db.query<SuppressionRow>(
    `INSERT INTO ${ident(schema)}.suppressions (address_hash, address, reason, detail, provider)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
     ON CONFLICT (address_hash) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      addresses.map((a) => addressHash(a)),
      addresses,
      entries.map((e) => e.reason),
      entries.map((e) => e.detail?.slice(0, 1000) ?? null),
      entries.map((e) => e.provider),
    ],
  );
  return rows.map(fromRow);
}

/** Lift a suppression; the removed row, or undefined when there was none. */
export async function suppressionsRemove(db: Queryable, schema: string, hash: string): Promise<Suppression | undefined> {
  const { rows } = await db.query<SuppressionRow>(
    `DELETE FROM ${ident(schema)}.suppressions WHERE address_hash = $1 RETURNING ${COLUMNS}`,
    [hash],
  );
  return rows[0] && fromRow(rows[0]);
}

export interface SuppressionPage {
  suppressions: Suppression[];
  /** Opaque cursor for the next (older) page, or null at the end. */
  nextCursor: string | null;
}

/** Newest first, optionally of one reason, keyset-paged. */
export async function suppressionsList(
  db: Queryable,
  schema: string,
  options: { limit: number; cursor?: string; reason?: SuppressionReason },
): Promise<SuppressionPage> {
  const after = options.cursor ? decodeCursor(options.cursor, (key) => /^[0-9a-f]{64}$/.test(key)) : null;
  const { rows } = await db.query<SuppressionRow & { cursor_us: string }>(
    `SELECT ${COLUMNS}, ${cursorTimeSql('created_at')} AS cursor_us
       FROM ${ident(schema)}.suppressions
      WHERE ($1::text IS NULL OR reason = $1) AND ${afterCursorSql('created_at', 'address_hash', '$2', '$3')}
      ORDER BY created_at DESC, address_hash DESC
      LIMIT $4`,
    [options.reason ?? null, after?.timeUs ?? null, after?.key ?? null, options.limit + 1],
  );
  const { page, nextCursor } = pageOf(rows, options.limit, (row) => row.address_hash);
  return { suppressions: page.map(fromRow), nextCursor };
}
