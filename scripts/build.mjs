#!/usr/bin/env node
// Build dist/ only when a source changed: what `npm start`, `npm test` and
// the bench scripts run first. Even incremental, tsc spends ~10 s loading
// the program before it finds nothing to do; comparing modification times
// takes milliseconds, so a second `npm start` starts at once.
//
//   node scripts/build.mjs           build if stale (tsc -p tsconfig.json, incremental)
//   node scripts/build.mjs --clean   remove dist/ and build from nothing (prepack: what is published)
//
// Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What tsc compiles (tsconfig.json `include`) and what changes how it compiles. */
const INPUTS = ['src', 'bench', 'test', 'tsconfig.json', 'package.json', 'package-lock.json'];
/**
 * Written after each build that succeeded. Not tsc's own build info
 * (dist/.tsbuildinfo): `tsc --noEmit`, the type check, writes that one too
 * without emitting anything.
 */
export const BUILD_STAMP = 'dist/.build-stamp';
const OUTPUTS = ['dist/src/cli/main.js', 'dist/src/index.js'];

function newestMtime(file) {
  let stat;
  try {
    stat = statSync(file);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs; // a file deleted or renamed changes its folder
  for (const entry of readdirSync(file)) newest = Math.max(newest, newestMtime(path.join(file, entry)));
  return newest;
}

/** Why dist/ under `root` must be built again, or undefined when it is up to date. */
export function staleReason(root) {
  const info = path.join(root, BUILD_STAMP);
  if (!existsSync(info)) return 'no build yet';
  for (const output of OUTPUTS) if (!existsSync(path.join(root, output))) return `${output} is missing`;
  const built = statSync(info).mtimeMs;
  for (const input of INPUTS) if (newestMtime(path.join(root, input)) > built) return `${input} changed`;
  return undefined;
}

function build(root, clean) {
  if (clean) rmSync(path.join(root, 'dist'), { recursive: true, force: true });
  const reason = clean ? 'clean build' : staleReason(root);
  if (!reason) return 0;
  process.stderr.write(`building dist/ (${reason})\n`);
  const started = new Date();
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const { status } = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { stdio: 'inherit' });
  if (status !== 0) return status ?? 1;
  // Stamped with the build's start: a file saved while tsc ran is newer, and builds next time.
  const stamp = path.join(root, BUILD_STAMP);
  writeFileSync(stamp, `${started.toISOString()}\n`);
  utimesSync(stamp, started, started);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  process.exitCode = build(root, process.argv.includes('--clean'));
}
