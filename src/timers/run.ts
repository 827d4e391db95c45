import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { ident } from '../db/pool.js';
import { HoldNotHeldError } from '../errors.js';
import { confirmHold } from '../holds/holds.js';
import { packageRoot } from '../runtime/package-root.js';
import { CONTENDERS, DESIGNS, contenderSettled, prepareContender, seedContender, type ContenderName } from './contenders.js';
import { startSink } from './sink.js';
import { Supervisor } from './supervisor.js';
import { tally, type FinalStatus, type Tally } from './tally.js';
import { planWorkload } from './workload.js';

export interface CompareTimersOptions {
  pool: pg.Pool;
  /** Passed to the contender processes as DATABASE_URL. */
  databaseUrl: string;
  holds: number;
  /** Deadlines spread over this many seconds. */
  seconds: number;
  seed: number;
  /** SIGKILL a contender as the sink receives its every Nth send (0: never). */
  killEverySends: number;
  /** SIGKILL each contender process this many ms after it is up, while holds fall due (0: never). */
  killEveryMs: number;
  confirmShare?: number;
  /** First deadline, ms after the holds are written (default 2000): time for the processes to start. */
  leadMs?: number;
  /** Longest wait, after the last deadline, for durable contenders to finish their work. */
  settleTimeoutMs?: number;
  /** Schemas are `<prefix>_<random>_<contender>`, dropped at the end. */
  schemaPrefix?: string;
  signal?: AbortSignal;
}

export interface ContenderResult {
  name: ContenderName;
  design: string;
  tally: Tally;
  /** SIGKILLs as the sink received a send / killEveryMs after a process was up. */
  killsAtSend: number;
  killsTimed: number;
  starts: number;
  /** Exits that were not our SIGKILL: the contender crashed by itself (should be 0). */
  unexpectedExits: number;
  /** Its durable work was done before the settle timeout (timers: always). */
  settled: boolean;
  /** leasehold only: intents its outbox marked possible_duplicate. */
  outboxPossibleDuplicates?: number;
  stderrTail?: string;
}

export interface CompareTimersResult {
  holds: number;
  seconds: number;
  seed: number;
  killEverySends: number;
  killEveryMs: number;
  /** Holds the application tried to confirm near their deadline. */
  confirmAttempts: number;
  elapsedSeconds: number;
  contenders: ContenderResult[];
}

/** Crashes go on this long after the last deadline: contenders that fell behind are still working then. */
const KILL_GRACE_MS = 1500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The compiled child script (the command runs from dist/; tests compile first). */
export function childScript(): string {
  const script = path.join(packageRoot(), 'dist', 'src', 'timers', 'child.js');
  if (!existsSync(script)) throw new Error(`compare-timers: ${script} is missing; run npm run build`);
  return script;
}

/**
 * Run one workload through every contender at once, each in its own schema
 * and its own supervised process, with the same injected crashes, then
 * count from the database and the sink what each lost or doubled.
 */
