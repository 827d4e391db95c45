import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import {
  ADDRESS_IN_TEXT,
  ERASED,
  ERASED_ON_REQUEST,
  RETENTION_TABLES,
  type ColumnErasure,
  holdsPersonalData,
  type RetentionTables,
  type StandaloneTable,
  type StoryChildTable,
} from './policy.js';

/**
 * Every retention statement: delete or erase a batch of whole stories,
 * the same for standalone tables, count what a run would do, erase one
 * address everywhere. Values are always parameters; only identifiers from
 * the table lists in policy.ts (checked to be plain names, then quoted) are
 * spliced in, so a table added to a list is reached by every statement.
 *
 * Parameters shared by the batch statements: $1 now (null: the database
 * clock), $2 days, $3 batch size, $4 the address pattern.
 */

/** Rows changed per table by one statement. */
export type TableCounts = Record<string, number>;

/** A hold's end; both partial indexes of migration 0009 are built on exactly this expression. */
const HOLD_END = 'coalesce(r.confirmed_at, r.cancelled_at, r.expired_at)';
const CUTOFF = '(coalesce($1::timestamptz, now()) - make_interval(days => $2::int))';
const NOW = 'coalesce($1::timestamptz, now())';

/** The new value of a column under erasure (`p` is the address-pattern parameter). */
function erasedValue(alias: string, column: string, how: ColumnErasure, p: string): string {
  const c = `${alias}.${ident(column)}`;
  switch (how) {
    case 'null':
      return 'NULL';
    case 'scrub-text':
      return `regexp_replace(${c}, ${p}, '${ERASED}', 'g')`;
    case 'scrub-json':
      return `regexp_replace(${c}::text, ${p}, '${ERASED}', 'g')::jsonb`;
    case 'marker':
      return `'erased'`;
  }
}

/** True for a row erasure would still change (so counts report real changes). */
function stillPersonal(alias: string, erase: Record<string, ColumnErasure>, p: string): string {
  const parts = Object.entries(erase).map(([column, how]) => {
    const c = `${alias}.${ident(column)}`;
    if (how === 'null') return `${c} IS NOT NULL`;
    if (how === 'marker') return `${c} IS DISTINCT FROM 'erased'`;
    return `${c}${how === 'scrub-json' ? '::text' : ''} ~ ${p}`;
  });
  return `(${parts.join(' OR ')})`;
}

function setClause(erase: Record<string, ColumnErasure>, alias: string, p: string): string {
  return Object.entries(erase)
    .map(([column, how]) => `${ident(column)} = ${erasedValue(alias, column, how, p)}`)
    .join(', ');
}

/** The personal data of a hold, as erasure leaves it. */
const HOLD_ERASURE = (p: string) =>
  `customer_email = NULL, erased_at = ${NOW}, request_hash = 'erased',
   metadata = regexp_replace(r.metadata::text, ${p}, '${ERASED}', 'g')::jsonb`;

/**
 * Lock a batch of whole stories that ended before the cutoff, oldest first,
 * skipping rows other workers hold. `whole` keeps only stories whose every
 * intent is locked here (or that have none), so a story is never split.
 * `extra` narrows the holds (erasure: not yet erased, written as the
 * predicate of support_reservations_unerased).
 */
