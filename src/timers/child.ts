/**
 * One contender as a child process of `leasehold compare-timers`, so a crash
 * is a real SIGKILL of a real process with real open transactions.
 *
 *   node dist/src/timers/child.js <timers|scheduler|leasehold> --schema S --sink URL [--arm]
 *
 * DATABASE_URL names the database. Prints `READY` once running; runs until
 * killed. --arm (timers only) is the first start: the process that created
 * the holds, so the one that has their timers.
 */
import { parseArgs } from 'node:util';
import { createPool } from '../db/pool.js';
import { runLeasehold } from './child-leasehold.js';
import { runScheduler } from './child-scheduler.js';
import { runTimers } from './child-timers.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { schema: { type: 'string' }, sink: { type: 'string' }, arm: { type: 'boolean', default: false } },
});
const [contender] = positionals;
const url = process.env.DATABASE_URL;
if (!url || !values.schema || !values.sink || !contender) {
  process.stderr.write('usage: DATABASE_URL=... child.js <contender> --schema S --sink URL [--arm]\n');
  process.exit(2);
}
const pool = createPool({ connectionString: url, max: 10, applicationName: `compare-timers-${contender}` });
const target = { pool, schema: values.schema, sinkUrl: values.sink, databaseUrl: url };

if (contender === 'timers') await runTimers(target, values.arm);
else if (contender === 'scheduler') await runScheduler(target);
else if (contender === 'leasehold') await runLeasehold(target);
else {
  process.stderr.write(`unknown contender ${contender}\n`);
  process.exit(2);
}
process.stdout.write('READY\n');
