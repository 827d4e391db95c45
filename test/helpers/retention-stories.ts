import type pg from 'pg';
import { ident } from '../../src/db/pool.js';

/**
 * Write a hold's whole story straight into the tables, backdated: tests move
 * time by where rows sit in it, never by waiting.
 */
export interface StorySpec {
  id: string;
  status: 'held' | 'confirmed' | 'cancelled' | 'expired';
  /** Days since the hold ended (for held: since it was created). */
  endedDaysAgo: number;
  email?: string;
  metadata?: Record<string, unknown>;
  /** Expired holds: the intent's state and when it finished (default: with the hold). */
  intent?: 'pending' | 'sent' | 'rejected' | 'dead';
  intentEndedDaysAgo?: number;
  /** Attempts recorded for the intent; errors quote the address when given. */
  attempts?: Array<{ outcome: string | null; error?: string | null }>;
  lastError?: string | null;
  leased?: boolean;
  /** The hold's tenant, carried to its intent (default: the empty tenant). */
  tenant?: string;
}

const DAY = 86_400;

export async function writeStory(pool: pg.Pool, schema: string, spec: StorySpec): Promise<void> {
  const s = ident(schema);
  const email = spec.email ?? `${spec.id}@example.com`;
  const ended = spec.endedDaysAgo * DAY;
  // A held hold falls due in 20 minutes (created endedDaysAgo); a terminal one ended at its deadline.
  await pool.query(
    `INSERT INTO ${s}.support_reservations
       (id, customer_email, status, expires_at, created_at, confirmed_at, cancelled_at, expired_at, metadata, request_hash, tenant)
     VALUES ($1, $2, $3,
             CASE WHEN $3 = 'held' THEN now() + interval '20 minutes' ELSE now() - make_interval(secs => $4) END,
             now() - make_interval(secs => $4 + 1200),
             CASE WHEN $3 = 'confirmed' THEN now() - make_interval(secs => $4) END,
             CASE WHEN $3 = 'cancelled' THEN now() - make_interval(secs => $4) END,
             CASE WHEN $3 = 'expired' THEN now() - make_interval(secs => $4) END,
             $5::jsonb, md5($2), $6)`,
    [spec.id, email, spec.status, ended, JSON.stringify(spec.metadata ?? {}), spec.tenant ?? ''],
  );
  if (spec.status !== 'expired') return;
  const state = spec.intent ?? 'sent';
  const finished = (spec.intentEndedDaysAgo ?? spec.endedDaysAgo) * DAY;
  const intentId = `reservation-expired:${spec.id}`;
  const attempts = spec.attempts ?? [{ outcome: state === 'sent' ? 'accepted' : state === 'pending' ? null : state === 'rejected' ? 'rejected' : 'failed' }];
  await pool.query(
    `INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, attempts, available_at, created_at,
                                   sent_at, finished_at, receipt, last_error, lease_token, lease_expires_at, tenant)
     VALUES ($1, $2, $3, 'reservation-expired', $4, $6, now(), now() - make_interval(secs => $5 + 1),
             CASE WHEN $4 = 'sent' THEN now() - make_interval(secs => $5) END,
             CASE WHEN $4 <> 'pending' THEN now() - make_interval(secs => $5) END,
             CASE WHEN $4 = 'sent' THEN 'receipt-' || $2 END, $7,
             CASE WHEN $8 THEN gen_random_uuid() END, CASE WHEN $8 THEN now() + interval '30 seconds' END, $9)`,
    [intentId, spec.id, email, state, finished, attempts.length, spec.lastError ?? null, spec.leased ?? false, spec.tenant ?? ''],
  );
  for (const [i, a] of attempts.entries()) {
    await pool.query(
      `INSERT INTO ${s}.email_attempts (intent_id, attempt, lease_token, provider, started_at, finished_at, outcome, error, receipt)
       VALUES ($1, $2, gen_random_uuid(), 'sandbox', now() - make_interval(secs => $3 + 1),
               CASE WHEN $4::text IS NOT NULL THEN now() - make_interval(secs => $3) END, $4, $5,
               CASE WHEN $4 = 'accepted' THEN 'receipt' END)`,
      [intentId, i + 1, finished, a.outcome, a.error ?? null],
    );
  }
}

export async function ids(pool: pg.Pool, schema: string, table: string, column = 'id'): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(`SELECT DISTINCT ${column} AS id FROM ${ident(schema)}.${table} ORDER BY 1`);
  return rows.map((r) => r.id);
}

/** Per-table counts without the tables a run did not touch (every table listed in the policy reports a count). */
export function nonZero(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}
