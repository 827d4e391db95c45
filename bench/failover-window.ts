/**
 * The duplicate window of a failover, measured per replication mode
 * (opt-in: `npm run failover-window`, or
 * `node dist/bench/failover-window.js --runs 3 --holds 400 --link-delay-ms 20 --modes sync,remote_apply,async [--switched]`).
 * Needs root and Debian's postgresql-15 (as test/db/failover.test.ts).
 *
 * Each run builds a primary and a standby on free ports, the standby
 * reaching the primary through a link that delays each direction by
 * `--link-delay-ms` (a standby in another zone; 0 is the same machine),
 * runs an `expiry-worker` and a `delivery-worker` process on a multi-host
 * URL (or, with --switched, one address switched to the standby when it is
 * promoted) with the Resend adapter against the local stand-in (which honours
 * Idempotency-Key), lets holds fall due, SIGKILLs the primary's postmaster
 * mid-run and promotes the standby 1 s later. Then it counts what the
 * promoted server had lost:
 *
 * - holds expired twice: seen expired on the old primary (polled every
 *   50 ms) or emailed before the kill, and expired again after it;
 * - emails sent again: intents leasehold sent in more than one request;
 *   of those, how many the idempotency key caught (the stand-in delivered
 *   once), how many were delivered twice and flagged `possible_duplicate`,
 *   and how many were delivered twice with no flag (the silent window);
 * - recovery: the worst email's time after the later of its due time and
 *   the promotion.
 */
import pg from 'pg';
import { ident } from '../src/db/pool.js';
import { runFailover, type FailoverOutcome } from '../test/helpers/failover.js';
import { replicationUnavailable, startReplicatedPostgres, type ReplicationMode } from '../test/helpers/replicated-postgres.js';
import { TcpProxy } from '../test/helpers/tcp-proxy.js';

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1]! : fallback;
}

export interface WindowRun {
  mode: ReplicationMode;
  holds: number;
  expiredTwice: number;
  sentAgain: number;
  caughtByKey: number;
  deliveredTwiceFlagged: number;
  deliveredTwiceUnflagged: number;
  /** Of the emails delivered twice, those delivered at least once in a batch request. */
  deliveredTwiceBatched: number;
  /** Holds not expired, or intents not sent, at the end. */
  unfinished: number;
  worstLatenessS: number;
  promoteS: number;
  exits: number;
}

/** Poll the old primary's expired holds until it dies: a lower bound of what it had committed. */
function watchExpiries(url: string, schema: string): { seen: Map<string, number>; stop: () => Promise<void> } {
  const seen = new Map<string, number>();
  let watching = true;
  const done = (async () => {
    while (watching) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 500 });
      client.on('error', () => {});
      try {
        await client.connect();
        while (watching) {
          const { rows } = await client.query<{ id: string; at: number }>(
            `SELECT id, extract(epoch FROM expired_at)::float8 * 1000 AS at FROM ${ident(schema)}.support_reservations WHERE status = 'expired'`,
          );
          for (const row of rows) seen.set(row.id, row.at);
          await new Promise((r) => setTimeout(r, 50));
        }
      } catch {
        // Not migrated yet, or the primary is gone.
      } finally {
        await client.end().catch(() => {});
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    seen,
    stop: async () => {
      watching = false;
      await done;
    },
  };
}

