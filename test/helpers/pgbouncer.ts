import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

/** Where Debian's `pgbouncer` package puts the binary, or one on PATH. */
export function pgbouncerBinary(): string | undefined {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (existsSync(candidate)) return candidate;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'pgbouncer'))) return path.join(dir, 'pgbouncer');
  }
  return undefined;
}

/** The binary's version as major.minor (1.18 for `PgBouncer 1.18.0`). */
export function bouncerVersion(binary: string): number {
  const out = execFileSync(binary, ['--version'], { encoding: 'utf8' });
  const match = out.match(/PgBouncer (\d+)\.(\d+)/);
  if (!match) throw new Error(`cannot read the version of ${binary}: ${out}`);
  return Number(match[1]) + Number(match[2]) / 100;
}

export interface PgBouncer {
  /** DATABASE_URL through the bouncer (same user, password and database). */
  url: string;
  log(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function accepting(port: number, timeoutMs: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log().slice(-1500)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}: ${log().slice(-1500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A real PgBouncer in front of `databaseUrl`, in `poolMode` (transaction by
 * default: the mode where LISTEN and session state do not survive), with a
 * small server pool so clients really share server connections.
 */
export async function startPgBouncer(databaseUrl: string, options: { poolMode?: 'transaction' | 'session'; serverPoolSize?: number } = {}): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary) throw new Error('pgbouncer is not installed');
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const database = target.pathname.slice(1) || 'postgres';
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'lh-pgbouncer-'));
  // PgBouncer refuses to run as root; it drops to the postgres user (the
  // embedded server's own), which must read these files.
  await chmod(dir, 0o755);
  const authFile = path.join(dir, 'userlist.txt');
  await writeFile(authFile, `"${user}" "${password.replace(/"/g, '""')}"\n`, { mode: 0o644 });
  const ini = path.join(dir, 'pgbouncer.ini');
  await writeFile(
    ini,
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${authFile}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.serverPoolSize ?? 4}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = userInfo().uid === 0 ? ['-u', 'postgres', ini] : [ini];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await accepting(port, 10_000, child, () => log);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const url = new URL(databaseUrl);
  url.port = String(port);
  url.hostname = '127.0.0.1';
  return {
    url: url.toString(),
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT'); // immediate shutdown
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
