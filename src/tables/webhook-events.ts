import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { WEBHOOK_STATES, type WebhookEventType, type WebhookState } from '../model/webhook-events.js';

/**
 * Every statement on `webhook_events` (migration 0030), the application
 * events' outbox: one row per (event, endpoint), written only by the
 * migration's triggers in the transaction of the change. The webhook lane
 * (src/webhooks/) leases an endpoint's due rows and records each result
 * fenced by its lease token, as the email outbox does; operators list the
 * given-up rows and replay them.
 *
 * `now` parameters are `coalesce($n, now())`: null means the database clock.
 */

export interface WebhookEvent {
  /** The webhook-id, the same on every attempt and replay. */
  id: string;
  endpoint: string;
  type: WebhookEventType;
  holdId: string | null;
  intentId: string | null;
  tenant: string;
  state: WebhookState;
  attempts: number;
  occurredAt: Date;
  createdAt: Date;
  availableAt: Date;
  leased: boolean;
  /** The last attempt's HTTP status; null: none yet, or no answer (timeout, refused). */
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: Date | null;
  replays: number;
}

const COLUMNS = `id, endpoint, type, hold_id, intent_id, tenant, state, attempts, occurred_at, created_at, available_at,
  lease_token IS NOT NULL AND lease_expires_at > now() AS leased, last_status, last_error, finished_at, replays`;

function fromRow(r: Record<string, unknown>): WebhookEvent {
  return {
    id: r['id'] as string,
    endpoint: r['endpoint'] as string,
    type: r['type'] as WebhookEventType,
    holdId: r['hold_id'] as string | null,
    intentId: r['intent_id'] as string | null,
    tenant: r['tenant'] as string,
    state: r['state'] as WebhookState,
    attempts: r['attempts'] as number,
    occurredAt: r['occurred_at'] as Date,
    createdAt: r['created_at'] as Date,
    availableAt: r['available_at'] as Date,
    leased: r['leased'] as boolean,
    lastStatus: r['last_status'] as number | null,
    lastError: r['last_error'] as string | null,
    finishedAt: r['finished_at'] as Date | null,
    replays: r['replays'] as number,
  };
}

/** A leased event: what the lane sends, and what fences its record. */
export interface LeasedWebhook {
  id: string;
  type: WebhookEventType;
  /** The body's object; sent as JSON.stringify of it, the same bytes every attempt (jsonb's key order is fixed). */
  payload: unknown;
  /** This attempt's number. */
  attempts: number;
  dueSince: Date;
  leaseToken: string;
}

/**
 * Lease up to `limit` of an endpoint's due events, oldest due first. While
 * leased, available_at is the lease's expiry, so a lane that died with the
 * lease leaves the event due again when it ends, through the same index.
 * Returns the statement's `now` too: the lane decides back-off and give-up
 * on the database's clock.
 */
export async function webhookEventsLease(
  db: Queryable,
  schema: string,
  options: { endpoint: string; limit: number; leaseMs: number; now?: Date | null },
): Promise<{ now: Date; events: LeasedWebhook[] }> {
  const s = ident(schema);
  const { rows } = await db.query<{ now: Date; id: string | null; type: WebhookEventType; payload: unknown; attempts: number; due_since: Date; lease_token: string }>(
    `WITH clock AS (SELECT coalesce($4::timestamptz, now()) AS now),
     due AS (
       -- The clock as a scalar subquery, not joined: the bound then ends
       -- the index scan instead of filtering every event still waiting.
       SELECT w.id FROM ${s}.webhook_events w
        WHERE w.endpoint = $1 AND w.state = 'pending' AND w.available_at <= (SELECT clock.now FROM clock)
        ORDER BY w.available_at
        LIMIT $2
          FOR UPDATE OF w SKIP LOCKED
     ), leased AS (
       UPDATE ${s}.webhook_events w
          SET lease_token = gen_random_uuid(),
              lease_expires_at = clock.now + make_interval(secs => $3::float8 / 1000),
              available_at = clock.now + make_interval(secs => $3::float8 / 1000),
              attempts = w.attempts + 1
         FROM due, clock
        WHERE w.id = due.id
       RETURNING w.id, w.type, w.payload, w.attempts, w.due_since, w.lease_token
     )
     SELECT clock.now, leased.* FROM clock LEFT JOIN leased ON true`,
    [options.endpoint, options.limit, options.leaseMs, options.now ?? null],
  );
  return {
    now: rows[0]!.now,
    events: rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: r.id!, type: r.type, payload: r.payload, attempts: r.attempts, dueSince: r.due_since, leaseToken: r.lease_token })),
  };
}

/** One attempt's result: delivered, to be retried at `nextAt`, or given up. */
export interface WebhookResult {
  id: string;
  leaseToken: string;
  outcome: 'delivered' | 'retry' | 'dead';
  status: number | null;
  error: string | null;
  /** For `retry`: when it is due again. */
  nextAt?: Date;
}

/**
 * Record results in one statement, each fenced by its lease token: a lane
 * whose lease ended (and whose event another lane took) changes nothing.
 * Returns the ids it recorded.
 */
