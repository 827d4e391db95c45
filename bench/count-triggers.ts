import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { ident, withClient, withTransaction } from '../src/db/pool.js';
import { holdsExpireDue } from '../src/tables/holds.js';
import { intentsLease, intentsRecord, type AttemptResult } from '../src/tables/outbox.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { median, round } from './common.js';
import type { BenchDatabase } from './database.js';
import { seedHolds, seedPendingIntents } from './seed.js';

/**
 * What the count triggers (migration 0012: intents by state on the outbox;
 * 0016: accepted sends per hour on the attempts) add to the delivery and
 * expiry lanes' statements: the real intentsLease, intentsRecord (all
 * accepted) and holdsExpireDue, batch BENCH_TRIGGER_BATCH (500), timed with
 * the triggers disabled, enabled (64 shards) and enabled with one shard per
 * state or hour, the modes interleaved round by round so a shared machine's drift
 * falls on all three alike. Then BENCH_TRIGGER_WORKERS (4) connections
 * record batches of 50 at the same moment, the contention case the shards
 * are for.
 */
const BATCH = Number(process.env.BENCH_TRIGGER_BATCH ?? 500);
const ROUNDS = Number(process.env.BENCH_TRIGGER_ROUNDS ?? 15);
const WORKERS = Number(process.env.BENCH_TRIGGER_WORKERS ?? 4);
const CONCURRENT_BATCH = 50;
const CONCURRENT_ROUNDS = Number(process.env.BENCH_TRIGGER_CONCURRENT_ROUNDS ?? 30);

type Mode = 'off' | 'on' | 'one-shard';
const MODES: Mode[] = ['off', 'on', 'one-shard'];
/** Each counted table, a column to touch when warming its triggers up, its triggers, and the function they share. */
const COUNTERS = [
  { table: 'email_outbox', column: 'attempts', fn: 'email_outbox_count_changes', triggers: ['email_outbox_count_inserts', 'email_outbox_count_updates', 'email_outbox_count_deletes'] },
  {
    table: 'email_attempts',
    column: 'started_at',
    fn: 'email_attempts_accepted_changes',
    triggers: ['email_attempts_accepted_inserts', 'email_attempts_accepted_updates', 'email_attempts_accepted_deletes'],
  },
];

async function setMode(pool: pg.Pool, schema: string, mode: Mode, functions: { sharded: string[]; single: string[] }): Promise<void> {
  const s = ident(schema);
  const verb = mode === 'off' ? 'DISABLE' : 'ENABLE';
  for (const { table, triggers } of COUNTERS) for (const t of triggers) await pool.query(`ALTER TABLE ${s}.${table} ${verb} TRIGGER ${t}`);
  if (mode !== 'off') for (const def of mode === 'on' ? functions.sharded : functions.single) await pool.query(def);
  // Fire each trigger once on every pooled connection (no rows), so the timed
  // statements do not pay for compiling the replaced function or reloading the table.
  await Promise.all(
    Array.from({ length: pool.options.max ?? 1 }, () =>
      withClient(pool, async (client) => {
        for (const { table, column } of COUNTERS) {
          await client.query(`UPDATE ${s}.${table} SET ${column} = ${column} WHERE false`);
          await client.query(`INSERT INTO ${s}.${table} SELECT * FROM ${s}.${table} WHERE false`);
        }
      }),
    ),
  );
}

/** `n` clients checked out at once, each through withClient. */
function withClients<T>(pool: pg.Pool, n: number, work: (clients: pg.PoolClient[]) => Promise<T>, held: pg.PoolClient[] = []): Promise<T> {
  return held.length === n ? work(held) : withClient(pool, (client) => withClients(pool, n, work, [...held, client]));
}

const accepted = (leased: Array<{ id: string; attempts: number }>, token: string): AttemptResult[] =>
  leased.map((l) => ({
    id: l.id, token, attempt: l.attempts, outcome: 'accepted', receipt: `r-${l.id}`, error: null, delayMs: 0,
    providerStatus: 200, providerCode: null, outcomeUnknown: false, durationMs: 1, duplicateRisk: false,
  }));

