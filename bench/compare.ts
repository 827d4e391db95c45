import { readdir, readFile } from 'node:fs/promises';
import type pg from 'pg';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { median, percentile, round, sleep } from './common.js';
import { startChild, type BenchChild } from './children.js';
import {
  defaultsDescription,
  PROFILES,
  setUpSystem,
  SYSTEMS,
  TUNED,
  type DueSchedule,
  type Profile,
  type System,
} from './compare-systems.js';
import { commitSplit, leaseholdPath, type LeaseholdPath } from './compare-path.js';
import type { BenchDatabase } from './database.js';

/**
 * leasehold against graphile-worker and pg-boss (the pinned devDependencies)
 * on the same workloads, in the same database, in the same run. Each system
 * runs in a process of its own, in a schema of its own, one after the other,
 * the system order rotating every round.
 *
 * drain: N items already pending are handled by one process through a
 *   no-op handler (leasehold: a gateway that accepts at once, limiter opened
 *   to 1e6/s, intents seeded as pending outbox rows like bench/seed.ts).
 *   Rate = N / (first handler call -> every completion committed), so each
 *   system's start-up is left out. A system that has not finished after
 *   BENCH_COMPARE_TIMEOUT_S is reported at the rate it reached. Each drain
 *   also reports its CPU per 1,000 items: the system's own process (GO to
 *   done) and the PostgreSQL server's processes over the same span (Linux
 *   /proc; background work such as autovacuum included).
 * due: items fall due at BENCH_COMPARE_RATE per second for
 *   BENCH_COMPARE_WARMUP_S + BENCH_COMPARE_SECONDS while the system runs
 *   (leasehold: holds expire, the expiry lane writes intents, the delivery
 *   lane sends them; graphile-worker: jobs with run_at; pg-boss: jobs with
 *   startAfter). Latency = handler call - the item's due time. The p99 is
 *   over the items of the last BENCH_COMPARE_SECONDS, at a steady rate; the
 *   warm-up's first items (a fresh process, its code not yet optimised by
 *   V8, its connections new) are reported apart, as the p99 of the whole run.
 *   For leasehold, where the time goes, from the tables: when the expiry,
 *   lease, message-store and record statements of each email began (p50 and
 *   p99 after its due time; each statement's now()), and, in-process, when
 *   its expiry was seen committed and how long from there to its send, and
 *   the share of the run's emails handed off in their expiry statement (the
 *   process's leasehold_emails_handed_off_total: the workers are built with
 *   metrics, as `leasehold start` builds them): the
 *   goal row measures the delivery lane from the expiry statement's start,
 *   so the expiry transaction's own run time counts against delivery; the
 *   commit-based rows show the delivery lane's part alone.
 * Both at each system's defaults and at its documented high-throughput
 * settings (compare-systems.ts). graphile-worker runs twice: with its
 * no-op handler, and as `graphile-worker-work`, its handler doing
 * leasehold's work per email (render, store message and attempt); the
 * latter drains only (its due lateness is graphile-worker's own).
 *
 * The goals each ratio is held to are the figures' targets: drain at the
 * defaults >= 1.0x graphile-worker, tuned >= 0.3x its no-op and >= 2.0x
 * its same work, and the delivery lane adding <= 10 ms to the due p99.
 */
const ITEMS = Number(process.env.BENCH_COMPARE_ITEMS ?? 20_000);
const RATE = Number(process.env.BENCH_COMPARE_RATE ?? 1000);
const SECONDS = Number(process.env.BENCH_COMPARE_SECONDS ?? 5);
const WARMUP_S = Number(process.env.BENCH_COMPARE_WARMUP_S ?? 2);
const TIMEOUT_S = Number(process.env.BENCH_COMPARE_TIMEOUT_S ?? 30);
const ROUNDS = Number(process.env.BENCH_COMPARE_ROUNDS ?? 1);
/** Comma-separated subsets, to look at one cell while working on it: BENCH_COMPARE_WORKLOADS=drain BENCH_COMPARE_PROFILES=tuned. */
const only = <T extends string>(name: string, all: readonly T[]): readonly T[] => {
  const wanted = process.env[name]?.split(',').map((v) => v.trim()).filter(Boolean);
  if (!wanted || wanted.length === 0) return all;
  const unknown = wanted.filter((v) => !(all as readonly string[]).includes(v));
  if (unknown.length > 0) throw new Error(`${name}: unknown ${unknown.join(', ')} (choose from ${all.join(', ')})`);
  return all.filter((v) => wanted.includes(v));
};
const RUN_SYSTEMS = only('BENCH_COMPARE_SYSTEMS', SYSTEMS);
const RUN_PROFILES = only('BENCH_COMPARE_PROFILES', PROFILES);
const RUN_WORKLOADS = only('BENCH_COMPARE_WORKLOADS', ['drain', 'due'] as const);
/** The first item falls due this long after the seeding started. */
const LEAD_MS = 2500;