function tally(mode: ReplicationMode, outcome: FailoverOutcome, seenExpired: Map<string, number>, promoteS: number): WindowRun {
  const expiredTwice = outcome.holds.filter((hold) => {
    const intent = `reservation-expired:${hold.id}`;
    const before = seenExpired.has(hold.id) || (outcome.deliveredAt.get(intent) ?? Infinity) < outcome.killedAt;
    return before && hold.expiredAt !== null && hold.expiredAt > outcome.killedAt;
  }).length;
  let sentAgain = 0;
  let caughtByKey = 0;
  let deliveredTwiceFlagged = 0;
  let deliveredTwiceUnflagged = 0;
  let deliveredTwiceBatched = 0;
  for (const [intent, sends] of outcome.sendsPerIntent) {
    if (sends < 2) continue;
    sentAgain += 1;
    const delivered = outcome.deliveriesPerIntent.get(intent) ?? 0;
    if (delivered > 1 && outcome.batched.has(intent)) deliveredTwiceBatched += 1;
    if (delivered <= 1) caughtByKey += 1;
    else if (outcome.flagged.has(intent)) deliveredTwiceFlagged += 1;
    else deliveredTwiceUnflagged += 1;
  }
  return {
    mode,
    holds: outcome.holds.length,
    expiredTwice,
    sentAgain,
    caughtByKey,
    deliveredTwiceFlagged,
    deliveredTwiceUnflagged,
    deliveredTwiceBatched,
    unfinished: outcome.holds.filter((h) => h.status !== 'expired' || h.state !== 'sent').length,
    worstLatenessS: Math.max(...outcome.lateness.values()),
    promoteS,
    exits: outcome.exits.length,
  };
}

async function oneRun(mode: ReplicationMode, holds: number, linkDelayMs: number, switched: boolean): Promise<WindowRun> {
  let link: TcpProxy | undefined;
  let address: TcpProxy | undefined;
  const cluster = await startReplicatedPostgres({
    mode,
    noFsync: false,
    upstreamPort: async (primaryPort) => {
      link = new TcpProxy({ host: '127.0.0.1', port: primaryPort });
      link.impair({ delayMs: linkDelayMs });
      return link.start();
    },
  });
  const watch = watchExpiries(cluster.primary.url, 'failover');
  try {
    const { primary, standby } = cluster;
    // One switched address (an RDS endpoint) or the multi-host URL.
    address = switched ? new TcpProxy({ host: '127.0.0.1', port: primary.port }) : undefined;
    const url = address
      ? `postgres://postgres@127.0.0.1:${await address.start()}/postgres`
      : `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`;
    let promoteStarted = 0;
    const outcome = await runFailover({
      cluster: {
        ...cluster,
        promote: async () => {
          promoteStarted = Date.now();
          await cluster.promote();
        },
      },
      url,
      ...(address ? { onPromoted: () => address!.retarget({ host: '127.0.0.1', port: standby.port }) } : {}),
      holds,
      spreadMs: 4000,
      killAtMs: 2000,
      drainMs: 60_000,
    });
    await watch.stop();
    return tally(mode, outcome, watch.seen, (outcome.promotedAt - promoteStarted) / 1000);
  } finally {
    await watch.stop();
    await cluster.stop();
    await link?.stop();
    await address?.stop();
  }
}

async function main(): Promise<number> {
  const unavailable = replicationUnavailable();
  if (unavailable) {
    process.stderr.write(`failover-window: ${unavailable}\n`);
    return 2;
  }
  const runs = Number(arg('runs', '3'));
  const holds = Number(arg('holds', '400'));
  const linkDelayMs = Number(arg('link-delay-ms', '20'));
  const modes = arg('modes', 'sync,remote_apply,async').split(',') as ReplicationMode[];
  const switched = process.argv.includes('--switched');
  process.stdout.write(
    `${holds} holds over 4 s, primary killed at 2 s, standby promoted 1 s later; link delay ${linkDelayMs} ms each way; ${switched ? 'one switched address' : 'multi-host URL'}\n`,
  );
  process.stdout.write('| mode | run | holds expired twice | emails sent again | caught by the idempotency key | delivered twice, flagged | delivered twice, not flagged | of those delivered twice, in a batch | unfinished | worst email after max(due, promotion) | promote | exits |\n');
  for (const mode of modes) {
    for (let run = 1; run <= runs; run++) {
      const r = await oneRun(mode, holds, linkDelayMs, switched);
      process.stdout.write(
        `| ${r.mode} | ${run} | ${r.expiredTwice} | ${r.sentAgain} | ${r.caughtByKey} | ${r.deliveredTwiceFlagged} | ${r.deliveredTwiceUnflagged} | ${r.deliveredTwiceBatched} | ${r.unfinished} | ${r.worstLatenessS.toFixed(2)} s | ${r.promoteS.toFixed(2)} s | ${r.exits} |\n`,
      );
    }
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
