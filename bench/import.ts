/**
 * Import time of the library entry: `import { createHold } from 'leasehold'`
 * in a fresh node process (nothing cached in-process), against plain `pg` in
 * the same run, alternating so both see the same machine. Median of
 * BENCH_IMPORT_RUNS runs (default 15). BENCH_IMPORT_OTHER=<dir> also times
 * another build's dist/src/index.js (e.g. a checkout of an older commit) for
 * a before/after in one run.
 *
 * Runs without a database: `node dist/bench/import.js`, or through
 * `npm run bench -- import`.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Benchmark, BenchResult } from './common.js';
import { median, round } from './common.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Milliseconds from the start of `import(specifier)` to its end, in a new process started in `cwd`. */
function importMs(specifier: string, cwd: string): number {
  const code = `const t = performance.now(); const m = await import(${JSON.stringify(specifier)}); if (!m.${specifier === 'pg' ? 'default' : 'createHold'}) throw new Error('missing export'); process.stdout.write(String(performance.now() - t));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd, encoding: 'utf8' }));
}

export async function measureImports(runs: number, other?: string): Promise<BenchResult> {
  const entry = pathToFileURL(path.join(root, 'dist/src/index.js')).href;
  const otherEntry = other ? pathToFileURL(path.join(path.resolve(other), 'dist/src/index.js')).href : undefined;
  const samples: Record<string, number[]> = { leasehold: [], pg: [], other: [] };
  importMs(entry, root); // warm the file system cache
  for (let i = 0; i < runs; i++) {
    samples.pg!.push(importMs('pg', root));
    samples.leasehold!.push(importMs(entry, root));
    if (otherEntry) samples.other!.push(importMs(otherEntry, root));
  }
  const leasehold = median(samples.leasehold!);
  const pg = median(samples.pg!);
  return {
    figures: [
      { name: "import { createHold } from 'leasehold' (median)", value: round(leasehold), unit: 'ms', target: '<= 150' },
      { name: "import pg (median, same run)", value: round(pg), unit: 'ms' },
      { name: 'leasehold / pg', value: round(leasehold / pg, 2), unit: 'x' },
      ...(otherEntry ? [{ name: `import of ${other} (median)`, value: round(median(samples.other!)), unit: 'ms' }] : []),
    ],
    details: { runs, samples: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map((x) => round(x))])) },
  };
}

export const importTime: Benchmark = {
  name: 'import',
  description: 'import time of the library entry in a fresh process, against plain pg',
  run: () => measureImports(Number(process.env.BENCH_IMPORT_RUNS ?? 15), process.env.BENCH_IMPORT_OTHER),
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await importTime.run(undefined as never);
  for (const f of result.figures) process.stdout.write(`${f.name}: ${f.value} ${f.unit}${f.target ? ` (target ${f.target})` : ''}\n`);
  process.stdout.write(JSON.stringify(result.details) + '\n');
}
