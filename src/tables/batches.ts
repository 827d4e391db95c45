import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';

/**
 * email_batches: one provider request that carried several emails, with
 * its members in request order (migration 0019). The table's one module:
 * the delivery lane begins batches here; the outbox's lease and record
 * statements compose the fragments below (so a batch's members are leased
 * and settled in the same statement as their intents).
 *
 * A batch is open while its members are bound to it (email_outbox.batch_id):
 * from just before its request until the result is recorded, and past that
 * while the outcome is unknown on a provider that deduplicates the batch on
 * its key. An open batch's members are leased only together.
 */

export interface BatchBegin {
  id: string;
  account: string;
  provider: string;
  /** The chunk's intent ids, in request order. */
  members: readonly string[];
  /** The round's lease token: only members still leased under it join. */
  token: string;
  /**
   * Bind the members to the batch (a provider that deduplicates on the
   * batch's key: an unknown outcome must be resent whole). False: the batch
   * is history only, each member settles on its own.
   */
  bind: boolean;
}

/**
 * Record a batch before its request: the batch row with the members that
 * are still this round's (fenced on the lease token), their attempts marked
 * with the batch, and, when `bind`, the members bound to it. Returns the
 * members that joined, in request order: exactly what must be sent.
 */
export async function batchesBegin(db: Queryable, schema: string, batch: BatchBegin): Promise<string[]> {
  const s = ident(schema);
  // The members are locked (FOR UPDATE) so the lease test is made again on
  // a row another worker's lease changed while this statement waited for
  // it (this round's lease had expired or been reclaimed). Read from the
  // snapshot alone, that member would join, go out under the batch's key,
  // and go out again under its own key from the other worker, unflagged.

  const { rows } = await db.query<{ members: string[] }>(
    `WITH m AS (
       SELECT id, ord FROM unnest($4::text[]) WITH ORDINALITY AS m(id, ord)
     ), own AS (
       SELECT o.id, m.ord FROM ${s}.email_outbox o JOIN m ON m.id = o.id
        WHERE o.id = ANY ($4::text[]) AND o.state = 'pending' AND o.lease_token = $5::uuid
          FOR UPDATE OF o
     ), bound AS (
       UPDATE ${s}.email_outbox o SET batch_id = $1::uuid
        WHERE $6::bool AND o.id = ANY (ARRAY(SELECT id FROM own))
       RETURNING o.id
     ), marked AS (
       UPDATE ${s}.email_attempts a SET batch_id = $1::uuid
        WHERE a.intent_id = ANY (ARRAY(SELECT id FROM own)) AND a.lease_token = $5::uuid AND a.finished_at IS NULL
       RETURNING a.intent_id
     )
     INSERT INTO ${s}.email_batches (id, account, provider, members, open)
     SELECT $1::uuid, $2, $3, array_agg(own.id ORDER BY own.ord), $6::bool FROM own HAVING count(*) > 0
     RETURNING members`,
    [batch.id, batch.account, batch.provider, batch.members, batch.token, batch.bind],
  );
  return rows[0]?.members ?? [];
}

/**
 * CTE fragment for the outbox's batch lease: `due_batches` (id, members),
 * up to `limit` open batches of `account`, oldest first, locked (SKIP
 * LOCKED: another worker leasing one skips it), whose every member is still
 * bound, pending, available at `now` and under no live lease, and at most
 * `emails` members in all (NULL: no bound).
 */
export const batchesDueSql = (s: string, account: string, limit: string, emails: string, now: string): string =>
  `locked_batches AS (
       SELECT b.id, b.members, b.created_at FROM ${s}.email_batches b, clock
        WHERE b.open AND b.account = ${account}
          AND NOT EXISTS (
            SELECT 1 FROM unnest(b.members) AS m(id)
              LEFT JOIN ${s}.email_outbox o ON o.id = m.id
             WHERE o.id IS NULL OR o.batch_id IS DISTINCT FROM b.id OR o.state <> 'pending' OR o.available_at > ${now}
                OR (o.lease_expires_at IS NOT NULL AND o.lease_expires_at > ${now}))
        ORDER BY b.created_at
        LIMIT ${limit}
          FOR UPDATE OF b SKIP LOCKED
     ), due_batches AS (
       SELECT id, members FROM (
         SELECT id, members, sum(cardinality(members)) OVER (ORDER BY created_at, id) AS upto FROM locked_batches) x
        WHERE ${emails}::int IS NULL OR upto <= ${emails}::int
     )`;

