import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The deployment: two processes, one expiry worker and one delivery worker,
 * both on DATABASE_URL, which points at PgBouncer in transaction mode
 * (pgbouncer.ini). Nothing else is needed for the pooler: migrations take a
 * transaction-level advisory lock, the delivery worker finds that LISTEN
 * cannot hear through the bouncer, says so once (`listener.unavailable`) and
 * polls (set LEASEHOLD_LISTEN_URL to a direct server URL to keep the
 * millisecond wake-up). SIGTERM (or SIGINT) is passed to both, which finish
 * their in-flight work and exit.
 */
const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));
const lanes = ['expiry-worker', 'delivery-worker'];
const children: ChildProcess[] = lanes.map((lane) =>
  spawn(process.execPath, ['--import', 'tsx', worker, lane], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env }),
);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => children.forEach((child) => child.kill(signal)));
}
const codes = await Promise.all(children.map((child) => new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)))));
process.exitCode = codes.some((code) => code !== 0) ? 1 : 0;
