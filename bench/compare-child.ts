/**
 * One system under test for `npm run bench -- compare` (bench/compare.ts):
 * leasehold, graphile-worker (also as graphile-worker-work, doing the same
 * work per item) or pg-boss, each through a no-op handler
 * (leasehold: a gateway that accepts at once), in a process of its own.
 *
 *   BENCH_SYSTEM      leasehold | graphile-worker | graphile-worker-work | pg-boss
 *   BENCH_PROFILE     defaults | tuned (see compare-systems.ts for the exact settings)
 *   BENCH_WORKLOAD    drain: the items exist already; the system starts at GO and the
 *                       process reports once every item is handled AND its completion is
 *                       committed (checked every 5 ms after the last handler call)
 *                     due: the system starts before READY; the parent then adds items that
 *                       fall due later, sends GO, and the process reports when every item
 *                       was handled
 *   BENCH_ITEMS       how many items to expect (indexes 0..N-1)
 *   BENCH_TIMEOUT_MS  give up this long after GO; the report says how many were handled
 *   DATABASE_URL, BENCH_SCHEMA
 *
 * Items carry their index: leasehold hold id `h<i+1>`, graphile payload {i},
 * pg-boss data {i}. Handled times are this process's Date.now() when the
 * handler (leasehold: the gateway's send) was called. In the due workload,
 * leasehold also reports when each hold's expiry transaction was seen
 * committed (its `expired` event), so that the delivery lane's part can be
 * measured from the commit as well as from the expiry statement's start.
 *
 * Prints READY, then `REPORT <json>` and `DONE <handled>`.
 */
import pg from 'pg';
import { isSystem, isProfile, startSystem, type Handle } from './compare-systems.js';

const url = process.env.DATABASE_URL;
const schema = process.env.BENCH_SCHEMA;
const system = process.env.BENCH_SYSTEM ?? '';
const profile = process.env.BENCH_PROFILE ?? 'defaults';
const workload = process.env.BENCH_WORKLOAD ?? 'drain';
const items = Number(process.env.BENCH_ITEMS ?? 0);
const timeoutMs = Number(process.env.BENCH_TIMEOUT_MS ?? 60_000);
if (!url || !schema || !isSystem(system) || !isProfile(profile) || !(items > 0) || (workload !== 'drain' && workload !== 'due')) {
  process.stderr.write('compare-child: DATABASE_URL, BENCH_SCHEMA, BENCH_SYSTEM, BENCH_PROFILE, BENCH_WORKLOAD and BENCH_ITEMS are required\n');
  process.exit(2);
}

const handledAt = new Float64Array(items);
const committedAt = new Float64Array(items);
let handled = 0;
let distinct = 0;
let firstAt = 0;
let allHandled: () => void = () => {};
const everyItem = new Promise<void>((resolve) => (allHandled = resolve));

/** leasehold's expiry lane, once per hold whose expiry committed. */
function committed(index: number): void {
  if (index >= 0 && index < items && committedAt[index] === 0) committedAt[index] = Date.now();
}

/** Called by every system's handler, once per item. */
function record(index: number): void {
  const now = Date.now();
  handled++;
  if (firstAt === 0) firstAt = now;
  if (index < 0 || index >= items || handledAt[index] !== 0) return;
  handledAt[index] = now;
  if (++distinct === items) allHandled();
}

const probe = new pg.Client({ connectionString: url, application_name: 'leasehold-bench-compare-probe' });
// A lost connection fails the next probe query (reported), never the process through an unheard 'error'.
probe.on('error', () => {});
await probe.connect();

const go = () =>
  new Promise<void>((resolve) => {
    let input = '';
    process.stdin.on('data', (d: Buffer) => {
      input += d.toString();
      if (input.includes('GO\n')) resolve();
    });
  });
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const timeout = (ms: number) => sleep(ms).then(() => 'timeout' as const);

let handle: Handle;
let report: Record<string, unknown>;
if (workload === 'drain') {
  process.stdout.write('READY\n');
  await go();
  process.stdin.pause();
  const goAt = Date.now();
  const cpuAtGo = process.cpuUsage();
  handle = await startSystem({ system, profile, url, schema, record, withExpiry: false });
  const startedAt = Date.now();
  const outcome = await Promise.race([everyItem.then(() => 'handled' as const), timeout(timeoutMs)]);
  const lastAt = Date.now();
  let doneAt: number | null = null;
  if (outcome === 'handled') {
    // Handled is not finished: wait until the completions are committed.
    const deadline = goAt + timeoutMs;
    while (Date.now() < deadline) {
      const { rows } = await probe.query<{ done: boolean }>(handle.done.text, handle.done.values);
      if (rows[0]!.done) {
        doneAt = Date.now();
        break;
      }
      await sleep(5);
    }
  }
  // This process's CPU (user + system) from GO until every completion was committed.
  const cpu = process.cpuUsage(cpuAtGo);
  report = { goAt, startedAt, firstAt, lastAt, doneAt, handled, distinct, cpuMs: (cpu.user + cpu.system) / 1000 };
} else {
  handle = await startSystem({ system, profile, url, schema, record, withExpiry: true, committed });
  process.stdout.write('READY\n');
  await go();
  process.stdin.pause();
  const goAt = Date.now();
  await Promise.race([everyItem, timeout(timeoutMs)]);
  report = {
    goAt,
    handled,
    distinct,
    handledAt: Array.from(handledAt),
    ...(system === 'leasehold' ? { committedAt: Array.from(committedAt) } : {}),
    ...(handle.handedOff ? { handedOff: await handle.handedOff() } : {}),
  };
}

// A system that does not stop within 10 s is left behind: the figures are taken.
await Promise.race([handle.stop(), sleep(10_000)]);
await probe.end().catch(() => {});
process.stdout.write(`REPORT ${JSON.stringify(report)}\nDONE ${distinct}\n`);
process.exit(0);