type Workload = 'drain' | 'due';

interface DrainResult {
  perSecond: number;
  /** CPU per 1,000 items: the system's process, and the PostgreSQL server's processes (null where /proc cannot tell). */
  cpuPerThousand: { process: number; postgres: number | null };
  finished: boolean;
  handled: number;
  /** GO -> first handler call (start-up and first fetch; not in the rate). */
  startupMs: number;
  seconds: number;
}

interface DueResult {
  n: number;
  handled: number;
  p50: number | null;
  /** Over the measured items (due after the warm-up). */
  p99: number | null;
  max: number | null;
  /** Over every item, the warm-up's included: what a process fresh from its start shows. */
  wholeRunP99: number | null;
  /** leasehold only: expired_at - expires_at p99 of the measured holds, from the table (the expiry lane alone). */
  expiryP99?: number;
  /** leasehold only: share of the run's emails (the warm-up's included) handed off in their expiry statement. */
  handedOffShare?: number;
  /** leasehold only: where an email's time goes, p50 / p99 ms from its hold's due time (leaseholdPath). */
  path?: LeaseholdPath;
  /** leasehold only, in-process: due -> its expiry seen committed (the `expired` event), p50 / p99 ms. */
  committed?: [number, number];
  /** leasehold only, in-process: expiry seen committed -> sent, each email's own, p50 / p99 ms. */
  commitToSent?: [number, number];
}

interface DrainReport {
  cpuMs: number;
  goAt: number;
  firstAt: number;
  lastAt: number;
  doneAt: number | null;
  distinct: number;
}

interface DueReport {
  distinct: number;
  handledAt: number[];
  /** leasehold only: when each hold's expiry was seen committed (0: never). */
  committedAt?: number[];
  /** leasehold only: emails handed off in their expiry statement, the warm-up's included. */
  handedOff?: number;
}

async function runChild(env: Record<string, string>, beforeGo?: () => Promise<void>): Promise<unknown> {
  let child: BenchChild | undefined;
  try {
    child = startChild('compare-child', env);
    await child.ready;
    if (beforeGo) await beforeGo();
    child.go();
    await child.done;
    return await child.report;
  } finally {
    if (child && child.process.exitCode === null) child.stop();
  }
}

async function drain(db: BenchDatabase, system: System, profile: Profile): Promise<DrainResult> {
  const setup = await setUpSystem(db.url, system);
  try {
    await setup.seed(ITEMS);
    await setup.settle();
    await db.checkpoint();
    const sessions = await clientSessions(setup.pool);
    const postgresBefore = await postgresCpuMs();
    const report = (await runChild(childEnv(db, setup.schema, system, profile, 'drain', TIMEOUT_S * 1000))) as DrainReport;
    await sessionsBackTo(setup.pool, sessions);
    const postgresAfter = await postgresCpuMs();
    const finished = report.doneAt !== null;
    const end = report.doneAt ?? report.lastAt;
    const seconds = Math.max(0.001, (end - report.firstAt) / 1000);
    const perThousand = (ms: number) => round((ms / Math.max(1, report.distinct)) * 1000, 0);
    return {
      cpuPerThousand: {
        process: perThousand(report.cpuMs),
        postgres: postgresBefore === null || postgresAfter === null ? null : perThousand(postgresAfter - postgresBefore),
      },
      perSecond: report.firstAt === 0 ? 0 : report.distinct / seconds,
      finished,
      handled: report.distinct,
      startupMs: report.firstAt === 0 ? -1 : report.firstAt - report.goAt,
      seconds: round(seconds, 2),
    };
  } finally {
    await setup.drop();
  }
}