export async function webhookEventsRecord(db: Queryable, schema: string, results: readonly WebhookResult[], now: Date | null = null): Promise<string[]> {
  if (results.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `WITH r AS (
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::timestamptz[])
         AS r(id, token, outcome, status, error, next_at)
     ), clock AS (SELECT coalesce($7::timestamptz, now()) AS now)
     UPDATE ${ident(schema)}.webhook_events w
        SET state = CASE r.outcome WHEN 'retry' THEN 'pending' ELSE r.outcome END,
            available_at = CASE WHEN r.outcome = 'retry' THEN r.next_at ELSE w.available_at END,
            finished_at = CASE WHEN r.outcome = 'retry' THEN NULL ELSE clock.now END,
            lease_token = NULL, lease_expires_at = NULL,
            last_status = r.status, last_error = left(r.error, 500)
       FROM r, clock
      WHERE w.id = r.id AND w.lease_token = r.token AND w.state = 'pending'
     RETURNING w.id`,
    [
      results.map((r) => r.id),
      results.map((r) => r.leaseToken),
      results.map((r) => r.outcome),
      results.map((r) => r.status),
      results.map((r) => r.error),
      results.map((r) => r.nextAt ?? null),
      now,
    ],
  );
  return rows.map((r) => r.id);
}

/** Per endpoint with pending events: how long until its first falls due (ms, 0 if one is due now). */
export async function webhookEventsNextDueMs(db: Queryable, schema: string, endpoints: readonly string[], now: Date | null = null): Promise<Map<string, number>> {
  // One probe of the due index per endpoint.
  const { rows } = await db.query<{ endpoint: string; ms: number }>(
    `SELECT e.endpoint, (extract(epoch FROM d.at - coalesce($2::timestamptz, now())) * 1000)::float8 AS ms
       FROM unnest($1::text[]) AS e(endpoint)
       CROSS JOIN LATERAL (SELECT min(available_at) AS at FROM ${ident(schema)}.webhook_events
                            WHERE state = 'pending' AND endpoint = e.endpoint) d
      WHERE d.at IS NOT NULL`,
    [endpoints, now],
  );
  return new Map(rows.map((r) => [r.endpoint, Math.max(0, r.ms)]));
}

/** A given-up event back to pending, due now, under the same webhook-id; undefined: not found, or not dead. */
export async function webhookEventsReplay(db: Queryable, schema: string, id: string, now: Date | null = null): Promise<WebhookEvent | undefined> {
  const { rows } = await db.query(
    `UPDATE ${ident(schema)}.webhook_events
        SET state = 'pending', available_at = coalesce($2::timestamptz, now()), due_since = coalesce($2::timestamptz, now()),
            finished_at = NULL, attempts = 0, replays = replays + 1
      WHERE id = $1 AND state = 'dead'
     RETURNING ${COLUMNS}`,
    [id, now],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function webhookEventsGet(db: Queryable, schema: string, id: string): Promise<WebhookEvent | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM ${ident(schema)}.webhook_events WHERE id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** A hold's events, in the order they were written (timeline). */
export async function webhookEventsOfHold(db: Queryable, schema: string, holdId: string): Promise<WebhookEvent[]> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS} FROM ${ident(schema)}.webhook_events WHERE hold_id = $1 ORDER BY created_at, endpoint, id`,
    [holdId],
  );
  return rows.map(fromRow);
}

/**
 * Newest first, optionally of one state (operators: `dead` ones to replay).
 * Every state is one walk of webhook_events_listing (state, created_at
 * DESC, id DESC); all of them, the newest of each state's walk merged
 * (a Merge Append of three index scans that each stop after `limit` rows),
 * so neither form sorts the table, however long its history.
 */
export async function webhookEventsList(db: Queryable, schema: string, options: { state?: WebhookState; limit: number }): Promise<WebhookEvent[]> {
  const s = ident(schema);
  const ofState = (state: string) =>
    `(SELECT ${COLUMNS} FROM ${s}.webhook_events WHERE state = ${state} ORDER BY created_at DESC, id DESC LIMIT $1)`;
  const text = options.state
    ? `${ofState('$2')}`
    : `SELECT * FROM (${WEBHOOK_STATES.map((state) => ofState(`'${state}'`)).join(' UNION ALL ')}) e ORDER BY created_at DESC, id DESC LIMIT $1`;
  const { rows } = await db.query(text, options.state ? [options.limit, options.state] : [options.limit]);
  return rows.map(fromRow);
}

/** The lane's numbers: pending and dead counts and the oldest pending age, per endpoint (metrics, status, dashboard). */
export interface WebhookBacklog {
  endpoint: string;
  pending: number;
  dead: number;
  oldestPendingAgeSeconds: number;
}

/**
 * The backlog as one row (`webhook_backlog`: a JSON array of WebhookBacklog),
 * for the /metrics scrape's one statement (read/scrape.ts) beside the other
 * parts; `now` is an SQL timestamptz expression.
 */
export const webhookBacklogSql = (s: string, now: string): string =>
  `SELECT coalesce(json_agg(json_build_object('endpoint', b.endpoint, 'pending', b.pending, 'dead', b.dead,
            'oldestPendingAgeSeconds', greatest(0, coalesce(b.oldest, 0))) ORDER BY b.endpoint), '[]') AS webhook_backlog
     FROM (SELECT endpoint,
                  count(*) FILTER (WHERE state = 'pending')::int AS pending,
                  count(*) FILTER (WHERE state = 'dead')::int AS dead,
                  extract(epoch FROM ${now} - min(created_at) FILTER (WHERE state = 'pending'))::float8 AS oldest
             FROM ${s}.webhook_events
            WHERE state IN ('pending', 'dead')
            GROUP BY endpoint) b`;

export const webhookBacklogFromRow = (row: Record<string, unknown>): WebhookBacklog[] => (row['webhook_backlog'] as WebhookBacklog[] | undefined) ?? [];

export async function webhookEventsBacklog(db: Queryable, schema: string, now: Date | null = null): Promise<WebhookBacklog[]> {
  const { rows } = await db.query(webhookBacklogSql(ident(schema), 'coalesce($1::timestamptz, now())'), [now]);
  return webhookBacklogFromRow(rows[0]!);
}
