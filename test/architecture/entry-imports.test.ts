import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The third-party packages a fresh process has loaded after importing `entry`
 * from source: ES modules as a load hook saw them, CommonJS ones from the
 * require cache (pg and pino are CommonJS). Only leasehold's own
 * dependencies are listed, not what they load or what tsx needs.
 */
function packagesLoadedBy(entry: string): string[] {
  const hook = `export async function load(url, context, next) { if (url.includes('/node_modules/')) process.stderr.write('LOADED ' + url + '\\n'); return next(url, context); }`;
  const code = [
    `import { register, createRequire } from 'node:module';`,
    `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));`,
    `await import(${JSON.stringify(pathToFileURL(path.join(root, entry)).href)});`,
    `for (const file of Object.keys(createRequire(import.meta.url).cache)) process.stderr.write('LOADED ' + file + '\\n');`,
  ].join('\n');
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
  if (child.status !== 0) throw new Error(child.stderr);
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
  const ours = new Set([...Object.keys(manifest.dependencies!), ...Object.keys(manifest.optionalDependencies!)]);
  const loaded = [...child.stderr.matchAll(/^LOADED .*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)].map((m) => m[1]!);
  return [...new Set(loaded)].filter((name) => ours.has(name)).sort();
}

describe('the library entry', () => {
  it("loads pg and none of zod, pino or the server's and providers' packages (BENCHMARKS.md, import time)", () => {
    expect(packagesLoadedBy('src/index.ts')).toEqual(['pg']);
  });
});