const clientSessions = async (pool: pg.Pool): Promise<number> =>
  (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'`)).rows[0]!.n;

/**
 * Wait (at most 3 s) until the server has no more client sessions than
 * before the child started: a backend that exits while postgresCpuMs reads
 * /proc is in neither its own stat nor, until reaped, its postmaster's
 * (one measured drain read -45 ms per 1,000 that way).
 */
async function sessionsBackTo(pool: pg.Pool, sessions: number): Promise<void> {
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && (await clientSessions(pool)) > sessions) await sleep(20);
  // The last one leaves pg_stat_activity just before it exits and is reaped.
  await sleep(50);
}

/**
 * CPU used so far by every process named `postgres` on this machine
 * (Linux /proc, user + system, ms), or null where that cannot be read.
 * The servers here run on the benchmark's own machine; checkpoints and
 * autovacuum are included, as they are part of what a workload costs.
 */
async function postgresCpuMs(): Promise<number | null> {
  try {
    const ticksPerSecond = 100; // USER_HZ, 100 on every Linux this runs on
    let ticks = 0;
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      const close = stat.lastIndexOf(')');
      if (close < 0 || !stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
      const fields = stat.slice(close + 2).split(' ');
      // utime, stime, cutime, cstime (fields 14-17 of stat): a backend that
      // exited is counted in the postmaster's cutime/cstime once reaped.
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    }
    return (ticks / ticksPerSecond) * 1000;
  } catch {
    return null;
  }
}

async function due(db: BenchDatabase, system: System, profile: Profile): Promise<DueResult> {
  const warm = Math.round(RATE * WARMUP_S);
  const n = RATE * SECONDS;
  const setup = await setUpSystem(db.url, system);
  try {
    await db.checkpoint();
    let schedule: DueSchedule | undefined;
    const timeoutMs = LEAD_MS + (WARMUP_S + SECONDS) * 1000 + TIMEOUT_S * 1000;
    const report = (await runChild(childEnv(db, setup.schema, system, profile, 'due', timeoutMs, warm + n), async () => {
      // The system is running; add items that fall due from LEAD_MS on.
      schedule = { base: Date.now() + LEAD_MS, spacingMs: 1000 / RATE };
      await setup.seed(warm + n, schedule);
      if (Date.now() > schedule.base - 500) throw new Error(`seeding ${warm + n} items for ${system} took longer than the lead of ${LEAD_MS} ms`);
    })) as DueReport;
    // Unhandled items count as infinitely late: a p99 exists only if 99% were handled.
    const latencies = report.handledAt.map((at, i) => (at > 0 ? at - (schedule!.base + i * schedule!.spacingMs) : Number.POSITIVE_INFINITY));
    const measured = latencies.slice(warm);
    const finite = (v: number) => (Number.isFinite(v) ? round(v) : null);
    const result: DueResult = {
      n,
      handled: measured.filter(Number.isFinite).length,
      p50: finite(percentile(measured, 50)),
      p99: finite(percentile(measured, 99)),
      max: finite(Math.max(...measured)),
      wholeRunP99: finite(percentile(latencies, 99)),
    };
    if (system === 'leasehold') {
      const from = schedule!.base + warm * schedule!.spacingMs;
      result.path = await leaseholdPath(setup.pool, setup.schema, from);
      result.expiryP99 = result.path.expired[1];
      if (report.handedOff !== undefined) result.handedOffShare = report.handedOff / (warm + n);
      const split = commitSplit(report.committedAt?.slice(warm) ?? [], report.handledAt.slice(warm), from, schedule!.spacingMs);
      if (split) Object.assign(result, split);
    }
    return result;
  } finally {
    await setup.drop();
  }
}

function childEnv(
  db: BenchDatabase,
  schema: string,
  system: System,
  profile: Profile,
  workload: Workload,
  timeoutMs: number,
  items = ITEMS,
): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    BENCH_SCHEMA: schema,
    BENCH_SYSTEM: system,
    BENCH_PROFILE: profile,
    BENCH_WORKLOAD: workload,
    BENCH_ITEMS: String(items),
    BENCH_TIMEOUT_MS: String(timeoutMs),
    LOG_LEVEL: 'silent',
  };
}

