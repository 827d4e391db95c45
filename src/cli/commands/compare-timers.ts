import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { ContextFactory } from '../context.js';

interface CompareTimersFlags {
  holds: number;
  seconds: number;
  killEverySends: number;
  killEveryMs: number;
  seed: number;
  json?: boolean;
}

const integer = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
  return n;
};

const secondsArg = (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 600) throw new InvalidArgumentError('must be a number of seconds in (0, 600]');
  return n;
};

/**
 * Timers vs leases, measured: the same holds, confirmations and SIGKILLs
 * through one in-memory timer per hold, a durable scheduler without an
 * outbox, and leasehold's two lanes; then a table of what each lost or
 * doubled. Works in fresh schemas it drops afterwards; LEASEHOLD_SCHEMA is
 * not touched.
 */
export function registerCompareTimers(program: Command, context: ContextFactory): void {
  program
    .command('compare-timers')
    .description('run one workload with injected crashes through timers, a durable scheduler and leasehold; print what each lost or doubled')
    .option('--holds <n>', 'holds in the workload', integer(1, 100_000), 200)
    .option('--seconds <s>', 'their deadlines spread over this many seconds', secondsArg, 5)
    .option('--kill-every-sends <n>', 'SIGKILL a contender as the sink receives its every Nth send (0: never)', integer(0, 1_000_000), 25)
    .option('--kill-every-ms <ms>', 'also SIGKILL each contender process this long after it is up, while holds fall due (0: never)', integer(0, 3_600_000), 2000)
    .option('--seed <n>', 'seed for which holds are confirmed and when', integer(0, 2 ** 31 - 1), 1)
    .option('--json', 'print the result as JSON')
    .action(async (flags: CompareTimersFlags) => {
      const ctx = context();
      const [{ compareTimers }, { formatComparison }] = await Promise.all([import('../../timers/run.js'), import('../../timers/table.js')]);
      // Contender schemas are created and dropped by the run itself.
      const db = await ctx.database({ poolSize: 10, migrations: 'none' });
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      try {
        const result = await compareTimers({
          pool: db.pool,
          databaseUrl: db.url,
          holds: flags.holds,
          seconds: flags.seconds,
          seed: flags.seed,
          killEverySends: flags.killEverySends,
          killEveryMs: flags.killEveryMs,
          signal: abort.signal,
        });
        if (flags.json) ctx.out(JSON.stringify(result, null, 2));
        else for (const line of formatComparison(result)) ctx.out(line);
      } finally {
        process.off('SIGINT', onSignal);
        await db.close();
      }
    });
}
