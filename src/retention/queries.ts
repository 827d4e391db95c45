import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { ADDRESS_IN_TEXT, ERASED, RETENTION_TABLES, type RetentionTables, type StandaloneTable, type StoryChildTable } from './policy.js';

/**
 * The pruner's statements: delete or erase a batch of whole stories, the
 * same for standalone tables (preview.ts counts what a run would do,
 * address-erasure.ts erases one address everywhere, sql.ts holds the
 * fragments they share). Values are always parameters; only identifiers from
 * the table lists in policy.ts (checked to be plain names, then quoted) are
 * spliced in, so a table added to a list is reached by every statement.
 *
 * Parameters shared by the batch statements: $1 now (null: the database
 * clock), $2 days, $3 batch size, $4 the address pattern.
 */

import { CUTOFF, HOLD_END, HOLD_ERASURE, setClause, stillPersonal, type TableCounts } from './sql.js';

/**
 * Lock a batch of whole stories that ended before the cutoff, oldest first,
 * skipping rows other workers hold. A story is a hold and its intents (one
 * per kind: reminder, expiry, confirmation; migration 0024). `whole` keeps
 * only stories whose every intent is locked here (or that have none), so a
 * story is never split.
 * `extra` narrows the holds (erasure: not yet erased, written as the
 * predicate of support_reservations_unerased).
 */
function storyBatch(s: string, extra: string): string {
  return `roots AS MATERIALIZED (
       SELECT r.id, (SELECT count(*) FROM ${s}.email_outbox o WHERE o.reservation_id = r.id)::int AS intents
         FROM ${s}.support_reservations r
        WHERE r.status <> 'held' ${extra}
          AND ${HOLD_END} < ${CUTOFF}
          -- Invariant 12: a story whose email is pending (or ended after the
          -- cutoff) is not touched, nor is its hold. A scalar subquery, not
          -- NOT EXISTS: the planner turned that into a hash anti-join against
          -- a scan of the whole outbox (test/tables/indexes.test.ts); this stays
          -- one lookup in the outbox's (reservation_id, template) index per
          -- hold, in index order, so LIMIT stops the walk early.
          AND NOT coalesce((SELECT bool_or(o.state = 'pending' OR o.finished_at >= ${CUTOFF})
                              FROM ${s}.email_outbox o WHERE o.reservation_id = r.id), false)
        ORDER BY ${HOLD_END}
        LIMIT $3
          FOR UPDATE OF r SKIP LOCKED
     ), intents AS MATERIALIZED (
       -- Re-checked on the locked row: a replay that made it pending since drops out here.
       SELECT o.id, o.reservation_id
         FROM ${s}.email_outbox o
        WHERE o.reservation_id = ANY (ARRAY(SELECT id FROM roots))
          AND o.state <> 'pending' AND o.finished_at < ${CUTOFF}
          FOR UPDATE OF o SKIP LOCKED
     ), whole AS MATERIALIZED (
       -- (The count from roots, not NOT EXISTS here: that was planned as a
       -- hash of the whole outbox.)
       SELECT r.id FROM roots r
         LEFT JOIN (SELECT reservation_id, count(*)::int AS n FROM intents GROUP BY reservation_id) locked ON locked.reservation_id = r.id
        WHERE r.intents = coalesce(locked.n, 0)
     ), story_intents AS MATERIALIZED (
       SELECT id FROM intents WHERE reservation_id IN (SELECT id FROM whole)
     )`;
}

export interface StoryBatchResult {
  /** Stories locked for this batch (before dropping any whose intent another transaction held). */
  locked: number;
  /** Stories deleted or erased. */
  stories: number;
  /** Rows deleted or changed per table. */
  counts: TableCounts;
}

function childCtes(children: readonly StoryChildTable[], s: string, mode: 'prune' | 'erase', p: string): string[] {
  return children.map((child, i) => {
    const t = `${s}.${ident(child.table)}`;
    const mine = `t.intent_id = ANY (ARRAY(SELECT id FROM story_intents))`;
    if (mode === 'prune' || child.erase === 'delete') return `c${i} AS (DELETE FROM ${t} t WHERE ${mine} RETURNING 1)`;
    return `c${i} AS (UPDATE ${t} t SET ${setClause(child.erase, 't', p)} WHERE ${mine} AND ${stillPersonal('t', child.erase, p)} RETURNING 1)`;
  });
}

function countsOf(row: Record<string, number>, children: readonly StoryChildTable[]): StoryBatchResult {
  const counts: TableCounts = {};
  children.forEach((child, i) => (counts[child.table] = row[`c${i}`]!));
  counts.email_outbox = row.intents!;
  counts.support_reservations = row.holds!;
  return { locked: row.locked!, stories: row.holds!, counts };
}

/**
 * Delete up to `limit` whole stories that ended more than `days` ago:
 * attempts (and every other story child), then intents, then holds, in one
 * statement (the foreign keys are checked at its end, when the children are
 * gone). Run it in a transaction; the caller commits.
 */