type Cell = { drain: DrainResult[]; due: DueResult[] };

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : round(a / b, 3));
const medianOf = (values: Array<number | null>) => {
  const present = values.filter((v): v is number => v !== null);
  return present.length === values.length && present.length > 0 ? median(present) : null;
};

export const compare: Benchmark = {
  name: 'compare',
  optIn: true,
  description: `leasehold vs graphile-worker vs pg-boss: drain ${ITEMS} items, and ${RATE}/s falling due for ${SECONDS} s after ${WARMUP_S} s of warm-up, at defaults and tuned`,
  async run(db): Promise<BenchResult> {
    const cells = new Map<string, Cell>();
    const cell = (system: System, profile: Profile) => {
      const key = `${system}/${profile}`;
      if (!cells.has(key)) cells.set(key, { drain: [], due: [] });
      return cells.get(key)!;
    };
    for (let r = 0; r < ROUNDS; r++) {
      const order = RUN_SYSTEMS.map((_, k) => RUN_SYSTEMS[(k + r) % RUN_SYSTEMS.length]!);
      for (const profile of RUN_PROFILES) {
        for (const system of RUN_WORKLOADS.includes('drain') ? order : []) {
          process.stdout.write(`  round ${r + 1}: drain, ${system}, ${profile}\n`);
          cell(system, profile).drain.push(await drain(db, system, profile));
        }
        for (const system of RUN_WORKLOADS.includes('due') ? order.filter((s) => s !== 'graphile-worker-work') : []) {
          process.stdout.write(`  round ${r + 1}: due, ${system}, ${profile}\n`);
          cell(system, profile).due.push(await due(db, system, profile));
          await sleep(200);
        }
      }
    }

    const rate = (system: System, profile: Profile) => medianOf(cell(system, profile).drain.map((d) => d.perSecond));
    const p99 = (system: System, profile: Profile) => medianOf(cell(system, profile).due.map((d) => d.p99));
    // Ratios are taken within each round, then the median over rounds.
    const roundRatio = (profile: Profile, other: System, pick: (c: Cell, r: number) => number | null) =>
      medianOf(Array.from({ length: ROUNDS }, (_, r) => ratio(pick(cell('leasehold', profile), r), pick(cell(other, profile), r))));
    const drainRatio = (profile: Profile, other: System) => roundRatio(profile, other, (c, r) => c.drain[r]?.perSecond ?? null);
    const dueRatio = (profile: Profile, other: System) => roundRatio(profile, other, (c, r) => c.due[r]?.p99 ?? null);

    const figures: Figure[] = [];
    const rows: string[][] = [
      ['workload', 'profile', 'leasehold', 'graphile-worker', 'graphile, same work', 'pg-boss', 'lh / graphile', 'lh / graphile same work', 'lh / pg-boss'],
    ];
    const show = (v: number | null, unit: string, digits = 0) => (v === null ? 'n/a' : `${round(v, digits).toLocaleString('en-US')} ${unit}`);
    for (const profile of RUN_PROFILES) {
      const rates = SYSTEMS.map((s) => rate(s, profile));
      const unfinished = SYSTEMS.filter((s) => cell(s, profile).drain.some((d) => !d.finished));
      if (RUN_WORKLOADS.includes('drain')) rows.push([
        `drain ${ITEMS.toLocaleString('en-US')}`,
        profile,
        ...rates.map((v, k) => show(v, '/s') + (unfinished.includes(SYSTEMS[k]!) ? ' (timed out)' : '')),
        String(drainRatio(profile, 'graphile-worker') ?? 'n/a'),
        String(drainRatio(profile, 'graphile-worker-work') ?? 'n/a'),
        String(drainRatio(profile, 'pg-boss') ?? 'n/a'),
      ]);
      // Where each system's drain spent its CPU: its own process, and the server.
      const cpu = (system: System) => {
        const runs = cell(system, profile).drain;
        // Per 1,000 of a handful handled before the timeout, the CPU figure would be the idle process's.
        if (runs.some((d) => !d.finished)) return 'n/a (timed out)';
        const proc = medianOf(runs.map((d) => d.cpuPerThousand.process));
        const server = medianOf(runs.map((d) => d.cpuPerThousand.postgres));
        return proc === null ? 'n/a' : `${round(proc, 0)} + ${server === null ? '?' : round(server, 0)} ms`;
      };
      if (RUN_WORKLOADS.includes('drain')) rows.push(['  CPU per 1,000 drained (process + postgres)', profile, ...SYSTEMS.map(cpu), '', '', '']);
      const lateness = SYSTEMS.map((s) => p99(s, profile));
      const handled = SYSTEMS.map((s) => Math.min(...cell(s, profile).due.map((d) => d.handled)));
      if (RUN_WORKLOADS.includes('due')) rows.push([
        `due -> handled p99, ${RATE}/s for ${SECONDS} s after ${WARMUP_S} s`,
        profile,
        ...lateness.map((v, k) =>
          SYSTEMS[k] === 'graphile-worker-work' ? '-' : v !== null ? show(v, 'ms', 1) : RUN_SYSTEMS.includes(SYSTEMS[k]!) ? `n/a (${handled[k]} of ${RATE * SECONDS} handled)` : 'n/a',
        ),
        String(dueRatio(profile, 'graphile-worker') ?? 'n/a'),
        '',
        String(dueRatio(profile, 'pg-boss') ?? 'n/a'),
      ]);
      // What the delivery lane adds to the lateness: p99 due -> sent less p99 due -> expired (the expiry lane alone).
      const added = medianOf(cell('leasehold', profile).due.map((d) => (d.p99 === null || d.expiryP99 === undefined ? null : d.p99 - d.expiryP99)));
      if (RUN_WORKLOADS.includes('due') && RUN_SYSTEMS.includes('leasehold')) {
        rows.push(['  delivery lane adds to the p99 (due->sent less due->expired)', profile, show(added, 'ms', 1), '', '', '', '', '', '']);
        figures.push({ name: `due p99 added by the delivery lane, ${profile}: leasehold`, value: added ?? Number.NaN, unit: 'ms', target: '<= 10' });
        // Its first round's path, step by step: each step's statement start from the tables, then the expiry commit seen in the process.
        const runs = cell('leasehold', profile).due;
        const first = runs[0];
        const path = first?.path;
        if (path) {
          const steps: Array<[string, [number, number]]> = [
            ['expiry statement', path.expired],
            ['lease statement', path.leased],
            ['message store', path.stored],
            ['record statement', path.recorded],
          ];
          for (const [name, [p50, p99]] of steps) {
            rows.push([`    ${name} starts, p50 / p99 from due`, profile, `${round(p50, 1)} / ${round(p99, 1)} ms`, '', '', '', '', '', '']);
          }
        }
        // An email handed off skips the NOTIFY, the wake-up and the lease; one that is not waits for a round.
        const handed = medianOf(runs.map((d) => (d.handedOffShare === undefined ? null : d.handedOffShare * 100)));
        if (handed !== null) {
          rows.push([`    emails handed off in their expiry statement (the whole run)`, profile, show(handed, '%', 1), '', '', '', '', '', '']);
          figures.push({ name: `due emails handed off in their expiry statement, ${profile}: leasehold`, value: handed, unit: '%' });
        }
        // The same split from the expiry commit: the expiry statement's own run time belongs to the expiry lane.
        if (first?.committed && first.commitToSent) {
          const fromCommit = medianOf(runs.map((d) => (d.p99 === null || !d.committed ? null : d.p99 - d.committed[1])));
          rows.push([`    expiry seen committed, p50 / p99 from due`, profile, `${round(first.committed[0], 1)} / ${round(first.committed[1], 1)} ms`, '', '', '', '', '', '']);
          rows.push([`    expiry commit -> sent, each email, p50 / p99`, profile, `${round(first.commitToSent[0], 1)} / ${round(first.commitToSent[1], 1)} ms`, '', '', '', '', '', '']);
          rows.push(['  delivery lane adds from the commit (due->sent less due->committed)', profile, show(fromCommit, 'ms', 1), '', '', '', '', '', '']);
          figures.push({ name: `due p99 added by the delivery lane from the expiry commit, ${profile}: leasehold`, value: fromCommit ?? Number.NaN, unit: 'ms' });
        }
      }
      const wholeRun = SYSTEMS.map((s) => medianOf(cell(s, profile).due.map((d) => d.wholeRunP99)));
      if (RUN_WORKLOADS.includes('due')) rows.push([
        `  p99 of the whole run, the ${WARMUP_S} s warm-up included`,
        profile,
        ...wholeRun.map((v, k) => (SYSTEMS[k] === 'graphile-worker-work' ? '-' : v === null ? 'n/a' : show(v, 'ms', 1))),
        '',
        '',
        '',
      ]);
      for (const [k, system] of SYSTEMS.entries()) {
        figures.push({ name: `drain, ${profile}: ${system}`, value: Math.round(rates[k] ?? 0), unit: 'items/s' });
      }
      figures.push({
        name: `drain, ${profile}: leasehold / graphile-worker`,
        value: drainRatio(profile, 'graphile-worker') ?? Number.NaN,
        unit: 'x',
        target: profile === 'defaults' ? '>= 1.0' : '>= 0.3',
      });
      figures.push({
        name: `drain, ${profile}: leasehold / graphile-worker-work`,
        value: drainRatio(profile, 'graphile-worker-work') ?? Number.NaN,
        unit: 'x',
        ...(profile === 'tuned' ? { target: '>= 2.0' } : {}),
      });
      figures.push({ name: `drain, ${profile}: leasehold / pg-boss`, value: drainRatio(profile, 'pg-boss') ?? Number.NaN, unit: 'x' });
      for (const [k, system] of SYSTEMS.entries()) {
        if (system === 'graphile-worker-work') continue;
        const figure: Figure = { name: `due -> handled p99, ${profile}: ${system}`, value: lateness[k] ?? Number.NaN, unit: 'ms' };
        if (system === 'leasehold' && profile === 'defaults') figure.target = '<= 100';
        figures.push(figure);
      }
      figures.push({ name: `due -> handled p99 with the warm-up, ${profile}: leasehold`, value: medianOf(cell('leasehold', profile).due.map((d) => d.wholeRunP99)) ?? Number.NaN, unit: 'ms' });
      figures.push({ name: `due p99, ${profile}: leasehold / graphile-worker`, value: dueRatio(profile, 'graphile-worker') ?? Number.NaN, unit: 'x' });
      figures.push({ name: `due p99, ${profile}: leasehold / pg-boss`, value: dueRatio(profile, 'pg-boss') ?? Number.NaN, unit: 'x' });
    }
    printMatrix(rows);
    // Only the cells this run measured (BENCH_COMPARE_SYSTEMS / _PROFILES / _WORKLOADS).
    const measured = (f: Figure) =>
      SYSTEMS.every((system) => RUN_SYSTEMS.includes(system) || !f.name.includes(system)) &&
      PROFILES.every((profile) => RUN_PROFILES.includes(profile) || !f.name.includes(`, ${profile}:`)) &&
      (RUN_WORKLOADS.includes('drain') || !f.name.startsWith('drain')) &&
      (RUN_WORKLOADS.includes('due') || !f.name.startsWith('due'));

    return {
      figures: figures.filter(measured),
      details: {
        items: ITEMS,
        dueRate: RATE,
        dueSeconds: SECONDS,
        dueWarmUpSeconds: WARMUP_S,
        timeoutSeconds: TIMEOUT_S,
        rounds: ROUNDS,
        graphileHandlers: { 'graphile-worker': 'no-op', 'graphile-worker-work': 'renders the template and stores message + attempt' },
        settings: { defaults: defaultsDescription(), tuned: TUNED },
        ratios: 'drain: leasehold rate / other rate (higher is better for leasehold); due: leasehold p99 / other p99 (lower is better for leasehold)',
        runs: Object.fromEntries(
          [...cells.entries()].map(([key, c]) => [
            key,
            { drain: c.drain.map((d) => ({ ...d, perSecond: round(d.perSecond, 0) })), due: c.due },
          ]),
        ),
      },
    };
  },
};

function printMatrix(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write('\n  ' + line(rows[0]!) + '\n  ' + widths.map((w) => '-'.repeat(w)).join('  ') + '\n');
  for (const r of rows.slice(1)) process.stdout.write('  ' + line(r) + '\n');
  process.stdout.write('  (drain ratio: higher favours leasehold; due ratio: lower favours leasehold)\n\n');
}
