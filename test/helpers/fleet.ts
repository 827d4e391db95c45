import { readFile } from 'node:fs/promises';
import type pg from 'pg';
import { ident } from '../../src/db/pool.js';

/**
 * Checks for a fleet of leasehold processes on one schema: invariants read
 * from the tables, the sandbox journals and the processes' own log events,
 * never from how long something took.
 */

/**
 * The environment of the multi-process tests: the limiter policy they
 * check against, small expiry batches on a short cadence (so the expiry
 * workers keep meeting on the same due rows), rounds of 8 and a pool of 3,
 * the size a many-process deployment would pick. Logs at debug: the checks
 * read each hold's `hold.expired` event (at info a batch is one event).
 */
export function fleetEnv(base: Record<string, string>, limiter: { perSecond: number; burst: number }): Record<string, string> {
  return {
    ...base,
    LOG_LEVEL: 'debug',
    LEASEHOLD_RATE_PER_SECOND: String(limiter.perSecond),
    LEASEHOLD_RATE_BURST: String(limiter.burst),
    LEASEHOLD_EXPIRY_INTERVAL_MS: '100',
    LEASEHOLD_EXPIRY_BATCH: '5',
    LEASEHOLD_DELIVERY_BATCH: '8',
    LEASEHOLD_POOL_SIZE: '3',
  };
}

/** `count` holds falling due one after another over `spreadMs` from now (the first ones already due). */
export async function insertStaggeredHolds(pool: pg.Pool, schema: string, count: number, spreadMs: number, prefix = 'f'): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const offsetsMs = ids.map((_, i) => Math.round((i * spreadMs) / count) - 200);
  await pool.query(
    `INSERT INTO ${ident(schema)}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
     SELECT id, 'customer+' || id || '@example.com', now() + make_interval(secs => ms / 1000.0), now() - interval '1 minute', 'seeded'
       FROM unnest($1::text[], $2::int[]) AS t(id, ms)`,
    [ids, offsetsMs],
  );
  return ids;
}

/** The intents a sandbox journal (SANDBOX_JOURNAL) says were accepted, one per line. */
export async function journalIntents(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { intentId: string }).intentId);
}

/** The JSON log events named `event` in a process's stderr. */
export function logEvents(stderr: string, event: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(`"event":"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.event === event);
}

/**
 * When each accepted send was released: its attempt's started_at, stamped
 * (database clock) by the lease statement right after the permit was taken.
 */
export async function acceptedStartTimes(pool: pg.Pool, schema: string): Promise<number[]> {
  const { rows } = await pool.query<{ t: number }>(
    `SELECT extract(epoch FROM started_at)::float8 AS t FROM ${ident(schema)}.email_attempts WHERE outcome = 'accepted' ORDER BY started_at`,
  );
  return rows.map((r) => r.t);
}

/**
 * Worst excess over `burst + perSecond * t` across every window between two
 * accepted attempts (0 or less: the bound held). An attempt's started_at is
 * the moment its permit was granted (the limiter's own clock), so the bound
 * applies exactly; the millisecond only absorbs rounding to microseconds.
 * Used by the fleet test and test/delivery/processes.test.ts.
 */
export function worstWindowExcess(times: number[], perSecond: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const allowed = burst + perSecond * (times[j]! - times[i]! + 0.001);
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}

export async function countWhere(pool: pg.Pool, schema: string, table: string, where: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(schema)}.${table} WHERE ${where}`);
  return rows[0]!.n;
}

/**
 * For a waitForCount that failed (its `explain`): the intents whose id is
 * LIKE `pattern`, each with its latest attempt, and the last `lines` lines
 * of a process's or a worker's log.
 */
export async function intentsAndLog(pool: pg.Pool, schema: string, pattern: string, log: string | readonly string[], lines = 30): Promise<string> {
  const s = ident(schema);
  const { rows } = await pool.query(
    `SELECT o.id, o.state, o.attempts, o.lease_expires_at, o.available_at, a.worker, a.finished_at IS NOT NULL AS finished
       FROM ${s}.email_outbox o LEFT JOIN ${s}.email_attempts a ON a.intent_id = o.id AND a.attempt = o.attempts
      WHERE o.id LIKE $1 ORDER BY o.id`,
    [pattern],
  );
  const tail = (typeof log === 'string' ? log.split('\n') : log).slice(-lines).join('\n');
  return `intents: ${JSON.stringify(rows)}\nlog (last ${lines} lines):\n${tail}`;
}

/**
 * Poll `read` until it returns `want`, or fail with what it last returned,
 * and with what `explain` says then (the state a reader of the failure
 * needs: rows, a child's log); an `explain` that fails is named, not thrown.
 */
export async function waitForCount(
  read: () => Promise<number>,
  want: number,
  timeoutMs: number,
  what: string,
  explain?: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await read();
    if (got >= want) return;
    if (Date.now() > deadline) {
      const more = explain ? await explain().catch((error: unknown) => `(explain failed: ${(error as Error).message})`) : undefined;
      throw new Error(`${what}: ${got} of ${want} after ${timeoutMs} ms${more ? `\n${more}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Wait until `count` intents are sent (polling every 50 ms), or fail after `timeoutMs` saying how many were. */
export async function waitForSent(pool: pg.Pool, schema: string, count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sent = await countWhere(pool, schema, 'email_outbox', "state = 'sent'");
    if (sent >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${sent}/${count} sent`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
