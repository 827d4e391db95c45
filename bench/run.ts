/**
 * `npm run bench [-- <name> ...]`: run the benchmarks in sequence against
 * one PostgreSQL (embedded unless LEASEHOLD_BENCH_DATABASE_URL is set), print
 * a table and write bench/results/latest.json. Not part of `npm test`: speed
 * is measured here, never asserted in tests.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Benchmark, BenchResult } from './common.js';
import { targetMet } from './common.js';
import { openBenchDatabase } from './database.js';
import { deliveryLatency } from './delivery-latency.js';
import { deliveryLimiter } from './delivery-limiter.js';
import { compare } from './compare.js';
import { deliveryThroughput } from './delivery-throughput.js';
import { expiryLateness } from './expiry-lateness.js';
import { expiryThroughput } from './expiry-throughput.js';
import { importTime } from './import.js';
import { prune } from './prune.js';
import { statusCost } from './status.js';
import { countTriggers } from './count-triggers.js';
import { batchDrain } from './batch-drain.js';
import { leaseCost } from './lease-cost.js';
import { heldForLater } from './held-for-later.js';
import { tenantLatency } from './tenant-latency.js';
import { tracingOverhead } from './tracing-overhead.js';
import { apiContract } from './api-contract.js';
import { packageRoot } from '../src/runtime/package-root.js';

process.env.LOG_LEVEL ??= 'silent';

const benchmarks: Benchmark[] = [expiryThroughput, expiryLateness, deliveryThroughput, deliveryLimiter, deliveryLatency, prune, compare, statusCost, countTriggers, importTime, batchDrain, leaseCost, heldForLater, tenantLatency, tracingOverhead, apiContract];

// The repository root, from dist/bench/run.js or (under tsx) bench/run.ts.
const root = packageRoot();

async function main(): Promise<number> {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = wanted.filter((name) => name !== 'all' && !benchmarks.some((b) => b.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}\navailable: ${benchmarks.map((b) => b.name).join(', ')}\n`);
    return 2;
  }
  // Without names: every benchmark except the long opt-in ones (run those by name, or `all`).
  const selected = wanted.includes('all')
    ? benchmarks
    : wanted.length > 0
      ? benchmarks.filter((b) => wanted.includes(b.name))
      : benchmarks.filter((b) => !b.optIn);

  const db = await openBenchDatabase();
  // The machine is shared: record its load around every benchmark (1-minute load average).
  const results: Record<string, BenchResult & { seconds: number; loadBefore?: number; loadAfter?: number; error?: string }> = {};
  let failed = false;
  try {
    for (const bench of selected) {
      process.stdout.write(`> ${bench.name}: ${bench.description}\n`);
      // Start each benchmark without the previous one's dirty buffers to write.
      await db.checkpoint();
      const started = Date.now();
      const loadBefore = os.loadavg()[0]!;
      try {
        const result = await bench.run(db);
        results[bench.name] = { ...result, seconds: (Date.now() - started) / 1000, loadBefore, loadAfter: os.loadavg()[0]! };
      } catch (error) {
        failed = true;
        process.stderr.write(`  ${bench.name} failed: ${(error as Error).stack ?? String(error)}\n`);
        results[bench.name] = { figures: [], seconds: (Date.now() - started) / 1000, error: String(error) };
      }
      process.stdout.write(`  done in ${results[bench.name]!.seconds.toFixed(1)} s (load average ${loadBefore.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)})\n`);
    }
  } finally {
    await db.close();
  }

  printTable(results);
  const output = {
    date: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      postgres: db.serverVersion,
      embeddedPostgres: db.embedded,
    },
    results,
  };
  const dir = path.join(root, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'latest.json'), JSON.stringify(output, null, 2) + '\n');
  process.stdout.write(`\nwrote ${path.relative(process.cwd(), path.join(dir, 'latest.json'))}\n`);
  return failed ? 1 : 0;
}

function printTable(results: Record<string, BenchResult>): void {
  const rows: string[][] = [['benchmark', 'figure', 'value', 'target', 'met']];
  for (const [name, result] of Object.entries(results)) {
    for (const figure of result.figures) {
      const met = targetMet(figure);
      rows.push([
        name,
        figure.name,
        `${figure.value} ${figure.unit}`,
        figure.target ?? '',
        met === undefined ? '' : met ? 'yes' : 'NO',
      ]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write('\n' + line(rows[0]!) + '\n' + widths.map((w) => '-'.repeat(w)).join('  ') + '\n');
  for (const r of rows.slice(1)) process.stdout.write(line(r) + '\n');
}

process.exitCode = await main();