/** SQL expression: how many emails batch `batch` carried (NULL when `batch` is NULL). */
export const batchSizeSql = (s: string, batch: string): string =>
  `(SELECT cardinality(b.members) FROM ${s}.email_batches b WHERE b.id = ${batch})`;

/** SQL expression: the 0-based place of intent `intent` in batch `batch` (NULL when `batch` is NULL). */
export const batchPositionSql = (s: string, batch: string, intent: string): string =>
  `(SELECT array_position(b.members, ${intent}) - 1 FROM ${s}.email_batches b WHERE b.id = ${batch})`;

/**
 * Statement fragment for the outbox's record: close the batches in `ids`
 * (a uuid[] expression) that no member is bound to any more, counting the
 * members `updated` (a CTE with id and the new batch_id) changed in this
 * statement by their new value.
 */
export const batchesCloseSql = (s: string, ids: string, updated: string): string =>
  `UPDATE ${s}.email_batches b SET open = false
    WHERE b.id = ANY (${ids}) AND b.open
      AND NOT EXISTS (SELECT 1 FROM ${updated} u WHERE u.batch_id = b.id)
      AND NOT EXISTS (SELECT 1 FROM ${s}.email_outbox o
                       WHERE o.id = ANY (b.members) AND o.batch_id = b.id
                         AND NOT EXISTS (SELECT 1 FROM ${updated} u WHERE u.id = o.id))`;

/**
 * Unbind the members of this account's open batches that can no longer be
 * resent as they were: older than the provider keeps the batch's key
 * (`keyLifetimeMs`), or with a member that left (settled, dead, or moved by
 * an operator). Their members go on singly, each flagged `moved_unsettled`
 * (an acceptance may duplicate what the batch delivered). Returns how many
 * batches were closed.
 */
export async function batchesCloseStale(db: Queryable, schema: string, account: string, keyLifetimeMs: number): Promise<number> {
  const s = ident(schema);
  const { rows } = await db.query<{ n: number }>(
    `WITH stale AS (
       SELECT b.id, b.members FROM ${s}.email_batches b
        WHERE b.open AND b.account = $1
          AND (b.created_at <= now() - make_interval(secs => $2::float8 / 1000)
               OR EXISTS (SELECT 1 FROM unnest(b.members) AS m(id) LEFT JOIN ${s}.email_outbox o ON o.id = m.id
                           WHERE o.id IS NULL OR o.batch_id IS DISTINCT FROM b.id OR o.state <> 'pending'))
          FOR UPDATE OF b SKIP LOCKED
     ), unbound AS (
       UPDATE ${s}.email_outbox o SET batch_id = NULL, moved_unsettled = true
         FROM stale WHERE o.id = ANY (stale.members) AND o.batch_id = stale.id
       RETURNING o.id
     ), closed AS (
       UPDATE ${s}.email_batches b SET open = false FROM stale WHERE b.id = stale.id RETURNING b.id
     )
     SELECT (SELECT count(*) FROM closed)::int AS n, (SELECT count(*) FROM unbound)::int AS members`,
    [account, keyLifetimeMs],
  );
  return rows[0]?.n ?? 0;
}

/** A batch as `trace` shows it: its id and how many emails the request carried. */
export interface BatchSummary {
  id: string;
  members: number;
  account: string;
  createdAt: Date;
}

export async function batchesGet(db: Queryable, schema: string, ids: readonly string[]): Promise<Map<string, BatchSummary>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; members: number; account: string; created_at: Date }>(
    `SELECT id, cardinality(members) AS members, account, created_at FROM ${ident(schema)}.email_batches WHERE id = ANY ($1::uuid[])`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, { id: r.id, members: r.members, account: r.account, createdAt: r.created_at }]));
}