function storyBatch(s: string, extra: string): string {
  return `roots AS MATERIALIZED (
       SELECT r.id, (SELECT o.id FROM ${s}.email_outbox o WHERE o.reservation_id = r.id) AS intent_id
         FROM ${s}.support_reservations r
        WHERE r.status <> 'held' ${extra}
          AND ${HOLD_END} < ${CUTOFF}
          -- Invariant 12: a story whose email is pending (or ended after the
          -- cutoff) is not touched, nor is its hold. A scalar subquery, not
          -- NOT EXISTS: the planner turned that into a hash anti-join against
          -- a scan of the whole outbox (test/tables/indexes.test.ts); this stays
          -- one lookup in the outbox's unique reservation_id index per hold,
          -- in index order, so LIMIT stops the walk early.
          AND NOT coalesce((SELECT o.state = 'pending' OR o.finished_at >= ${CUTOFF}
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
       -- (intent_id from roots, not NOT EXISTS here: that was planned as a
       -- hash of the whole outbox.)
       SELECT r.id FROM roots r
        WHERE r.intent_id IS NULL OR r.intent_id IN (SELECT id FROM intents)
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
  const { rows } = await db.query<Record<string, number>>(
    `WITH ${ctes.join(',\n     ')}
     SELECT (SELECT count(*) FROM roots)::int AS locked,
            ${children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i},`).join('\n            ')}
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM holds_done)::int AS holds`,
    [options.now, options.days, options.limit],
  );
  return countsOf(rows[0]!, children);
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
  const { rows } = await db.query<Record<string, number>>(
    `WITH ${ctes.join(',\n     ')}
     SELECT (SELECT count(*) FROM roots)::int AS locked,
            ${children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i},`).join('\n            ')}
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM holds_done)::int AS holds`,
    [options.now, options.days, options.limit, ADDRESS_IN_TEXT],
  );
  return countsOf(rows[0]!, children);
}

/** Delete up to `limit` rows of a standalone table older than `days`, oldest first. */
export async function standalonePrune(
  db: Queryable,
  schema: string,
  table: StandaloneTable,
  options: { now: Date | null; days: number; limit: number },
): Promise<number> {
  const t = `${ident(schema)}.${ident(table.table)}`;
  const key = ident(table.key);
  const age = `t.${ident(table.age)}`;
  const { rows } = await db.query<{ n: number }>(
    `WITH batch AS MATERIALIZED (
       SELECT t.${key} AS key FROM ${t} t
        WHERE (${table.applies}) AND ${age} < ${CUTOFF}
        ORDER BY ${age} LIMIT $3
          FOR UPDATE OF t SKIP LOCKED
     ), done AS (DELETE FROM ${t} t WHERE t.${key} = ANY (ARRAY(SELECT key FROM batch)) RETURNING 1)
     SELECT count(*)::int AS n FROM done`,
    [options.now, options.days, options.limit],
  );
  return rows[0]!.n;
}

/** Erase up to `limit` not-yet-erased rows of a standalone table older than `days`. */
export async function standaloneErase(
  db: Queryable,
  schema: string,
  table: StandaloneTable,
  options: { now: Date | null; days: number; limit: number },
): Promise<number> {
  const t = `${ident(schema)}.${ident(table.table)}`;
  const key = ident(table.key);
  const age = `t.${ident(table.age)}`;
  const unerased = Object.entries(table.erase)
    .filter(([, how]) => how === 'null')
    .map(([column]) => `t.${ident(column)} IS NOT NULL`)
    .join(' OR ');
  const { rows } = await db.query<{ n: number }>(
    `WITH batch AS MATERIALIZED (
       SELECT t.${key} AS key FROM ${t} t
        WHERE (${table.applies}) AND ${age} < ${CUTOFF} AND (${unerased})
        ORDER BY ${age} LIMIT $3
          FOR UPDATE OF t SKIP LOCKED
     ), done AS (
       UPDATE ${t} t SET ${setClause(table.erase, 't', '$4')}
        WHERE t.${key} = ANY (ARRAY(SELECT key FROM batch)) RETURNING 1)
     SELECT count(*)::int AS n FROM done`,
    // $4 only when a column is scrubbed: PostgreSQL refuses a parameter it cannot type.
    Object.values(table.erase).some((how) => how.startsWith('scrub'))
      ? [options.now, options.days, options.limit, ADDRESS_IN_TEXT]
      : [options.now, options.days, options.limit],
  );
  return rows[0]!.n;
}

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

export interface AddressErasure {
  /** Rows changed (or, for tables erased by deletion, deleted) per table. */
  counts: TableCounts;
  /** Pending intents of the address, rejected so nothing more is sent. */
  rejectedPending: number;
  /** Of those, how many were leased: a send may have been in flight and may still arrive. */
  inFlight: number;
  /** Held holds of the address: live reservations, left untouched (see docs). */
  heldHoldIds: string[];
}

/**
 * Erase one address everywhere it is stored, in one statement: its terminal
 * holds and their stories (a pending intent is rejected with reason "erased
 * on request" so nothing is sent; an attempt still open is closed as
 * abandoned), intents sent to it, every story child, and standalone rows
 * matching the address or its hash. Finds the holds and intents by a scan
 * (there is no index on addresses, on purpose: see docs/operations.md).
 * Held holds are reported, not changed. Run it in a transaction.
 */
export async function addressErase(
  db: Queryable,
  schema: string,
  address: string,
  options: { now: Date | null; tables?: RetentionTables },
): Promise<AddressErasure> {
  const s = ident(schema);
  const tables = options.tables ?? RETENTION_TABLES;
  const target = `lower(btrim($2::text))`;
  const mine = (alias: string, columns: string[] | undefined) =>
    (columns ?? []).map((c) => ` OR lower(btrim(${alias}.${ident(c)})) = ${target}`).join('');
  const children = tables.storyChildren.map((child, i) => {
    const t = `${s}.${ident(child.table)}`;
    const rows = `(t.intent_id = ANY (ARRAY(SELECT id FROM intents))${mine('t', child.addressColumns)})`;
    if (child.erase === 'delete') return `c${i} AS (DELETE FROM ${t} t WHERE ${rows} RETURNING 1)`;
    return `c${i} AS (UPDATE ${t} t SET ${setClause(child.erase, 't', '$3')} WHERE ${rows} AND ${stillPersonal('t', child.erase, '$3')} RETURNING 1)`;
  });
  const erasable = tables.standalone.filter(holdsPersonalData);
  const standalone = erasable.map((table, i) => {
    const t = `${s}.${ident(table.table)}`;
    const hash = table.addressHashColumn ? ` OR t.${ident(table.addressHashColumn)} = encode(sha256(convert_to(${target}, 'UTF8')), 'hex')` : '';
    return `s${i} AS (UPDATE ${t} t SET ${setClause(table.erase, 't', '$3')}
        WHERE (false${mine('t', table.addressColumns)}${hash}) AND ${stillPersonal('t', table.erase, '$3')} RETURNING 1)`;
  });
  const { rows } = await db.query<Record<string, unknown>>(
    `WITH held AS (
       SELECT r.id FROM ${s}.support_reservations r WHERE lower(btrim(r.customer_email)) = ${target} AND r.status = 'held'
     ), roots AS MATERIALIZED (
       SELECT r.id FROM ${s}.support_reservations r
        WHERE lower(btrim(r.customer_email)) = ${target} AND r.status <> 'held'
          FOR UPDATE OF r
     ), intents AS MATERIALIZED (
       SELECT o.id, o.state, o.lease_token IS NOT NULL AS leased FROM ${s}.email_outbox o
        WHERE o.reservation_id = ANY (ARRAY(SELECT id FROM roots)) OR lower(btrim(o.recipient)) = ${target}
          FOR UPDATE OF o
     ), pending AS (
       SELECT id, leased FROM intents WHERE state = 'pending'
     ), closed AS (
       -- An attempt a worker opened and has not recorded: the send may be in
       -- flight. Its acceptance, if it comes, is still recorded (a fact).
       UPDATE ${s}.email_attempts a SET outcome = 'abandoned', outcome_unknown = true, finished_at = ${NOW},
              error = '${ERASED_ON_REQUEST} before a result was recorded'
        WHERE a.intent_id = ANY (ARRAY(SELECT id FROM pending)) AND a.finished_at IS NULL
        RETURNING 1
     ), ${[...children, ...standalone].map((c) => c + ',').join('\n     ')} intents_done AS (
       UPDATE ${s}.email_outbox o SET
              recipient = NULL,
              state = CASE WHEN o.state = 'pending' THEN 'rejected' ELSE o.state END,
              finished_at = CASE WHEN o.state = 'pending' THEN ${NOW} ELSE o.finished_at END,
              last_error = CASE WHEN o.state = 'pending' THEN '${ERASED_ON_REQUEST}'
                                ELSE regexp_replace(o.last_error, $3, '${ERASED}', 'g') END,
              lease_token = NULL, lease_expires_at = NULL
        WHERE o.id = ANY (ARRAY(SELECT id FROM intents))
        RETURNING 1
     ), holds_done AS (
       UPDATE ${s}.support_reservations r SET ${HOLD_ERASURE('$3')}
        WHERE r.id = ANY (ARRAY(SELECT id FROM roots))
        RETURNING 1
     )
     SELECT (SELECT count(*) FROM holds_done)::int AS holds,
            (SELECT count(*) FROM intents_done)::int AS intents,
            (SELECT count(*) FROM closed)::int AS closed,
            (SELECT count(*) FROM pending)::int AS rejected,
            (SELECT count(*) FROM pending WHERE leased)::int AS in_flight,
            ${[...children.map((_, i) => `(SELECT count(*) FROM c${i})::int AS c${i}`), ...standalone.map((_, i) => `(SELECT count(*) FROM s${i})::int AS s${i}`)].map((c) => c + ',').join('\n            ')}
            ARRAY(SELECT id FROM held ORDER BY id LIMIT 100) AS held_ids`,
    [options.now, address, ADDRESS_IN_TEXT],
  );
  const row = rows[0]! as Record<string, number> & { held_ids: string[] };
  const counts: TableCounts = {};
  tables.storyChildren.forEach((child, i) => (counts[child.table] = (counts[child.table] ?? 0) + row[`c${i}`]!));
  // Closing an open attempt also takes the address-free reason, so it counts as a change.
  counts.email_attempts = (counts.email_attempts ?? 0) + row.closed!;
  counts.email_outbox = row.intents!;
  counts.support_reservations = row.holds!;
  erasable.forEach((table, i) => (counts[table.table] = (counts[table.table] ?? 0) + row[`s${i}`]!));
  return { counts, rejectedPending: row.rejected!, inFlight: row.in_flight!, heldHoldIds: row.held_ids };
}

export interface OldestRetained {
  /** Per table with an age of its own: seconds since the oldest terminal row ended (0 when none). */
  oldestAgeSeconds: TableCounts;
  /** Seconds since the oldest terminal hold not yet erased ended (0 when none). */
  oldestUnerasedAgeSeconds: number;
}

/** The ages behind the retention gauges, through the partial indexes (a few index entries each). */
export async function retentionOldest(db: Queryable, schema: string, tables: RetentionTables = RETENTION_TABLES): Promise<OldestRetained> {
  const s = ident(schema);
  const age = (from: string) => `coalesce(extract(epoch FROM now() - ${from}), 0)::float8`;
  const standalone = tables.standalone.map(
    (t, i) => `(SELECT ${age(`min(t.${ident(t.age)})`)} FROM ${s}.${ident(t.table)} t WHERE ${t.applies}) AS s${i}`,
  );
  const { rows } = await db.query<Record<string, number>>(
    `SELECT (SELECT ${age(`min(${HOLD_END})`)} FROM ${s}.support_reservations r WHERE r.status <> 'held') AS holds,
            (SELECT ${age(`min(${HOLD_END})`)} FROM ${s}.support_reservations r WHERE r.status <> 'held' AND r.customer_email IS NOT NULL) AS unerased
            ${standalone.map((c) => ', ' + c).join('')}`,
  );
  const row = rows[0]!;
  const oldestAgeSeconds: TableCounts = { support_reservations: Math.max(0, row.holds!) };
  tables.standalone.forEach((t, i) => (oldestAgeSeconds[t.table] = Math.max(0, row[`s${i}`]!)));
  return { oldestAgeSeconds, oldestUnerasedAgeSeconds: Math.max(0, row.unerased!) };
}
