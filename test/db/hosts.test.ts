import net from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { intentsChannel, Listener, notifyIntents } from '../../src/db/listener.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ident, withClient } from '../../src/db/pool.js';
import { Presence } from '../../src/db/presence.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { silentLogger } from '../../src/observability/logger.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { freePort, hasPgBinaries, startStandbyPair, type StandbyPair } from '../helpers/standby-pair.js';

// A real primary and a real hot standby (pg_basebackup -R), so the standby
// truly refuses writes; the URLs below list the standby first.
let pair: StandbyPair;
beforeAll(async () => {
  if (hasPgBinaries) pair = await startStandbyPair();
}, 120_000);
afterAll(async () => {
  await pair?.close();
});

const serverPort = async (db: { query: pg.Pool['query'] }) => (await db.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0]!.port;

async function waitFor<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!hasPgBinaries)('a multi-host URL with target_session_attrs=read-write, the standby listed first', () => {
  const readWrite = () => pair.url([pair.standby, pair.primary], '?target_session_attrs=read-write');

  it('the standby is a real one: any session lands there, and it refuses writes', async () => {
    const pool = createPool({ connectionString: pair.url([pair.standby, pair.primary], '?target_session_attrs=any'), max: 2 });
    try {
      expect(await serverPort(pool)).toBe(pair.standby.port);
      await expect(pool.query('CREATE TABLE refused (id int)')).rejects.toMatchObject({ code: '25006' });
    } finally {
      await pool.end();
    }
  });

  it('every pooled connection goes to the primary, and migrations run there', async () => {
    const pool = createPool({ connectionString: readWrite(), max: 5 });
    try {
      const ports = await Promise.all(Array.from({ length: 5 }, () => withClient(pool, async (client) => {
        const port = await serverPort(client);
        await new Promise((r) => setTimeout(r, 50));
        return port;
      })));
      expect(ports).toEqual(Array(5).fill(pair.primary.port));
      await migrate(pool, 'multihost');
    } finally {
      await pool.end();
    }
  });

  it('the LISTEN session and the presence lock it carries are on the primary, and wake-ups arrive', async () => {
    const pool = createPool({ connectionString: readWrite(), max: 2 });
    const presence = new Presence('multihost', silentLogger);
    let session: pg.Client | undefined;
    let woken = 0;
    const listener = new Listener(readWrite(), intentsChannel('multihost'), () => (woken += 1), silentLogger, {
      probe: (payload) => notifyIntents(pool, 'multihost', payload),
      onSession: async (client) => {
        session = client;
        await presence.acquire(client);
      },
      onSessionLost: () => presence.lost(),
    });
    listener.start();
    try {
      const owner = await waitFor(async () => presence.owner, 'the presence lock');
      expect(await serverPort(session!)).toBe(pair.primary.port);
      const held = await pool.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted`, [owner]);
      expect(held.rows[0].n).toBe(1);
      const before = woken;
      await notifyIntents(pool, 'multihost');
      await waitFor(async () => (woken > before ? true : undefined), 'a wake-up');
    } finally {
      await listener.stop();
      await pool.end();
    }
  });

  it('both lanes work: due holds expire and their emails go out', async () => {
    const schema = 'multihost_lanes';
    const pool = createPool({ connectionString: readWrite(), max: 6 });
    await migrate(pool, schema);
    await rateLimiterSet(pool, schema, { perSecond: 500, burst: 50 });
    const s = ident(schema);
    await pool.query(
      `INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, request_hash)
       SELECT 'h' || i, 'c' || i || '@example.com', now() - interval '1 second', 'seed' FROM generate_series(1, 30) i`,
    );
    const expiry = new ExpiryWorker({ pool, schema, intervalMs: 50, batchSize: 10 });
    const delivery = new DeliveryWorker({ pool, schema, gateway: new SandboxGateway(), pollIntervalMs: 50, concurrency: 10 });
    expiry.start();
    delivery.start();
    try {
      await waitFor(
        async () => ((await pool.query(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'sent'`)).rows[0].n === 30 ? true : undefined),
        '30 emails sent',
      );
    } finally {
      await expiry.stop();
      await delivery.stop();
      await pool.end();
    }
  });

  it('after the standby is promoted and the old primary turns read-only, new connections and the LISTEN session move over', async () => {
    // One pooled client: its failure and what the next connect does are exactly observable.
    const pool = createPool({ connectionString: readWrite(), max: 1 });
    const listener = new Listener(readWrite(), intentsChannel('moves'), () => {}, silentLogger, { heartbeatMs: 100 });
    const sessions: number[] = [];
    // The session in use is read through pg_stat_activity: its application_name is the listener's.
    const listenerPort = async (port: number) => {
      const one = createPool({ connectionString: pair.url([port === pair.primary.port ? pair.primary : pair.standby]), max: 1 });
      try {
        return (await one.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'leasehold-listener'`)).rows[0]!.n;
      } finally {
        await one.end();
      }
    };
    listener.start();
    try {
      expect(await serverPort(pool)).toBe(pair.primary.port);
      await waitFor(async () => ((await listenerPort(pair.primary.port)) === 1 ? true : undefined), 'the listener on the old primary');
      await pair.standby.promote();
      // A primary demoted without a restart: it still takes connections, it refuses writes.
      const old = createPool({ connectionString: pair.url([pair.primary]), max: 1 });
      await old.query(`ALTER SYSTEM SET default_transaction_read_only = on`);
      await old.query('SELECT pg_reload_conf()');
      await old.end();
      // The reload reaches each session through the postmaster, a moment
      // later: wait until the pooled session itself has it.
      await waitFor(
        async () => {
          const { rows } = await pool.query<{ default_transaction_read_only: string }>('SHOW default_transaction_read_only');
          return rows[0]!.default_transaction_read_only === 'on' ? true : undefined;
        },
        'the pooled session on the old primary to turn read-only',
      );
      // The write on the pooled connection to the old primary fails (25006):
      // that client is destroyed, and the next connects to the new primary
      // at once rather than trying the old one again.
      const write = () => withClient(pool, (client) => client.query('CREATE TABLE IF NOT EXISTS moved (id int)'));
      await expect(write()).rejects.toMatchObject({ code: '25006' });
      await write();
      for (let i = 0; i < 3; i++) sessions.push(await serverPort(pool));
      expect(sessions).toEqual(Array(3).fill(pair.standby.port));
      await waitFor(async () => ((await listenerPort(pair.standby.port)) === 1 ? true : undefined), 'the listener on the new primary');
      expect(await listenerPort(pair.primary.port)).toBe(0);
    } finally {
      await listener.stop();
      await pool.end();
    }
  }, 60_000);
});

describe('a multi-host URL whose first host is down', () => {
  /** The suite's server, listed after `dead` hosts, with its user, password and database. */
  const behind = (...dead: number[]) => {
    const live = new URL(inject('databaseUrl'));
    const auth = live.username ? `${live.username}${live.password ? `:${live.password}` : ''}@` : '';
    return `postgres://${auth}${[...dead.map((p) => `127.0.0.1:${p}`), live.host].join(',')}${live.pathname}${live.search}`;
  };

  it('pooled connections and the LISTEN session skip it, and the host that answered is tried first from then on', async () => {
    // A host that takes the TCP connection and drops it at once, counting each try.
    let tries = 0;
    const broken = net.createServer((socket) => {
      tries += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    const url = behind((broken.address() as net.AddressInfo).port);
    const pool = createPool({ connectionString: url, max: 4 });
    let ready = false;
    const listener = new Listener(url, intentsChannel('skips'), () => {}, silentLogger, {
      probe: (payload) => notifyIntents(pool, 'skips', payload),
      onSession: async () => void (ready = true),
    });
    try {
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
      expect(tries).toBe(1);
      // Four connections at once, all new: none tries the broken host again.
      await Promise.all(Array.from({ length: 4 }, () => withClient(pool, () => new Promise((r) => setTimeout(r, 50)))));
      expect(tries).toBe(1);
      listener.start();
      await waitFor(async () => (ready ? true : undefined), 'a checked LISTEN session');
      expect(tries).toBe(2);
    } finally {
      await listener.stop();
      await pool.end();
      broken.close();
    }
  });

  it('with every host down, the error names each host and why, and counts as a lost connection', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const pool = createPool({ connectionString: `postgres://u:s3cret@127.0.0.1:${a},127.0.0.1:${b}/db?target_session_attrs=read-write` });
    try {
      const error = (await pool.query('SELECT 1').then(
        () => undefined,
        (e: unknown) => e,
      )) as Error & { code?: string };
      expect(error.message).toBe(`no host accepts the session: 127.0.0.1:${a}: connect ECONNREFUSED 127.0.0.1:${a}; 127.0.0.1:${b}: connect ECONNREFUSED 127.0.0.1:${b}`);
      expect(error.code).toBe('ECONNREFUSED');
    } finally {
      await pool.end();
    }
  });
});