export async function storiesPrune(
  db: Queryable,
  schema: string,
  options: { now: Date | null; days: number; limit: number; tables?: RetentionTables },
): Promise<StoryBatchResult> {
  const s = ident(schema);
  const children = (options.tables ?? RETENTION_TABLES).storyChildren;
  const ctes = [
    storyBatch(s, ''),
    ...childCtes(children, s, 'prune', '$4'),
    `intents_done AS (DELETE FROM ${s}.email_outbox o WHERE o.id = ANY (ARRAY(SELECT id FROM story_intents)) RETURNING 1)`,
    `holds_done AS (DELETE FROM ${s}.support_reservations r WHERE r.id = ANY (ARRAY(SELECT id FROM whole)) RETURNING 1)`,
  ];
  return storyBatchRun(db, ctes, children, [options.now, options.days, options.limit]);
}

/**
 * Erase the personal data of up to `limit` whole stories that ended more
 * than `days` ago and are not erased yet: the hold's address, request
 * fingerprint and any address in its metadata; the intent's recipient and
 * any address in its last error; the same in every story child. The
 * timeline (ids, states, timestamps, receipts, outcomes) stays.
 */
export async function storiesErase(
  db: Queryable,
  schema: string,
  options: { now: Date | null; days: number; limit: number; tables?: RetentionTables },
): Promise<StoryBatchResult> {
  const s = ident(schema);
  const children = (options.tables ?? RETENTION_TABLES).storyChildren;
  const ctes = [
    storyBatch(s, 'AND r.customer_email IS NOT NULL'),
    ...childCtes(children, s, 'erase', '$4'),
    `intents_done AS (
       UPDATE ${s}.email_outbox o SET recipient = NULL, last_error = regexp_replace(o.last_error, $4, '${ERASED}', 'g')
        WHERE o.id = ANY (ARRAY(SELECT id FROM story_intents)) RETURNING 1)`,
    `holds_done AS (
       UPDATE ${s}.support_reservations r SET ${HOLD_ERASURE('$4')}
        WHERE r.id = ANY (ARRAY(SELECT id FROM whole)) RETURNING 1)`,
  ];
  return storyBatchRun(db, ctes, children, [options.now, options.days, options.limit, ADDRESS_IN_TEXT]);
}

/** Run a story batch's CTEs (storyBatch, its children, intents_done, holds_done) and count what each changed. */
async function storyBatchRun(db: Queryable, ctes: string[], children: readonly StoryChildTable[], values: unknown[]): Promise<StoryBatchResult> {
  const { rows } = await db.query<Record<string, number>>(
    `WITH ${ctes.join(',\n     ')}
     SELECT (SELECT count(*) FROM roots)::int AS locked,
            ${children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i},`).join('\n            ')}
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM holds_done)::int AS holds`,
    values,
  );
  return countsOf(rows[0]!, children);
}

/** Delete up to `limit` rows of a standalone table older than `days`, oldest first. */
export function standalonePrune(
  db: Queryable,
  schema: string,
  table: StandaloneTable,
  options: { now: Date | null; days: number; limit: number },
): Promise<number> {
  return standaloneBatchRun(db, schema, table, '', (t, key) => `DELETE FROM ${t} t WHERE t.${key} = ANY (ARRAY(SELECT key FROM batch)) RETURNING 1`, [
    options.now,
    options.days,
    options.limit,
  ]);
}

/** Erase up to `limit` not-yet-erased rows of a standalone table older than `days`. */
export function standaloneErase(
  db: Queryable,
  schema: string,
  table: StandaloneTable,
  options: { now: Date | null; days: number; limit: number },
): Promise<number> {
  const unerased = Object.entries(table.erase)
    .filter(([, how]) => how === 'null')
    .map(([column]) => `t.${ident(column)} IS NOT NULL`)
    .join(' OR ');
  return standaloneBatchRun(
    db,
    schema,
    table,
    `AND (${unerased})`,
    (t, key) => `UPDATE ${t} t SET ${setClause(table.erase, 't', '$4')} WHERE t.${key} = ANY (ARRAY(SELECT key FROM batch)) RETURNING 1`,
    // $4 only when a column is scrubbed: PostgreSQL refuses a parameter it cannot type.
    Object.values(table.erase).some((how) => how.startsWith('scrub'))
      ? [options.now, options.days, options.limit, ADDRESS_IN_TEXT]
      : [options.now, options.days, options.limit],
  );
}

/** Lock the oldest `$3` rows past the cutoff (plus `extra`), skipping locked ones, and apply `action` to them. */
async function standaloneBatchRun(
  db: Queryable,
  schema: string,
  table: StandaloneTable,
  extra: string,
  action: (t: string, key: string) => string,
  values: unknown[],
): Promise<number> {
  const t = `${ident(schema)}.${ident(table.table)}`;
  const key = ident(table.key);
  const age = `t.${ident(table.age)}`;
  const { rows } = await db.query<{ n: number }>(
    `WITH batch AS MATERIALIZED (
       SELECT t.${key} AS key FROM ${t} t
        WHERE (${table.applies}) AND ${age} < ${CUTOFF} ${extra}
        ORDER BY ${age} LIMIT $3
          FOR UPDATE OF t SKIP LOCKED
     ), done AS (${action(t, key)})
     SELECT count(*)::int AS n FROM done`,
    values,
  );
  return rows[0]!.n;
}
