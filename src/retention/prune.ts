import type pg from 'pg';
import { withTransaction } from '../db/pool.js';
import { checkKnownOptions } from '../db/arguments.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../runtime/clock.js';
import { databaseClock } from '../runtime/clock.js';
import { holdsPersonalData, RETENTION_TABLES, validateTables, type RetentionTables } from './policy.js';
import { type RetentionPolicy } from '../model/retention-policy.js';
import { standaloneErase, standalonePrune, storiesErase, storiesPrune } from './queries.js';
import { type TableCounts } from './sql.js';
import { auditPrune } from '../tables/audit-log.js';
import { DEFAULT_AUDIT_RETENTION_DAYS } from '../model/audit-actions.js';

export interface PrunerOptions {
  pool: pg.Pool;
  schema?: string;
  policy: RetentionPolicy;
  clock?: Clock;
  logger?: Logger;
  metrics?: Metrics;
  /** The tables reached (default RETENTION_TABLES). */
  tables?: RetentionTables;
  /** Longest wait for any lock inside a batch before it gives up (default 2 s). */
  lockTimeoutMs?: number;
}

export interface PruneRound {
  pruned: TableCounts;
  erased: TableCounts;
  /** Some pass came back full: there is probably more to do at once. */
  full: boolean;
}

export interface PruneRun {
  pruned: TableCounts;
  erased: TableCounts;
  rounds: number;
  /** False when the time budget ran out with work left (the prune worker carries on). */
  complete: boolean;
}

const add = (into: TableCounts, from: TableCounts) => {
  for (const [table, n] of Object.entries(from)) into[table] = (into[table] ?? 0) + n;
};

/**
 * Runs the retention policy in small batches: each pass of a round is one
 * short transaction (one statement, at most `batchSize` stories or rows,
 * locks taken with SKIP LOCKED, any other lock wait bounded by lock_timeout),
 * so any number of pruners may run at once and none holds up the lanes.
 * Lock order is the lanes' own: holds, then intents, then attempts (the
 * lease and record statements also take an intent before its attempts), so
 * retention adds no lock cycle; two pruners lock disjoint stories.
 * Deletion goes first; erasure runs once deletion has caught up, so a
 * backlog of old stories is not erased only to be deleted a moment later.
 */
export class Pruner {
  private readonly schema: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly tables: RetentionTables;
  private readonly lockTimeoutMs: number;

  constructor(private readonly options: PrunerOptions) {
    checkKnownOptions(
      'options',
      options,
      (r) => ({
        pool: r.pool,
        schema: r.schema.optional(),
        policy: r.z.object({ intervalMs: r.positive, batchSize: r.positiveInt }, 'required: a RetentionPolicy (e.g. DEFAULT_RETENTION)'),
        clock: r.clock.optional(),
        logger: r.logger.optional(),
        lockTimeoutMs: r.positive.optional(),
      }),
      { required: true },
    );
    this.schema = options.schema ?? 'leasehold';
    this.clock = options.clock ?? databaseClock;
    this.logger = options.logger ?? silentLogger;
    this.tables = options.tables ?? RETENTION_TABLES;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 2000;
    validateTables(this.tables);
  }

  get policy(): RetentionPolicy {
    return this.options.policy;
  }

  /** One batch of every pass that has work. */
  async runOnce(): Promise<PruneRound> {
    const { retentionDays, erasePiiAfterDays, batchSize: limit } = this.options.policy;
    const now = this.clock.now();
    const pruned: TableCounts = {};
    const erased: TableCounts = {};
    let full = false;

    if (retentionDays !== null) {
      const stories = await this.batch('retention.pruned', (client) => storiesPrune(client, this.schema, { now, days: retentionDays, limit, tables: this.tables }));
      add(pruned, stories.counts);
      full ||= stories.stories >= limit;
      for (const table of this.tables.standalone.filter((t) => t.prune)) {
        const n = await this.batch('retention.pruned', async (client) => ({
          counts: { [table.table]: await standalonePrune(client, this.schema, table, { now, days: retentionDays, limit }) },
        }));
        add(pruned, n.counts);
        full ||= n.counts[table.table]! >= limit;
      }
    }
    // The audit log ages on its own policy (a year by default), not the stories'.
    const auditDays = this.options.policy.auditRetentionDays === undefined ? DEFAULT_AUDIT_RETENTION_DAYS : this.options.policy.auditRetentionDays;
    if (auditDays !== null) {
      const n = await this.batch('retention.pruned', async (client) => {
        const count = await auditPrune(client, this.schema, { now, days: auditDays, limit });
        const counts: TableCounts = count > 0 ? { audit_log: count } : {};
        return { count, counts };
      });
      add(pruned, n.counts);
      full ||= n.count >= limit;
    }
    if (erasePiiAfterDays !== null && !full) {
      const stories = await this.batch('retention.erased', (client) => storiesErase(client, this.schema, { now, days: erasePiiAfterDays, limit, tables: this.tables }));
      add(erased, stories.counts);
      full ||= stories.stories >= limit;
      for (const table of this.tables.standalone.filter(holdsPersonalData)) {
        const n = await this.batch('retention.erased', async (client) => ({
          counts: { [table.table]: await standaloneErase(client, this.schema, table, { now, days: erasePiiAfterDays, limit }) },
        }));
        add(erased, n.counts);
        full ||= n.counts[table.table]! >= limit;
      }
    }
    return { pruned, erased, full };
  }

  /** Rounds until nothing is left, or until `budgetMs` has passed (then `complete: false`). */
  async runUntilDone(options: { budgetMs?: number } = {}): Promise<PruneRun> {
    const deadline = options.budgetMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.budgetMs;
    const pruned: TableCounts = {};
    const erased: TableCounts = {};
    let rounds = 0;
    for (;;) {
      const round = await this.runOnce();
      rounds += 1;
      add(pruned, round.pruned);
      add(erased, round.erased);
      if (!round.full) return { pruned, erased, rounds, complete: true };
      if (Date.now() >= deadline) return { pruned, erased, rounds, complete: false };
    }
  }

  /**
   * One pass's batch in its own transaction, then one log event per table
   * it changed (table and count only: never an id or an address).
   */
  private async batch<T extends { counts: TableCounts }>(event: 'retention.pruned' | 'retention.erased', work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    const result = await withTransaction(this.options.pool, async (client) => {
      await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${this.lockTimeoutMs}ms`]);
      return work(client);
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const metrics = this.options.metrics;
    metrics?.retentionBatchSeconds.observe(seconds);
    for (const [table, count] of Object.entries(result.counts)) {
      if (count === 0) continue;
      (event === 'retention.pruned' ? metrics?.retentionPruned : metrics?.retentionErased)?.inc({ table }, count);
      this.logger.info({ event, table, count, ms: Math.round(seconds * 1000) }, event === 'retention.pruned' ? 'rows pruned' : 'personal data erased');
    }
    return result;
  }
}
