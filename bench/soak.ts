/**
 * The soak, opt-in (`npm run soak`; SOAK_MINUTES=30 by default): holds
 * created at 200 a second (SOAK_RATE), 2 `leasehold expiry-worker` and 2
 * `leasehold delivery-worker` processes, one worker SIGKILLed (and started
 * again) every 60 s, and every backend purged (pg_terminate_backend) every
 * 5 minutes. Of each lane's two processes one is never killed: the witness
 * whose memory is followed for the whole run.
 *
 * Checked: each witness's resident memory stays flat (the median of the
 * run's last third within 20 % of the first third's after warm-up, the
 * first 3 minutes), the server's connection count does
 * not grow, the oldest due hold and oldest pending email stay within their
 * promises (60 s, 900 s), and at the end every hold is expired and every
 * email sent. Exit status 1 when one does not hold; the report is printed
 * and written to bench/results/soak.json.
 *
 * The database: an embedded server of its own, or SOAK_DATABASE_URL (e.g.
 * postgres://postgres@127.0.0.1:5432/test for the machine's PostgreSQL 15).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, ident } from '../src/db/pool.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(root, 'bin', 'leasehold.js');
const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const WARM_UP_MS = Math.min(3, MINUTES / 4) * 60_000;
const KILL_EVERY_MS = 60_000;
const PURGE_EVERY_MS = 5 * 60_000;
const SAMPLE_EVERY_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Proc {
  lane: 'expiry' | 'delivery';
  witness: boolean;
  child: ChildProcess;
}

async function rssBytes(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kb = status && /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : undefined;
}

async function main(): Promise<number> {
  let url = process.env.SOAK_DATABASE_URL;
  let stopServer = async () => {};
  if (!url) {
    const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-soak-'));
    const server = await startEmbeddedPostgres({ dataDir: dir });
    url = server.url;
    stopServer = async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const schema = `soak_${process.pid}`;
  const s = ident(schema);
  // Seeding and sampling may wait on a purged connection: no query bound here.
  const pool = createPool({ connectionString: url, max: 4, applicationName: 'soak-observer', queryTimeoutMs: 0 });
  await migrate(pool, schema);
  await rateLimiterSet(pool, schema, { perSecond: RATE * 2, burst: RATE });
  const env = { DATABASE_URL: url, LEASEHOLD_SCHEMA: schema, LOG_LEVEL: 'warn', EMAIL_FROM: 'Support <support@leasehold.test>', SANDBOX_LATENCY_MS: '5-30' };
  const start = (lane: Proc['lane'], witness: boolean): Proc => ({
    lane,
    witness,
    child: spawn(process.execPath, [cli, `${lane}-worker`], { env: { ...process.env, ...env }, stdio: 'ignore' }),
  });
  const procs: Proc[] = [start('expiry', true), start('expiry', false), start('delivery', true), start('delivery', false)];
  const samples: Array<{ t: number; rss: Record<string, number | undefined>; connections: number; oldestDueS: number; oldestPendingS: number }> = [];
  let created = 0;
  let kills = 0;
  let purges = 0;
  const began = Date.now();
  const endAt = began + MINUTES * 60_000;
  let running = true;

  const creator = (async () => {
    const tickMs = 100;
    const perTick = Math.max(1, Math.round((RATE * tickMs) / 1000));
    while (running && Date.now() < endAt) {
      const next = Date.now() + tickMs;
      try {
        await pool.query(
          `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, created_at, request_hash)
           SELECT 'soak-' || ($1::int + i), 'customer+' || ($1::int + i) || '@example.com', now() + interval '2 seconds', now(), 'seeded'
             FROM generate_series(0, $2::int - 1) i`,
          [created, perTick],
        );
        created += perTick;
      } catch {
        // A purge ended the connection: the next tick creates again.
      }
      await sleep(Math.max(0, next - Date.now()));
    }
  })();
  const chaos = (async () => {
    let nextKill = began + KILL_EVERY_MS;
    let nextPurge = began + PURGE_EVERY_MS;
    let victimLane: Proc['lane'] = 'delivery';
    while (running && Date.now() < endAt) {
      await sleep(500);
      if (Date.now() >= nextKill) {
        nextKill += KILL_EVERY_MS;
        const index = procs.findIndex((p) => !p.witness && p.lane === victimLane);
        procs[index]!.child.kill('SIGKILL');
        procs[index] = start(victimLane, false);
        victimLane = victimLane === 'delivery' ? 'expiry' : 'delivery';
        kills += 1;
      }
      if (Date.now() >= nextPurge) {
        nextPurge += PURGE_EVERY_MS;
        await pool
          .query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'leasehold%' AND pid <> pg_backend_pid()`)
          .catch(() => {});
        purges += 1;
      }
    }
  })();
  const sampler = (async () => {
    while (running && Date.now() < endAt) {
      await sleep(SAMPLE_EVERY_MS);
      try {
        const { rows } = await pool.query<{ connections: number; due_s: number; pending_s: number }>(
          `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database())::int AS connections,
                  coalesce((SELECT extract(epoch FROM now() - min(expires_at)) FROM ${s}.support_reservations WHERE status = 'held' AND expires_at <= now()), 0)::float8 AS due_s,
                  coalesce((SELECT extract(epoch FROM now() - min(created_at)) FROM ${s}.email_outbox WHERE state = 'pending'), 0)::float8 AS pending_s`,
        );
        const rss: Record<string, number | undefined> = {};
        for (const p of procs.filter((p) => p.witness)) rss[p.lane] = await rssBytes(p.child.pid);
        samples.push({ t: (Date.now() - began) / 1000, rss, connections: rows[0]!.connections, oldestDueS: rows[0]!.due_s, oldestPendingS: rows[0]!.pending_s });
        const last = samples.at(-1)!;
        process.stdout.write(
          `${last.t.toFixed(0)} s: created ${created}, rss expiry ${((last.rss.expiry ?? 0) / 2 ** 20).toFixed(1)} MiB, delivery ${((last.rss.delivery ?? 0) / 2 ** 20).toFixed(1)} MiB, ` +
            `${last.connections} connections, oldest due ${last.oldestDueS.toFixed(1)} s, oldest pending ${last.oldestPendingS.toFixed(1)} s\n`,
        );
      } catch {
        // Purged mid-sample.
      }
    }
  })();
  await Promise.all([creator, chaos, sampler]);

  // Drain, then check.
  const drainDeadline = Date.now() + 120_000;
  let left = { held: -1, pending: -1 };
  while (Date.now() < drainDeadline) {
    const { rows } = await pool.query<{ held: number; pending: number }>(
      `SELECT (SELECT count(*) FROM ${s}.support_reservations WHERE status = 'held')::int AS held,
              (SELECT count(*) FROM ${s}.email_outbox WHERE state = 'pending')::int AS pending`,
    );
    left = rows[0]!;
    if (left.held === 0 && left.pending === 0) break;
    await sleep(500);
  }
  running = false;
  for (const p of procs) p.child.kill('SIGKILL');

  const problems: string[] = [];
  const warm = samples.filter((x) => x.t * 1000 >= WARM_UP_MS);
  // Flat, not sawtooth-free: the median of the last third of the run against
  // the median of the first third after warm-up (a heap breathes between
  // collections; a leak moves the median).
  const third = Math.max(1, Math.floor(warm.length / 3));
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const memory: Record<string, { firstThirdMiB: number; lastThirdMiB: number; maxMiB: number; growth: number }> = {};
  for (const lane of ['expiry', 'delivery'] as const) {
    const values = warm.map((x) => x.rss[lane]).filter((v): v is number => v !== undefined);
    if (values.length < 3) {
      problems.push(`${lane} witness: too few memory samples`);
      continue;
    }
    const first = median(values.slice(0, third));
    const last = median(values.slice(-third));
    memory[lane] = { firstThirdMiB: first / 2 ** 20, lastThirdMiB: last / 2 ** 20, maxMiB: Math.max(...values) / 2 ** 20, growth: last / first - 1 };
    if (last > first * 1.2) problems.push(`${lane} witness grew ${((last / first - 1) * 100).toFixed(0)} % after warm-up`);
  }
  const firstConnections = Math.max(...warm.slice(0, third).map((x) => x.connections));
  const lastConnections = Math.max(...warm.slice(-third).map((x) => x.connections));
  if (lastConnections > firstConnections + 2) problems.push(`connections grew from ${firstConnections} to ${lastConnections}`);
  const worstDue = Math.max(0, ...samples.map((x) => x.oldestDueS));
  const worstPending = Math.max(0, ...samples.map((x) => x.oldestPendingS));
  if (worstDue > 60) problems.push(`oldest due hold reached ${worstDue.toFixed(1)} s (promise 60 s)`);
  if (worstPending > 900) problems.push(`oldest pending email reached ${worstPending.toFixed(1)} s (promise 900 s)`);
  if (left.held !== 0 || left.pending !== 0) problems.push(`not drained: ${left.held} held, ${left.pending} pending`);
  const { rows: dup } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE possible_duplicate`);
  const { rows: server } = await pool.query<{ v: string }>('SHOW server_version');

  const report = {
    minutes: MINUTES,
    ratePerSecond: RATE,
    server: server[0]!.v,
    created,
    kills,
    purges,
    memory,
    connections: { firstThirdMax: firstConnections, lastThirdMax: lastConnections },
    worstOldestDueS: worstDue,
    worstOldestPendingS: worstPending,
    flaggedPossibleDuplicates: dup[0]!.n,
    ok: problems.length === 0,
    problems,
  };
  process.stdout.write(`REPORT ${JSON.stringify(report)}\n`);
  await mkdir(path.join(root, 'bench', 'results'), { recursive: true });
  await writeFile(path.join(root, 'bench', 'results', 'soak.json'), JSON.stringify({ ...report, samples }, null, 2) + '\n');
  await pool.query(`DROP SCHEMA ${s} CASCADE`).catch(() => {});
  await pool.end();
  await stopServer();
  return problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
