import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ADDRESS_IN_TEXT, RETENTION_TABLES, holdsPersonalData, type RetentionTables } from './policy.js';

import { CUTOFF, HOLD_END, stillPersonal, type TableCounts } from './sql.js';

/** What a retention run would do, and how old the oldest retained rows are: counts only, nothing changes. */

export interface RetentionPreview {
  /** Rows a prune run would delete, per table. */
  prune: TableCounts;
  /** Rows a prune run would erase (after deleting the above), per table. */
  erase: TableCounts;
  /** Stories past the retention kept because their email is pending or ended recently. */
  keptPendingStories: number;
}

/**
 * What a prune run would do now, counted with the same conditions and
 * changing nothing (no locks, no limit). Reads every candidate row, so on a
 * large backlog it takes seconds; the hot paths are not involved.
 */
export async function retentionPreview(
  db: Queryable,
  schema: string,
  options: { now: Date | null; retentionDays: number | null; erasePiiAfterDays: number | null; tables?: RetentionTables },
): Promise<RetentionPreview> {
  const s = ident(schema);
  const tables = options.tables ?? RETENTION_TABLES;
  const names = [...tables.storyChildren.map((c) => c.table), 'email_outbox', 'support_reservations', ...tables.standalone.map((t) => t.table)];
  // A table may appear twice (story child and standalone): its counts add up.
  const prune: TableCounts = Object.fromEntries(names.map((t) => [t, 0]));
  const erase: TableCounts = { ...prune };
  const { retentionDays, erasePiiAfterDays } = options;
  // $1 now, $2 the pass's days, $3 the address pattern, $4 the retention (erase pass: what prune deletes first).
  const params = [options.now, 0, ADDRESS_IN_TEXT, retentionDays];
  const pruneCutoff = '(coalesce($1::timestamptz, now()) - make_interval(days => $4::int))';
  const blocked = (cutoff: string) =>
    `EXISTS (SELECT 1 FROM ${s}.email_outbox o WHERE o.reservation_id = r.id AND (o.state = 'pending' OR o.finished_at >= ${cutoff}))`;
  const prunable = `(r.status <> 'held' AND ${HOLD_END} < ${pruneCutoff} AND NOT ${blocked(pruneCutoff)})`;

  const countStories = async (days: number, mode: 'prune' | 'erase', target: TableCounts) => {
    const extra = mode === 'prune' ? '' : `AND r.customer_email IS NOT NULL${retentionDays === null ? '' : ` AND NOT ${prunable}`}`;
    const children = tables.storyChildren.map((child, i) => {
      const changes = mode === 'prune' || child.erase === 'delete' ? 'true' : stillPersonal('t', child.erase, '$3');
      return `(SELECT count(*) FROM ${s}.${ident(child.table)} t WHERE t.intent_id IN (SELECT id FROM story_intents) AND ${changes})::int AS c${i}`;
    });
    const { rows } = await db.query<Record<string, number>>(
      `WITH roots AS MATERIALIZED (
         SELECT r.id FROM ${s}.support_reservations r
          WHERE r.status <> 'held' AND ${HOLD_END} < ${CUTOFF} AND NOT ${blocked(CUTOFF)} ${extra}
       ), story_intents AS MATERIALIZED (
         SELECT o.id FROM ${s}.email_outbox o WHERE o.reservation_id IN (SELECT id FROM roots)
       )
       SELECT ${[...children, '(SELECT count(*) FROM roots)::int AS holds', '(SELECT count(*) FROM story_intents)::int AS intents'].join(',\n              ')}
        -- Types every parameter, used by this pass or not.
        WHERE $3::text IS NOT NULL AND ($4::int IS NULL OR true)`,
      [params[0], days, params[2], params[3]],
    );
    const row = rows[0]!;
    tables.storyChildren.forEach((child, i) => (target[child.table] = row[`c${i}`]!));
    target.email_outbox = row.intents!;
    target.support_reservations = row.holds!;
  };

  let keptPendingStories = 0;
  if (retentionDays !== null) {
    await countStories(retentionDays, 'prune', prune);
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s}.support_reservations r
        WHERE r.status <> 'held' AND ${HOLD_END} < ${CUTOFF} AND ${blocked(CUTOFF)}`,
      [options.now, retentionDays],
    );
    keptPendingStories = rows[0]!.n;
  }
  if (erasePiiAfterDays !== null) await countStories(erasePiiAfterDays, 'erase', erase);

  for (const table of tables.standalone) {
    const t = `${s}.${ident(table.table)}`;
    const age = `t.${ident(table.age)}`;
    const pruned = retentionDays !== null && table.prune;
    if (pruned) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t} t WHERE (${table.applies}) AND ${age} < ${CUTOFF}`,
        [options.now, retentionDays],
      );
      prune[table.table] = (prune[table.table] ?? 0) + rows[0]!.n;
    }
    if (erasePiiAfterDays !== null && holdsPersonalData(table)) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t} t
          WHERE (${table.applies}) AND ${age} < ${CUTOFF} AND ${stillPersonal('t', table.erase, '$3')}
            AND ($4::int IS NULL OR NOT $5::bool OR ${age} >= ${pruneCutoff})
            AND $3::text IS NOT NULL -- types $3 when no column is scrubbed`,
        [options.now, erasePiiAfterDays, ADDRESS_IN_TEXT, retentionDays, pruned],
      );
      erase[table.table] = (erase[table.table] ?? 0) + rows[0]!.n;
    }
  }
  return { prune, erase, keptPendingStories };

}

export interface OldestRetained {
  /** Per table with an age of its own: seconds since the oldest terminal row ended (0 when none). */
  oldestAgeSeconds: TableCounts;
  /** Seconds since the oldest terminal hold not yet erased ended (0 when none). */
  oldestUnerasedAgeSeconds: number;
}

/** The ages behind the retention gauges, through the partial indexes (a few index entries each). */
export async function retentionOldest(db: Queryable, schema: string, tables: RetentionTables = RETENTION_TABLES): Promise<OldestRetained> {
  const { rows } = await db.query(retentionOldestSql(ident(schema), tables));
  return retentionOldestFromRow(rows[0] as Record<string, number>, tables);
}

/**
 * The oldest kept ages as one row (columns `retained_*`), for retentionOldest
 * and for the scrape statement (read/scrape.ts). Each age is one end of an
 * index, so the cost does not grow with what is kept.
 */
export function retentionOldestSql(s: string, tables: RetentionTables = RETENTION_TABLES): string {
  const age = (from: string) => `coalesce(extract(epoch FROM now() - ${from}), 0)::float8`;
  const standalone = tables.standalone.map(
    (t, i) => `(SELECT ${age(`min(t.${ident(t.age)})`)} FROM ${s}.${ident(t.table)} t WHERE ${t.applies}) AS retained_s${i}`,
  );
  return `SELECT (SELECT ${age(`min(${HOLD_END})`)} FROM ${s}.support_reservations r WHERE r.status <> 'held') AS retained_holds,
                 (SELECT ${age(`min(${HOLD_END})`)} FROM ${s}.support_reservations r WHERE r.status <> 'held' AND r.customer_email IS NOT NULL) AS retained_unerased
                 ${standalone.map((c) => ', ' + c).join('')}`;
}

export function retentionOldestFromRow(row: Record<string, unknown>, tables: RetentionTables = RETENTION_TABLES): OldestRetained {
  const oldestAgeSeconds: TableCounts = { support_reservations: Math.max(0, row.retained_holds as number) };
  tables.standalone.forEach((t, i) => (oldestAgeSeconds[t.table] = Math.max(0, row[`retained_s${i}`] as number)));
  return { oldestAgeSeconds, oldestUnerasedAgeSeconds: Math.max(0, row.retained_unerased as number) };
}
