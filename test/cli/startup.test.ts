import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
const ours = new Set([...Object.keys(manifest.dependencies!), ...Object.keys(manifest.optionalDependencies!)]);

/**
 * leasehold's own dependencies a fresh process has loaded after running the
 * CLI from source with `args` (none: only building the program, as --help
 * and --version do): ES modules as a load hook saw them, CommonJS ones
 * (pg, pino) from the require cache. Counted, not timed: each package left
 * out of a command's start is start-up time every `leasehold` call saves.
 */
function packagesLoadedBy(args: string[] | null, env: Record<string, string> = {}): string[] {
  const hook = `export async function load(url, context, next) { if (url.includes('/node_modules/')) process.stderr.write('LOADED ' + url + '\\n'); return next(url, context); }`;
  const main = pathToFileURL(path.join(root, 'src/cli/main.ts')).href;
  const code = [
    `import { register, createRequire } from 'node:module';`,
    `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));`,
    `const cli = await import(${JSON.stringify(main)});`,
    args === null
      ? `cli.buildProgram(() => { throw new Error('no command runs'); });`
      : `process.exitCode = await cli.main(['node', 'leasehold', ...${JSON.stringify(args)}]);`,
    `for (const file of Object.keys(createRequire(import.meta.url).cache)) process.stderr.write('LOADED ' + file + '\\n');`,
  ].join('\n');
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  if (child.status !== 0) throw new Error(child.stderr);
  const loaded = [...child.stderr.matchAll(/^LOADED .*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)].map((m) => m[1]!);
  return [...new Set(loaded)].filter((name) => ours.has(name)).sort();
}

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_startup');
});
afterAll(() => db.close());

describe('what a leasehold command loads', () => {
  it('--help and --version: commander alone (each command loads its implementation when it runs)', () => {
    expect(packagesLoadedBy(null)).toEqual(['commander']);
  });

  it('status: pg, the configuration rules (zod) and the logger, and not the server, metrics or providers', () => {
    expect(packagesLoadedBy(['status'], db.env)).toEqual(['commander', 'pg', 'pino', 'zod']);
  });

  it('capacity: the model and YAML, no database driver', () => {
    expect(packagesLoadedBy(['capacity', '--emails-per-day', '1000'], { LOG_LEVEL: 'warn' })).toEqual(['commander', 'pino', 'yaml', 'zod']);
  });
});
