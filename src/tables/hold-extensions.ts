import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * hold_extensions (migrations/0024_hold_lifecycle.sql): one row per
 * extension of a hold, for its timeline. Written only by the SQL function
 * extend_hold_ (reached through tables/holds.ts holdsExtend), deleted with
 * its hold (ON DELETE CASCADE); it holds no personal data.
 */
export interface HoldExtension {
  at: Date;
  from: Date;
  to: Date;
}

/** A hold's extensions, in order. */
export async function holdExtensionsList(db: Queryable, schema: string, holdId: string): Promise<HoldExtension[]> {
  const { rows } = await db.query<{ extended_at: Date; from_expires_at: Date; to_expires_at: Date }>(
    `SELECT extended_at, from_expires_at, to_expires_at FROM ${ident(schema)}.hold_extensions WHERE hold_id = $1 ORDER BY extended_at, to_expires_at`,
    [holdId],
  );
  return rows.map((r) => ({ at: r.extended_at, from: r.from_expires_at, to: r.to_expires_at }));
}

