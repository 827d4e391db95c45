import type { Command } from 'commander';
import { silentLogger } from '../../observability/logger.js';
import type { ContextFactory } from '../context.js';
import { CliExit, EXIT_USAGE } from '../context.js';
import { droppableSchema } from './args.js';

interface DemoOptions {
  holds: string;
  over: string;
  rate: string;
  schema: string;
}

const positive = (name: string, value: string, max: number): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw new CliExit(EXIT_USAGE, `leasehold demo: --${name} must be a number in (0, ${max}]`);
  return n;
};

/**
 * A newcomer's first look: seed holds that fall due over the next seconds,
 * run both lanes against the sandbox at a low shared rate, and print once a
 * second what happens, so the backlog visibly drains at exactly the limit.
 */
export function registerDemo(program: Command, context: ContextFactory): void {
  program
    .command('demo')
    .description('watch both lanes work: seed holds due over ~30 s, send through the sandbox at 5/s, print progress')
    .option('--holds <n>', 'holds to seed', '200')
    .option('--over <seconds>', 'spread their deadlines over this many seconds', '30')
    .option('--rate <perSecond>', 'shared send rate limit', '5')
    .option('--schema <name>', 'schema for the demo, ending in _demo (dropped and recreated)', 'leasehold_demo')
    .action(async (options: DemoOptions) => {
      const holds = Math.floor(positive('holds', options.holds, 100_000));
      const over = positive('over', options.over, 3600);
      const rate = positive('rate', options.rate, 100_000);
      droppableSchema('demo', 'demo', options.schema);
      const ctx = context();
      const [{ intentsChannel, Listener }, { migrate }, { ident }, { rateLimiterSet }, { laneStats }, { SandboxGateway }, { deliveryWorkerFor, expiryWorkerFor }] =
        await Promise.all([
          import('../../db/listener.js'),
          import('../../db/migrate.js'),
          import('../../db/pool.js'),
          import('../../tables/rate-limiter.js'),
          import('../../read/stats.js'),
          import('../../providers/sandbox.js'),
          import('../../service.js'),
        ]);
      // The demo migrates its own schema below; LEASEHOLD_SCHEMA is left alone.
      const db = await ctx.database({ poolSize: 6, migrations: 'none' });
      const schema = options.schema;
      const s = ident(schema);
      const out = ctx.out;
      try {
        await db.pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
        await migrate(db.pool, schema);
        await rateLimiterSet(db.pool, schema, { perSecond: rate, burst: Math.max(1, Math.round(rate)) });
        await db.pool.query(
          `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
           SELECT 'demo-' || i, 'customer-' || i || '@example.com',
                  now() + make_interval(secs => 1 + $2::float8 * i / $1), 'demo'
             FROM generate_series(1, $1::int) AS i`,
          [holds, over],
        );
        out(`seeded ${holds} holds falling due over ${over}s; sandbox provider; shared limit ${rate}/s (schema ${schema})`);
        out('   t  held  expired  backlog  sent  sent/s  oldest pending');

        const gateway = new SandboxGateway({ latencyMs: [20, 80] });
        // Built like the service's lanes (src/service.ts), on the demo's schema and its own limiter.
        const base = { pool: db.pool, schema, logger: silentLogger };
        const expiry = expiryWorkerFor(ctx.config, base);
        const delivery = deliveryWorkerFor(ctx.config, base, gateway);
        const listener = new Listener(db.url, intentsChannel(schema), () => delivery.wake(), silentLogger);
        listener.start();
        expiry.start();
        delivery.start();

        const started = Date.now();
        let lastSent = 0;
        let interrupted = false;
        const onSignal = () => (interrupted = true);
        process.once('SIGINT', onSignal);
        while (!interrupted) {
          await new Promise((r) => setTimeout(r, 1000));
          const stats = await laneStats(db.pool, schema);
          const { rows } = await db.pool.query<{ held: number }>(`SELECT count(*)::int AS held FROM ${s}.support_reservations WHERE status = 'held'`);
          const sent = stats.delivery.intentsByState.sent;
          const expired = holds - rows[0]!.held;
          out(
            `${String(Math.round((Date.now() - started) / 1000)).padStart(4)}  ${String(rows[0]!.held).padStart(4)}  ` +
              `${String(expired).padStart(7)}  ${String(stats.delivery.backlog).padStart(7)}  ${String(sent).padStart(4)}  ` +
              `${String(sent - lastSent).padStart(6)}  ${stats.delivery.oldestPendingAgeSeconds.toFixed(1).padStart(13)}s`,
          );
          lastSent = sent;
          if (sent >= holds) break;
        }
        process.off('SIGINT', onSignal);
        await Promise.all([expiry.stop(), delivery.stop(), listener.stop()]);
        const seconds = (Date.now() - started) / 1000;
        out(`done: ${gateway.acceptedCount} emails accepted by the sandbox in ${seconds.toFixed(0)}s; the backlog drained at the ${rate}/s limit.`);
        // Both with the schema: a bare `trace demo-1` would look in LEASEHOLD_SCHEMA, not here.
        out('inspect it:');
        out(`  LEASEHOLD_SCHEMA=${schema} npx leasehold status`);
        out(`  LEASEHOLD_SCHEMA=${schema} npx leasehold trace demo-1`);
      } finally {
        await db.close();
      }
    });
}
