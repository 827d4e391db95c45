import type pg from 'pg';
import { ident } from '../src/db/pool.js';
import { percentile, round } from './common.js';

/**
 * leasehold's due workload in `compare` (bench/compare.ts), step by step:
 * where an email's time goes between its hold falling due and its send.
 */

/** From the tables, ms after the hold's due time, p50 and p99 of each step's start. */
export interface LeaseholdPath {
  /** The expiry statement (the hold's expired_at). */
  expired: [number, number];
  /** The lease statement (the first attempt's started_at). */
  leased: [number, number];
  /** The statement that stored the rendered message (its rendered_at). */
  stored: [number, number];
  /** The record statement (the intent's sent_at). */
  recorded: [number, number];
}

/** Each step's start after the due time of the holds due from `fromMs` on (statement start times, as each statement's now()). */
export async function leaseholdPath(pool: pg.Pool, schema: string, fromMs: number): Promise<LeaseholdPath> {
  const s = ident(schema);
  const steps = { expired: 'r.expired_at', leased: 'a.started_at', stored: 'm.rendered_at', recorded: 'o.sent_at' } as const;
  const columns = Object.entries(steps).map(([name, at]) =>
    [50, 99].map((p) => `percentile_cont(${p / 100}) WITHIN GROUP (ORDER BY extract(epoch FROM ${at} - r.expires_at) * 1000)::float8 AS ${name}_${p}`).join(', '),
  );
  const { rows } = await pool.query<Record<string, number | null>>(
    `SELECT ${columns.join(', ')}
       FROM ${s}.support_reservations r
       JOIN ${s}.email_outbox o ON o.reservation_id = r.id
       JOIN ${s}.email_attempts a ON a.intent_id = o.id AND a.attempt = 1
       JOIN ${s}.email_messages m ON m.intent_id = o.id
      WHERE r.status = 'expired' AND r.expires_at >= to_timestamp($1::float8 / 1000)`,
    [fromMs],
  );
  const row = rows[0] ?? {};
  const pair = (name: string): [number, number] => [round(row[`${name}_50`] ?? Number.NaN), round(row[`${name}_99`] ?? Number.NaN)];
  return { expired: pair('expired'), leased: pair('leased'), stored: pair('stored'), recorded: pair('recorded') };
}

/**
 * The same path measured in the process from each hold's expiry commit
 * (the expiry lane's `expired` event), p50 / p99 ms: when the commit was
 * seen after the hold fell due, and how long from there to its send (an
 * email never sent counts as infinitely late). Item i fell due at
 * `firstDueMs + i * spacingMs`; 0 in either list means never. Undefined
 * when no commit was seen.
 */
export function commitSplit(
  committedAt: readonly number[],
  handledAt: readonly number[],
  firstDueMs: number,
  spacingMs: number,
): { committed: [number, number]; commitToSent: [number, number] } | undefined {
  const seen = committedAt.flatMap((at, i) => (at > 0 ? [i] : []));
  if (seen.length === 0) return undefined;
  const fromDue = seen.map((i) => committedAt[i]! - (firstDueMs + i * spacingMs));
  const toSent = seen.map((i) => (handledAt[i]! > 0 ? handledAt[i]! - committedAt[i]! : Number.POSITIVE_INFINITY));
  const pair = (values: number[]): [number, number] => [round(percentile(values, 50)), round(percentile(values, 99))];
  return { committed: pair(fromDue), commitToSent: pair(toSent) };
}