export const countTriggers: Benchmark = {
  name: 'count-triggers',
  optIn: true,
  description: `lease, record and expire statements (batch ${BATCH}) with the count triggers (intents by state, accepted sends per hour) off, on, and on with one shard`,
  async run(db: BenchDatabase): Promise<BenchResult> {
    const target = await db.freshSchema('count_triggers', WORKERS + 2);
    const { pool, schema } = target;
    const s = ident(schema);
    try {
      const perMode = ROUNDS * BATCH + WORKERS * CONCURRENT_BATCH * CONCURRENT_ROUNDS;
      await seedPendingIntents(pool, schema, perMode * MODES.length);
      await seedHolds(pool, schema, ROUNDS * BATCH * MODES.length, { firstDueMs: -60_000, spacingMs: 0, prefix: 'due', analyze: true });
      await pool.query(`VACUUM ANALYZE ${s}.email_outbox`);
      const sharded: string[] = [];
      for (const { fn } of COUNTERS) {
        const { rows } = await pool.query<{ def: string }>(`SELECT pg_get_functiondef('${s}.${fn}'::regproc) AS def`);
        sharded.push(rows[0]!.def);
      }
      const functions = { sharded, single: sharded.map((def) => def.replaceAll('pg_backend_pid() % 64', '0')) };
      if (functions.single.some((def, i) => def === sharded[i])) throw new Error('could not make the one-shard variant of a trigger function');

      const times: Record<Mode, { lease: number[]; record: number[]; expire: number[]; concurrentRecord: number[] }> = {
        off: { lease: [], record: [], expire: [], concurrentRecord: [] },
        on: { lease: [], record: [], expire: [], concurrentRecord: [] },
        'one-shard': { lease: [], record: [], expire: [], concurrentRecord: [] },
      };
      const timed = async <T>(into: number[], work: () => Promise<T>): Promise<T> => {
        const started = performance.now();
        const result = await work();
        into.push(performance.now() - started);
        return result;
      };

      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of round % 2 === 0 ? MODES : [...MODES].reverse()) {
          await setMode(pool, schema, mode, functions);
          const token = randomUUID();
          const leased = await timed(times[mode].lease, () =>
            intentsLease(pool, schema, { limit: BATCH, leaseMs: 60_000, token, provider: 'bench', now: null }),
          );
          if (leased.length !== BATCH) throw new Error(`leased ${leased.length}, expected ${BATCH}`);
          await timed(times[mode].record, () => intentsRecord(pool, schema, accepted(leased, token), { maxAttempts: 5, now: null }));
          await timed(times[mode].expire, () => withTransaction(pool, (client) => holdsExpireDue(client, schema, BATCH, null)));
        }
      }

      // Contention: WORKERS connections lease, then all record at once.
      // Each checked out through withClient (an error listener for the whole checkout), all held at once.
      await withClients(pool, WORKERS, async (clients) => {
        for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
          for (const mode of round % 2 === 0 ? MODES : [...MODES].reverse()) {
            await setMode(pool, schema, mode, functions);
            const leases = await Promise.all(
              clients.map(async (client) => {
                const token = randomUUID();
                return { client, token, leased: await intentsLease(client, schema, { limit: CONCURRENT_BATCH, leaseMs: 60_000, token, provider: 'bench', now: null }) };
              }),
            );
            await timed(times[mode].concurrentRecord, () =>
              Promise.all(leases.map(({ client, token, leased }) => intentsRecord(client, schema, accepted(leased, token), { maxAttempts: 5, now: null }))),
            );
          }
        }
      });
      await setMode(pool, schema, 'on', functions);

      const figures: Figure[] = [];
      for (const statement of ['lease', 'record', 'expire', 'concurrentRecord'] as const) {
        const label = statement === 'concurrentRecord' ? `${WORKERS} connections recording ${CONCURRENT_BATCH} each at once` : `${statement} ${BATCH}`;
        for (const mode of MODES) figures.push({ name: `${label}, triggers ${mode}, median`, value: round(median(times[mode][statement]), 2), unit: 'ms' });
        const added = median(times.on[statement]) - median(times.off[statement]);
        figures.push({ name: `${label}: added by the triggers (on - off)`, value: round(added, 2), unit: 'ms' });
      }
      return { figures, details: { batch: BATCH, rounds: ROUNDS, workers: WORKERS, times } };
    } finally {
      await target.drop();
    }
  },
};