export async function compareTimers(options: CompareTimersOptions): Promise<CompareTimersResult> {
  const { pool } = options;
  const started = Date.now();
  const script = childScript();
  const workload = planWorkload({
    holds: options.holds,
    seconds: options.seconds,
    seed: options.seed,
    ...(options.confirmShare !== undefined ? { confirmShare: options.confirmShare } : {}),
    ...(options.leadMs !== undefined ? { leadMs: options.leadMs } : {}),
  });
  const base = `${options.schemaPrefix ?? 'compare_timers'}_${randomBytes(3).toString('hex')}`;
  const schemaOf = (name: ContenderName) => `${base}_${name}`;
  const supervisors = new Map<ContenderName, Supervisor>();
  const killsAtSend = new Map<ContenderName, number>(CONTENDERS.map((n) => [n, 0]));
  const killsTimed = new Map<ContenderName, number>(CONTENDERS.map((n) => [n, 0]));
  let killing = true;

  const kill = (name: ContenderName, counter: Map<ContenderName, number>, start?: number) => {
    const supervisor = supervisors.get(name);
    if (!killing || !supervisor) return;
    const before = supervisor.kills;
    supervisor.kill(start);
    if (supervisor.kills > before) counter.set(name, counter.get(name)! + 1);
  };
  const sink = await startSink({
    onSend: (contender, count) => {
      if (options.killEverySends > 0 && count % options.killEverySends === 0 && CONTENDERS.includes(contender as ContenderName)) {
        kill(contender as ContenderName, killsAtSend);
      }
    },
  });
  const timers: NodeJS.Timeout[] = [];
  const confirmations: Array<Promise<void>> = [];
  try {
    for (const name of CONTENDERS) await prepareContender(pool, schemaOf(name), name);
    const t0 = Date.now();
    for (const name of CONTENDERS) await seedContender(pool, schemaOf(name), name, workload, t0);

    for (const name of CONTENDERS) {
      const supervisor = new Supervisor({
        script,
        env: { ...process.env, DATABASE_URL: options.databaseUrl },
        // Only the first timers process created the holds, so only it has their timers.
        // A process lives killEveryMs once up (time to do some work however
        // slowly the machine starts processes), then dies.
        onReady: (start) => {
          if (options.killEveryMs > 0) timers.push(setTimeout(() => kill(name, killsTimed, start), options.killEveryMs));
        },
        args: (start) => [name, '--schema', schemaOf(name), '--sink', sink.url, ...(name === 'timers' && start === 1 ? ['--arm'] : [])],
      });
      supervisors.set(name, supervisor);
      supervisor.start();
    }

    // The application: confirm at the last moment, in every contender's schema alike.
    for (const hold of workload.holds) {
      if (hold.confirmAtMs === null) continue;
      const at = hold.confirmAtMs;
      timers.push(
        setTimeout(() => {
          for (const name of CONTENDERS) {
            confirmations.push(
              confirmHold(pool, hold.id, { schema: schemaOf(name) }).then(
                () => {},
                (error) => {
                  if (!(error instanceof HoldNotHeldError)) throw error;
                },
              ),
            );
          }
        }, Math.max(0, t0 + at - Date.now())),
      );
    }

    // Crashes happen while holds fall due and confirmations race them, and a little after.
    const windowEnd = t0 + workload.lastDueMs + KILL_GRACE_MS;
    while (Date.now() < windowEnd && !options.signal?.aborted) await sleep(Math.min(100, windowEnd - Date.now()));
    killing = false;
    for (const timer of timers) clearTimeout(timer);
    await Promise.all(confirmations);

    // Then let each finish what it durably knows it owes.
    const settleEnd = Date.now() + (options.settleTimeoutMs ?? 60_000);
    const settled = new Map<ContenderName, boolean>();
    await sleep(1000);
    while (!options.signal?.aborted) {
      for (const name of CONTENDERS) {
        if (!settled.get(name)) settled.set(name, await contenderSettled(pool, schemaOf(name), name));
      }
      if (CONTENDERS.every((name) => settled.get(name)) || Date.now() > settleEnd) break;
      await sleep(200);
    }
    await Promise.all([...supervisors.values()].map((s) => s.stop()));
    // Half a run would read as losses: report nothing rather than that.
    if (options.signal?.aborted) throw new Error('compare-timers: interrupted; nothing measured');

    const contenders: ContenderResult[] = [];
    for (const name of CONTENDERS) {
      const s = ident(schemaOf(name));
      const { rows } = await pool.query<{ id: string; status: FinalStatus }>(`SELECT id, status FROM ${s}.support_reservations`);
      const supervisor = supervisors.get(name)!;
      const result: ContenderResult = {
        name,
        design: DESIGNS[name],
        tally: tally(rows, sink.sends(name)),
        killsAtSend: killsAtSend.get(name)!,
        killsTimed: killsTimed.get(name)!,
        starts: supervisor.starts,
        unexpectedExits: supervisor.unexpectedExits,
        settled: settled.get(name) ?? false,
      };
      if (name === 'leasehold') {
        const flagged = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE possible_duplicate`);
        result.outboxPossibleDuplicates = flagged.rows[0]!.n;
      }
      if (supervisor.unexpectedExits > 0) result.stderrTail = supervisor.stderr();
      contenders.push(result);
    }
    return {
      holds: options.holds,
      seconds: options.seconds,
      seed: options.seed,
      killEverySends: options.killEverySends,
      killEveryMs: options.killEveryMs,
      confirmAttempts: workload.holds.filter((h) => h.confirmAtMs !== null).length,
      elapsedSeconds: Math.round((Date.now() - started) / 100) / 10,
      contenders,
    };
  } finally {
    killing = false;
    for (const timer of timers) clearTimeout(timer);
    await Promise.all([...supervisors.values()].map((s) => s.stop()));
    await Promise.allSettled(confirmations);
    await sink.close();
    for (const name of CONTENDERS) await pool.query(`DROP SCHEMA IF EXISTS ${ident(schemaOf(name))} CASCADE`).catch(() => {});
  }
}
