import { ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import type { EmailGateway } from '../../src/providers/gateway.js';
import { testDatabase, type TestDatabase } from './database.js';
import { insertDueHolds } from './holds.js';
import { fixture, kill9, startNode } from './processes.js';

/**
 * The end-to-end story per provider: due holds expire, the delivery worker
 * sends through the real adapter to a local server, and a delivery process
 * killed between the provider's acceptance and the saved receipt is
 * followed by a second worker whose send the provider deduplicates (Resend),
 * the adapter reconciles (Postmark), or the outbox flags (SES, SMTP).
 */
export async function e2eDatabase(label: string): Promise<TestDatabase> {
  const db = await testDatabase(label);
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
  return db;
}

/** Insert `count` due holds and run the expiry lane: returns their intent ids. */
export async function expireHolds(db: TestDatabase, prefix: string, count: number): Promise<string[]> {
  const holds = await insertDueHolds(db.pool, db.schema, count, { prefix });
  await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
  return holds.map((h) => `reservation-expired:${h}`);
}

/** Run delivery rounds in-process until nothing is leased. */
export async function deliverAll(db: TestDatabase, gateway: EmailGateway): Promise<Record<string, number>> {
  const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway, sendTimeoutMs: 5000, leaseMs: 30_000 });
  const total: Record<string, number> = {};
  for (let round = 0; round < 20; round++) {
    const run = await worker.runOnce();
    for (const [k, v] of Object.entries(run.outcomes)) total[k] = (total[k] ?? 0) + (v ?? 0);
    if (run.leased === 0) break;
  }
  return total;
}

/**
 * A delivery process sends the pending intents through `providerEnv`'s
 * provider and is SIGKILLed after the provider accepted and before the
 * receipt was saved. Its lease is then made to expire by backdating
 * (tests move time; they do not wait for it).
 */
export async function crashAfterAcceptance(db: TestDatabase, providerEnv: Record<string, string>): Promise<void> {
  const child = startNode(fixture('delivery-child'), ['--crash-at', 'delivery.accepted'], { ...db.env, ...providerEnv });
  try {
    await child.waitForLine(/^FAULT delivery\.accepted/);
  } finally {
    await kill9(child);
  }
  await db.pool.query(
    `UPDATE ${ident(db.schema)}.email_outbox
        SET available_at = now(), lease_expires_at = now() - interval '1 ms'
      WHERE lease_token IS NOT NULL`,
  );
}

export interface OutboxRow {
  id: string;
  state: string;
  receipt: string | null;
  attempts: number;
  possible_duplicate: boolean;
}

export async function outbox(db: TestDatabase, ids: string[]): Promise<OutboxRow[]> {
  const { rows } = await db.pool.query<OutboxRow>(
    `SELECT id, state, receipt, attempts, possible_duplicate FROM ${ident(db.schema)}.email_outbox
      WHERE id = ANY($1::text[]) ORDER BY id`,
    [ids],
  );
  return rows;
}

export async function attemptOutcomes(db: TestDatabase, id: string): Promise<Array<{ outcome: string | null; outcome_unknown: boolean }>> {
  const { rows } = await db.pool.query<{ outcome: string | null; outcome_unknown: boolean }>(
    `SELECT outcome, outcome_unknown FROM ${ident(db.schema)}.email_attempts WHERE intent_id = $1 ORDER BY attempt`,
    [id],
  );
  return rows;
}
