import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's PostgreSQL 15 (the embedded package has no pg_basebackup). */
export const PG_BIN = process.env.LEASEHOLD_PG_BIN ?? '/usr/lib/postgresql/15/bin';
export const hasPgBinaries = existsSync(path.join(PG_BIN, 'pg_basebackup'));

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** PostgreSQL refuses to run as root: as root, its tools run as `postgres`. */
async function pg(tool: string, args: string[]): Promise<string> {
  const command = path.join(PG_BIN, tool);
  const asRoot = userInfo().uid === 0;
  const { stdout } = await run(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { timeout: 60_000 });
  return stdout;
}

export interface Server {
  port: number;
  dir: string;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  promote(): Promise<void>;
}

export interface StandbyPair {
  primary: Server;
  /** A hot standby streaming from the primary: it accepts connections, not writes. */
  standby: Server;
  /** postgres://postgres@127.0.0.1:<port>,... in the order given. */
  url(servers: Server[], query?: string): string;
  close(): Promise<void>;
}

function server(dir: string, port: number, root: string): Server {
  return {
    port,
    dir,
    start: async () => void (await pg('pg_ctl', ['-D', dir, '-l', path.join(root, `${port}.log`), '-w', '-t', '60', 'start'])),
    stop: async (mode = 'fast') => void (await pg('pg_ctl', ['-D', dir, '-m', mode, '-w', 'stop']).catch(() => {})),
    promote: async () => void (await pg('pg_ctl', ['-D', dir, '-w', 'promote'])),
  };
}

/**
 * A primary and a hot standby of it (pg_basebackup -R), each on a free
 * port in a temporary directory, trusting local connections: for tests of
 * connections that must find the primary among several hosts.
 */
export async function startStandbyPair(): Promise<StandbyPair> {
  const root = await mkdtemp(path.join(tmpdir(), 'leasehold-pair-'));
  // The postgres user writes its clusters and logs here.
  await chmod(root, 0o777);
  const primary = server(path.join(root, 'primary'), await freePort(), root);
  await pg('initdb', ['-D', primary.dir, '-U', 'postgres', '--auth=trust', '--no-sync']);
  const settings = (port: number) =>
    [`port = ${port}`, `listen_addresses = '127.0.0.1'`, `unix_socket_directories = '${root}'`, 'fsync = off', 'hot_standby = on', 'max_wal_senders = 4', 'wal_level = replica', ''].join('\n');
  await appendFile(path.join(primary.dir, 'postgresql.conf'), settings(primary.port));
  await primary.start();
  const standby = server(path.join(root, 'standby'), await freePort(), root);
  await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standby.dir, '-R', '-X', 'stream']);
  await appendFile(path.join(standby.dir, 'postgresql.conf'), settings(standby.port));
  await standby.start();
  return {
    primary,
    standby,
    url: (servers, query = '') => `postgres://postgres@${servers.map((s) => `127.0.0.1:${s.port}`).join(',')}/postgres${query}`,
    async close() {
      await standby.stop('immediate');
      await primary.stop('immediate');
      await rm(root, { recursive: true, force: true });
    },
  };
}
